package objects

import (
	"github.com/gray-ml/gray/runtime/ids"
	"github.com/gray-ml/gray/runtime/objtable"
	"github.com/gray-ml/gray/runtime/recovery"
	"github.com/gray-ml/gray/runtime/sched"
	"github.com/gray-ml/gray/runtime/task"
)

// Objects that workers deliver: task results and Puts. A local worker
// writes a shared value into the store itself, either into room reserved
// for it (Reserve, then Reserved) or as a file the driver adopts; a
// worker on another node sends it inline, and the driver copies it into
// its store (AdoptRemote).

// Worker is a worker that delivers objects: its holder in the object
// table, its name for messages, and its node.
type Worker struct {
	Holder objtable.Holder
	Name   string
	Node   NodeID
}

// Results stores what task t (spec s) returned on worker w: objs, one per
// return (for an actor's creation, only its failure counts). lineage is
// s as submitted for a function task, else nil. A return that exists
// already stays: one not evicted, or one an earlier run of the same task
// stored (a task submitted again by a call run a second time). It reports
// the first failure among them.
func (k *Keeper[T]) Results(t T, s, lineage *task.Spec, w Worker, objs []task.Object) *task.TaskError {
	rebuilt := k.rec.Rebuilding(s.ID)
	k.rec.Step(recovery.Ended[T]{Task: t, ID: s.ID})
	var failed *task.TaskError
	for i, o := range objs {
		if s.Kind == task.KindActorCreate {
			if o.Err != nil && failed == nil {
				failed = o.Err
			}
			continue
		}
		id := s.Return(i)
		if _, exists := k.store.Get(id); exists && (rebuilt || s.Kind == task.KindFunc) {
			continue
		}
		o = k.Delivered(w, id, o)
		if o.Err != nil && failed == nil {
			failed = o.Err
		}
		// A rebuilt object was made once. If this attempt failed (no room
		// in the store, say), the error answers who waits now and the next
		// request rebuilds it again (see Have), up to a point (lost.go).
		k.Put(id, k.Result(id, lineage, o, rebuilt))
	}
	return failed
}

// Reserved records that worker h is writing result id into room reserved
// for it (Reserve answered task.ReserveOK).
func (k *Keeper[T]) Reserved(h objtable.Holder, id ids.ObjectID) {
	if k.reserved == nil {
		k.reserved = map[objtable.Holder]map[ids.ObjectID]bool{}
	}
	if k.reserved[h] == nil {
		k.reserved[h] = map[ids.ObjectID]bool{}
	}
	k.reserved[h][id] = true
}

// AbortReserved drops the room reserved for worker h's results that were
// not delivered (its task failed or ended without them, or it died).
func (k *Keeper[T]) AbortReserved(h objtable.Holder) {
	for id := range k.reserved[h] {
		k.Abort(id)
	}
	delete(k.reserved, h)
}

// Delivered returns what to store as object id, which worker w delivered
// as o: sealed in the room reserved for it, copied from the message of a
// worker on another node, or adopted from the store the worker wrote it
// into. A failure (no room, say) becomes the object's value.
func (k *Keeper[T]) Delivered(w Worker, id ids.ObjectID, o task.Object) task.Object {
	if r := k.reserved[w.Holder]; r[id] {
		delete(r, id)
		return k.Seal(id, o, w.Name)
	}
	if w.Node != sched.Local {
		return k.AdoptRemote(id, o, w.Node)
	}
	return k.Adopt(id, o, w.Name)
}

// PutFrom stores object id that a task of worker w put, unless it exists
// already (a task run again puts again).
func (k *Keeper[T]) PutFrom(w Worker, id ids.ObjectID, o task.Object) {
	_, exists := k.store.Get(id)
	if exists && !k.reserved[w.Holder][id] {
		return
	}
	o = k.Delivered(w, id, o)
	if !exists {
		k.Put(id, o)
	}
}

// WorkerGone ends what worker h, which died, held: its task's read pins,
// the room reserved for its results, its holds on references it decoded.
func (k *Keeper[T]) WorkerGone(h objtable.Holder) {
	if k.shared != nil {
		k.UnpinAll(h, objtable.ReadPin)
		k.AbortReserved(h)
	}
	k.DropHolds(h)
}
