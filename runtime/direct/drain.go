package direct

import (
	"bytes"
	"maps"
	"slices"

	"github.com/gray-ml/gray/runtime/ids"
)

// Release's drain. The driver's Release ends an actor once the calls it
// sees are done; the calls of the actor's direct callers it does not see,
// and one of them may be on the wire at that moment. So when a released
// actor's process is to stop and callers were given its address, the
// table asks its worker to drain (Drain) instead of the node stopping it:
// the worker tells each connected caller, each caller answers after the
// last call it sent there (its later calls go through the driver, which
// fails them as calls to a released actor, as it does its own callers'),
// and the worker exits once those calls ran (runtime/worker,
// direct_drain.go). A killed actor, or one whose process died, stops at
// once as before: Kill promises no drain.
//
// A worker knows only the callers connected to it, so the drain waits
// here for the others: each caller given the address says when it has
// dialled it (Dialed: connected, the callee's worker having registered
// the connection before its handshake ends, or failed, its calls going
// through the driver). A caller asks once per actor, at its first call,
// and dials as soon as it has the answer, so every caller given the
// address dials unless its process ends first (Gone). Until each such
// caller has dialled or died, the node leaves the process alone
// (DrainLater); then Drain. A caller given the address twice dials twice
// and is waited for until it said so twice.

// Stopping: Actor is dead and its process is to stop. Released: it ended
// because no handle to it remains (Release), not killed or lost. Effect:
// Drain, when it is released, its worker lives and callers were given its
// address, all of whom dialled it or died; DrainLater when some have yet
// to (Drain follows: Dialed, Gone); none otherwise (the node stops the
// process itself). The actor's entry goes either way.
type Stopping[W comparable] struct {
	Actor    Actor[W]
	Released bool
}

// Dialed: Caller, given Actor's address, has dialled it (connected, or
// failed and gone through the driver). Effect: Drain, when the actor's
// drain waited for no other caller.
type Dialed[W comparable] struct {
	Caller W
	Actor  ids.ActorID
}

func (Stopping[W]) event() {}
func (Dialed[W]) event()   {}

// pendingDrain is a released actor whose drain waits for callers that
// were given its address and have not dialled it yet (each with the
// answers it has still to dial).
type pendingDrain[W comparable] struct {
	worker  W
	waiting map[W]int
}

// stopping decides how a dead actor's process stops (Stopping).
func (t *Table[W, T]) stopping(e Stopping[W]) {
	c := t.actors[e.Actor.ID]
	delete(t.actors, e.Actor.ID)
	if c == nil || len(c.callers) == 0 || !e.Released || t.ws.Dead(e.Actor.Worker) {
		return
	}
	d := &pendingDrain[W]{worker: e.Actor.Worker, waiting: map[W]int{}}
	for w, n := range c.callers {
		if n > 0 && !t.ws.Dead(w) {
			d.waiting[w] = n
		}
	}
	if len(d.waiting) == 0 {
		t.emit(Effect[W, T]{Kind: Drain, To: d.worker})
		return
	}
	t.drains[e.Actor.ID] = d
	t.emit(Effect[W, T]{Kind: DrainLater, To: d.worker})
}

// dialed counts a caller's dial of an actor's address (Dialed).
func (t *Table[W, T]) dialed(e Dialed[W]) {
	if c := t.actors[e.Actor]; c != nil {
		if c.callers[e.Caller] > 0 {
			c.callers[e.Caller]--
		}
		return
	}
	d := t.drains[e.Actor]
	if d == nil || d.waiting[e.Caller] == 0 {
		return
	}
	if d.waiting[e.Caller]--; d.waiting[e.Caller] == 0 {
		delete(d.waiting, e.Caller)
	}
	t.drainIfDialed(e.Actor, d)
}

// drainGone takes worker w's death into the pending drains: one waits no
// more for w to dial, and one of w's own actor is dropped (its process
// ended: nothing is left to drain).
func (t *Table[W, T]) drainGone(w W) {
	if len(t.drains) == 0 {
		return
	}
	keys := slices.SortedFunc(maps.Keys(t.drains), func(a, b ids.ActorID) int { return bytes.Compare(a[:], b[:]) })
	for _, id := range keys {
		d := t.drains[id]
		if d.worker == w {
			delete(t.drains, id)
			continue
		}
		delete(d.waiting, w)
		t.drainIfDialed(id, d)
	}
}

// drainIfDialed drains actor id's worker once every caller d waited for
// dialled or died.
func (t *Table[W, T]) drainIfDialed(id ids.ActorID, d *pendingDrain[W]) {
	if len(d.waiting) > 0 {
		return
	}
	delete(t.drains, id)
	t.emit(Effect[W, T]{Kind: Drain, To: d.worker})
}
