package node

import (
	"errors"
	"strconv"
	"strings"

	"github.com/gray-ml/gray/runtime/ids"
	"github.com/gray-ml/gray/runtime/objstore"
	"github.com/gray-ml/gray/runtime/task"
)

// Objects the node cannot rebuild: each gets a value that says so and why
// (task.ObjectLostError, one of the task.ErrLost reasons).

// MaxRebuilds is how many times in a row rebuilding an object from its
// lineage may fail (its task failed, or its worker died) before the object
// is lost for good (task.ErrLostRetriesExhausted). A rebuild that failed
// for want of room in the object store does not count: it is retried once
// there is room.
const MaxRebuilds = 3

// evictedLost is the value of an evicted object that has no lineage.
func evictedLost(id ids.ObjectID) task.Object {
	reason, detail := task.ErrLostPut, "raise Options.ObjectStoreMemory or keep fewer large objects alive"
	if id.Index() < 1<<31 { // a return value, not a Put: of an actor method
		reason = task.ErrLostActorMethod
		detail = "have the actor keep the value, or " + detail
	}
	return task.Object{Shared: true, Err: task.Lost(id, reason, "it was evicted from the object store; "+detail, objstore.ErrEvicted)}
}

// rebuildFailed records that rebuilding object id failed with o's error
// and returns the value to store: o, to be rebuilt again when next asked
// for, or, after MaxRebuilds failures in a row, the object's loss.
func (n *Node) rebuildFailed(id ids.ObjectID, o task.Object) task.Object {
	if noRoom(o.Err) {
		n.retry[id] = true
		return o
	}
	if n.rebuildFails == nil {
		n.rebuildFails = map[ids.ObjectID]int{}
	}
	n.rebuildFails[id]++
	if k := n.rebuildFails[id]; k < MaxRebuilds {
		n.retry[id] = true
		return o
	}
	delete(n.rebuildFails, id)
	lost := task.Lost(id, task.ErrLostRetriesExhausted,
		"its task failed each of the last "+strconv.Itoa(MaxRebuilds)+" times it was re-run: "+firstLine(o.Err.Error()), o.Err)
	n.ctrl.AddError(lost)
	n.errQ = append(n.errQ, lost)
	return task.Object{Err: lost}
}

// rebuilt forgets the failures of an object rebuilt at last.
func (n *Node) rebuilt(id ids.ObjectID) {
	delete(n.rebuildFails, id)
	n.rebuiltRemote(id)
}

// noRoom reports whether err is the store lacking room, which a later
// rebuild may not meet. A worker's reservation failure crosses as text.
func noRoom(err error) bool {
	return errors.Is(err, objstore.ErrFull) || errors.Is(err, objstore.ErrTooLarge) ||
		strings.Contains(err.Error(), objstore.ErrFull.Error())
}

// failRebuild stores the failure of a rebuild that ended without a result
// (its worker died, an argument failed): the returns it was rebuilding get
// the error, counted as for rebuildFailed; those not evicted keep their
// value.
func (n *Node) failRebuild(s *task.Spec, e *task.TaskError) {
	delete(n.rebuilding, s.ID)
	for i := range max(s.NumReturns, 1) {
		id := s.Return(i)
		if _, ok := n.store.Get(id); ok {
			continue
		}
		o := task.Object{Err: e}
		if n.lineage[id] != nil {
			o = n.rebuildFailed(id, o)
		}
		n.putLocked(id, o)
	}
	if !n.quiet {
		n.ctrl.AddError(e)
		n.errQ = append(n.errQ, e)
	}
}
