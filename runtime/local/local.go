// Package local is gray's local mode (Ray 0.2's PYTHON_MODE): every task
// runs serially in the driver when it is submitted, so a program can be
// debugged with ordinary stack traces and breakpoints. It implements the
// same backend contract as the driver's node and a worker's connection.
package local

import (
	"context"
	"errors"
	"fmt"
	"os"
	"runtime"
	"runtime/debug"
	"sync"
	"time"

	"github.com/gray-ml/gray/runtime/ids"
	"github.com/gray-ml/gray/runtime/task"
)

// Local runs every task serially in the driver at submission.
type Local struct {
	mu     sync.Mutex
	root   ids.TaskID
	count  uint64
	puts   uint64
	objs   map[ids.ObjectID]task.Object
	actors map[ids.ActorID]any
	dead   map[ids.ActorID]string
	errs   []*task.TaskError
	closed bool
	res    task.Resources
}

// Config describes the session: the resources it reports (nothing is
// reserved: tasks run one at a time) and the seed of its IDs.
type Config struct {
	Resources task.Resources // CPU 0: the machine's logical CPUs
	Seed      int64
	Seeded    bool // Seed makes object and task IDs deterministic
}

// ErrClosed is returned by a Local after Shutdown.
var ErrClosed = errors.New("gray: local mode has been shut down: call gray.Init first")

// New starts a local-mode session.
func New(cfg Config) *Local {
	res := cfg.Resources
	if res.CPU == 0 {
		res.CPU = float64(runtime.NumCPU())
	}
	return &Local{res: res, root: ids.Root(cfg.Seed, cfg.Seeded), objs: map[ids.ObjectID]task.Object{}, actors: map[ids.ActorID]any{}, dead: map[ids.ActorID]string{}}
}

// Resources returns the resources configured; local mode reserves none,
// so all of them are available.
func (l *Local) Resources() (total, available task.Resources) {
	return l.res, l.res
}

// NewTaskID returns the ID of the next task submitted.
func (l *Local) NewTaskID() ids.TaskID {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.count++
	return ids.Child(l.root, l.count)
}

// NewPutID returns the ID of the next object put.
func (l *Local) NewPutID() ids.ObjectID {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.puts++
	return ids.Put(l.root, l.puts)
}

// WorkerName names the driver in error messages.
func (l *Local) WorkerName() string { return fmt.Sprintf("driver (pid %d, local mode)", os.Getpid()) }

// Put stores an object; the first value stored under an ID stays.
func (l *Local) Put(id ids.ObjectID, o task.Object) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return ErrClosed
	}
	if _, ok := l.objs[id]; !ok {
		l.objs[id] = o
	}
	return nil
}

func (l *Local) fail(s *task.Spec, e *task.TaskError) {
	for i := range s.Returns() {
		_ = l.Put(s.Return(i), task.Object{Err: e})
	}
	l.mu.Lock()
	l.errs = append(l.errs, e)
	l.mu.Unlock()
	fmt.Fprintf(os.Stderr, "gray: %v\n", e)
}

// Submit runs the task now and stores its results (or its error).
func (l *Local) Submit(s *task.Spec) error {
	e, err := task.Lookup(s.Func)
	if err != nil {
		l.fail(s, &task.TaskError{Function: s.Func, Worker: l.WorkerName(), Message: err.Error(), Cause: err})
		return err
	}
	args := make([][]byte, len(s.Args))
	for i, a := range s.Args {
		if !a.IsRef {
			args[i] = a.Data
			continue
		}
		l.mu.Lock()
		o, ok := l.objs[a.Ref]
		l.mu.Unlock()
		if !ok {
			err := fmt.Errorf("argument %d: object %s does not exist", i+1, a.Ref)
			l.fail(s, &task.TaskError{Function: s.Func, Worker: l.WorkerName(), Message: err.Error(), Cause: err})
			return nil
		}
		if o.Err != nil {
			l.fail(s, &task.TaskError{Function: s.Func, Worker: l.WorkerName(), Message: "an argument failed: " + o.Err.Message, Cause: o.Err})
			return nil
		}
		args[i] = o.Data
	}
	info := &task.Info{Task: s.ID.String(), Worker: l.WorkerName()}
	ctx := task.WithInfo(context.Background(), info)
	outs, te := l.run(ctx, s, e, args)
	info.RunAfter()
	if te != nil {
		l.fail(s, te)
		return nil
	}
	if s.Kind == task.KindActorCreate {
		return nil
	}
	for i := range s.Returns() {
		var data []byte
		if i < len(outs) {
			data = outs[i]
		}
		_ = l.Put(s.Return(i), task.Object{Data: data})
	}
	return nil
}

