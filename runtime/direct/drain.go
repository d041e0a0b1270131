package direct

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

// Stopping: Actor is dead and its process is to stop. Released: it ended
// because no handle to it remains (Release), not killed or lost. Effect:
// Drain, when it is released, its worker lives and callers were given its
// address; none otherwise (the node stops the process itself). The
// actor's entry goes either way.
type Stopping[W comparable] struct {
	Actor    Actor[W]
	Released bool
}

func (Stopping[W]) event() {}

// stopping decides how a dead actor's process stops (Stopping).
func (t *Table[W, T]) stopping(e Stopping[W]) {
	c := t.actors[e.Actor.ID]
	delete(t.actors, e.Actor.ID)
	if c == nil || c.callers == 0 || !e.Released || t.ws.Dead(e.Actor.Worker) {
		return
	}
	t.emit(Effect[W, T]{Kind: Drain, To: e.Actor.Worker})
}
