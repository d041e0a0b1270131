package models

import (
	"math"
	"runtime"
	"sync/atomic"
	"time"
)

// Team is a fixed set of goroutines that run the parts of a training step
// together (num_learner_threads of them, the caller's included). Unlike
// Parallel, which starts goroutines for every call, a Team keeps its
// goroutines between calls, and a goroutine that has finished its parts
// briefly watches for what comes next (yielding its core after a moment,
// for any thread that waits for one) before it sleeps: a learner's step
// has several phases (the shards, the gradient sum, the optimizer), and
// waking a sleeping thread costs tens of microseconds, as long as a small
// network's whole step.
//
// Which part runs on which goroutine never changes the arithmetic: the
// parts are fixed by the caller, so results depend on the number of parts
// and not on the machine.
//
// A Team is used by one goroutine at a time (its owner), and must be
// closed to stop its goroutines. A nil *Team runs every part on the
// caller's goroutine, one after the other.
type Team struct {
	size int
	// spin is whether waiting members watch for work before sleeping:
	// only when every member can have a CPU of its own (GOMAXPROCS), since
	// a watching member would otherwise take the CPU a working one needs.
	spin bool

	runs   uint64                  // Runs so far: a member's job is the Run it is to join
	run    atomic.Pointer[teamRun] // the latest Run
	closed atomic.Bool

	members []*member
	sums    []float64      // GlobalNormOn's block sums
	left    []atomic.Int32 // SplitStep's counts of unfinished parts per block
	tracer  *teamTracer    // set while Trace is on
	// owner wakes the caller of Run when the last part ends while it
	// sleeps; on a cache line of its own, which the members read at the
	// end of every phase.
	_     [64]byte
	owner sleeper
	_     [64]byte
	done  chan struct{} // closed when every member has exited
}

// member is one goroutine of a Team beyond the caller's.
type member struct {
	sleeper
	k   int           // its place in the team (the caller's is 0)
	job atomic.Uint64 // the Run it is to join next (set by the owner)
}

// sleeper is a goroutine that may be asleep on wake: whoever flips asleep
// from true to false sends the one wake-up, so none is lost or doubled.
type sleeper struct {
	asleep atomic.Bool
	wake   chan struct{}
}

// rouse wakes s if it is asleep. It reads the flag before it swaps it: a
// swap takes the flag's cache line from the core that owns it even when
// it fails, and a goroutine is rarely asleep in a busy step. (A sleeper
// sets the flag before it checks its condition, and whoever rouses it
// changes the condition first, so one of the two sees the other.)
func (s *sleeper) rouse() {
	if s.asleep.Load() && s.asleep.CompareAndSwap(true, false) {
		s.wake <- struct{}{}
	}
}

// sleepUnless puts s to sleep until ready reports true, checking it once
// s has said it sleeps (so that a wake-up sent in between is not missed)
// and again after every wake-up: a wake-up can be stale (the last member
// of the previous Run rouses the owner after the owner saw that Run end
// by watching, and slept in the next one), and returning on it would end
// a Run whose parts still run.
func (s *sleeper) sleepUnless(ready func() bool) {
	for {
		s.asleep.Store(true)
		if ready() && s.asleep.CompareAndSwap(true, false) {
			return
		}
		<-s.wake
		if ready() {
			return
		}
	}
}

// watchFor is how long a goroutine of the team watches for what it waits
// for (the next Run, a phase's opening, the Run's end) before it sleeps:
// longer than a step's serial stretches and than a part that ran late
// because its core was taken for a moment, as long as a wake-up can take
// (a sleeping thread on an idle VM took 42 µs to wake at the median, 108 µs
// at the 90th percentile), far shorter than a sampling phase, during which
// the team sleeps. Sleeping sooner made every late part cost a wake-up:
// a 2-thread CartPole step (~120 µs) slept in one step of eight, and ran
// at 1.53× of one thread instead of 1.71×.
const watchFor = 200 * time.Microsecond

