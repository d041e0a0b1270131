package models

import (
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"sync/atomic"
	"testing"
	"time"
)

// A team runs every part of every Run exactly once, for more or fewer
// parts than members, Run after Run, and a nil team runs them in order.
func TestTeamRunsEachPartOnce(t *testing.T) {
	for _, size := range []int{0, 1, 2, 3, 8} {
		team := NewTeam(size)
		for run, parts := range []int{0, 1, 2, 5, 17, 1, 3} {
			seen := make([]atomic.Int32, parts)
			team.Run(parts, func(k int) { seen[k].Add(1) })
			for k := range seen {
				if c := seen[k].Load(); c != 1 {
					t.Errorf("team of %d, run %d with %d parts: part %d ran %d times", size, run, parts, k, c)
				}
			}
		}
		team.Close()
		team.Close() // a second Close does nothing
	}
	var order []int
	var none *Team
	none.Run(3, func(k int) { order = append(order, k) })
	if !slices.Equal(order, []int{0, 1, 2}) || none.Size() != 1 {
		t.Errorf("a nil team ran parts %v (size %d), want 0 1 2 on the caller", order, none.Size())
	}
}

// Ranges covers [0, n) in grain-aligned ranges without gaps or overlaps.
func TestTeamRanges(t *testing.T) {
	team := NewTeam(3)
	defer team.Close()
	for _, tc := range []struct{ n, grain int }{{0, 4}, {5, 4}, {100_000, 1024}, {3 * rangeMin, 4096}, {rangeMin*3 + 7, 1}} {
		cover := make([]atomic.Int32, tc.n)
		team.Ranges(tc.n, tc.grain, func(lo, hi int) {
			if lo%tc.grain != 0 {
				t.Errorf("n=%d grain=%d: a range starts at %d", tc.n, tc.grain, lo)
			}
			for i := lo; i < hi; i++ {
				cover[i].Add(1)
			}
		})
		for i := range cover {
			if c := cover[i].Load(); c != 1 {
				t.Fatalf("n=%d grain=%d: value %d covered %d times", tc.n, tc.grain, i, c)
			}
		}
	}
}

func randVec(seed uint64, n int) []float64 {
	r := rand.New(rand.NewPCG(seed, 9))
	v := make([]float64, n)
	for i := range v {
		v[i] = r.NormFloat64()
	}
	return v
}

// The team's Adam step, norm, clipping and gradient sum give the same bits
// for every team size, and the sum clears the shards it added.
func TestTeamArithmeticSameForAnyTeam(t *testing.T) {
	const n = 70_001 // not a multiple of any grain
	type result struct{ w, sum []float64 }
	run := func(size int) result {
		team := NewTeam(size)
		defer team.Close()
		w, opt := randVec(1, n), NewAdam(1e-3)
		for step := range 3 {
			srcs := [][]float64{randVec(uint64(10+step), n), randVec(20, n), randVec(30, n)}
			team.SumGradsOn(srcs)
			for _, s := range srcs[1:] {
				if slices.ContainsFunc(s, func(v float64) bool { return v != 0 }) {
					t.Fatalf("team of %d: SumGradsOn left a shard's gradient uncleared", size)
				}
			}
			if err := opt.StepOn(team, w, srcs[0]); err != nil {
				t.Fatal(err)
			}
		}
		g := randVec(40, n)
		norm := team.ClipByGlobalNormOn(g, 1)
		if math.Abs(norm-GlobalNorm(randVec(40, n))) > 1e-9*norm {
			t.Errorf("team of %d: norm %v, GlobalNorm %v", size, norm, GlobalNorm(randVec(40, n)))
		}
		if got := GlobalNorm(g); math.Abs(got-1) > 1e-12 {
			t.Errorf("team of %d: clipped norm %v, want 1", size, got)
		}
		return result{w, g}
	}
	want := run(1)
	for _, size := range []int{2, 3, 5} {
		got := run(size)
		if !slices.Equal(got.w, want.w) || !slices.Equal(got.sum, want.sum) {
			t.Errorf("team of %d: weights or clipped gradients differ from one goroutine's", size)
		}
	}
	// And the same weights as the plain Step.
	w, opt := randVec(1, n), NewAdam(1e-3)
	g20, g30 := randVec(20, n), randVec(30, n)
	for step := range 3 {
		g := randVec(uint64(10+step), n)
		for i := range g {
			g[i] = g[i] + g20[i] + g30[i] // left to right, as SumGradsOn
		}
		_ = opt.Step(w, g)
	}
	if !slices.Equal(w, want.w) {
		t.Error("Adam.StepOn's weights differ from Adam.Step's")
	}
}

