package sched

// Read-only views of the core's state, for inspection (the dashboard's
// runtime page). They change nothing and emit no effects.

// Sent returns the tasks sent to pool worker w, in order: the first is
// running, the rest are pipelined behind it.
func (c *Core[T]) Sent(w WorkerID) []T {
	x := c.pool[w]
	if x == nil {
		return nil
	}
	out := make([]T, len(x.tasks))
	for i, it := range x.tasks {
		out[i] = it.t
	}
	return out
}

// EachTask calls fn for every task the cluster holds: queued or waiting
// for a node (EachQueued), or sent to a pool worker and not finished.
func (cl *Cluster[T]) EachTask(fn func(T)) {
	cl.EachQueued(fn)
	for _, id := range cl.order {
		for _, x := range cl.cores[id].pool {
			for _, it := range x.tasks {
				fn(it.t)
			}
		}
	}
}

// EachQueued calls fn for every task waiting for resources or a worker, in
// queue order per resource shape.
func (c *Core[T]) EachQueued(fn func(T)) {
	for _, k := range c.shapes {
		q := c.queues[k]
		q.each(func(it item[T]) bool { fn(it.t); return true })
	}
}

// Load returns the live work on the core: the tasks its pool workers were
// sent and have not finished (running or pipelined), and the actors that
// hold resources on it (started, or restarting on what they held). With
// Available it accounts for the whole node: what is not free is held by
// those tasks and actors.
func (c *Core[T]) Load() (tasks, actors int) {
	for _, x := range c.pool {
		tasks += len(x.tasks)
	}
	for _, a := range c.actors {
		if a.holding {
			actors++
		}
	}
	return tasks, actors
}
