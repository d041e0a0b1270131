package models

import (
	"math"
	"runtime"
	"slices"
	"testing"
)

// The fused calls (SumNormOn, StepScaledOn) give the bits of the separate
// ones (SumGradsOn, ClipByGlobalNormOn, StepOn, AllFinite) for every team,
// on a small network's weights (one range) and a large one's (several),
// clipped or not.
func TestTeamFusedStepSameAsSeparate(t *testing.T) {
	for _, n := range []int{9_001, 70_001} {
		for _, clip := range []float64{0.5, 1e9} {
			separate := func() ([]float64, float64) {
				w, opt := randVec(1, n), NewAdam(1e-3)
				norm := 0.0
				for step := range 3 {
					srcs := [][]float64{randVec(uint64(10+step), n), randVec(20, n)}
					SumGrads(srcs, 1)
					norm = (*Team)(nil).ClipByGlobalNormOn(srcs[0], clip)
					if err := opt.Step(w, srcs[0]); err != nil {
						t.Fatal(err)
					}
				}
				return w, norm
			}
			want, wantNorm := separate()
			for _, size := range []int{1, 2, 3} {
				team := NewTeam(size)
				w, opt := randVec(1, n), NewAdam(1e-3)
				norm := 0.0
				for step := range 3 {
					srcs := [][]float64{randVec(uint64(10+step), n), randVec(20, n)}
					norm = team.SumNormOn(srcs)
					if slices.ContainsFunc(srcs[1], func(v float64) bool { return v != 0 }) {
						t.Fatalf("n=%d team of %d: SumNormOn left a shard's gradient uncleared", n, size)
					}
					scale := 1.0
					if norm > clip {
						scale = clip / norm
					}
					ok, err := opt.StepScaledOn(team, w, srcs[0], scale)
					if err != nil || !ok {
						t.Fatalf("n=%d team of %d: StepScaledOn = %v, %v", n, size, ok, err)
					}
				}
				team.Close()
				if norm != wantNorm || !slices.Equal(w, want) {
					t.Errorf("n=%d clip=%v team of %d: norm %v (want %v) or weights differ from the separate calls'", n, clip, size, norm, wantNorm)
				}
			}
		}
	}
}

// StepScaledOn reports a weight the step made infinite, wherever it is.
func TestStepScaledOnFindsNonFinite(t *testing.T) {
	team := NewTeam(2)
	defer team.Close()
	const n = 50_000
	for _, at := range []int{0, 24_999, n - 1} {
		w, g := randVec(2, n), randVec(3, n)
		w[at] = math.Inf(1)
		ok, err := NewAdam(1e-3).StepScaledOn(team, w, g, 1)
		if err != nil || ok {
			t.Errorf("an infinite weight at %d: StepScaledOn = %v, %v; want false, nil", at, ok, err)
		}
	}
	if _, err := NewAdam(1e-3).StepScaledOn(team, make([]float64, 3), make([]float64, 4), 1); err == nil {
		t.Error("3 weights and 4 gradients: want an error")
	}
}

// A traced team counts its Runs, and no goroutine's share of a Run
// exceeds the Run's whole work.
func TestTeamTrace(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	team := NewTeam(2)
	defer team.Close()
	team.Trace(true)
	g := randVec(5, 100_000)
	for range 5 {
		team.GlobalNormOn(g)
	}
	got := team.Trace(false)
	if got.Runs != 5 {
		t.Errorf("Runs = %d, want 5", got.Runs)
	}
	if got.Path > got.Work || got.Path < 0 || got.Serial < 0 {
		t.Errorf("trace %+v: the path exceeds the work or a figure is negative", got)
	}
	if runtime.GOOS == "linux" && got.Work == 0 {
		t.Errorf("trace %+v: no work measured on Linux", got)
	}
	if again := team.Trace(false); again != (TeamTrace{}) {
		t.Errorf("a stopped trace reports %+v, want nothing", again)
	}
}
