// Package worker is the worker side of the runtime: a process started by the
// driver (the program's own executable, in worker mode) that connects back
// over a Unix socket, runs the tasks it is sent one at a time, and forwards
// the calls its tasks make (submissions, Put, Get, Wait) to the driver.
package worker

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gray-ml/gray/runtime/codec"
	"github.com/gray-ml/gray/runtime/ids"
	"github.com/gray-ml/gray/runtime/objstore"
	"github.com/gray-ml/gray/runtime/task"
	"github.com/gray-ml/gray/runtime/transfer"
	"github.com/gray-ml/gray/runtime/wire"
)

// Worker is the connection of a worker process to its driver.
type Worker struct {
	conn *wire.Conn
	id   int
	name string
	ctx  context.Context
	// exit ends the process: os.Exit; tests end the calling goroutine
	// instead.
	exit func(code int)

	mu      sync.Mutex
	queue   []*task.Spec
	reading bool // a goroutine holds the reading role (see read)
	running bool // a goroutine is running queued tasks (see runQueue)
	cur     ids.TaskID
	subs    uint64 // tasks submitted by the current task
	puts    uint64 // objects put by the current task

	reqMu   sync.Mutex
	nextReq uint64
	reqs    map[uint64]chan []byte

	calls     map[string]int
	gpuEnv    string         // CUDA_VISIBLE_DEVICES as the worker started
	gpuEnvOK  bool           // whether it was set at all
	gpuEnvSet bool           // a task's GPU IDs are in the environment now
	instance  any            // the actor this worker hosts
	remote    bool           // on another node than the driver: large values travel inline (see remote.go)
	inline    map[int][]byte // returns of the running task encoded zero-copy, sent inline (remote)
	isActor   bool           // this worker hosts an actor: it copies shared objects (see Get)
	actorType string         // the registered name of the actor's type
	// sinceCheckpoint counts the actor's method calls since its last
	// checkpoint (see checkpoint.go).
	sinceCheckpoint int

	// The node's shared-memory object store: objects are mapped through
	// reader; views are the mappings the running task reads, ended with it.
	dir    string
	cap    int64
	reader *objstore.Reader
	views  []*objstore.View
	outs   map[int]int64 // returns of the running task written to the store: index -> size
	kept   keptSet       // gray.Shared arguments the actor keeps (see shared_args.go)
	nested atomic.Int64  // holds and containments sent by the running task (see nested.go)

	// Where to pull objects this node may lack (remote_store.go).
	locMu sync.Mutex
	locs  map[ids.ObjectID]string
	pull  *transfer.Client
	sink  transfer.Sink // into the node's store; one, so that the client merges pulls of one object

	// Direct actor calls (direct.go): as a caller (nil: off), and as a
	// callee (direct_callee.go).
	direct     *directCalls
	callee     calleeState
	calleeAddr string
	localIP    net.IP // this end of a TCP connection to the driver: where a callee listens
}

// Env reports whether this process was started as a worker.
func Env() bool { return os.Getenv(task.EnvSocket) != "" }

