package models

import (
	"math"
	"runtime"
	"slices"
	"sync/atomic"
	"testing"
)

// SumStep with Adam's ranges gives the bits of the separate calls (the sum,
// the norm, clipping, Adam's Step) for every team and shard count, on a
// small network's weights (fewer than two ranges' worth) and a large one's,
// clipped or not. The shards write their gradients (as BackwardSet does),
// each in one part or in two parts writing its halves (as a model's
// separate networks do, Tower); the sum only reads them, and the update
// clears the master's.
func TestSumStepSameAsSeparate(t *testing.T) {
	for _, n := range []int{9_001, 70_001} {
		for _, clip := range []float64{0.5, 1e9} {
			for _, shards := range []int{1, 2, 3} {
				grad := func(step, k int) []float64 { return randVec(uint64(10+10*k+step), n) }
				w, opt := randVec(1, n), NewAdam(1e-3)
				wantNorm := 0.0
				for step := range 3 {
					srcs := make([][]float64, shards)
					for k := range srcs {
						srcs[k] = grad(step, k)
					}
					SumGrads(srcs, 1)
					wantNorm = (*Team)(nil).ClipByGlobalNormOn(srcs[0], clip)
					if err := opt.Step(w, srcs[0]); err != nil {
						t.Fatal(err)
					}
				}
				want := w
				for _, size := range []int{1, 2, 3} {
					for _, perShard := range []int{1, 2} {
						team := NewTeam(size)
						w, opt := randVec(1, n), NewAdam(1e-3)
						grads := make([][]float64, shards)
						for k := range grads {
							grads[k] = make([]float64, n)
						}
						norm := 0.0
						for step := range 3 {
							ran := make([]atomic.Int32, shards*perShard)
							var r *AdamRanges
							norm = team.SumStep(grads, shards*perShard, func(k int) {
								ran[k].Add(1)
								j, h := k/perShard, k%perShard
								lo, hi := ShardBounds(h, perShard, n)
								copy(grads[j][lo:hi], grad(step, j)[lo:hi])
							}, func(norm float64) func(lo, hi int) {
								scale := 1.0
								if norm > clip {
									scale = clip / norm
								}
								var err error
								if r, err = opt.Ranges(w, grads[0], scale); err != nil {
									t.Error(err)
									return nil
								}
								return r.Apply
							})
							for k := range ran {
								if c := ran[k].Load(); c != 1 {
									t.Fatalf("n=%d team of %d, %d shards of %d parts: part %d ran %d times", n, size, shards, perShard, k, c)
								}
							}
							if r == nil || !r.Finite() {
								t.Fatalf("n=%d team of %d: the update did not run or found a non-finite weight", n, size)
							}
							if slices.ContainsFunc(grads[0], func(v float64) bool { return v != 0 }) {
								t.Fatalf("n=%d team of %d, %d shards: the update left the master's gradient uncleared", n, size, shards)
							}
							for k, g := range grads[1:] {
								if !slices.Equal(g, grad(step, k+1)) {
									t.Fatalf("n=%d team of %d, %d shards: the sum changed shard %d's gradient", n, size, shards, k+1)
								}
							}
						}
						team.Close()
						if norm != wantNorm || !slices.Equal(w, want) {
							t.Errorf("n=%d clip=%v team of %d, %d shards of %d parts: norm %v (want %v) or weights differ from the separate calls'", n, clip, size, shards, perShard, norm, wantNorm)
						}
					}
				}
			}
		}
	}
}

