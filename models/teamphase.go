package models

import (
	"runtime"
	"slices"
	"sync/atomic"
	"time"
)

// A Run's parts are claimed, not handed out. Each goroutine of the team
// first claims its own parts (a fixed cut of each phase, so that on an
// idle machine the same goroutine takes the same data every step, with
// it in its cache), then any part left unclaimed, the farthest from its
// owner first. A goroutine's own unclaimed parts are one word on a cache
// line of its own, which it takes from the front and others from the
// back, and it counts the parts it ran once per phase: on an idle machine
// no claim moves a cache line between cores (a claim per part on a shared
// line cost a small step's update phase, tens of parts, more than the
// update itself). A member that has lost its core to another process, or is
// still waking up, holds a Run up only by the part it has started: the
// others do the rest, and the Run ends without waiting for it. On a busy
// machine, where a member often waits milliseconds for a core, a
// goroutine that would otherwise wait works instead. Which goroutine runs
// a part never changes the arithmetic: the parts are fixed by the caller.

// teamPhase is one phase of a Run: parts calls part(k) for k in
// [0, parts), then after (nil: nothing) runs once, alone, after every part
// of the phase and before any part of the next.
type teamPhase struct {
	parts int
	part  func(k int)
	after func()
	// own, if set, is goroutine j's own parts [lo, hi) of n goroutines
	// (the ranges following each other from 0 to parts); else
	// ShardBounds(j, n, parts).
	own func(j, n int) (lo, hi int)
}

// teamRun is one Run's state, new for each Run: a member that comes late
// (after the Run ended) finds every part claimed and leaves, so nothing
// waits for it.
type teamRun struct {
	phases []teamPhase
	n      int            // goroutines the phases' own parts are cut for
	own    []partRange    // per phase p and goroutine j: own[p*n+j]
	left   []atomic.Int64 // per phase: parts not yet finished
	gate   atomic.Int64   // phases finished (their after run)
	tr     *runTrace      // set while the team is traced
}

// partRange is the unclaimed parts [lo, hi) of one goroutine's own range
// of a phase, packed as lo<<32 | hi: its goroutine claims from the front,
// others from the back. Padded to a cache line of its own.
type partRange struct {
	w atomic.Uint64
	_ [56]byte
}

func (c *partRange) set(lo, hi int) { c.w.Store(uint64(lo)<<32 | uint64(hi)) }

// take claims the first unclaimed part (front) or the last (back), and
// reports whether there was one.
func (c *partRange) take(front bool) (int, bool) {
	for {
		w := c.w.Load()
		lo, hi := int(w>>32), int(uint32(w))
		if lo >= hi {
			return 0, false
		}
		k, next := hi-1, uint64(lo)<<32|uint64(hi-1)
		if front {
			k, next = lo, uint64(lo+1)<<32|uint64(hi)
		}
		if c.w.CompareAndSwap(w, next) {
			return k, true
		}
	}
}

// runPhases runs the phases on n goroutines of the team (the caller's and
// n-1 members; n at most Size) and returns when the last phase's after
// has run. The caller, done with what it can claim, watches for the end
// (watchFor) before it sleeps.
func (t *Team) runPhases(n int, phases []teamPhase) {
	r := &teamRun{phases: phases, n: n, left: make([]atomic.Int64, len(phases)), own: make([]partRange, len(phases)*n)}
	cloned := false
	for p, ph := range phases {
		if ph.parts == 0 { // a phase of its after alone
			if !cloned {
				r.phases, cloned = slices.Clone(phases), true
			}
			r.phases[p].parts, r.phases[p].part = 1, func(int) {}
		}
		parts := r.phases[p].parts
		r.left[p].Store(int64(parts))
		cut := r.phases[p].own
		if cut == nil {
			cut = func(j, n int) (int, int) { return ShardBounds(j, n, parts) }
		}
		for j := range n {
			r.own[p*n+j].set(cut(j, n))
		}
	}
	if t.tracer != nil {
		r.tr = t.tracer.start(len(phases), t.size)
	}
	t.run.Store(r)
	t.runs++
	for _, m := range t.members[:n-1] {
		m.job.Store(t.runs)
		m.rouse()
	}
	t.work(r, 0, &t.owner)
	finished := func() bool { return r.gate.Load() == int64(len(phases)) }
	if !t.watch(finished, watchFor) {
		t.owner.sleepUnless(finished)
	}
	if r.tr != nil {
		t.tracer.done(r.tr)
	}
}