// Connect dials the driver named by the environment and says hello.
func Connect() (*Worker, error) {
	sock := os.Getenv(task.EnvSocket)
	id, err := strconv.Atoi(os.Getenv(task.EnvWorker))
	if sock == "" || err != nil {
		return nil, fmt.Errorf("gray worker: %s and %s must be set by the driver", task.EnvSocket, task.EnvWorker)
	}
	c, err := dial(sock)
	if err != nil {
		return nil, fmt.Errorf("gray worker: connecting to the driver: %w", err)
	}
	w := &Worker{
		conn:  wire.New(c),
		exit:  os.Exit,
		id:    id,
		name:  fmt.Sprintf("worker %d (pid %d)", id, os.Getpid()),
		ctx:   context.Background(),
		reqs:  map[uint64]chan []byte{},
		calls: map[string]int{},
	}
	if dir := os.Getenv(task.EnvStore); dir != "" {
		w.dir = dir
		w.cap, _ = strconv.ParseInt(os.Getenv(task.EnvCap), 10, 64)
		w.reader = objstore.NewReader(dir, 16)
	}
	w.remote = os.Getenv(task.EnvRemote) == "1"
	if a, ok := c.LocalAddr().(*net.TCPAddr); ok {
		w.localIP = a.IP
	}
	w.direct = newDirectCalls(w)
	w.gpuEnv, w.gpuEnvOK = os.LookupEnv("CUDA_VISIBLE_DEVICES")
	w.answerStacks() // before hello: the driver signals only workers it knows
	if err := w.conn.Send(task.MsgHello, func(b []byte) []byte { return wire.AppendUvarint(b, uint64(id)) }); err != nil {
		return nil, err
	}
	if err := w.conn.Answer(); err != nil { // the driver's offer of its shared-memory fast path
		return nil, fmt.Errorf("gray worker: %w", err)
	}
	return w, nil
}

// Serve runs tasks until the driver says to exit or goes away, then exits
// the process.
//
// No goroutine is dedicated to tasks: whichever goroutine holds the reading
// role (see read) runs the queued tasks itself once its input runs dry, so
// a call costs no hand-off between a reader and an executor goroutine. Each
// such hand-off readies a goroutine from another, which makes the Go
// scheduler wake a second thread (a futex call and often an inter-processor
// interrupt): about 8 µs of a 55 µs actor-call round trip on a 2-core VM.
// A task that waits for input (Get, Wait, a reservation) starts a reader
// first (ensureReader), and tasks queued meanwhile are run by the goroutine
// already running tasks, in order.
//
// While a task runs without waiting, the driver's messages stay in the
// socket; once its buffers fill (a few hundred KiB of queued calls), the
// driver's connection writes the rest from a goroutine of its own (see
// wire.Conn.Flush), so submitting never waits for the task. Arming a timer
// per task to start a reader after 1 ms instead gave the whole gain back
// (the timer wakes a thread too).
func (w *Worker) Serve() {
	w.mu.Lock()
	w.reading = true
	w.mu.Unlock()
	w.read()
	select {} // the role moved to another goroutine, which exits the process
}

// runQueue runs queued tasks until the queue is empty. It reports whether
// the caller took the reading role back; if another goroutine holds it, the
// caller must end.
func (w *Worker) runQueue() bool {
	for {
		w.mu.Lock()
		if len(w.queue) == 0 && w.callee.held != nil {
			w.mu.Unlock()
			w.flushHeld() // the burst is over: its held results go out
			continue
		}
		if len(w.queue) == 0 {
			w.running = false
			if w.reading {
				w.mu.Unlock()
				return false
			}
			w.reading = true
			w.mu.Unlock()
			return true
		}
		s := w.queue[0]
		w.queue[0] = nil
		w.queue = w.queue[1:]
		w.cur, w.subs, w.puts = s.ID, 0, 0
		w.outs = nil
		w.inline = nil
		w.mu.Unlock()
		if !inlineExec {
			w.ensureReader()
		}
		w.run(s)
	}
}

// ensureReader makes sure a goroutine reads the driver's messages.
func (w *Worker) ensureReader() {
	w.mu.Lock()
	if !w.reading {
		w.reading = true
		go w.read()
	}
	w.mu.Unlock()
}

