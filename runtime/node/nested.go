package node

import (
	"github.com/gray-ml/gray/runtime/ids"
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

// nested is the Node's state for references inside values (under n.mu).
type nested struct {
	children  map[ids.ObjectID][]ids.ObjectID // parent -> the objects its value refers to
	contained map[ids.ObjectID]int            // child -> claims of its parents
	held      map[ids.ObjectID]int            // object -> holds by decoded references
}

// Hold records that the driver decoded a reference to id out of a value.
func (n *Node) Hold(id ids.ObjectID) {
	n.mu.Lock()
	if !n.closed {
		n.hold(id)
	}
	n.mu.Unlock()
}

func (n *Node) hold(id ids.ObjectID) {
	if n.nest.held == nil {
		n.nest.held = map[ids.ObjectID]int{}
	}
	n.nest.held[id]++
}

// unhold consumes one hold on id, reporting whether there was one (the
// drop then ends that hold, not the object).
func (n *Node) unhold(id ids.ObjectID) bool {
	c := n.nest.held[id]
	if c == 0 {
		return false
	}
	if c == 1 {
		delete(n.nest.held, id)
	} else {
		n.nest.held[id] = c - 1
	}
	return true
}

// drop is a process's drop of its reference to id.
func (n *Node) drop(id ids.ObjectID) {
	if !n.unhold(id) {
		n.free(id)
	} else if n.nest.held[id] == 0 && n.dropped[id] {
		n.free(id) // the first owner dropped it before this hold was taken
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

func (n *Node) contain(parent ids.ObjectID, children []ids.ObjectID) {
	if n.nest.children == nil {
		n.nest.children = map[ids.ObjectID][]ids.ObjectID{}
		n.nest.contained = map[ids.ObjectID]int{}
	}
	// Claims add up: a task's first return holds the references inside
	// its arguments as well as those inside its value. A rebuilt parent
	// claims its children again, which keeps them longer, never shorter.
	n.nest.children[parent] = append(n.nest.children[parent], children...)
	for _, c := range children {
		n.nest.contained[c]++
	}
}

// releaseChildren ends the claims of deleted object parent.
func (n *Node) releaseChildren(parent ids.ObjectID) {
	cs, ok := n.nest.children[parent]
	if !ok {
		return
	}
	delete(n.nest.children, parent)
	for _, c := range cs {
		n.uncontain(c)
	}
}

// constructed ends the claims an actor's creation task held for its
// constructor: the references inside its arguments (see gray's
// holdArgRefs). Its return object is never stored, so nothing else would.
func (n *Node) constructed(s *task.Spec) {
	n.releaseChildren(s.Return(0))
}

func (n *Node) uncontain(id ids.ObjectID) {
	if c := n.nest.contained[id]; c > 1 {
		n.nest.contained[id] = c - 1
		return
	}
	delete(n.nest.contained, id)
	if n.dropped[id] {
		n.free(id)
	}
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
			for _, id := range list {
				n.hold(id)
				w.hold(id)
			}
		}
	}
	n.unlockFor(w)
	return nil
}

// hold counts a hold by w on id.
func (w *proc) hold(id ids.ObjectID) {
	if w.holds == nil {
		w.holds = map[ids.ObjectID]int{}
	}
	w.holds[id]++
}

// unhold counts w's drop of id against its holds, if it has any: as in
// Node.drop, a drop ends a hold before it ends a first owner's reference.
func (w *proc) unhold(id ids.ObjectID) {
	switch c := w.holds[id]; c {
	case 0:
	case 1:
		delete(w.holds, id)
	default:
		w.holds[id] = c - 1
	}
}

// dropHolds drops the holds a dead worker never dropped.
func (n *Node) dropHolds(w *proc) {
	for id, c := range w.holds {
		for range c {
			n.drop(id)
		}
	}
	w.holds = nil
}
