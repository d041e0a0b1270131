package objects

import (
	"github.com/gray-ml/gray/runtime/ids"
	"github.com/gray-ml/gray/runtime/objtable"
	"github.com/gray-ml/gray/runtime/sched"
	"github.com/gray-ml/gray/runtime/task"
)

// Objects that workers deliver: task results and Puts. A local worker
// writes a shared value into the store itself, either into room reserved
// for it (Reserve, then Reserved) or as a file the driver adopts; a
// worker on another node sends it inline, and the driver copies it into
// its store (AdoptRemote).

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

// Delivered returns what to store as object id, which worker h (named
// name, on node n) delivered as o: sealed in the room reserved for it,
// copied from the message of a worker on another node, or adopted from
// the store the worker wrote it into. A failure (no room, say) becomes
// the object's value.
func (k *Keeper[T]) Delivered(h objtable.Holder, name string, n NodeID, id ids.ObjectID, o task.Object) task.Object {
	if r := k.reserved[h]; r[id] {
		delete(r, id)
		return k.Seal(id, o, name)
	}
	if n != sched.Local {
		return k.AdoptRemote(id, o, n)
	}
	return k.Adopt(id, o, name)
}

// PutFrom stores object id that a task of worker h (named name, on node
// n) put, unless it exists already (a task run again puts again).
func (k *Keeper[T]) PutFrom(h objtable.Holder, name string, n NodeID, id ids.ObjectID, o task.Object) {
	_, exists := k.store.Get(id)
	if exists && !k.reserved[h][id] {
		return
	}
	o = k.Delivered(h, name, n, id, o)
	if !exists {
		k.Put(id, o)
	}
}