func (l *Local) run(ctx context.Context, s *task.Spec, e *task.Entry, args [][]byte) (outs [][]byte, te *task.TaskError) {
	defer func() {
		if r := recover(); r != nil {
			te = &task.TaskError{Function: s.Func, Worker: l.WorkerName(), Message: fmt.Sprintf("panic: %v", r), Stack: string(debug.Stack())}
		}
	}()
	var err error
	switch s.Kind {
	case task.KindFunc:
		outs, err = e.Call(ctx, args, nil) // no store: results inline
	case task.KindActorCreate:
		var inst any
		inst, err = e.New(ctx, args)
		if err == nil {
			l.mu.Lock()
			l.actors[s.ID] = inst
			l.mu.Unlock()
		} else {
			l.mu.Lock()
			l.dead[s.ID] = "its constructor failed: " + err.Error()
			l.mu.Unlock()
		}
	case task.KindActorMethod:
		l.mu.Lock()
		inst, ok := l.actors[s.Actor()]
		why := l.dead[s.Actor()]
		l.mu.Unlock()
		if !ok {
			if why == "" {
				why = "unknown in this session"
			}
			return nil, &task.TaskError{Function: s.Func, Worker: l.WorkerName(), Message: fmt.Sprintf("actor %s is dead: %s", s.Actor(), why), Cause: task.ErrActorDead}
		}
		outs, err = e.Method(ctx, inst, args, nil)
	}
	if err != nil {
		return nil, &task.TaskError{Function: s.Func, Worker: l.WorkerName(), Message: err.Error(), Cause: err}
	}
	return outs, nil
}

// Get returns the objects, which exist already if they ever will.
func (l *Local) Get(ctx context.Context, oids []ids.ObjectID) ([]task.Object, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([]task.Object, len(oids))
	for i, id := range oids {
		o, ok := l.objs[id]
		if !ok {
			return nil, fmt.Errorf("gray: get: object %s does not exist (local mode runs tasks at submission, so it never will)", id)
		}
		out[i] = o
	}
	return out, nil
}

// Wait reports which objects exist: every task has run by now.
func (l *Local) Wait(ctx context.Context, oids []ids.ObjectID, num int, timeout time.Duration) ([]bool, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([]bool, len(oids))
	for i, id := range oids {
		_, out[i] = l.objs[id]
	}
	return out, nil
}

// Kill ends an actor: its later calls fail with task.ErrActorDead.
func (l *Local) Kill(id ids.ActorID) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, ok := l.actors[id]; !ok {
		return errors.New("gray: kill: unknown actor")
	}
	delete(l.actors, id)
	l.dead[id] = "it was killed"
	return nil
}

// Release ends an actor no handle refers to any more.
func (l *Local) Release(id ids.ActorID) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, ok := l.actors[id]; ok {
		delete(l.actors, id)
		l.dead[id] = "no handle to the actor remains"
	}
}

// Drop frees an object the program no longer refers to; local mode runs
// tasks at submission, so no queued task can need it.
func (l *Local) Drop(id ids.ObjectID) {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.objs, id)
}

// Free replaces the objects with an error saying they were freed.
func (l *Local) Free(oids []ids.ObjectID) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, id := range oids {
		l.objs[id] = task.Object{Err: &task.TaskError{
			Function: "(object store)",
			Message:  fmt.Sprintf("object %s was freed with gray.Free; do not use a reference after freeing it", id),
			Cause:    task.ErrFreed,
		}}
	}
	return nil
}

// Errors returns the task failures so far.
func (l *Local) Errors() []*task.TaskError {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]*task.TaskError(nil), l.errs...)
}

// Shutdown ends the session.
func (l *Local) Shutdown() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.closed = true
	return nil
}