// run runs one task and sends its result, ending with how long the task
// ran here in nanoseconds (the driver packs short tasks onto few workers
// by it: runtime/sched/runtimes.go).
func (w *Worker) run(s *task.Spec) {
	if c := w.originOf(s); c != nil {
		w.runDirect(s, c)
		return
	}
	w.flushHeld() // lease results held back (lease_callee.go)
	t0 := time.Now()
	objs, retire := w.exec(s)
	ran := time.Since(t0)
	err := w.conn.Append(task.MsgResult, func(b []byte) []byte {
		b = append(b, s.ID[:]...)
		if retire {
			b = append(b, 1)
		} else {
			b = append(b, 0)
		}
		b = wire.AppendUvarint(b, uint64(len(objs)))
		for i := range objs {
			b = task.AppendObject(b, &objs[i])
		}
		return wire.AppendUvarint(b, uint64(max(ran, 0)))
	})
	if err == nil {
		err = w.flushResult()
	}
	if retire {
		w.giveBack() // the queued tasks run on other workers
	}
	w.collectNested()
	if err == nil && !retire {
		w.checkpointAfter(s)
	}
	if err != nil || retire {
		w.conn.Close()
		w.exit(0)
	}
}

// giveBack hands the tasks queued behind the running one back to the
// driver: the running task is blocked and one of them may be what it waits
// for.
func (w *Worker) giveBack() {
	w.mu.Lock()
	q := w.queue
	w.queue = nil
	w.mu.Unlock()
	_ = w.conn.Send(task.MsgGiveBack, func(b []byte) []byte {
		b = wire.AppendUvarint(b, uint64(len(q)))
		for _, s := range q {
			b = append(b, s.ID[:]...)
		}
		return b
	})
}

// read holds the reading role: it delivers the driver's messages and, once
// no more input is buffered, runs the queued tasks if none is running. It
// returns when another goroutine took the role over meanwhile. The process
// exits when the driver closes the connection, so no worker outlives its
// driver.
func (w *Worker) read() {
	for {
		typ, payload, err := w.conn.Recv()
		if err != nil {
			w.exit(0)
		}
		switch typ {
		case task.MsgExec:
			d := wire.Dec{B: payload}
			s := task.DecodeSpec(&d)
			if d.Err != nil {
				fmt.Fprintf(os.Stderr, "gray worker: bad task message: %v\n", d.Err)
				w.exit(2)
			}
			w.mu.Lock()
			w.queue = append(w.queue, s)
			w.mu.Unlock()
		case task.MsgGetReply, task.MsgWaitReply, task.MsgReserveReply, task.MsgActorAddrReply, task.MsgLeaseReply:
			d := wire.Dec{B: payload}
			id := d.Uvarint()
			w.reqMu.Lock()
			ch := w.reqs[id]
			delete(w.reqs, id)
			w.reqMu.Unlock()
			if ch != nil {
				ch <- d.B
			}
		case task.MsgLocate:
			w.locate(payload)
		case task.MsgRecall:
			w.giveBack()
		case task.MsgDirectListen:
			w.listenDirect()
		case task.MsgDirectDrain:
			go w.drainDirect() // owned by the drain: it ends the process
		case task.MsgExit:
			w.exit(0)
		}
		if w.conn.Buffered() > 0 {
			continue // take the whole burst in before running it
		}
		w.mu.Lock()
		if w.running || len(w.queue) == 0 {
			w.mu.Unlock()
			continue
		}
		w.running = true
		w.reading = false
		w.mu.Unlock()
		if !w.runQueue() {
			return
		}
	}
}

// flushResult sends the result just appended. Over TCP (a worker on
// another node), while more tasks of a burst wait in the queue, a goroutine
// of the connection writes it as the next task runs, and results appended
// meanwhile go out with it: a burst then costs a few writes instead of one
// system call per result. A lone result (nothing queued) is written at
// once, as over the Unix socket, whose shared-memory ring makes a write
// cheap anyway.
func (w *Worker) flushResult() error {
	if w.remote {
		w.mu.Lock()
		more := len(w.queue) > 0
		w.mu.Unlock()
		if more {
			w.conn.FlushAsync()
			return nil
		}
	}
	return w.conn.Flush()
}

