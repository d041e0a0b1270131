package cluster

import (
	"maps"
	"math"
	"slices"
	"time"

	"github.com/gray-ml/gray/runtime/task"
	"github.com/gray-ml/gray/runtime/wire"
)

// Grants that follow demand.
//
// A node's daemon is the authority on its resources: it never grants
// more than it has free. Each lease holds a grant (held) and says how much
// it would like to hold (desired: what it holds plus what its queued work
// wants, sent as msgWant when that changes). The daemon divides its
// capacity among the leases by max-min fairness, per resource (divide):
// whole units are dealt round-robin, oldest lease first, to the leases
// that still desire more, so a lease wanting little gets all of it and
// the rest is split evenly among those wanting more. A lease below its
// share is granted from what is free (msgGrant); a lease above its share
// while another is below is asked to give the difference back
// (msgReclaim), which its driver does as its running tasks end, never
// cutting one short. A driver also gives back, on its own, what it held
// idle for DriverConfig.IdleReturn (msgReturn), so one that stops
// submitting leaves the node to the others; and a lease that ends returns
// everything. Grants are deltas on the lease connection, numbered (seq) so
// that a want computed before a grant arrived is not taken for a new one.
// None of this is on a task's path: a driver asks at most once per
// DriverConfig.GrantEvery per node, and only when its wish changed.
//
// GPUs are owned by the node, by index: a grant of GPUs names the indices
// (the smallest free ones), a driver's scheduler hands its tasks and
// actors only the indices it holds (CUDA_VISIBLE_DEVICES), and a return
// names the indices given back, so two drivers sharing a node never run
// on the same GPU while another idles. A reclaim asks for a count; the
// driver picks which of its idle GPUs go back.

// share is one lease's standing in its node's division.
type share struct {
	held    task.Resources // granted and not returned
	gpus    []int          // the indices of held's GPUs, sorted
	desired task.Resources // the most it asked to hold (msgWant)
	owed    task.Resources // asked back (msgReclaim), not returned yet
}

// books is what of a node no lease holds: its free resources and, of
// them, the GPU indices (sorted).
type books struct {
	free task.Resources
	gpus []int
}

// newBooks returns the books of a node with resources r, all free.
func newBooks(r task.Resources) books {
	b := books{free: r.Clone()}
	for i := range int(r.GPU) {
		b.gpus = append(b.gpus, i)
	}
	return b
}

// grant moves r (whole GPUs, no more than is free) from the books to s,
// the smallest free GPU indices with it, and returns what it moved and
// those indices.
func (b *books) grant(s *share, r task.Resources) (task.Resources, []int) {
	r.GPU = float64(min(max(int(r.GPU), 0), len(b.gpus)))
	ids := slices.Clone(b.gpus[:int(r.GPU)])
	b.gpus = slices.Delete(b.gpus, 0, len(ids))
	b.free = b.free.Sub(r)
	s.held = s.held.Add(r)
	s.gpus = merge(s.gpus, ids)
	return r, ids
}

// giveBack moves r back from s to the books: never more than s holds,
// and of GPUs exactly the indices in ids that s holds (whatever r's count
// says), so no index is ever free and held, or held twice.
func (b *books) giveBack(s *share, r task.Resources, ids []int) {
	r = r.NonNegative().Min(s.held)
	var back []int
	for _, i := range slices.Clone(ids) { // ids may be s.gpus itself
		if j, ok := slices.BinarySearch(s.gpus, i); ok {
			s.gpus = slices.Delete(s.gpus, j, j+1)
			back = append(back, i)
		}
	}
	r.GPU = float64(len(back))
	s.held = s.held.Sub(r)
	s.owed = s.owed.Sub(r).NonNegative()
	b.free = b.free.Add(r)
	b.gpus = merge(b.gpus, back)
}

// merge returns sorted a with ids added.
func merge(a, ids []int) []int {
	return slices.Sorted(slices.Values(append(slices.Clone(a), ids...)))
}

