package sched

import (
	"fmt"
	"slices"
	"strings"

	"github.com/gray-ml/gray/runtime/task"
)

// Work that waits on one node while another has room.
//
// place puts a request where it fits now, or, when no node has room,
// queues it on a node that could hold it. Room appears later: a node joins
// (the replacement of a dead one), a grant grows, a task or an actor on
// another node ends. Without moving, an actor queued on a node whose
// resources all belong to live actors waits forever, while a node that
// just joined sits idle (issue 27: a run using every CPU hung when a node
// died), and tasks queued on a node waiting for its grant stay there while
// another node frees up. spread moves such work, after each event that
// makes room, to a node with room beyond what is queued there; work that
// its own node can start now never moves.

// spread moves the actors and queued tasks that cannot start where they
// wait to nodes with room now (headroom), Local first. It costs nothing
// on a single node, and one pass over the nodes' queue fronts otherwise.
func (cl *Cluster[T]) spread() {
	if len(cl.order) < 2 || cl.closed {
		return
	}
	for _, id := range cl.order {
		src := cl.cores[id]
		if src.closed {
			continue
		}
		cl.spreadActors(src)
		cl.spreadTasks(src)
	}
}

// roomFor returns where work waiting on src for r should go, or nil: the
// first node other than src with room for r beyond what is queued there
// (headroom), else, with grow, when src's grant could never make room for
// it, the first node whose grant could (growRoom): its queued work asks
// the daemon. Only actors use grow: they hold what they get for good, so
// an actor queued behind live actors waits for ever, while a task waits
// at most for the running ones to end.
func (cl *Cluster[T]) roomFor(r *task.Resources, src *Core[T], grow bool) *Core[T] {
	for _, id := range cl.order {
		if c := cl.cores[id]; c != src && !c.closed && c.headroom(r) {
			return c
		}
	}
	if !grow || src.growRoom(r) {
		return nil
	}
	for _, id := range cl.order {
		if c := cl.cores[id]; c != src && !c.closed && c.growRoom(r) {
			return c
		}
	}
	return nil
}

// growRoom reports whether r fits what the node's capacity leaves beyond
// the work this job runs there and the tasks queued there: a node whose
// grant is smaller (it gave back what idled, or another driver holds
// part of it) can hold r once its daemon grants more, which the queued
// work asks for (View.Want). A node whose whole capacity this job's live
// work holds cannot: work queued there would wait for that work to end,
// and never ask the daemon for anything (Want is capped by capacity) —
// the hang that made grants be reverted once (issue 27).
func (c *Core[T]) growRoom(r *task.Resources) bool {
	// Used (total less available) is what running work and live actors
	// hold; taken amount by amount, since place asks this for every task
	// submitted behind a deep queue (a map per call was 10% of queueing
	// a million tasks).
	fits := func(want, capacity, total, avail, queued float64) bool {
		return want <= capacity-(total-avail)-queued+eps
	}
	if !fits(r.CPU, c.capacity.CPU, c.total.CPU, c.avail.CPU, c.demand.CPU) || !fits(r.GPU, c.capacity.GPU, c.total.GPU, c.avail.GPU, c.demand.GPU) {
		return false
	}
	for k, v := range r.Custom {
		if !fits(v, c.capacity.Custom[k], c.total.Custom[k], c.avail.Custom[k], c.demand.Custom[k]) {
			return false
		}
	}
	return true
}

// spreadActors moves src's waiting actors that do not fit there now.
func (cl *Cluster[T]) spreadActors(src *Core[T]) {
	for i := 0; i < len(src.actorWait); {
		id := src.actorWait[i]
		a := src.actors[id]
		dst := (*Core[T])(nil)
		if !src.fits(&a.res) {
			dst = cl.roomFor(&a.res, src, true)
		}
		if dst == nil {
			i++
			continue
		}
		src.actorWait = slices.Delete(src.actorWait, i, i+1)
		delete(src.actors, id)
		cl.actorAt[id] = dst.node
		dst.WaitActor(id, a.res)
	}
}

