package sched

import (
	"fmt"
	"maps"
	"math"
	"slices"

	"github.com/gray-ml/gray/runtime/task"
)

// Grants that follow demand.
//
// On a cluster a core's Total is not the node's: it is what the node's
// daemon granted this driver (its lease), which changes while the job
// runs. The node's whole resources are the core's capacity, the most the
// grant can grow to: placement and feasibility go by capacity (a task the
// node could run waits there for a grant), dispatch by the grant. The
// driver reads a GrantView now and then (Cluster.Grant): what the queued
// work wants beyond the grant (it asks the daemon for that), what it holds
// and does not need (it gives that back once idle for a while), and what
// it gave back since it last looked (it tells the daemon). The daemon
// answers with Grow (more granted) or Reclaim (give this back): a reclaim
// takes what is free at once and the rest as tasks end and actors go, so
// running work is never cut short.

// GrantView is a node's grant as the driver's scheduler sees it.
type GrantView struct {
	Held     task.Resources // granted now (the core's Total)
	Capacity task.Resources // the most the grant can grow to
	// Want is what the work queued on the node (tasks, actors, blocked
	// workers waiting for their CPUs) needs beyond what is free, within
	// capacity: what to ask the daemon for.
	Want task.Resources
	// Spare is what is free beyond what queued work needs, lent CPUs and
	// resources owed to a reclaim excluded: what could be given back.
	Spare task.Resources
	// Returned is what was given back (Reclaim) since the last view: the
	// daemon must hear of it. ReturnedGPUs are the GPU indices among it:
	// the node owns its indices, so it must hear which ones came back.
	Returned     task.Resources
	ReturnedGPUs []int
}

// Capacity returns the most the node's grant can grow to.
func (c *Core[T]) Capacity() task.Resources { return c.capacity.Clone() }

// Grow adds r to the node's grant (the daemon granted more): it is free
// at once, and queued work starts on it. gpus are the indices of r's GPUs
// (the node's daemon owns them, so drivers sharing a node never hand out
// the same one); nil takes the smallest ones this core does not hold (a
// node whose whole GPUs are this core's). Indices the core holds already
// are not granted twice: they do not count.
func (c *Core[T]) Grow(r task.Resources, gpus []int) {
	r = r.NonNegative()
	if gpus == nil {
		gpus = c.unusedGPUs(int(r.GPU))
	}
	r.GPU = 0
	held := c.heldGPUs()
	for _, i := range gpus {
		if i >= 0 && !held[i] {
			held[i] = true
			c.gpuFree = append(c.gpuFree, i)
			r.GPU++
		}
	}
	slices.Sort(c.gpuFree)
	addTo(&c.total, r, 1)
	addTo(&c.avail, r, 1)
	c.capacity = c.capacity.Max(c.total)
	c.schedule()
}

// Reclaim gives back r of the node's grant: what is free now at once, the
// rest as running tasks end and actors go (before queued work may use
// it). What was given back shows in the next GrantView's Returned. Asking
// for more than the grant asks for all of it.
func (c *Core[T]) Reclaim(r task.Resources) {
	r = r.NonNegative()
	r.GPU = math.Floor(r.GPU)
	addTo(&c.owed, r, 1)
	c.owed = c.owed.Min(c.total)
	c.owing = !c.owed.IsZero()
	c.payOwed()
	c.schedule()
}

// payOwed gives back what a reclaim is owed from what is free: never the
// CPUs that workers blocked in Get lent out, which they take back when
// they resume.
func (c *Core[T]) payOwed() {
	if !c.owing {
		return
	}
	var pay task.Resources
	pay.CPU = task.AtLeastZero(min(c.owed.CPU, c.avail.CPU-c.lentCPU()))
	if g := min(int(c.owed.GPU), len(c.gpuFree)); g > 0 {
		pay.GPU = float64(g)
		back := c.gpuFree[len(c.gpuFree)-g:] // the highest indices go back
		c.returnedGPUs = append(c.returnedGPUs, back...)
		c.gpuFree = slices.Clip(c.gpuFree[:len(c.gpuFree)-g])
	}
	for k, v := range c.owed.Custom {
		if p := task.AtLeastZero(min(v, c.avail.Custom[k])); p > 0 {
			if pay.Custom == nil {
				pay.Custom = map[string]float64{}
			}
			pay.Custom[k] = p
		}
	}
	addTo(&c.total, pay, -1)
	addTo(&c.avail, pay, -1)
	addTo(&c.owed, pay, -1)
	addTo(&c.returned, pay, 1)
	c.owed = c.owed.NonNegative()
	c.owing = !c.owed.IsZero()
	if !c.owing {
		return
	}
	// A worker keeps its resources while tasks are queued behind the one
	// it runs: recall them (they go back to the queues), so that what it
	// holds is freed when its running task ends, not after its whole
	// pipeline. While owing, schedule queues no more behind busy workers.
	for _, id := range c.order {
		if w := c.pool[id]; len(w.tasks) > 1 && !w.recalled && !w.retiring {
			w.recalled = true
			c.emit(Effect[T]{Kind: Recall, Worker: id})
		}
	}
}

// lentCPU returns the CPUs that workers blocked in Get lent out.
func (c *Core[T]) lentCPU() float64 {
	if c.lent == 0 {
		return 0
	}
	s := 0.0
	for _, w := range c.pool {
		if w.lent {
			s += w.held.CPU
		}
	}
	return s
}

// need is what the queued work asks for: tasks, actors waiting for their
// resources, blocked workers waiting for their CPUs back.
func (c *Core[T]) need() task.Resources {
	n := c.demand.Clone()
	for _, id := range c.actorWait {
		addTo(&n, c.actors[id].res, 1)
	}
	for _, id := range c.resumeQ {
		n.CPU += c.pool[id].held.CPU
	}
	return n
}