// divide returns each share's fair target: per resource of capacity,
// max-min fair (water-filling) over what the shares desire, dealt in
// slices (1 unit; larger for large custom amounts) in order.
func divide(capacity task.Resources, ss []share) []task.Resources {
	out := make([]task.Resources, len(ss))
	for i := range out {
		out[i] = task.Resources{Custom: map[string]float64{}}
	}
	fill := func(cap float64, desired func(i int) float64, set func(i int, v float64)) {
		got := make([]float64, len(ss))
		left := cap
		slice := max(1, cap/64)
		for left > 1e-9 {
			dealt := false
			for i := range ss {
				s := min(slice, desired(i)-got[i], left)
				if s <= 1e-9 {
					continue
				}
				got[i] += s
				left -= s
				dealt = true
			}
			if !dealt {
				break
			}
		}
		for i, g := range got {
			set(i, g)
		}
	}
	fill(capacity.CPU, func(i int) float64 { return ss[i].desired.CPU }, func(i int, v float64) { out[i].CPU = v })
	fill(math.Floor(capacity.GPU), func(i int) float64 { return math.Floor(ss[i].desired.GPU) }, func(i int, v float64) { out[i].GPU = math.Floor(v) })
	for _, k := range slices.Sorted(maps.Keys(capacity.Custom)) {
		fill(capacity.Custom[k], func(i int) float64 { return ss[i].desired.Custom[k] }, func(i int, v float64) { out[i].Custom[k] = v })
	}
	return out
}

// move is what rebalance decided for one lease: grant it more (gpus: the
// indices of grant's GPUs), ask some back.
type move struct {
	grant, reclaim task.Resources
	gpus           []int
}

// rebalance decides, for shares ss of a node with capacity and free
// resources (b), what to grant each (from free, up to its target) and
// what to ask back (above its target, less what is owed already, only in
// the resources some other share is below its target in). It updates ss
// and b.
func rebalance(capacity task.Resources, b *books, ss []*share) []move {
	flat := make([]share, len(ss))
	for i, s := range ss {
		flat[i] = *s
	}
	targets := divide(capacity, flat)
	moves := make([]move, len(ss))
	short := task.Resources{Custom: map[string]float64{}} // what shares still lack after the grants
	for i, s := range ss {
		t := targets[i]
		g := task.Resources{Custom: map[string]float64{}}
		g.CPU = task.AtLeastZero(min(t.CPU-s.held.CPU, b.free.CPU))
		g.GPU = math.Floor(task.AtLeastZero(min(t.GPU-s.held.GPU, b.free.GPU)))
		for k, v := range t.Custom {
			if x := task.AtLeastZero(min(v-s.held.Custom[k], b.free.Custom[k])); x > 0 {
				g.Custom[k] = x
			}
		}
		moves[i].grant, moves[i].gpus = b.grant(s, g)
		lack := t.Sub(s.held)
		short.CPU += task.AtLeastZero(lack.CPU)
		short.GPU += task.AtLeastZero(lack.GPU)
		for k, v := range lack.Custom {
			short.Custom[k] += task.AtLeastZero(v)
		}
	}
	for i, s := range ss {
		t := targets[i]
		over := s.held.Sub(s.owed).Sub(t)
		r := task.Resources{Custom: map[string]float64{}}
		if short.CPU > 1e-9 {
			r.CPU = task.AtLeastZero(over.CPU)
		}
		if short.GPU > 1e-9 {
			r.GPU = math.Floor(task.AtLeastZero(over.GPU))
		}
		for k, v := range over.Custom {
			if short.Custom[k] > 1e-9 && task.AtLeastZero(v) > 0 {
				r.Custom[k] = task.AtLeastZero(v)
			}
		}
		s.owed = s.owed.Add(r)
		moves[i].reclaim = r
	}
	return moves
}

// rebalanceLocked runs rebalance over the daemon's leases (oldest first)
// and sends the grants and reclaims it decided; d.mu is held (Send does
// not block).
func (d *daemon) rebalanceLocked() {
	ls := slices.SortedFunc(maps.Keys(d.leases), func(a, b *lease) int { return int(a.n - b.n) })
	ss := make([]*share, len(ls))
	for i, l := range ls {
		ss[i] = &l.share
	}
	moves := rebalance(d.cfg.Resources, &d.books, ss)
	for i, m := range moves {
		l := ls[i]
		if !m.grant.IsZero() {
			l.seq++
			seq := l.seq
			_ = l.conn.Send(msgGrant, func(b []byte) []byte {
				return appendInts(appendRes(wire.AppendUvarint(b, seq), m.grant), m.gpus)
			})
		}
		if !m.reclaim.IsZero() {
			_ = l.conn.Send(msgReclaim, func(b []byte) []byte { return appendRes(b, m.reclaim) })
		}
	}
}