// work is goroutine j's share of r: in each phase, once it is open, its
// own parts and then any left unclaimed. s is j's sleeper, for the waits
// between phases.
func (t *Team) work(r *teamRun, j int, s *sleeper) {
	for p := range r.phases {
		if p > 0 {
			open := func() bool { return r.gate.Load() >= int64(p) }
			if !t.watch(open, watchFor) {
				s.sleepUnless(open)
			}
		}
		ran := 0
		if j < r.n {
			ran += t.runFrom(r, p, j, j, true)
		}
		for off := 1; off < r.n; off++ {
			ran += t.runFrom(r, p, (j+off)%r.n, j, false)
		}
		if ran > 0 {
			t.finish(r, p, ran)
		}
	}
}

// runFrom runs on goroutine j the parts of phase p it can claim from
// goroutine i's own range (from the front when i is j, else from the
// back) and returns how many it ran.
func (t *Team) runFrom(r *teamRun, p, i, j int, front bool) int {
	c := &r.own[p*r.n+i]
	ran := 0
	for {
		k, ok := c.take(front)
		if !ok {
			return ran
		}
		if r.tr != nil {
			r.tr.part(p, j, func() { r.phases[p].part(k) })
		} else {
			r.phases[p].part(k)
		}
		ran++
	}
}

// finish counts ran finished parts of phase p, all a goroutine will run
// in it; the goroutine that finishes the last runs the phase's after,
// opens the next phase and wakes the Run's goroutines that went to sleep.
func (t *Team) finish(r *teamRun, p, ran int) {
	if r.left[p].Add(-int64(ran)) != 0 {
		return
	}
	if after := r.phases[p].after; after != nil {
		if r.tr != nil {
			r.tr.action(after)
		} else {
			after()
		}
	}
	r.gate.Store(int64(p + 1))
	t.owner.rouse()
	for _, m := range t.members[:r.n-1] {
		m.rouse()
	}
}

// runTrace is what one traced Run measured: the CPU time of each phase's
// parts per goroutine, and of the phases' afters.
type runTrace struct {
	busy    [][]time.Duration // per phase and goroutine
	actions atomic.Int64      // nanoseconds
}

// start prepares a traced Run of phases phases on a team of size
// goroutines, counting the owner's CPU time since the last Run as serial.
func (tr *teamTracer) start(phases, size int) *runTrace {
	if now := threadCPU(); tr.left != 0 {
		tr.Serial += now - tr.left
	}
	r := &runTrace{busy: make([][]time.Duration, phases)}
	for p := range r.busy {
		r.busy[p] = make([]time.Duration, size)
	}
	return r
}

// part runs fn as goroutine j's part of phase p, counting its thread CPU
// time (before the part's end is counted, so the Run's end sees it).
func (r *runTrace) part(p, j int, fn func()) {
	// Both clock readings must be of the same thread's clock.
	runtime.LockOSThread()
	start := threadCPU()
	fn()
	r.busy[p][j] += threadCPU() - start
	runtime.UnlockOSThread()
}

// action runs a phase's after, counting its CPU time: it runs alone, so
// all of it is on the critical path.
func (r *runTrace) action(fn func()) {
	runtime.LockOSThread()
	start := threadCPU()
	fn()
	r.actions.Add(int64(threadCPU() - start))
	runtime.UnlockOSThread()
}

// done closes a traced Run: each phase's busiest goroutine and every
// after join the path.
func (tr *teamTracer) done(r *runTrace) {
	for _, busy := range r.busy {
		most := time.Duration(0)
		for _, b := range busy {
			tr.Work += b
			most = max(most, b)
		}
		tr.Path += most
	}
	a := time.Duration(r.actions.Load())
	tr.Path += a
	tr.Work += a
	tr.Runs++
	tr.left = threadCPU()
}
