package node

import (
	"errors"

	"github.com/gray-ml/gray/runtime/ids"
	"github.com/gray-ml/gray/runtime/objtable"
	"github.com/gray-ml/gray/runtime/sched"
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

// holdKept gives actor a a claim on each Keep argument of s that lives in
// shared memory. Called under n.mu before resolveArgs, while the task's
// own claims still hold. An argument that cannot be held loses its Keep
// flag, so the worker copies it rather than reading memory nobody guards.
func (n *Node) holdKept(a *actor, s *task.Spec) {
	for i := range s.Args {
		arg := &s.Args[i]
		if !arg.Keep || !arg.IsRef {
			continue
		}
		if a.w != nil && a.w.node != sched.Local {
			arg.Keep = false // it gets its own copy
			continue
		}
		o, ok := n.store.Get(arg.Ref)
		if !ok || !o.Shared || o.Err != nil || n.shared == nil || n.pin(objtable.ActorHolder(a.id), arg.Ref, objtable.ActorKeep) != nil {
			arg.Keep = false
		}
	}
}

// releaseKept ends every claim of a dead actor.
func (n *Node) releaseKept(a *actor) {
	for _, id := range n.objs.ReleaseHolder(objtable.ActorHolder(a.id)) {
		if n.closed {
			continue
		}
		_ = n.shared.Unpin(storeID(id))
		n.freeIfUnclaimed(id)
	}
}

// releaseOneKept ends one claim of w's actor on id, when the actor's
// program released a gray.Shared.
func (n *Node) releaseOneKept(w *proc, id ids.ObjectID) {
	a := w.actor
	if a == nil || n.closed {
		return
	}
	h := objtable.ActorHolder(a.id)
	if !n.objs.Holds(h, id, objtable.ActorKeep) {
		return
	}
	free := n.objs.Release(h, id, objtable.ActorKeep)
	_ = n.shared.Unpin(storeID(id))
	if free {
		n.free(id)
	}
}

// KeptBy returns how many claims the actor id holds on kept objects (for
// tests).
func (n *Node) KeptBy(id ids.ActorID) int {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.objs.Count(objtable.ActorHolder(id))
}

// Check verifies the object table's invariants (see objtable.Table.Check):
// no negative count, no release without a claim (nothing unpinned twice), no
// claim or pin held by a worker or an actor that is gone, and every pin the
// table records held by the store (so nothing pinned can be evicted); and
// the Get/Wait matching's invariants (sched.Waits.Check); and on a cluster
// no run count kept for a task that ended (checkRetries). A
// task's argument pins end with the task; Recorded counts them until then.
// Tests call it.
func (n *Node) Check() error {
	n.mu.Lock()
	defer n.mu.Unlock()
	var pins error
	if n.shared != nil {
		pins = n.objs.CheckPins(n.storePins)
	}
	return errors.Join(pins, n.waits.Check(), n.checkRetries(), n.objs.Check(func(h objtable.Holder) bool {
		switch h.Kind {
		case objtable.Worker:
			for id, w := range n.workers {
				if objtable.WorkerHolder(int(id)) == h {
					return !w.dead
				}
			}
			return false
		case objtable.Actor:
			for id, a := range n.actors {
				if objtable.ActorHolder(id) == h {
					return !a.dead
				}
			}
			return false
		}
		return true // objects hold their children until they are deleted; tasks their arguments until they end
	}))
}

// Recorded returns how many objects the object table records a claim or a
// pending deletion for (for tests: none once everything is freed).
func (n *Node) Recorded() int {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.objs.Len()
}

// storePins counts the store pins of object id: in the driver's store, and
// on the other nodes that hold the only copies (pinRemote).
func (n *Node) storePins(id ids.ObjectID) int {
	c := n.shared.Pins(storeID(id))
	if n.objects() != nil {
		c += n.rec.RemotePins(id)
	}
	return c
}
