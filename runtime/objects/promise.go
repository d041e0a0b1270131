package objects

import (
	"github.com/gray-ml/gray/runtime/ids"
	"github.com/gray-ml/gray/runtime/task"
)

// Promised objects: a worker that owns the result of a direct call or a
// lease task (runtime/worker/direct_owned.go) may pass a reference to it
// on before the result has arrived in its process; it puts the result
// here when it arrives. Until then the object does not exist here and
// whoever takes it waits for it, as for any object being computed. If the
// worker dies first, the node breaks the promise: the object becomes an
// error.

// Promised reports whether object id is still awaited: not stored, and
// claimed (an argument of a task, a child of a value) or waited for.
func (k *Keeper[T]) Promised(id ids.ObjectID) bool {
	if k.Stored(id) {
		return false
	}
	return k.objs.Claimed(id) || k.waited(id)
}

// Stored reports whether object id is stored.
func (k *Keeper[T]) Stored(id ids.ObjectID) bool {
	_, ok := k.store.Get(id)
	return ok
}

// BreakPromise stores err as object id if it is still awaited: the worker
// that promised to put it died before it did.
func (k *Keeper[T]) BreakPromise(id ids.ObjectID, err *task.TaskError) {
	if k.Promised(id) {
		k.Put(id, task.Object{Err: err})
	}
}
