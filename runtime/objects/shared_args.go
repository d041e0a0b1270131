package objects

import (
	"errors"

	"github.com/gray-ml/gray/runtime/ids"
	"github.com/gray-ml/gray/runtime/objtable"
	"github.com/gray-ml/gray/runtime/task"
)

// Objects an actor keeps (gray.Shared arguments).
//
// An ordinary argument is needed only while its task runs, and an actor's
// worker copies shared-memory arguments so that what it keeps never changes
// under it. A Keep argument is instead read in place for the actor's
// lifetime: before such a call is sent, the actor takes a claim on the
// object (a reference, so it is not freed, and a store pin, so it is not
// evicted and its pages are not reused). The claim ends when the actor
// dies (killed, released, its process gone) or its worker says it released
// the object.

// HoldKept gives actor a a claim on each Keep argument of s that lives in
// shared memory. Called before the call's arguments are resolved, while
// the task's own claims still hold. An argument that cannot be held loses
// its Keep flag, so the worker copies it rather than reading memory nobody
// guards; so does every argument of an actor on another node (remote), which
// gets its own copy.
func (k *Keeper[T]) HoldKept(a ids.ActorID, remote bool, s *task.Spec) {
	for i := range s.Args {
		arg := &s.Args[i]
		if !arg.Keep || !arg.IsRef {
			continue
		}
		if remote {
			arg.Keep = false
			continue
		}
		o, ok := k.store.Get(arg.Ref)
		if !ok || !o.Shared || o.Err != nil || k.shared == nil || k.Pin(objtable.ActorHolder(a), arg.Ref, objtable.ActorKeep) != nil {
			arg.Keep = false
		}
	}
}

// ReleaseKept ends every claim of dead actor a.
func (k *Keeper[T]) ReleaseKept(a ids.ActorID) {
	for _, id := range k.objs.ReleaseHolder(objtable.ActorHolder(a)) {
		if k.closed {
			continue
		}
		_ = k.shared.Unpin(StoreID(id))
		k.freeIfUnclaimed(id)
	}
}

// ReleaseOneKept ends one claim of actor a on id, when the actor's program
// released a gray.Shared.
func (k *Keeper[T]) ReleaseOneKept(a ids.ActorID, id ids.ObjectID) {
	h := objtable.ActorHolder(a)
	if k.closed || !k.objs.Holds(h, id, objtable.ActorKeep) {
		return
	}
	free := k.objs.Release(h, id, objtable.ActorKeep)
	_ = k.shared.Unpin(StoreID(id))
	if free {
		k.Free(id)
	}
}

// KeptBy returns how many claims actor a holds on kept objects.
func (k *Keeper[T]) KeptBy(a ids.ActorID) int { return k.objs.Count(objtable.ActorHolder(a)) }

// Recorded returns how many objects the object table records a claim or
// a pending deletion for (none once everything is freed).
func (k *Keeper[T]) Recorded() int { return k.objs.Len() }

// Check verifies the object table's invariants (see objtable.Table.Check:
// alive says which holders still exist), and that the store holds every
// pin the table records (so nothing pinned can be evicted): in the
// driver's store, and on the other nodes that hold the only copies; and
// that each task waiting for arguments counts them right.
func (k *Keeper[T]) Check(alive func(objtable.Holder) bool) error {
	var pins error
	if k.shared != nil {
		pins = k.objs.CheckPins(func(id ids.ObjectID) int {
			return k.shared.Pins(StoreID(id)) + k.rec.RemotePins(id)
		})
	}
	return errors.Join(pins, k.objs.Check(alive), k.checkArgs())
}
