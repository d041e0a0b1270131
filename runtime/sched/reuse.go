package sched

import "slices"

// Actors on started workers.
//
// Starting a process (fork, exec, the Go runtime's start, connecting) is
// most of what creating an actor costs. The pool keeps started workers
// idle, so an actor that needs no GPU takes one of them (StartActor with
// Reused set) and the pool starts a replacement in the background: the
// pool is the set of prestarted processes, and a burst of creations takes
// them while the replacements start beside the burst. Ray's raylet leases
// actor-creation workers from its pool in the same way.
//
// A worker is taken only if it never held a GPU: an actor without GPUs
// must see none, and CUDA fixes the devices a process sees when it first
// initialises, before the actor could hide them. An actor with GPUs
// always gets a fresh process, started with CUDA_VISIBLE_DEVICES set.

// reuseIdle takes an idle pool worker out of the pool to host an actor
// whose reservation is gpus, and starts a replacement when the pool falls
// below its size. It reports false when no worker can be taken: the actor
// then gets a new process.
func (c *Core[T]) reuseIdle(gpus []int) (WorkerID, bool) {
	if c.node != Local || len(gpus) > 0 {
		// A worker on another node is started by that node's daemon,
		// which also sets up an actor's process; only the driver's own
		// pool is handed over in place.
		return 0, false
	}
	for i := len(c.idle) - 1; i >= 0; i-- {
		id := c.idle[i]
		w := c.pool[id]
		if w == nil || w.retiring || w.gpuUsed || len(w.tasks) > 0 {
			continue
		}
		c.idle = slices.Delete(c.idle, i, i+1)
		delete(c.pool, id)
		c.order = slices.DeleteFunc(c.order, func(y WorkerID) bool { return y == id })
		if c.alive()+c.starting < c.workers {
			c.spawn()
		}
		return id, true
	}
	return 0, false
}
