// Package objects is the driver's object side: the store's index and its
// shared-memory pages, who holds which object and why (runtime/objtable),
// what is rebuilt or lost when an object goes missing (the object effects
// of runtime/recovery), the objects actors keep, references inside
// values, and on a cluster which nodes hold which objects, the driver's
// transfer server and its pulls.
//
// The node (runtime/node) owns a Keeper and calls it under its own lock,
// as it calls the pure cores: on an event (a result stored, an argument
// needed, a reference dropped, a worker or a node gone) it asks the
// Keeper, which decides with objtable and recovery, carries out what
// concerns objects, and hands what concerns tasks and workers back
// through the small Tasks interface (wake what waits for an object,
// resubmit a lineage, run a task again, report a failure). The Keeper
// itself never looks at a task, a worker or a socket: its tests
// (keeper_test.go) drive it with tables of events and no process.
package objects

import (
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/gray-ml/gray/runtime/ids"
	"github.com/gray-ml/gray/runtime/objstore"
	"github.com/gray-ml/gray/runtime/objtable"
	"github.com/gray-ml/gray/runtime/recovery"
	"github.com/gray-ml/gray/runtime/task"
)

// Task is the node's task as the Keeper sees it: a comparable handle
// (the node's *pending) carrying its wait for its arguments (args.go).
type Task interface {
	comparable
	Args() *ArgWait
}

// Tasks is what the Keeper asks of the node that owns it. Its methods are
// called under the node's lock, from inside the Keeper's own calls.
type Tasks[T Task] interface {
	// Waited reports whether a Get or a Wait waits for object id (it is
	// not freed before it is stored).
	Waited(id ids.ObjectID) bool
	// Stored wakes the Gets and Waits waiting for id, stored now as o.
	Stored(id ids.ObjectID, o task.Object)
	// Ready hands back task t, which waited for its arguments (NeedArgs,
	// ArgsLost) and has them all now; one that failed says so
	// (ArgWait.Failed).
	Ready(t T)
	// Apply carries out an effect of the recovery core on tasks or
	// workers: GiveUp (report it), Resubmit, Rerun, Fail, StopSpawning,
	// DropNode.
	Apply(e recovery.Effect[T])
}

// Config is what a Keeper works on; every field but Shared must be set.
type Config[T Task] struct {
	Store  Store           // the index of the driver's objects
	Shared *objstore.Store // the shared-memory store; nil: every object inline
	Table  *objtable.Table
	Rec    *recovery.Core[T]
	Tasks  Tasks[T]
	// Lock and Unlock take and release the node's lock, for the
	// Keeper's own goroutines (pulls) and the API's calls.
	Lock, Unlock func()
}

// Keeper keeps the driver's objects. It is guarded by the node's lock
// (Config.Lock), except where a method says otherwise.
type Keeper[T Task] struct {
	store  Store
	shared *objstore.Store
	objs   *objtable.Table
	rec    *recovery.Core[T]
	tasks  Tasks[T]
	lock   func()
	unlock func()

	waiters  map[ids.ObjectID][]argWaiter[T]           // tasks waiting for their arguments (args.go)
	reserved map[objtable.Holder]map[ids.ObjectID]bool // room reserved for results workers write (results.go)

	sinceGC atomic.Int64 // bytes put into shared memory since the last collection (Write)
	remote  *remote      // nil outside a cluster (transfer.go)
	closed  bool
	wg      sync.WaitGroup // the transfer server and the pulls
}

// New returns a Keeper over cfg's store, table and recovery core.
func New[T Task](cfg Config[T]) *Keeper[T] {
	return &Keeper[T]{store: cfg.Store, shared: cfg.Shared, objs: cfg.Table, rec: cfg.Rec, tasks: cfg.Tasks, lock: cfg.Lock, unlock: cfg.Unlock,
		waiters: map[ids.ObjectID][]argWaiter[T]{}}
}

// StoreID is object id's name in the shared-memory store.
func StoreID(id ids.ObjectID) objstore.ID { return objstore.ID(id.String()) }

// local reports whether the driver's shared-memory store holds id.
func (k *Keeper[T]) local(id ids.ObjectID) bool {
	return k.shared != nil && k.shared.Contains(StoreID(id))
}

// Have returns the object id if it is readable now. A shared object that
// was evicted is not: it is rebuilt from its lineage (and waited for like
// any object being computed), or, when it cannot be, replaced by an error
// saying why.
func (k *Keeper[T]) Have(id ids.ObjectID) (task.Object, bool) {
	if k.rec.Retry(id) {
		// The last rebuild failed (the store was full of pinned objects,
		// say): that error answered the requests waiting then, but the
		// object can still be made, so a new request tries again.
		return k.rebuild(id)
	}
	o, ok := k.store.Get(id)
	if !ok || !o.Shared || o.Err != nil || k.shared.Contains(StoreID(id)) || k.rec.HasRemote(id) {
		return o, ok
	}
	return k.rebuild(id)
}