// SplitStep gives the bits of the separate calls (the norm, clipping,
// Adam's Step) on one gradient written in disjoint ranges by its parts,
// for every team and cut: ranges that end inside a norm block (squared by
// whichever part ends last), ranges of several blocks, one range for all.
func TestSplitStepSameAsSeparate(t *testing.T) {
	for _, n := range []int{9_155, 70_001} {
		for _, cuts := range [][]float64{{}, {0.5035}, {0.3, 0.31, 0.9}} {
			bounds := []int{0}
			for _, c := range cuts {
				bounds = append(bounds, int(c*float64(n)))
			}
			bounds = append(bounds, n)
			parts := len(bounds) - 1
			writes := func(k int) (int, int) { return bounds[k], bounds[k+1] }
			grad := func(step int) []float64 { return randVec(uint64(20+step), n) }
			const clip = 0.5
			w, opt := randVec(1, n), NewAdam(1e-3)
			wantNorm := 0.0
			for step := range 3 {
				g := grad(step)
				wantNorm = (*Team)(nil).ClipByGlobalNormOn(g, clip)
				if err := opt.Step(w, g); err != nil {
					t.Fatal(err)
				}
			}
			want := w
			for _, size := range []int{1, 2, 3} {
				team := NewTeam(size)
				w, opt := randVec(1, n), NewAdam(1e-3)
				g := make([]float64, n)
				norm := 0.0
				for step := range 3 {
					ran := make([]atomic.Int32, parts)
					var r *AdamRanges
					norm = team.SplitStep(g, parts, writes, func(k int) {
						ran[k].Add(1)
						lo, hi := writes(k)
						copy(g[lo:hi], grad(step)[lo:hi])
					}, func(norm float64) func(lo, hi int) {
						var err error
						if r, err = opt.Ranges(w, g, ClipScale(norm, clip)); err != nil {
							t.Error(err)
							return nil
						}
						return r.Apply
					})
					for k := range ran {
						if c := ran[k].Load(); c != 1 {
							t.Fatalf("n=%d team of %d, %d parts: part %d ran %d times", n, size, parts, k, c)
						}
					}
					if r == nil || !r.Finite() || slices.ContainsFunc(g, func(v float64) bool { return v != 0 }) {
						t.Fatalf("n=%d team of %d, %d parts: the update did not run, or left the gradient uncleared", n, size, parts)
					}
				}
				team.Close()
				if norm != wantNorm || !slices.Equal(w, want) {
					t.Errorf("n=%d team of %d, %d parts: norm %v (want %v) or weights differ from the separate calls'", n, size, parts, norm, wantNorm)
				}
			}
		}
	}
}

// SplitStep refuses parts that do not write the whole gradient one after
// the other: a gap would leave a block of the norm unsquared.
func TestSplitStepNeedsWholeGradient(t *testing.T) {
	for _, bounds := range [][]int{{0, 90}, {10, 100}, {0, 40, 50, 100}, {0, 60, 40, 100}} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("SplitStep ran parts writing %v of 100 values", bounds)
				}
			}()
			g := make([]float64, 100)
			writes := func(k int) (int, int) { return bounds[2*k], bounds[2*k+1] }
			(*Team)(nil).SplitStep(g, len(bounds)/2, writes, func(int) {}, func(float64) func(int, int) { return nil })
		}()
	}
}

// Without an update SumStep only sums (and returns 0); an update that
// declines leaves the weights alone and the sum in place. The other
// shard's gradient is read, not changed.
func TestSumStepWithoutUpdate(t *testing.T) {
	const n = 20_003
	team := NewTeam(2)
	defer team.Close()
	a, b := randVec(1, n), randVec(2, n)
	want := slices.Clone(a)
	addTo(want, b)
	for _, update := range []func(float64) func(int, int){nil, func(float64) func(int, int) { return nil }} {
		grads := [][]float64{make([]float64, n), make([]float64, n)}
		norm := team.SumStep(grads, len(grads), func(k int) { copy(grads[k], [][]float64{a, b}[k]) }, update)
		if !slices.Equal(grads[0], want) || !slices.Equal(grads[1], b) {
			t.Errorf("update %v: the master's gradient is not the sum, or the other shard's changed", update != nil)
		}
		if wantNorm := (*Team)(nil).GlobalNormOn(want); update == nil && norm != 0 || update != nil && norm != wantNorm {
			t.Errorf("update %v: norm %v", update != nil, norm)
		}
	}
}