// want records a lease's msgWant: seq is the last grant its driver had
// applied; a want from before the latest grant is stale and ignored.
func (d *daemon) want(l *lease, seq uint64, desired task.Resources) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if seq != l.seq {
		return
	}
	l.desired = desired
	d.rebalanceLocked()
}

// giveBack records a lease's msgReturn (r, of GPUs the indices gpus):
// the resources are free again.
func (d *daemon) giveBack(l *lease, r task.Resources, gpus []int) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.books.giveBack(&l.share, r, gpus)
	l.desired = l.desired.Min(l.held) // its next want says what it needs now
	d.rebalanceLocked()
}

// idleTracker finds what a grant held idle for a while: the least spare
// seen, per resource, since the spare became nonzero.
type idleTracker struct {
	on    bool
	since time.Time
	low   task.Resources
}

// observe records the spare resources seen at now and returns what was
// spare all along for at least after (then starts over), else nothing.
func (t *idleTracker) observe(now time.Time, spare task.Resources, after time.Duration) task.Resources {
	if spare.IsZero() {
		t.on = false
		return task.Resources{}
	}
	if !t.on {
		t.on, t.since, t.low = true, now, spare
		return task.Resources{}
	}
	t.low = t.low.Min(spare)
	if now.Sub(t.since) < after {
		return task.Resources{}
	}
	out := t.low
	t.on = false
	return out
}

// grantLoop follows the job's grants every GrantEvery until Close: for
// each lease, it gives back what idled for IdleReturn and what reclaims
// freed (msgReturn), and tells the node what the job would like to hold
// when that changed (msgWant).
func (d *Driver) grantLoop() {
	defer d.wg.Done()
	tick := time.NewTicker(d.cfg.GrantEvery)
	defer tick.Stop()
	for {
		select {
		case <-d.stop:
			return
		case now := <-tick.C:
			d.mu.Lock()
			ls := make([]*dlease, 0, len(d.leases)+1)
			if d.local != nil {
				ls = append(ls, d.local)
			}
			for _, k := range slices.Sorted(maps.Keys(d.leases)) {
				ls = append(ls, d.leases[k])
			}
			s := d.sched
			d.mu.Unlock()
			for _, l := range ls {
				d.followGrant(s, l, now)
			}
		}
	}
}

// followGrant does grantLoop's work for one lease.
func (d *Driver) followGrant(s Scheduler, l *dlease, now time.Time) {
	seq := l.seq.Load() // before the view: the view then counts that grant
	v, ok := s.GrantView(l.k)
	if !ok {
		return
	}
	if idle := l.idle.observe(now, v.Spare, d.cfg.IdleReturn); !idle.IsZero() {
		s.ReclaimGrant(l.k, idle)
		if w, ok := s.GrantView(l.k); ok {
			w.Returned = v.Returned.Add(w.Returned)
			w.ReturnedGPUs = append(v.ReturnedGPUs, w.ReturnedGPUs...)
			v = w
		}
	}
	if !v.Returned.IsZero() {
		r, gpus := v.Returned, v.ReturnedGPUs
		_ = l.conn.Send(msgReturn, func(b []byte) []byte { return appendInts(appendRes(b, r), gpus) })
		l.asked = false // the node lowered what it thinks the job wants: say it again
	}
	desired := v.Held.Add(v.Want)
	if l.asked && seq == l.sentSeq && desired.Equal(l.sentDesired) {
		return
	}
	l.asked, l.sentSeq, l.sentDesired = true, seq, desired
	_ = l.conn.Send(msgWant, func(b []byte) []byte { return appendRes(wire.AppendUvarint(b, seq), desired) })
}