// exec runs one task and returns its result objects, and whether the
// worker must now retire (max_calls reached).
func (w *Worker) exec(s *task.Spec) (objs []task.Object, retire bool) {
	info := &task.Info{Task: s.ID.String(), Worker: w.name, GPUIDs: s.GPUIDs()}
	ctx := task.WithInfo(w.ctx, info)
	if len(s.GPUIDs()) > 0 {
		parts := make([]string, len(s.GPUIDs()))
		for i, g := range s.GPUIDs() {
			parts[i] = strconv.Itoa(g)
		}
		os.Setenv("CUDA_VISIBLE_DEVICES", strings.Join(parts, ","))
		w.gpuEnvSet = true
	} else if w.gpuEnvSet {
		// The previous task's GPUs are not this one's.
		w.restoreGPUEnv()
		w.gpuEnvSet = false
	}
	if s.Kind == task.KindActorCreate {
		w.isActor, w.actorType = true, s.Func
		if len(s.GPUIDs()) == 0 {
			// A pool worker taken for an actor (sched's reuse.go) hides the
			// GPUs as a new actor process without GPUs is started to.
			os.Setenv("CUDA_VISIBLE_DEVICES", "")
		}
	}
	outs, te := w.call(ctx, s)
	if te == nil {
		te = w.runAfter(info, s.Func)
	} else {
		w.runAfter(info, s.Func)
	}
	// The task is over: its mappings of arguments and Gets end (the driver
	// unpins them when it gets the result).
	for _, v := range w.views {
		v.Done()
	}
	w.views = w.views[:0]
	num := s.Returns()
	objs = make([]task.Object, num)
	for i := range objs {
		if te != nil {
			objs[i].Err = te
		} else if size, ok := w.outs[i]; ok {
			objs[i].Shared, objs[i].Size = true, size
		} else if b, ok := w.inline[i]; ok {
			objs[i].Data = b
		} else if i < len(outs) {
			objs[i].Data = outs[i]
		}
	}
	if e, err := task.Lookup(s.Func); err == nil && e.MaxCalls > 0 && s.Kind == task.KindFunc {
		w.calls[s.Func]++
		retire = w.calls[s.Func] >= e.MaxCalls
	}
	return objs, retire
}

func (w *Worker) runAfter(info *task.Info, fn string) (te *task.TaskError) {
	defer func() {
		if r := recover(); r != nil {
			te = &task.TaskError{Function: fn, Worker: w.name, Message: fmt.Sprintf("a reusable variable's reinitializer panicked: %v", r), Stack: string(debug.Stack())}
		}
	}()
	info.RunAfter()
	return nil
}