// yieldAfter is how long a watching goroutine spins before it yields its
// core between looks: a wait that long means a part ran late, and on a
// busy machine the thread running it may be waiting for a core, perhaps
// the very one the watcher holds. Spinning on through the wait cost a
// loaded machine's 2-thread CartPole step a tenth of its speed; yielding
// made it a third faster than sleeping at 50 µs did.
const yieldAfter = 50 * time.Microsecond

// NewTeam starts a team of size goroutines, the caller's included (size-1
// new ones); a size below 2 starts none.
func NewTeam(size int) *Team {
	size = max(1, size)
	t := &Team{size: size, spin: size <= runtime.GOMAXPROCS(0), done: make(chan struct{})}
	t.owner.wake = make(chan struct{}, 1)
	if size == 1 {
		close(t.done)
		return t
	}
	exited := atomic.Int64{}
	exited.Store(int64(size - 1))
	for k := 1; k < size; k++ {
		m := &member{k: k, sleeper: sleeper{wake: make(chan struct{}, 1)}}
		t.members = append(t.members, m)
		go func() {
			t.serve(m)
			if exited.Add(-1) == 0 {
				close(t.done)
			}
		}()
	}
	return t
}

// Size is the number of goroutines in the team, the caller's included.
func (t *Team) Size() int {
	if t == nil {
		return 1
	}
	return t.size
}

// Close stops the team's goroutines and waits for them to exit. The team
// must not be running a Run.
func (t *Team) Close() {
	if t == nil || t.closed.Swap(true) {
		return
	}
	for _, m := range t.members {
		m.job.Add(1)
		m.rouse()
	}
	<-t.done
}

// serve is a member's loop: take its share of the latest Run, then watch
// for the next one, then sleep.
func (t *Team) serve(m *member) {
	var seen uint64 // no Run yet: the first may be set before this starts
	for {
		next := func() bool { return m.job.Load() != seen }
		if !t.watch(next, watchFor) {
			m.sleepUnless(next)
		}
		seen = m.job.Load()
		if t.closed.Load() {
			return
		}
		// The owner may have gone on to a later Run: its state is the
		// one to help with (an ended Run's parts are all claimed).
		t.work(t.run.Load(), m.k, &m.sleeper)
	}
}

// watch looks for ready to report true for at most d (once, at once, when
// the team does not spin), and reports whether it did: spinning for
// yieldAfter, then yielding the core between looks.
func (t *Team) watch(ready func() bool, d time.Duration) bool {
	if !t.spin {
		return ready()
	}
	var start time.Time
	spin := min(d, yieldAfter)
	for i := 0; ; i++ {
		if ready() {
			return true
		}
		if i&63 == 63 {
			if start.IsZero() {
				start = time.Now()
			} else if time.Since(start) > spin {
				break
			}
		}
	}
	for time.Since(start) <= d {
		osYield()
		if ready() {
			return true
		}
	}
	return false
}

// Run calls fn(k) for k in [0, parts) and returns when all have returned.
// Each goroutine claims its own parts first (goroutine j of the n that
// join, n = min(Size, parts), those of ShardBounds(j, n, parts)), then any
// left unclaimed; fn must not depend on which goroutine runs a part, nor
// panic (a member's panic cannot be recovered by the caller).
func (t *Team) Run(parts int, fn func(k int)) {
	if t == nil || t.size == 1 || parts <= 1 {
		for k := range parts {
			fn(k)
		}
		return
	}
	// Only as many members join (and are woken) as have a part.
	t.runPhases(min(t.size, parts), []teamPhase{{parts: parts, part: fn}})
}

// Ranges calls fn(lo, hi) over [0, n) cut into ranges of whole blocks of
// grain values (the last range takes the rest), at most one range per
// member and none shorter than rangeMin values, run together. The cut
// depends on the team, so Ranges suits work whose result does not depend
// on where ranges start (elementwise updates on grain-aligned ranges): it
// gives the same values for any team.
func (t *Team) Ranges(n, grain int, fn func(lo, hi int)) {
	blocks := (n + grain - 1) / grain
	parts := max(1, min(t.Size(), blocks, n/rangeMin))
	t.Run(parts, func(k int) {
		lo, hi := ShardBounds(k, parts, blocks)
		fn(lo*grain, min(hi*grain, n))
	})
}

