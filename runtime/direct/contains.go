package direct

import "github.com/gray-ml/gray/runtime/ids"

// Late contains. A direct call's callee whose return value holds
// references declares them on its own connection to the driver
// (MsgContain: the result claims its children), while the caller puts the
// result on its connection when it arrives, and may drop it at once. The
// driver reads the two connections apart, so the caller's put and drop
// can come before the callee's contain: the children would then be
// claimed by a result already freed, and never released (a leak).
//
// So the caller, after such a put, says it published a result whose
// contain may still be on its way (Published). If that contain has not
// come, the table awaits it; when it comes after the result was freed,
// its children are not claimed (Contain without a Claim effect). Awaited
// contains are swept as promises are, so a return that holds no
// references (no contain ever comes for it) costs nothing for long.

// Published: a caller put Object, the result of a direct call whose
// values hold references; the callee's contain for it may not have come.
type Published struct{ Object ids.ObjectID }

// Contain: a worker says object Parent's value holds references to
// Children. Effect: Claim, unless Parent was published by a direct caller
// and freed before this came.
type Contain struct {
	Parent   ids.ObjectID
	Children []ids.ObjectID
}

func (Published) event() {}
func (Contain) event()   {}

// awaited are the published results whose contain has not come, each
// with the number of sweeps made before it was published.
type awaited struct {
	ids     map[ids.ObjectID]int
	sweeps  int
	sweepAt int
}

// published records that the contain of object id may still come.
func (t *Table[W, T]) published(id ids.ObjectID) {
	if t.objs.Contains(id) {
		return // it came first, as it usually does
	}
	a := &t.awaited
	if a.ids == nil {
		a.ids, a.sweepAt = map[ids.ObjectID]int{}, minSweep
	}
	a.ids[id] = a.sweeps
	if len(a.ids) < a.sweepAt {
		return
	}
	// Those from before the last sweep go once freed or contained: the
	// race is one message in flight, long over by then.
	for x, at := range a.ids {
		if at < a.sweeps && (!t.objs.Stored(x) || t.objs.Contains(x)) {
			delete(a.ids, x)
		}
	}
	a.sweeps++
	a.sweepAt = max(minSweep, 2*len(a.ids))
}

// contain decides whether a contain's children are claimed.
func (t *Table[W, T]) contain(e Contain) {
	if _, late := t.awaited.ids[e.Parent]; late {
		delete(t.awaited.ids, e.Parent)
		if !t.objs.Stored(e.Parent) {
			return // freed before its contain came: nothing holds the children
		}
	}
	t.effects = append(t.effects, Effect[W, T]{Kind: Claim, Object: e.Parent, Children: e.Children})
}