func (w *Worker) call(ctx context.Context, s *task.Spec) (outs [][]byte, te *task.TaskError) {
	defer func() {
		if r := recover(); r != nil {
			te = &task.TaskError{Function: s.Func, Worker: w.name, Message: fmt.Sprintf("panic: %v", r), Stack: string(debug.Stack())}
		}
	}()
	e, err := task.Lookup(s.Func)
	if err != nil {
		return nil, &task.TaskError{Function: s.Func, Worker: w.name, Message: err.Error(), Cause: err}
	}
	args := make([][]byte, len(s.Args))
	for i, a := range s.Args {
		if a.Shared && a.Keep && w.isActor {
			b, err := w.mapKept(a.Ref)
			if err != nil {
				return nil, &task.TaskError{Function: s.Func, Worker: w.name, Message: fmt.Sprintf("argument %d: %v", i+1, err), Cause: err}
			}
			args[i] = b
			continue
		}
		if a.Shared {
			b, err := w.mapObject(a.Ref)
			if err != nil {
				return nil, &task.TaskError{Function: s.Func, Worker: w.name, Message: fmt.Sprintf("argument %d: %v", i+1, err), Cause: err}
			}
			args[i] = b
			continue
		}
		if a.IsRef { // the driver normally resolves references before sending
			objs, err := w.Get(ctx, []ids.ObjectID{a.Ref})
			if err != nil {
				return nil, &task.TaskError{Function: s.Func, Worker: w.name, Message: err.Error(), Cause: err}
			}
			if objs[0].Err != nil {
				return nil, &task.TaskError{Function: s.Func, Worker: w.name, Message: "an argument failed", Cause: objs[0].Err}
			}
			args[i] = objs[0].Data
			continue
		}
		args[i] = a.Data
	}
	// Guard turns a write to a read-only shared slice into an error on
	// this task's references instead of a crash of the worker.
	err = objstore.Guard(func() error {
		var err error
		switch s.Kind {
		case task.KindFunc:
			outs, err = e.Call(ctx, args, w)
		case task.KindActorCreate:
			w.instance, err = e.New(ctx, args)
			if _, ok := w.instance.(checkpointer); err == nil && !ok && e.CheckpointInterval > 0 {
				err = errNoCheckpointer(e, w.instance)
			}
			outs = [][]byte{nil}
		case task.KindActorRestore:
			err = w.restore(ctx, args)
			outs = [][]byte{nil}
		case task.KindActorMethod:
			if w.instance == nil {
				err = errors.New("this worker hosts no actor instance")
			} else {
				outs, err = e.Method(ctx, w.instance, args, w)
			}
		}
		return err
	})
	if err != nil {
		var nested *task.TaskError
		if errors.As(err, &nested) && nested.Worker == "" {
			nested.Worker = w.name
		}
		return nil, &task.TaskError{Function: s.Func, Worker: w.name, Message: err.Error(), Cause: err}
	}
	return outs, nil
}

func (w *Worker) restoreGPUEnv() {
	if w.gpuEnvOK {
		os.Setenv("CUDA_VISIBLE_DEVICES", w.gpuEnv)
	} else {
		os.Unsetenv("CUDA_VISIBLE_DEVICES")
	}
}

// NewTaskID returns the ID of the next task the current task submits.
func (w *Worker) NewTaskID() ids.TaskID {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.subs++
	return ids.Child(w.cur, w.subs)
}

// NewPutID returns the ID of the next object the current task puts.
func (w *Worker) NewPutID() ids.ObjectID {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.puts++
	return ids.Put(w.cur, w.puts)
}

// WorkerName names this worker in error messages.
func (w *Worker) WorkerName() string { return w.name }

// Submit sends a task to the driver. Unregistered names fail here, at once;
// the driver reports every other problem through the task's returns.
func (w *Worker) Submit(s *task.Spec) error {
	if _, err := task.Lookup(s.Func); err != nil {
		te := &task.TaskError{Function: s.Func, Worker: w.name, Message: err.Error(), Cause: err}
		for i := range s.Returns() {
			_ = w.Put(s.Return(i), task.Object{Err: te})
		}
		return err
	}
	if w.direct != nil {
		if sent, err := w.direct.submit(s); sent || err != nil {
			return err
		}
	}
	return w.conn.Send(task.MsgSubmit, func(b []byte) []byte { return task.AppendSpec(b, s) })
}

// Put stores an object in the driver's store.
func (w *Worker) Put(id ids.ObjectID, o task.Object) error {
	return w.conn.Send(task.MsgPut, func(b []byte) []byte {
		b = append(b, id[:]...)
		return task.AppendObject(b, &o)
	})
}

func (w *Worker) request(ctx context.Context, typ byte, fn func([]byte) []byte) ([]byte, error) {
	ch := make(chan []byte, 1)
	w.ensureReader() // the goroutine running tasks may hold the reading role
	w.reqMu.Lock()
	w.nextReq++
	id := w.nextReq
	w.reqs[id] = ch
	w.reqMu.Unlock()
	err := w.conn.Send(typ, func(b []byte) []byte {
		b = wire.AppendUvarint(b, id)
		return fn(b)
	})
	if err != nil {
		return nil, err
	}
	select {
	case p := <-ch:
		return p, nil
	case <-ctx.Done():
		w.reqMu.Lock()
		delete(w.reqs, id)
		w.reqMu.Unlock()
		return nil, ctx.Err()
	}
}

