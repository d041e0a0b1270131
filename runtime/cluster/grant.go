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

// share is one lease's standing in its node's division.
type share struct {
	held    task.Resources // granted and not returned
	desired task.Resources // the most it asked to hold (msgWant)
	owed    task.Resources // asked back (msgReclaim), not returned yet
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

// move is what rebalance decided for one lease: grant it more, ask some
// back.
type move struct {
	grant, reclaim task.Resources
}

// rebalance decides, for shares ss of a node with capacity and free
// resources, what to grant each (from free, up to its target) and what to
// ask back (above its target, less what is owed already, only in the
// resources some other share is below its target in). It updates ss and
// returns the new free.
func rebalance(capacity, free task.Resources, ss []*share) (task.Resources, []move) {
	flat := make([]share, len(ss))
	for i, s := range ss {
		flat[i] = *s
	}
	targets := divide(capacity, flat)
	moves := make([]move, len(ss))
	free = free.Clone()
	short := task.Resources{Custom: map[string]float64{}} // what shares still lack after the grants
	for i, s := range ss {
		t := targets[i]
		g := task.Resources{Custom: map[string]float64{}}
		g.CPU = task.AtLeastZero(min(t.CPU-s.held.CPU, free.CPU))
		g.GPU = math.Floor(task.AtLeastZero(min(t.GPU-s.held.GPU, free.GPU)))
		for k, v := range t.Custom {
			if x := task.AtLeastZero(min(v-s.held.Custom[k], free.Custom[k])); x > 0 {
				g.Custom[k] = x
			}
		}
		free = free.Sub(g)
		s.held = s.held.Add(g)
		moves[i].grant = g
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
	return free, moves
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
	free, moves := rebalance(d.cfg.Resources, d.free, ss)
	d.free = free
	for i, m := range moves {
		l := ls[i]
		if !m.grant.IsZero() {
			l.seq++
			seq := l.seq
			_ = l.conn.Send(msgGrant, func(b []byte) []byte { return appendRes(wire.AppendUvarint(b, seq), m.grant) })
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

// giveBack records a lease's msgReturn: the resources are free again.
func (d *daemon) giveBack(l *lease, r task.Resources) {
	d.mu.Lock()
	defer d.mu.Unlock()
	r = r.NonNegative().Min(l.held) // never more than it holds
	l.held = l.held.Sub(r)
	l.owed = l.owed.Sub(r).NonNegative()
	l.desired = l.desired.Min(l.held) // its next want says what it needs now
	d.free = d.free.Add(r)
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
			v = w
		}
	}
	if !v.Returned.IsZero() {
		r := v.Returned
		_ = l.conn.Send(msgReturn, func(b []byte) []byte { return appendRes(b, r) })
		l.asked = false // the node lowered what it thinks the job wants: say it again
	}
	desired := v.Held.Add(v.Want)
	if l.asked && seq == l.sentSeq && desired.Equal(l.sentDesired) {
		return
	}
	l.asked, l.sentSeq, l.sentDesired = true, seq, desired
	_ = l.conn.Send(msgWant, func(b []byte) []byte { return appendRes(wire.AppendUvarint(b, seq), desired) })
}
