package objects

import (
	"github.com/gray-ml/gray/runtime/ids"
	"github.com/gray-ml/gray/runtime/objtable"
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
// of the reference's first owner. The Keeper also counts each worker's
// holds, so that those of a worker that dies are dropped for it.
//
// The claims live in the object table (runtime/objtable): a parent's
// claims on its children are held by the parent (Contained), a worker's
// holds by the worker (Hold).

// Hold records that h (a worker, or the driver as objtable.Holder{})
// decoded references to oids out of a value.
func (k *Keeper[T]) Hold(h objtable.Holder, oids []ids.ObjectID) {
	for _, id := range oids {
		k.objs.Claim(h, id, objtable.Hold)
	}
}

// Drop is a drop by h (a worker, or the driver as objtable.Holder{}) of
// its reference to id.
func (k *Keeper[T]) Drop(h objtable.Holder, id ids.ObjectID) {
	if k.objs.Drop(h, id) {
		k.Free(id)
	}
}

// Contain records that the value of object parent refers to children:
// they are not freed before parent is. Claims add up: a task's first
// return holds the references inside its arguments as well as those
// inside its value. A rebuilt parent claims its children again, which
// keeps them longer, never shorter.
func (k *Keeper[T]) Contain(parent ids.ObjectID, children []ids.ObjectID) {
	h := objtable.ObjectHolder(parent)
	for _, c := range children {
		k.objs.Claim(h, c, objtable.Contained)
	}
}

// Contains reports whether object parent claims references inside it: a
// Contain for it came, and it was not deleted since.
func (k *Keeper[T]) Contains(parent ids.ObjectID) bool {
	return k.objs.Count(objtable.ObjectHolder(parent)) > 0
}

// ReleaseChildren ends the claims of object parent on the references
// inside it: it was deleted, or it is an actor's creation, whose return
// is never stored, ending the claims its constructor's arguments held
// (see gray's holdArgRefs).
func (k *Keeper[T]) ReleaseChildren(parent ids.ObjectID) {
	for _, c := range k.objs.ReleaseHolder(objtable.ObjectHolder(parent)) {
		k.freeIfUnclaimed(c)
	}
}

// freeIfUnclaimed frees id if its owner dropped it and no claim remains.
func (k *Keeper[T]) freeIfUnclaimed(id ids.ObjectID) {
	if k.objs.Dropped(id) && !k.objs.Claimed(id) {
		k.Free(id)
	}
}

// DropHolds makes the drops dead worker h owed for the references it
// decoded and never dropped.
func (k *Keeper[T]) DropHolds(h objtable.Holder) {
	for _, id := range k.objs.ReleaseKind(h, objtable.Hold) {
		k.Drop(objtable.Holder{}, id)
	}
}
