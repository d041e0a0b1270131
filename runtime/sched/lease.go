package sched

import "github.com/gray-ml/gray/runtime/task"

// Leases: a worker that submits tasks itself (nested tasks) takes an idle
// pool worker for a while and sends it tasks of one resource shape over a
// connection of its own, so the driver's lock sees one request per lease
// instead of one per task (Ray's workers lease workers from their raylet in
// the same way; the worker's side is runtime/worker/lease.go).
//
// In the core a lease is a task that runs until it is returned: t holds
// res on the leased worker, so the books (Available, `gray status`) count
// the resources as used, a Get of a leased task lends them like a running
// task's (Block), the worker's death comes back as an Orphan of t, and
// returning the lease is TaskDone. A leased worker takes no task of the
// core's queues meanwhile: it is never a pipelining or packing target.

// Lease gives t, a lease for tasks that need res, an idle pool worker of
// this node when res fits the free resources now and no queued task waits
// for them; it reports the worker, or false (nothing changed: the asker
// sends its tasks through the driver instead). A lease never waits, so an
// asker holding resources itself cannot deadlock on one.
func (c *Core[T]) Lease(t T, res *task.Resources) (WorkerID, bool) {
	if c.closed || c.owing || res.GPU > 0 || c.Queued() > 0 || !c.fits(res) {
		return 0, false
	}
	w := c.popIdle()
	if w == nil {
		return 0, false
	}
	w.held = *res
	w.gpus = c.acquire(&w.held)
	w.shape = shapeKey(&w.held)
	w.leased = true
	w.tasks = append(w.tasks, item[T]{t: t, res: res})
	return w.id, true
}

// Lease is Core.Lease on the first node (Local first) that can grant it.
// It is a question with an answer, not an event of Step: the asker waits
// for the worker, or for a refusal, in the same exchange.
func (cl *Cluster[T]) Lease(t T, res *task.Resources) (WorkerID, bool) {
	for _, id := range cl.order {
		if w, ok := cl.cores[id].Lease(t, res); ok {
			return w, true
		}
	}
	return 0, false
}
