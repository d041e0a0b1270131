package objects

import (
	"fmt"

	"github.com/gray-ml/gray/runtime/ids"
	"github.com/gray-ml/gray/runtime/task"
)

// Tasks waiting for their arguments. A task whose reference arguments do
// not all exist yet waits, per missing object, in the Keeper's table;
// each Put of one of them counts it down, pins the argument for it, and
// once none is missing hands the task back (Tasks.Ready). An argument
// that exists as an error (a failed task's result, a lost Put, a freed
// object) is the task's failure, which the node reports instead of
// running it (ArgWait.Failed).

// ArgWait is a task's wait for its arguments. The node's task holds one
// (Task.Args); only the Keeper changes it.
type ArgWait struct {
	missing int32           // reference arguments not yet stored
	failed  *task.TaskError // the first argument stored as an error
}

// Waiting reports whether the task waits for an argument.
func (w *ArgWait) Waiting() bool { return w.missing > 0 }

// Failed returns the error of the task's first failed argument, or nil.
func (w *ArgWait) Failed() *task.TaskError { return w.failed }

// Failure is the failure of task fn (its function, actor type or method)
// when an argument failed (Failed): it runs no more, and says which
// failure of which task it inherits in one line; the argument's own error
// stays its cause, stack and all.
func (w *ArgWait) Failure(fn string) *task.TaskError {
	return &task.TaskError{
		Function: fn,
		Message:  "an argument failed: " + task.FirstLine(w.failed.Error()),
		Cause:    w.failed,
	}
}

// fail records err (nil: none) as the task's failure unless one was.
func (w *ArgWait) fail(err *task.TaskError) {
	if err != nil && w.failed == nil {
		w.failed = err
	}
}

// argWaiter is one task waiting for one object: the task and its ID (to
// pin the argument for it once stored).
type argWaiter[T Task] struct {
	t  T
	id ids.TaskID
}

// NeedArgs claims the reference arguments of task t (its spec s) for it
// (Need) and makes t wait for those that do not exist yet; it reports
// whether t waits. t is handed back (Tasks.Ready) once the last arrives.
func (k *Keeper[T]) NeedArgs(t T, s *task.Spec) bool {
	w := t.Args()
	for i := range s.Args {
		a := &s.Args[i]
		if !a.IsRef {
			continue
		}
		if o, ok := k.Need(s.ID, a.Ref); ok {
			w.fail(o.Err)
			continue
		}
		k.wait(t, s.ID, a.Ref)
	}
	return w.missing > 0
}

// ArgsLost reports whether a reference argument of task t (spec s), about
// to be sent to a worker, was lost since t got it (on a cluster: its only
// holder died while t was queued). Have starts rebuilding each such
// argument and t waits for it again as at NeedArgs (its claims and pins
// are still held); one lost for good (a Put) is t's failure.
func (k *Keeper[T]) ArgsLost(t T, s *task.Spec) bool {
	if k.remote == nil {
		return false
	}
	w := t.Args()
	for _, a := range s.Args {
		if !a.IsRef {
			continue
		}
		if o, ok := k.Have(a.Ref); ok {
			w.fail(o.Err)
		} else {
			k.wait(t, s.ID, a.Ref)
		}
	}
	return w.missing > 0 || w.failed != nil
}

// Refetch prepares task t (spec s as sent, orig as submitted), which is
// to run again, when a shared argument it was sent is held by no store
// any more (or always, with force): its pins end and its arguments are
// claimed again as submitted (NeedArgs), so the lost ones are rebuilt
// first. It reports whether it took t over: t then waits for its
// arguments (or has them: the caller readies it unless it waits), or
// failed, with the error returned, because an argument was lost and freed
// since, so it cannot be rebuilt.
func (k *Keeper[T]) Refetch(t T, s, orig *task.Spec, force bool) (bool, *task.TaskError) {
	if k.remote == nil || orig == nil || orig == s || !force && !k.ArgsGone(s) {
		return false, nil
	}
	k.UnpinTask(s.ID)
	for _, a := range orig.Args {
		if _, ok := k.store.Get(a.Ref); a.IsRef && !ok {
			return true, &task.TaskError{Function: s.Func, Message: "argument " + a.Ref.String() + " was lost with its node and freed since; it cannot be rebuilt",
				Cause: task.Lost(a.Ref, task.ErrLostLineageDropped, "", nil)}
		}
	}
	s.Args = append(s.Args[:0], orig.Args...)
	*t.Args() = ArgWait{}
	k.NeedArgs(t, s)
	return true, nil
}

// wait makes task t (ID id) wait for object oid.
func (k *Keeper[T]) wait(t T, id ids.TaskID, oid ids.ObjectID) {
	t.Args().missing++
	k.waiters[oid] = append(k.waiters[oid], argWaiter[T]{t: t, id: id})
}

// waited reports whether a task, a Get or a Wait waits for object id.
func (k *Keeper[T]) waited(id ids.ObjectID) bool {
	return len(k.waiters[id]) > 0 || k.tasks.Waited(id)
}

// wake counts object id, stored as o, off every task waiting for it,
// pinning it for each, and hands back those that wait no more.
func (k *Keeper[T]) wake(id ids.ObjectID, o task.Object) {
	ws, ok := k.waiters[id]
	if !ok {
		return
	}
	delete(k.waiters, id)
	for _, x := range ws {
		w := x.t.Args()
		w.fail(o.Err)
		w.missing--
		k.PinArg(x.id, id, o)
		if w.missing == 0 {
			k.tasks.Ready(x.t)
		}
	}
}

// EachWaiting calls fn once for every task waiting for an argument.
func (k *Keeper[T]) EachWaiting(fn func(T)) {
	seen := map[T]bool{}
	for _, ws := range k.waiters {
		for _, x := range ws {
			if !seen[x.t] {
				seen[x.t] = true
				fn(x.t)
			}
		}
	}
}

// checkArgs verifies that every waiting task waits once per missing
// argument.
func (k *Keeper[T]) checkArgs() error {
	count := map[T]int32{}
	for _, ws := range k.waiters {
		for _, x := range ws {
			count[x.t]++
		}
	}
	for t, c := range count {
		if m := t.Args().missing; m != c {
			return fmt.Errorf("objects: a task waits for %d objects but counts %d missing", c, m)
		}
	}
	return nil
}
