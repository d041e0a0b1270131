package sched

import (
	"github.com/gray-ml/gray/runtime/ids"
	"github.com/gray-ml/gray/runtime/task"
)

// RestartActor starts a new worker for actor id, whose process died, on
// the resources (GPUs included) it holds: the StartActor effect follows at
// once, so a restart never waits behind queued work. An actor still
// waiting for its resources starts when they are free, as before. An
// actor the core does not know (its node is gone, and RemoveNode handed
// it back) asks for res anew, as WaitActor.
func (c *Core[T]) RestartActor(id ids.ActorID, res task.Resources) {
	a := c.actors[id]
	if a == nil {
		c.WaitActor(id, res)
		return
	}
	if a.holding && !c.closed {
		c.next++
		c.emit(Effect[T]{Kind: StartActor, Worker: c.next, Actor: id, GPUs: a.gpus})
	}
}