// rebuild re-runs the task that made the evicted object id (the recovery
// core decides): it returns the object's loss when it cannot be rebuilt,
// else false (it is being computed).
func (k *Keeper[T]) rebuild(id ids.ObjectID) (task.Object, bool) {
	for _, e := range k.Recover(recovery.Missing{ID: id}) {
		if e.Kind == recovery.Replace && e.ID == id {
			return e.Object, true
		}
	}
	return task.Object{}, false
}

// Need claims object id for a task not sent yet (objtable.TaskArg) and
// returns it as Have does; a readable shared one is pinned for the task
// t (objtable.ArgPin) until UnpinTask.
func (k *Keeper[T]) Need(t ids.TaskID, id ids.ObjectID) (task.Object, bool) {
	k.objs.Claim(objtable.Holder{}, id, objtable.TaskArg)
	o, ok := k.Have(id)
	if ok {
		k.PinArg(t, id, o)
	}
	return o, ok
}

// PinArg pins task t's shared-memory argument id, stored as o, in the
// store until t ends (an objtable.ArgPin held by the task).
func (k *Keeper[T]) PinArg(t ids.TaskID, id ids.ObjectID, o task.Object) {
	if o.Shared && o.Err == nil {
		_ = k.Pin(objtable.TaskHolder(t), id, objtable.ArgPin)
	}
}

// Pin pins shared object id for h, recording it in the object table as a
// claim of pin kind kind: in the driver's store, or, for an object only
// other nodes hold, their copies (pinRemote).
func (k *Keeper[T]) Pin(h objtable.Holder, id ids.ObjectID, kind objtable.Kind) error {
	if err := k.shared.Pin(StoreID(id)); err != nil && !k.pinRemote(id) {
		return err
	}
	k.objs.Claim(h, id, kind)
	return nil
}

// UnpinOne undoes one Pin.
func (k *Keeper[T]) UnpinOne(h objtable.Holder, id ids.ObjectID, kind objtable.Kind) {
	k.objs.Release(h, id, kind)
	k.unpinStore(id)
}

// UnpinAll undoes every pin of kind kind that h holds.
func (k *Keeper[T]) UnpinAll(h objtable.Holder, kind objtable.Kind) {
	for _, id := range k.objs.ReleaseKind(h, kind) {
		k.unpinStore(id)
	}
}

// UnpinTask undoes the pins of task t's arguments, when it ends.
func (k *Keeper[T]) UnpinTask(t ids.TaskID) { k.UnpinAll(objtable.TaskHolder(t), objtable.ArgPin) }

// unpinStore ends one store pin of id.
func (k *Keeper[T]) unpinStore(id ids.ObjectID) {
	if !k.unpinRemote(id) {
		_ = k.shared.Unpin(StoreID(id))
	}
}

// Sent ends a task's TaskArg claim on id, once it was sent (or ended
// without running), freeing the object if the program has dropped it too.
func (k *Keeper[T]) Sent(id ids.ObjectID) {
	if k.objs.Release(objtable.Holder{}, id, objtable.TaskArg) {
		k.Free(id)
	}
}

// Free deletes an object nobody can ask for any more. One still being
// computed, or waited for, is deleted when it arrives.
func (k *Keeper[T]) Free(id ids.ObjectID) {
	if k.objs.Claimed(id) || k.waited(id) {
		k.objs.MarkDropped(id)
		return
	}
	o, ok := k.store.Get(id)
	if !ok {
		k.objs.MarkDropped(id)
		return
	}
	k.objs.Forget(id)
	k.store.Delete(id)
	k.ReleaseChildren(id)
	if !o.Shared {
		k.rec.Step(recovery.Freed{ID: id}) // no effect for an inline object
		return
	}
	// The store frees the memory at once, or when the last task or Get
	// still reading it unpins it.
	if k.objs.Claims(id, objtable.DriverPin) > 0 {
		k.UnpinOne(objtable.Holder{}, id, objtable.DriverPin)
	}
	_ = k.shared.Release(StoreID(id))
	k.Recover(recovery.Freed{ID: id, Shared: true})
}

