package direct

import (
	"bytes"
	"maps"
	"slices"

	"github.com/gray-ml/gray/runtime/ids"
)

// promises are the objects a worker promised to put, each with the number
// of sweeps made before its promise came.
type promises struct {
	ids     map[ids.ObjectID]int
	sweeps  int
	sweepAt int // len(ids) that starts the next sweep
}

// minSweep is the fewest promises a worker keeps before they are swept.
const minSweep = 64

// promise records (on) or withdraws w's promise to put object id. Kept
// promises are swept once their count doubles, so they cost nothing per
// call: those put since go, and those no longer awaited and older than
// the last sweep (a promise precedes the message that claims the object,
// so a new one may be unclaimed yet).
func (t *Table[W, T]) promise(w W, id ids.ObjectID, on bool) {
	ps := t.promised[w]
	if !on {
		if ps != nil {
			delete(ps.ids, id)
		}
		return
	}
	if t.ws.Dead(w) {
		return
	}
	if ps == nil {
		ps = &promises{ids: map[ids.ObjectID]int{}, sweepAt: minSweep}
		t.promised[w] = ps
	}
	ps.ids[id] = ps.sweeps
	if len(ps.ids) < ps.sweepAt {
		return
	}
	for x, at := range ps.ids {
		if at < ps.sweeps && !t.objs.Promised(x) || t.objs.Stored(x) {
			delete(ps.ids, x)
		}
	}
	ps.sweeps++
	ps.sweepAt = max(minSweep, 2*len(ps.ids))
}

// breakPromises breaks the promises of w, whose process ended.
func (t *Table[W, T]) breakPromises(w W) {
	ps := t.promised[w]
	if ps == nil {
		return
	}
	delete(t.promised, w)
	// In ID order: a death is rare, and its effects read the same twice.
	for _, id := range slices.SortedFunc(maps.Keys(ps.ids), func(a, b ids.ObjectID) int { return bytes.Compare(a[:], b[:]) }) {
		t.effects = append(t.effects, Effect[W, T]{Kind: Break, To: w, Object: id})
	}
}
