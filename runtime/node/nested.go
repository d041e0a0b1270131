package node

import (
	"github.com/gray-ml/gray/runtime/ids"
	"github.com/gray-ml/gray/runtime/objtable"
	"github.com/gray-ml/gray/runtime/task"
	"github.com/gray-ml/gray/runtime/wire"
)

// References carried inside values.
//
// An object whose value holds references (a struct field, a slice of
// Refs) keeps each of them: the gray package reports the contained IDs
// when it stores the object, and each child counts one claim per parent
// until the parent is deleted. Objects are immutable and a child exists
// (or is named) before its parent, so there are no cycles. Eviction does
// not delete the store entry, so it releases nothing.
//
// A process that decodes a reference out of a value holds it (Hold) until
// it drops it: every hold is matched by one Drop, on top of the one drop
// of the reference's first owner. The node also counts each worker's
// holds, so that those of a worker that dies are dropped for it.

// The claims live in the node's object table (runtime/objtable): a
// parent's claims on its children are held by the parent (Contained), a
// worker's holds by the worker (Hold).

// Hold records that the driver decoded a reference to id out of a value.
func (n *Node) Hold(id ids.ObjectID) {
	n.mu.Lock()
	if !n.closed {
		n.objs.Claim(objtable.Holder{}, id, objtable.Hold)
	}
	n.mu.Unlock()
}

// drop is a drop by h (a worker, or the driver as objtable.Holder{}) of
// its reference to id.
func (n *Node) drop(h objtable.Holder, id ids.ObjectID) {
	if n.objs.Drop(h, id) {
		n.free(id)
	}
}

// Contain records that the value of object parent refers to children: they
// are not freed before parent is.
func (n *Node) Contain(parent ids.ObjectID, children []ids.ObjectID) {
	n.mu.Lock()
	if !n.closed {
		n.contain(parent, children)
	}
	n.mu.Unlock()
}

// contain adds parent's claims on children. Claims add up: a task's first
// return holds the references inside its arguments as well as those inside
// its value. A rebuilt parent claims its children again, which keeps them
// longer, never shorter.
func (n *Node) contain(parent ids.ObjectID, children []ids.ObjectID) {
	h := objtable.ObjectHolder(parent)
	for _, c := range children {
		n.objs.Claim(h, c, objtable.Contained)
	}
}

// releaseChildren ends the claims of deleted object parent.
func (n *Node) releaseChildren(parent ids.ObjectID) {
	for _, c := range n.objs.ReleaseHolder(objtable.ObjectHolder(parent)) {
		n.freeIfUnclaimed(c)
	}
}

// freeIfUnclaimed frees id if its owner dropped it and no claim remains.
func (n *Node) freeIfUnclaimed(id ids.ObjectID) {
	if n.objs.Dropped(id) && !n.objs.Claimed(id) {
		n.free(id)
	}
}

// constructed ends the claims an actor's creation task held for its
// constructor: the references inside its arguments (see gray's
// holdArgRefs). Its return object is never stored, so nothing else would.
func (n *Node) constructed(s *task.Spec) {
	n.releaseChildren(s.Return(0))
}

// handleNested decodes MsgHold and MsgContain from worker w.
func (n *Node) handleNested(w *proc, typ byte, d *wire.Dec) error {
	var parent ids.ObjectID
	if typ == task.MsgContain {
		d.Fixed(parent[:])
	}
	cnt := d.Count()
	list := make([]ids.ObjectID, cnt)
	for i := range list {
		d.Fixed(list[i][:])
	}
	if d.Err != nil {
		return d.Err
	}
	n.mu.Lock()
	if !n.closed {
		if typ == task.MsgContain {
			n.contain(parent, list)
		} else {
			h := objtable.WorkerHolder(int(w.id))
			for _, id := range list {
				n.objs.Claim(h, id, objtable.Hold)
			}
		}
	}
	n.unlockFor(w)
	return nil
}

// dropHolds makes the drops a dead worker owed for the references it
// decoded and never dropped.
func (n *Node) dropHolds(w *proc) {
	for _, id := range n.objs.ReleaseKind(objtable.WorkerHolder(int(w.id)), objtable.Hold) {
		n.drop(objtable.Holder{}, id)
	}
}