// rangeMin is the fewest values Ranges hands to a goroutine: handing a
// range over costs about a microsecond, as long as updating a few
// thousand weights, and on a loaded machine each meeting of the team can
// wait for a member to get a core back (CartPole's 9k weights split over
// two goroutines cost a shorter critical path but several times the wall
// time a step at load 28, so they stay on one).
const rangeMin = 8192

// normBlock is the number of values GlobalNormOn sums on their own before
// the blocks' sums are added in order (normBlockFor: for a gradient of
// 2·rangeMin values or more): fixed, so the norm is the same for any team.
const normBlock = 4096

// normBlockFor is the norm's block size for a gradient of n values:
// normBlock, or updateBlock for a gradient too small to be shared out in
// whole normBlocks, so that each network of a split step (SplitStep)
// squares blocks of its own. It depends on n only.
func normBlockFor(n int) int {
	if n < 2*rangeMin {
		return updateBlock
	}
	return normBlock
}

// GlobalNormOn is GlobalNorm computed by the team: the squares are summed
// in blocks of a fixed size, and the blocks' sums added in order, so the
// result depends on len(g) only, not on the team. (It can differ from
// GlobalNorm in the last bits.)
func (t *Team) GlobalNormOn(g []float64) float64 {
	sums, bs := t.blockSums(len(g)), normBlockFor(len(g))
	t.Ranges(len(g), bs, func(lo, hi int) { sumSquares(g, sums, bs, lo, hi) })
	return addSums(sums)
}

// ClipByGlobalNormOn is ClipByGlobalNorm with the norm and the scaling
// computed by the team (the norm as GlobalNormOn).
func (t *Team) ClipByGlobalNormOn(g []float64, maxNorm float64) float64 {
	n := t.GlobalNormOn(g)
	if n > maxNorm && maxNorm > 0 {
		f := maxNorm / n
		t.Ranges(len(g), normBlock, func(lo, hi int) {
			for i := range g[lo:hi] {
				g[lo+i] *= f
			}
		})
	}
	return n
}

// AllFinite reports whether no value of w is NaN or infinite, checked by
// the team.
func (t *Team) AllFinite(w []float64) bool {
	var bad atomic.Bool
	t.Ranges(len(w), normBlock, func(lo, hi int) {
		for _, v := range w[lo:hi] {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				bad.Store(true)
				return
			}
		}
	})
	return !bad.Load()
}

// SumGradsOn is SumGrads run by the team, and it also clears srcs[1:] as it
// adds them (while they are in cache), so that the shards' next backward
// passes start from zero without a pass of their own.
func (t *Team) SumGradsOn(srcs [][]float64) {
	if len(srcs) < 2 {
		return
	}
	t.Ranges(len(srcs[0]), normBlock, func(lo, hi int) { addClearing(srcs, lo, hi) })
}

// addClearing adds srcs[1:] into srcs[0] over [lo, hi), in order, clearing
// each as it goes.
func addClearing(srcs [][]float64, lo, hi int) {
	addGrads(srcs, lo, hi)
	for _, s := range srcs[1:] {
		clear(s[lo:hi])
	}
}

// addGrads adds srcs[1:] into srcs[0] over [lo, hi), in order. It reads
// the sources only: a core that clears another's gradient (as addClearing
// does) takes its cache lines away, and the owner's next backward pass
// fetches them back.
func addGrads(srcs [][]float64, lo, hi int) {
	d := srcs[0][lo:hi]
	for _, s := range srcs[1:] {
		s = s[lo:hi:hi]
		for i := range d {
			d[i] += s[i]
		}
	}
}