// AllFinite finds a NaN or an infinity wherever it is.
func TestTeamAllFinite(t *testing.T) {
	team := NewTeam(2)
	defer team.Close()
	w := randVec(2, 50_000)
	if !team.AllFinite(w) {
		t.Fatal("finite weights reported as not finite")
	}
	for _, at := range []int{0, 24_999, 49_999} {
		for _, bad := range []float64{math.NaN(), math.Inf(-1)} {
			old := w[at]
			w[at] = bad
			if team.AllFinite(w) {
				t.Errorf("%v at %d not found", bad, at)
			}
			w[at] = old
		}
	}
}

// Params that share weights read the source's weights (and its updates)
// and keep their own gradients; mismatched parameters are refused.
func TestShareWeights(t *testing.T) {
	opts := DefaultModelOptions()
	src, err := NewFullyConnected(4, 2, opts, 1)
	if err != nil {
		t.Fatal(err)
	}
	dst, err := NewFullyConnected(4, 2, opts, 2)
	if err != nil {
		t.Fatal(err)
	}
	if err := dst.Params().ShareWeights(src.Params()); err != nil {
		t.Fatal(err)
	}
	src.Params().Flat()[3] = 42
	if dst.Params().Tensors()[0].Data[3] != 42 {
		t.Error("the sharing model does not see the source's weights")
	}
	dst.Params().Grads()[0] = 1
	if src.Params().Grads()[0] != 0 {
		t.Error("the sharing model writes the source's gradients")
	}
	tp := NewTape()
	a := src.Forward(tp, tp.Const(1, 4, []float64{1, 2, 3, 4})).Out.Data[0]
	tp2 := NewTape()
	if b := dst.Forward(tp2, tp2.Const(1, 4, []float64{1, 2, 3, 4})).Out.Data[0]; a != b {
		t.Errorf("outputs differ: %v and %v", a, b)
	}
	other, err := NewFullyConnected(5, 2, opts, 1)
	if err != nil {
		t.Fatal(err)
	}
	if err := other.Params().ShareWeights(src.Params()); err == nil {
		t.Error("sharing between different parameters was accepted")
	}
}

// A stale wake-up (a rouse meant for an earlier wait) must not end a
// sleep whose condition does not hold: the owner of a Run slept through
// by such a rouse would return while members still ran its parts.
func TestSleeperIgnoresStaleWakeUps(t *testing.T) {
	s := &sleeper{wake: make(chan struct{}, 1)}
	var ready atomic.Bool
	returned := make(chan struct{})
	go func() {
		s.sleepUnless(ready.Load)
		close(returned)
	}()
	asleep := func() {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for !s.asleep.Load() {
			if time.Now().After(deadline) {
				t.Fatal("the sleeper returned on a stale wake-up instead of sleeping again")
			}
			runtime.Gosched()
		}
	}
	asleep()
	s.rouse() // stale: ready still false
	asleep()  // it must go back to sleep
	ready.Store(true)
	s.rouse()
	<-returned
}

// A watching goroutine sees a condition that comes true while it spins or
// after it has begun to yield its core, and gives up only once its time
// is over; a team that does not spin looks once.
func TestWatch(t *testing.T) {
	for _, c := range []struct {
		name   string
		spin   bool
		after  time.Duration // when the condition comes true; 0: never
		within time.Duration // how long watch may look
		want   bool
	}{
		{"true while spinning", true, time.Microsecond, 10 * time.Second, true},
		{"true while yielding", true, 20 * yieldAfter, 10 * time.Second, true},
		{"never true", true, 0, 2 * time.Millisecond, false},
		{"no spinning: one look", false, time.Millisecond, 10 * time.Second, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			team := &Team{spin: c.spin}
			var ready atomic.Bool
			if c.after > 0 {
				timer := time.AfterFunc(c.after, func() { ready.Store(true) })
				defer timer.Stop()
			}
			start := time.Now()
			got := team.watch(ready.Load, c.within)
			took := time.Since(start)
			if got != c.want {
				t.Fatalf("watch = %v after %v, want %v", got, took, c.want)
			}
			if !got && c.spin && took < c.within {
				t.Errorf("watch gave up after %v, before its %v", took, c.within)
			}
		})
	}
}