// View returns the node's grant as the driver sees it and forgets
// Returned.
func (c *Core[T]) View() GrantView {
	need := c.need()
	free := c.avail.Clone()
	free.CPU -= c.lentCPU()
	free.GPU = float64(len(c.gpuFree))
	v := GrantView{Held: c.total.Clone(), Capacity: c.capacity.Clone(), Returned: c.returned, ReturnedGPUs: c.returnedGPUs,
		Want: task.Resources{Custom: map[string]float64{}}, Spare: task.Resources{Custom: map[string]float64{}}}
	c.returned, c.returnedGPUs = task.Resources{}, nil
	room := c.capacity.Sub(c.total)
	v.Want.CPU = task.AtLeastZero(min(need.CPU-free.CPU, room.CPU))
	v.Want.GPU = task.AtLeastZero(min(math.Ceil(need.GPU-free.GPU-eps), room.GPU))
	v.Spare.CPU = task.AtLeastZero(free.CPU - need.CPU - c.owed.CPU)
	v.Spare.GPU = task.AtLeastZero(math.Floor(free.GPU - need.GPU - c.owed.GPU + eps))
	for _, k := range slices.Sorted(maps.Keys(union(need.Custom, c.total.Custom))) {
		if w := task.AtLeastZero(min(need.Custom[k]-free.Custom[k], room.Custom[k])); w > 0 {
			v.Want.Custom[k] = w
		}
		if s := task.AtLeastZero(free.Custom[k] - need.Custom[k] - c.owed.Custom[k]); s > 0 {
			v.Spare.Custom[k] = s
		}
	}
	return v
}

// unusedGPUs returns the g smallest GPU indices nobody holds.
func (c *Core[T]) unusedGPUs(g int) []int {
	used := c.heldGPUs()
	var out []int
	for i := 0; len(out) < g; i++ {
		if !used[i] {
			out = append(out, i)
		}
	}
	return out
}

// heldGPUs returns the GPU indices the core holds: free, or held by a
// worker or an actor.
func (c *Core[T]) heldGPUs() map[int]bool {
	used := map[int]bool{}
	for _, i := range c.gpuFree {
		used[i] = true
	}
	for _, w := range c.pool {
		for _, i := range w.gpus {
			used[i] = true
		}
	}
	for _, a := range c.actors {
		for _, i := range a.gpus {
			used[i] = true
		}
	}
	return used
}

// Grant returns node id's grant view (see GrantView), forgetting what it
// reports returned; false if there is no such node.
// It stays a method beside Step: the shell sends its answer on.
func (cl *Cluster[T]) Grant(id NodeID) (GrantView, bool) {
	c := cl.cores[id]
	if c == nil {
		return GrantView{}, false
	}
	return c.View(), true
}

// grow adds r, whose GPUs are gpus, to node id's grant (see Core.Grow).
func (cl *Cluster[T]) grow(id NodeID, r task.Resources, gpus []int) {
	if c := cl.cores[id]; c != nil {
		c.Grow(r, gpus)
		cl.spread()
	}
}

// reclaim gives back r of node id's grant (see Core.Reclaim).
func (cl *Cluster[T]) reclaim(id NodeID, r task.Resources) {
	if c := cl.cores[id]; c != nil {
		c.Reclaim(r)
		cl.spread()
	}
}

func addTo(a *task.Resources, b task.Resources, sign float64) {
	a.CPU += sign * b.CPU
	a.GPU += sign * b.GPU
	for k, v := range b.Custom {
		if a.Custom == nil {
			a.Custom = map[string]float64{}
		}
		a.Custom[k] += sign * v
	}
}

func union(a, b map[string]float64) map[string]float64 {
	out := map[string]float64{}
	for k := range a {
		out[k] = 0
	}
	for k := range b {
		out[k] = 0
	}
	return out
}

// checkGrant verifies the grant's books: nothing owed or granted beyond
// what the node has, nothing negative.
func (c *Core[T]) checkGrant() error {
	for _, r := range []struct {
		name        string
		owed, total float64
		capacity    float64
	}{{"CPU", c.owed.CPU, c.total.CPU, c.capacity.CPU}, {"GPU", c.owed.GPU, c.total.GPU, c.capacity.GPU}} {
		if r.owed < -eps || r.owed > r.total+eps {
			return fmt.Errorf("%s: %g owed to a reclaim of a grant of %g", r.name, r.owed, r.total)
		}
		if r.total > r.capacity+eps || r.total < -eps {
			return fmt.Errorf("%s: granted %g, the node's capacity is %g", r.name, r.total, r.capacity)
		}
	}
	for k, v := range c.owed.Custom {
		if v < -eps || v > c.total.Custom[k]+eps {
			return fmt.Errorf("%s: %g owed to a reclaim of a grant of %g", k, v, c.total.Custom[k])
		}
	}
	if c.owing != !c.owed.IsZero() {
		return fmt.Errorf("owing is %v with %s owed", c.owing, c.owed)
	}
	return nil
}

// Capacity returns the resources of all nodes together (what the grants
// can grow to).
func (cl *Cluster[T]) Capacity() task.Resources { return cl.sum((*Core[T]).Capacity) }

// Unused returns what this job leaves unused of all nodes together: their
// capacity less what its running tasks and live actors hold.
func (cl *Cluster[T]) Unused() task.Resources {
	return cl.sum(func(c *Core[T]) task.Resources {
		return c.Available().Add(c.capacity.Sub(c.total))
	})
}