// Get asks the driver for objects, waiting until they exist. While it
// waits, the driver lends this worker's CPUs to other tasks.
func (w *Worker) Get(ctx context.Context, oids []ids.ObjectID) ([]task.Object, error) {
	var out []task.Object
	var err error
	if w.direct != nil && w.direct.anyOwned(oids) {
		out, err = w.direct.get(ctx, oids) // results of direct calls (direct.go)
	} else {
		out, err = w.driverGet(ctx, oids)
	}
	if err != nil {
		return nil, err
	}
	for i := range out {
		if o := &out[i]; o.Shared && o.Err == nil {
			b, err := w.mapObject(oids[i])
			if err != nil {
				return nil, fmt.Errorf("gray: get: %w", err)
			}
			o.Data = b
		}
	}
	return out, nil
}

// driverGet is getObjects for a Get of the program.
func (w *Worker) driverGet(ctx context.Context, oids []ids.ObjectID) ([]task.Object, error) {
	if w.callee.running.Load() {
		w.callee.read.Store(true) // unpinned when the direct call ends
	}
	var out []task.Object
	var err error
	w.blockLeased(func() { out, err = w.getObjects(ctx, oids) }) // lease_callee.go
	return out, err
}

// getObjects asks the driver for objects and returns its answer, shared
// objects not yet mapped (their MsgLocate, if any, came first).
func (w *Worker) getObjects(ctx context.Context, oids []ids.ObjectID) ([]task.Object, error) {
	p, err := w.request(ctx, task.MsgGet, func(b []byte) []byte {
		b = wire.AppendUvarint(b, uint64(len(oids)))
		for _, id := range oids {
			b = append(b, id[:]...)
		}
		return b
	})
	if err != nil {
		return nil, fmt.Errorf("gray: get: %w", err)
	}
	d := wire.Dec{B: p}
	n := d.Count()
	if n != len(oids) {
		return nil, fmt.Errorf("gray: get: the driver returned %d objects for %d IDs", n, len(oids))
	}
	out := make([]task.Object, n)
	for i := range out {
		out[i] = task.DecodeObject(&d)
	}
	if d.Err != nil {
		return nil, fmt.Errorf("gray: get: %w", d.Err)
	}
	return out, nil
}

// openView maps shared object id read-only, pulling it to this node's
// store first when it lives elsewhere.
func (w *Worker) openView(id ids.ObjectID) (*objstore.View, error) {
	if w.reader == nil {
		return nil, fmt.Errorf("object %s is in shared memory but this worker has no object store", id)
	}
	if err := w.ensureLocal(id); err != nil {
		if err = w.refetch(id, err); err != nil {
			return nil, err
		}
	}
	v, err := w.reader.Get(objstore.ID(id.String()))
	if err != nil && errors.Is(err, objstore.ErrNotFound) && w.storeGone() {
		// The node that owns this store died and a node started since
		// removed its folder (objstore.CleanStale). Failing the task here
		// would hand the driver an error it takes for the task's own; dying
		// like the node lets it run the task elsewhere.
		fmt.Fprintf(os.Stderr, "gray worker: this node's object store %s is gone (its node died): exiting\n", w.dir)
		w.exit(3)
	}
	return v, err
}

// storeGone tells whether the node's object store folder no longer exists.
func (w *Worker) storeGone() bool {
	if w.dir == "" {
		return false
	}
	_, err := os.Stat(w.dir)
	return errors.Is(err, fs.ErrNotExist)
}