// Adam's ranges report a weight the step made infinite, wherever it is (the
// vector kernel's part and the rest), and refuse mismatched lengths.
func TestAdamRangesFindNonFinite(t *testing.T) {
	team := NewTeam(2)
	defer team.Close()
	const n = 50_003
	for _, at := range []int{0, 24_999, n - 4, n - 1} {
		w, g := randVec(2, n), randVec(3, n)
		w[at] = math.Inf(1)
		r, err := NewAdam(1e-3).Ranges(w, g, 1)
		if err != nil {
			t.Fatal(err)
		}
		team.Ranges(n, adamGrain, r.Apply)
		if r.Finite() {
			t.Errorf("an infinite weight at %d: Finite() = true", at)
		}
	}
	if _, err := NewAdam(1e-3).Ranges(make([]float64, 3), make([]float64, 4), 1); err == nil {
		t.Error("3 weights and 4 gradients: want an error")
	}
}

// runPhases passes its phases in order: every part runs once, a phase's
// after runs once, after every part of its phase and before any part of
// the next, whether the members watch or sleep (a team larger than
// GOMAXPROCS sleeps at once), for any number of goroutines and parts
// (a phase of no parts too).
func TestRunPhases(t *testing.T) {
	for _, size := range []int{2, 3, runtime.GOMAXPROCS(0) + 2} {
		team := NewTeam(size)
		for _, n := range []int{2, size} {
			for _, parts := range []int{0, 1, 2, 7, 64} {
				const phases = 5
				var ran [phases][]atomic.Int32
				var afters [phases]int
				ph := make([]teamPhase, phases)
				for p := range ph {
					ran[p] = make([]atomic.Int32, parts)
					ph[p] = teamPhase{parts: parts, part: func(k int) {
						if p > 0 && afters[p-1] != 1 {
							t.Errorf("team of %d on %d, %d parts: phase %d's part %d ran before phase %d's after", size, n, parts, p, k, p-1)
						}
						ran[p][k].Add(1)
					}, after: func() {
						afters[p]++
						for k := range ran[p] {
							if c := ran[p][k].Load(); c != 1 {
								t.Errorf("team of %d on %d, %d parts: phase %d's after saw part %d run %d times", size, n, parts, p, k, c)
							}
						}
					}}
				}
				team.runPhases(n, ph)
				for p := range afters {
					if afters[p] != 1 {
						t.Errorf("team of %d on %d, %d parts: phase %d's after ran %d times, want 1", size, n, parts, p, afters[p])
					}
				}
			}
		}
		team.Close()
	}
}

// A traced team counts its Runs (one of several phases as one), no
// Run's path exceeds its whole work, and a stopped trace reports nothing.
func TestTeamTrace(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	g := randVec(5, 100_000)
	square := func() { sumSquares(g, make([]float64, 25), normBlock, 0, len(g)) }
	for _, tc := range []struct {
		name string
		run  func(team *Team)
	}{
		{"Run", func(team *Team) { team.GlobalNormOn(g) }},
		{"phases", func(team *Team) {
			part := func(int) { square() }
			team.runPhases(2, []teamPhase{{parts: 2, part: part, after: square}, {parts: 2, part: part}})
		}},
	} {
		team := NewTeam(2)
		team.Trace(true)
		for range 3 {
			tc.run(team)
		}
		got := team.Trace(false)
		if got.Runs != 3 {
			t.Errorf("%s: Runs = %d, want 3", tc.name, got.Runs)
		}
		if got.Path > got.Work || got.Path < 0 || got.Serial < 0 {
			t.Errorf("%s: trace %+v: the path exceeds the work or a figure is negative", tc.name, got)
		}
		if runtime.GOOS == "linux" && got.Path == 0 {
			t.Errorf("%s: trace %+v: no path measured on Linux", tc.name, got)
		}
		if again := team.Trace(false); again != (TeamTrace{}) {
			t.Errorf("%s: a stopped trace reports %+v, want nothing", tc.name, again)
		}
		team.Close()
	}
}
