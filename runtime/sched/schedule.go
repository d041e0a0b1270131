package sched

import (
	"maps"
	"slices"

	"github.com/gray-ml/gray/runtime/task"
)

// schedule is the node-local scheduler: it resumes unblocked workers,
// starts actors and dispatches queued tasks while resources and workers
// allow. Every event ends with it.
func (c *Core[T]) schedule() {
	if c.closed {
		return
	}
	c.payOwed() // a reclaim takes freed resources before queued work does
	for len(c.resumeQ) > 0 {
		x := c.pool[c.resumeQ[0]]
		need := task.Resources{CPU: x.held.CPU}
		if !c.fits(&need) {
			break
		}
		c.resumeQ = c.resumeQ[1:]
		x.parked = false
		c.avail.CPU -= x.held.CPU
		x.lent = false
		c.lent--
		c.emit(Effect[T]{Kind: Resume, Worker: x.id})
	}
	if len(c.actorWait) > 0 {
		keep := c.actorWait[:0]
		for _, id := range c.actorWait {
			a := c.actors[id]
			if !c.fits(&a.res) {
				keep = append(keep, id)
				continue
			}
			a.gpus = c.acquire(&a.res)
			a.waiting, a.holding = false, true
			if w, ok := c.reuseIdle(a.gpus); ok {
				c.emit(Effect[T]{Kind: StartActor, Worker: w, Actor: id, GPUs: a.gpus, Reused: true})
				continue
			}
			c.next++
			c.emit(Effect[T]{Kind: StartActor, Worker: c.next, Actor: id, GPUs: a.gpus})
		}
		c.actorWait = keep
	}
	for _, k := range c.shapes {
		q := c.queues[k]
		for q.len() > 0 {
			p := q.front()
			if p.pack > 0 {
				w, hot := c.packTarget(k, int(p.pack))
				if w != nil {
					q.pop()
					c.addDemand(p.res, -1)
					c.send(w, p)
					continue
				}
				if c.packWorkers > 0 && hot >= c.packWorkers {
					break // room comes as the hot workers finish tasks
				}
			}
			if c.fits(p.res) {
				if w := c.popIdle(); w != nil {
					q.pop()
					c.addDemand(p.res, -1)
					c.run(w, p)
					continue
				}
				// Free resources but no idle worker: start as many as the
				// resources allow. The tasks wait for them rather than
				// queue behind busy workers, so they run side by side.
				c.grow(q)
				if c.starting > 0 {
					break
				}
				// No worker is coming (the pool is at its bound, as for
				// tasks that take no CPU): treat it as a task that does
				// not fit.
			}
			// With a backlog and no worker to be had, queue the task
			// behind a busy worker running tasks of the same shape: the
			// worker starts it the moment it is done, without a round trip.
			if q.len() > 1 && p.pipe && !c.owing {
				if w := c.pipelineTarget(k); w != nil {
					q.pop()
					c.addDemand(p.res, -1)
					c.send(w, p)
					continue
				}
			}
			break
		}
	}
}

// run gives p to the idle worker w, reserving p's resources for as long as
// w has tasks of p's shape.
func (c *Core[T]) run(w *worker[T], p item[T]) {
	w.held = *p.res
	w.gpus = c.acquire(&w.held)
	w.gpuUsed = w.gpuUsed || len(w.gpus) > 0
	w.shape = shapeKey(&w.held)
	c.send(w, p)
}

func (c *Core[T]) send(w *worker[T], p item[T]) {
	w.tasks = append(w.tasks, p)
	c.emit(Effect[T]{Kind: Run, Worker: w.id, Task: p.t, GPUs: w.gpus})
}

// pipelineTarget returns the busy pool worker with the shortest queue
// among those running tasks of shape k, or nil.
func (c *Core[T]) pipelineTarget(k string) *worker[T] {
	var best *worker[T]
	for _, id := range c.order {
		w := c.pool[id]
		if w.retiring || w.leased || w.blocked > 0 || w.recalled || len(w.tasks) == 0 || len(w.tasks) >= MaxPipeline || w.shape != k {
			continue
		}
		if best == nil || len(w.tasks) < len(best.tasks) {
			best = w
		}
	}
	return best
}