// mapObject returns the bytes of a shared object the driver pinned for the
// running task. In a task they are the read-only mapping itself, valid
// until the task returns. An actor keeps state across calls, so it gets a
// private copy instead: what it keeps never changes under it, and the
// object can be freed and its pages reused once the call ends.
func (w *Worker) mapObject(id ids.ObjectID) ([]byte, error) {
	v, err := w.openView(id)
	if err != nil {
		return nil, err
	}
	if w.isActor {
		b := codec.AlignedBytes(len(v.Bytes()))
		copy(b, v.Bytes())
		v.Done()
		return b, nil
	}
	w.views = append(w.views, v)
	return v.Bytes(), nil
}

// writeReserved writes a large task result or Put of size bytes into room
// the driver reserves for it (then seals, when told in the result or Put): the driver reuses the pages of freed objects, which a
// file this worker created would have to allocate afresh.
func (w *Worker) writeReserved(id ids.ObjectID, size int, encode func([]byte) error) error {
	if w.reader == nil {
		return errors.New("no shared-memory object store in this session")
	}
	if w.cap > 0 && int64(size) > w.cap {
		return fmt.Errorf("object %s is %d bytes but the object store's capacity is %d; raise gray.Options.ObjectStoreMemory or send a smaller object: %w", id, size, w.cap, objstore.ErrTooLarge)
	}
	p, err := w.request(w.ctx, task.MsgReserve, func(b []byte) []byte {
		b = append(b, id[:]...)
		return wire.AppendUvarint(b, uint64(size))
	})
	if err != nil {
		return fmt.Errorf("reserving room for object %s: %w", id, err)
	}
	d := wire.Dec{B: p}
	status, msg := d.Byte(), d.String()
	if d.Err != nil {
		return fmt.Errorf("reserving room for object %s: malformed reply from the driver: %w", id, d.Err)
	}
	switch status {
	case task.ReserveExists:
		return nil // a lineage rebuild of a task whose other returns survived
	case task.ReserveOK:
	default:
		return fmt.Errorf("storing object %s: %s", id, msg)
	}
	f, err := objstore.OpenReserved(w.dir, objstore.ID(id.String()))
	if err != nil {
		return err
	}
	err = encode(f.Bytes())
	_ = f.Finish()
	return err // the driver seals the object, or drops it if the task fails
}

// PutEncoded stores a large value in the node's shared-memory store.
func (w *Worker) PutEncoded(id ids.ObjectID, size int, encode func([]byte) error) error {
	if w.remote && w.dir != "" {
		if err := w.writeFile(id, size, encode); err != nil {
			return err
		}
		return w.Put(id, task.Object{Shared: true, Size: int64(size)})
	}
	if w.remote {
		b, err := encodeInline(size, encode)
		if err != nil {
			return err
		}
		return w.Put(id, task.Object{Data: b})
	}
	if err := w.writeReserved(id, size, encode); err != nil {
		return err
	}
	return w.Put(id, task.Object{Shared: true, Size: int64(size)})
}

// StoreResult writes return value i of the running task into the store.
func (w *Worker) StoreResult(i int, size int, encode func([]byte) error) error {
	if w.remote && w.dir == "" {
		b, err := encodeInline(size, encode)
		if err != nil {
			return err
		}
		if w.inline == nil {
			w.inline = map[int][]byte{}
		}
		w.inline[i] = b
		return nil
	}
	w.mu.Lock()
	id := ids.Return(w.cur, i)
	w.mu.Unlock()
	write := w.writeReserved
	if w.remote {
		write = w.writeFile
	}
	if err := write(id, size, encode); err != nil {
		return err
	}
	if w.outs == nil {
		w.outs = map[int]int64{}
	}
	w.outs[i] = int64(size)
	return nil
}

// SharedDir returns the store's directory ("" without one).
// On another node than the driver with no store it is "(inline)": large
// values are encoded zero-copy all the same, and sent inline.
func (w *Worker) SharedDir() string {
	if w.callee.running.Load() {
		return "" // a direct call's values go back inline (direct_callee.go)
	}
	if w.remote && w.dir == "" {
		return "(inline)"
	}
	return w.dir
}
