package sched

import "github.com/gray-ml/gray/runtime/ids"

// RestartActor starts a new worker for actor id, whose process died, on
// the resources (GPUs included) it holds: the StartActor effect follows at
// once, so a restart never waits behind queued work. An actor still
// waiting for its resources starts when they are free, as before. It
// reports whether the core knows the actor.
func (c *Core[T]) RestartActor(id ids.ActorID) bool {
	a := c.actors[id]
	if a == nil {
		return false
	}
	if a.holding && !c.closed {
		c.next++
		c.emit(Effect[T]{Kind: StartActor, Worker: c.next, Actor: id, GPUs: a.gpus})
	}
	return true
}