// packTarget returns, among the busy pool workers running tasks of shape
// k and holding fewer than depth, the one holding the most: load is
// concentrated on as few workers as keep up, so the others drain and
// sleep. Nil when every such worker is full (an idle one is woken then,
// unless hot reaches Config.PackWorkers). hot counts the workers of shape
// k running a packed task now, full or not.
func (c *Core[T]) packTarget(k string, depth int) (best *worker[T], hot int) {
	for _, id := range c.order {
		w := c.pool[id]
		if w.retiring || w.leased || w.blocked > 0 || w.lent || w.parked || w.recalled || len(w.tasks) == 0 || w.shape != k {
			continue
		}
		if w.tasks[0].pack > 0 {
			hot++
		}
		if len(w.tasks) >= depth {
			continue
		}
		if best == nil || len(w.tasks) > len(best.tasks) {
			best = w
		}
	}
	return best, hot
}

func (c *Core[T]) popIdle() *worker[T] {
	for len(c.idle) > 0 {
		w := c.pool[c.idle[len(c.idle)-1]]
		c.idle = c.idle[:len(c.idle)-1]
		if w != nil && !w.retiring {
			return w
		}
	}
	return nil
}

// grow starts pool workers for the tasks at the front of q that fit the
// free resources (CPUs lent by workers blocked in Get included) but find no
// idle worker, less the workers already starting: the pool grows to
// whatever the resources allow, Ray 0.2's "illusion of an infinite pool of
// workers". Tasks that take no CPU are bounded by the pool's size instead,
// counting only the workers not blocked in Get.
func (c *Core[T]) grow(q *fifo[T]) {
	live := c.alive()
	zero := max(0, c.poolSize()-(live-c.lent))
	cpu, gpu := c.avail.CPU, c.avail.GPU
	var custom map[string]float64
	want := 0
	q.each(func(it item[T]) bool {
		if want >= MaxPool {
			return false
		}
		r := it.res
		if r.CPU > cpu+eps || r.GPU > gpu+eps {
			return false
		}
		if len(r.Custom) > 0 {
			if custom == nil {
				custom = maps.Clone(c.avail.Custom)
			}
			short := false
			for k, v := range r.Custom {
				short = short || v > custom[k]+eps
			}
			if short {
				return false
			}
			for k, v := range r.Custom {
				custom[k] -= v
			}
		}
		cpu -= r.CPU
		gpu -= r.GPU
		if r.CPU <= 0 {
			if zero == 0 {
				return false
			}
			zero--
		}
		want++
		return true
	})
	for i := c.starting; i < want && live+c.starting < MaxPool && !c.noSpawn; i++ {
		c.spawn()
	}
}

// eps absorbs rounding in sums of fractional requests.
const eps = 1e-9

func (c *Core[T]) fits(r *task.Resources) bool {
	if r.CPU > c.avail.CPU+eps || r.GPU > c.avail.GPU+eps {
		return false
	}
	for k, v := range r.Custom {
		if v > c.avail.Custom[k]+eps {
			return false
		}
	}
	return true
}

func (c *Core[T]) acquire(r *task.Resources) []int {
	c.avail.CPU -= r.CPU
	c.avail.GPU -= r.GPU
	for k, v := range r.Custom {
		c.avail.Custom[k] -= v
	}
	g := int(r.GPU)
	if g == 0 {
		return nil
	}
	gpus := append([]int(nil), c.gpuFree[:g]...)
	c.gpuFree = c.gpuFree[g:]
	return gpus
}

func (c *Core[T]) release(r *task.Resources, cpu bool, gpus []int) {
	if cpu {
		c.avail.CPU += r.CPU
	}
	c.avail.GPU += r.GPU
	for k, v := range r.Custom {
		c.avail.Custom[k] += v
	}
	c.gpuFree = append(c.gpuFree, gpus...)
	slices.Sort(c.gpuFree)
}

func shapeKey(r *task.Resources) string {
	if len(r.Custom) == 0 && r.GPU == 0 && r.CPU == 1 {
		return "CPU=1"
	}
	return r.String()
}
