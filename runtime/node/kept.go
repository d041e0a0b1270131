package node

import (
	"slices"

	"github.com/gray-ml/gray/runtime/ids"
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
		o, ok := n.store.Get(arg.Ref)
		if !ok || !o.Shared || o.Err != nil || n.shared == nil || n.shared.Pin(storeID(arg.Ref)) != nil {
			arg.Keep = false
			continue
		}
		n.pins[arg.Ref]++
		a.kept = append(a.kept, arg.Ref)
	}
}

// releaseKept ends every claim of a dead actor.
func (n *Node) releaseKept(a *actor) {
	kept := a.kept
	a.kept = nil
	for _, id := range kept {
		n.dropKept(id)
	}
}

// releaseOneKept ends one claim of w's actor on id, when the actor's
// program released a gray.Shared.
func (n *Node) releaseOneKept(w *proc, id ids.ObjectID) {
	a := w.actor
	if a == nil || n.closed {
		return
	}
	i := slices.Index(a.kept, id)
	if i < 0 {
		return
	}
	a.kept = slices.Delete(a.kept, i, i+1)
	n.dropKept(id)
}

func (n *Node) dropKept(id ids.ObjectID) {
	if n.closed {
		return
	}
	_ = n.shared.Unpin(storeID(id))
	n.unpin(id)
}

// KeptBy returns how many claims the actor id holds on kept objects (for
// tests).
func (n *Node) KeptBy(id ids.ActorID) int {
	n.mu.Lock()
	defer n.mu.Unlock()
	if a := n.actors[id]; a != nil {
		return len(a.kept)
	}
	return 0
}