// spreadTasks moves the fronts of src's queues that do not fit there now,
// in queue order, while another node has room for them.
func (cl *Cluster[T]) spreadTasks(src *Core[T]) {
	for _, k := range src.shapes {
		q := src.queues[k]
		for q.len() > 0 {
			p := q.front()
			if src.fits(p.res) {
				break // it starts here as soon as a worker is ready
			}
			dst := cl.roomFor(p.res, src, false)
			if dst == nil {
				break
			}
			q.pop()
			src.addDemand(p.res, -1)
			dst.Submit(p.t, p.res, p.pipe)
		}
	}
}

// Stall is what a cluster's waiting actors need that no amount of finished
// tasks can give them: what the live actors leave of every live node's
// capacity is less than what waits. Only a node joining or an actor ending
// lets them start.
type Stall struct {
	Actors int            // actors waiting for resources
	Need   task.Resources // what they lack, in all
	// Alive is the capacity of the live nodes; Had adds the nodes that
	// died (what the job had at its largest, as nodes come and go).
	Alive, Had task.Resources
}

// String is the one line a user reads: what waits, for what, and why.
func (s Stall) String() string {
	what := fmt.Sprintf("%d %s waiting for %s", s.Actors, plural(s.Actors, "actor", "actors"), resList(s.Need))
	if s.Had.IsZero() {
		// No node ever offered it (a custom resource nobody has): there
		// is no share of the cluster to describe.
		return what + ": no node of the cluster has any; they start when a node that has it joins (gray start --address ... --num-cpus/--num-gpus/--resources)"
	}
	alive := resList(s.Alive)
	if s.Alive.IsZero() {
		alive = "none"
	}
	return fmt.Sprintf("%s: %s of the cluster's %s are alive and held by actors; they start when a node joins (gray start --address ...) or an actor ends",
		what, alive, resList(s.Had))
}

// Stalled returns what waits for resources held by live actors on every
// node (see Stall); false when nothing does.
func (cl *Cluster[T]) Stalled() (Stall, bool) {
	var st Stall
	waiting := task.Resources{Custom: map[string]float64{}}
	free := task.Resources{Custom: map[string]float64{}}
	for _, id := range cl.order {
		c := cl.cores[id]
		st.Alive = st.Alive.Add(c.capacity)
		free = free.Add(c.capacity)
		for _, a := range c.actors {
			if a.holding {
				free = free.Sub(a.res)
			} else if a.waiting {
				waiting = waiting.Add(a.res)
				st.Actors++
			}
		}
	}
	for _, a := range cl.actorQ {
		waiting = waiting.Add(a.res)
		st.Actors++
	}
	if st.Actors == 0 {
		return Stall{}, false
	}
	lack := waiting.Sub(free).NonNegative()
	if lack.IsZero() {
		return Stall{}, false
	}
	st.Need = lack
	st.Had = st.Alive.Add(cl.gone)
	st.Alive, st.Had = only(st.Alive, lack), only(st.Had, lack)
	return st, true
}

// only returns r's amounts of the resources that need names.
func only(r, need task.Resources) task.Resources {
	out := task.Resources{}
	if need.CPU > 0 {
		out.CPU = r.CPU
	}
	if need.GPU > 0 {
		out.GPU = r.GPU
	}
	for k, v := range need.Custom {
		if v > 0 {
			if out.Custom == nil {
				out.Custom = map[string]float64{}
			}
			out.Custom[k] = r.Custom[k]
		}
	}
	return out
}

// resList writes r for people: "1 CPU", "2 CPUs, 1 GPU, w=2"; zeros
// left out.
func resList(r task.Resources) string {
	var parts []string
	if r.CPU > 0 {
		parts = append(parts, fmt.Sprintf("%g %s", r.CPU, plural(int(r.CPU), "CPU", "CPUs")))
	}
	if r.GPU > 0 {
		parts = append(parts, fmt.Sprintf("%g %s", r.GPU, plural(int(r.GPU), "GPU", "GPUs")))
	}
	keys := make([]string, 0, len(r.Custom))
	for k, v := range r.Custom {
		if v > 0 {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s=%g", k, r.Custom[k]))
	}
	if len(parts) == 0 {
		return "nothing"
	}
	return strings.Join(parts, ", ")
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