// FreeNow releases an object the program promised not to use again
// (gray.Free): at once unless a queued or running task still takes it,
// leaving under its ID a small error saying it was freed, so a later Get
// fails clearly instead of waiting forever.
func (k *Keeper[T]) FreeNow(id ids.ObjectID) {
	if o, ok := k.store.Get(id); ok && o.Err != nil && errors.Is(o.Err, task.ErrFreed) {
		return // freed before
	}
	k.Free(id)
	if _, ok := k.store.Get(id); ok || k.objs.Dropped(id) {
		return // still needed by a task: freed when it ends
	}
	k.store.Put(id, task.Object{Err: &task.TaskError{
		Function: "(object store)",
		Message:  fmt.Sprintf("object %s was freed with gray.Free; do not use a reference after freeing it", id),
		Cause:    task.ErrFreed,
	}})
}

// Put stores object id, wakes what waits for it (Gets and Waits through
// Tasks.Stored, then tasks waiting for their arguments) and frees it at
// once if its owner dropped it before it existed.
func (k *Keeper[T]) Put(id ids.ObjectID, o task.Object) {
	k.store.Put(id, o)
	dropped := k.objs.Dropped(id)
	k.tasks.Stored(id, o)
	k.wake(id, o)
	if dropped {
		k.Free(id)
	}
}

// Adopt records a shared object that a worker (named worker) wrote and
// sealed; a failure (no room, say) becomes the object's value.
func (k *Keeper[T]) Adopt(id ids.ObjectID, o task.Object, worker string) task.Object {
	if !o.Shared || o.Err != nil {
		return o
	}
	if k.shared == nil {
		return task.Object{Err: &task.TaskError{Function: "(object store)", Worker: worker, Message: "a worker wrote a shared object but the session has no object store"}}
	}
	err := k.shared.Adopt(StoreID(id))
	if err == nil || (errors.Is(err, objstore.ErrExists) && k.shared.Contains(StoreID(id))) {
		return o
	}
	return storeErr(id, worker, err)
}

// Seal seals a task result that a worker wrote into room reserved for it
// (Reserve), or drops the room if the task failed instead.
func (k *Keeper[T]) Seal(id ids.ObjectID, o task.Object, worker string) task.Object {
	if !o.Shared || o.Err != nil {
		k.Abort(id)
		return o
	}
	if err := k.shared.Seal(StoreID(id)); err != nil {
		return storeErr(id, worker, err)
	}
	return o
}

func storeErr(id ids.ObjectID, worker string, err error) task.Object {
	return task.Object{Err: &task.TaskError{Function: "(object store)", Worker: worker, Message: fmt.Sprintf("storing object %s: %v", id, err), Cause: err}}
}

// Abort drops room reserved for a result that was not delivered.
func (k *Keeper[T]) Abort(id ids.ObjectID) { _ = k.shared.Abort(StoreID(id)) }

// Reserve makes room in the shared-memory store for a task result of size
// bytes that a worker is about to write, reusing the pages of freed
// objects, and says how it went (task.ReserveOK, ReserveExists or
// ReserveFailed with why). It needs no lock (the store has its own), and
// is called without the node's: allocating fresh pages can take a while.
func (k *Keeper[T]) Reserve(id ids.ObjectID, size int64) (status byte, why string) {
	var err error
	if k.shared == nil {
		err = errors.New("the session has no shared-memory object store")
	} else {
		err = k.shared.Reserve(StoreID(id), size)
	}
	switch {
	case err == nil:
		return task.ReserveOK, ""
	case errors.Is(err, objstore.ErrExists) && k.shared.Contains(StoreID(id)):
		return task.ReserveExists, ""
	}
	return task.ReserveFailed, err.Error()
}

// Write creates object id of size bytes in the shared-memory store and
// encodes its value straight into its pages; the caller then Puts it. It
// needs no lock (the store has its own) and is called without the node's.
func (k *Keeper[T]) Write(id ids.ObjectID, size int, encode func([]byte) error) error {
	if k.shared == nil {
		return errors.New("gray: no shared-memory object store in this session")
	}
	w, err := k.shared.Create(StoreID(id), int64(size))
	if err != nil {
		return err
	}
	if err := encode(w.Bytes()); err != nil {
		_ = w.Abort()
		return err
	}
	if err := w.Seal(); err != nil {
		return err
	}
	// Shared memory is invisible to Go's GC pacer: a program that puts and
	// drops large objects would grow the store (and allocate fresh pages)
	// long before a collection runs the dropped Refs' cleanups. Collect
	// after every 1/64 of the capacity put (at least gcEvery), so that
	// freed pages get reused while they are still kept as spares: filling
	// fresh pages is several times slower than a collection of a heap
	// whose large arrays hold no pointers. gray.Free avoids the wait.
	if k.sinceGC.Add(int64(size)) > max(k.shared.Capacity()/64, gcEvery) {
		k.sinceGC.Store(0)
		runtime.GC()
	}
	return nil
}

// gcEvery is the fewest bytes put into shared memory between the garbage
// collections Write forces.
const gcEvery = 32 << 20
