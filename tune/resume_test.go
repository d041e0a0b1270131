package tune

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"testing"
)

// stepTrainable counts steps towards its config's "quality" and
// checkpoints its step; onStep sees every step before its result is
// returned.
type stepTrainable struct {
	quality float64
	step    int
	onStep  func(quality float64, step int)
}

func (s *stepTrainable) Setup(_ context.Context, cfg map[string]any, _ string) error {
	s.quality, _ = Float(cfg, "quality")
	return nil
}

func (s *stepTrainable) Step(context.Context) (map[string]any, error) {
	s.step++
	if s.onStep != nil {
		s.onStep(s.quality, s.step)
	}
	return map[string]any{"score": s.quality * (1 - 1/float64(s.step+1))}, nil
}

func (s *stepTrainable) Save(_ context.Context, dir string) error {
	return os.WriteFile(filepath.Join(dir, "step"), []byte(strconv.Itoa(s.step)), 0o644)
}

func (s *stepTrainable) Restore(_ context.Context, dir string) error {
	b, err := os.ReadFile(filepath.Join(dir, "step"))
	if err != nil {
		return err
	}
	s.step, err = strconv.Atoi(string(b))
	return err
}

func (s *stepTrainable) Stop() error { return nil }

// An interruption can land between a result and the scheduler's decision
// on it: the result is journaled, the decision is not. Here the last trial
// of a HyperBand bracket reports the milestone result that completes the
// bracket's round just as the run is interrupted, so the halving that
// stops the losers first happens while Resume replays the journal. Resume
// must carry those stops out rather than leave the losers paused forever.
func TestResumeAppliesDecisionsFirstTakenDuringReplay(t *testing.T) {
	for _, tc := range []struct {
		name string
		// Qualities in trial order; the last trial is interrupted.
		qualities []any
		// Index of the trial that must run to MaxT.
		best int
	}{
		{"last trial kept", []any{1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0}, 8},
		{"last trial stopped", []any{9.0, 8.0, 7.0, 6.0, 5.0, 4.0, 3.0, 2.0, 1.0}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			testResumeAfterInterruptedHalving(t, tc.qualities, tc.best)
		})
	}
}

func testResumeAfterInterruptedHalving(t *testing.T, qualities []any, best int) {
	dir := filepath.Join(t.TempDir(), "exp")
	space := map[string]any{"quality": Grid(qualities...)}
	last, _ := toFloat(qualities[len(qualities)-1])
	exp := func(onStep func(float64, int)) Experiment {
		// One bracket of 9 trials with milestone 1; 3 go on to 3, 1 to 9.
		hb, err := NewHyperBand(HyperBandConfig{MaxT: 9, ReductionFactor: 3})
		if err != nil {
			t.Fatal(err)
		}
		return Experiment{
			Dir: dir, Space: space, Metric: "score", Scheduler: hb,
			Trainable: func() Trainable { return &stepTrainable{onStep: onStep} },
			// One trial at a time: trial 00008 is the last to reach the
			// milestone, with the other eight paused there.
			NodeResources: Resources{CPU: 1},
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	_, err := Run(ctx, exp(func(q float64, step int) {
		if q == last && step == 1 {
			cancel()
		}
	}))
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("first run: %v, want interrupted", err)
	}
	before, err := LoadTrials(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(before) != 9 || before[8].Iteration != 1 || before[8].Status != Running {
		t.Fatalf("interrupted at the wrong point: %d trials, last %s at %d; want 9, the last RUNNING at 1",
			len(before), before[len(before)-1].Status, before[len(before)-1].Iteration)
	}
	for _, tr := range before[:8] {
		if tr.Status != Paused || tr.Iteration != 1 {
			t.Fatalf("trial %s %s at %d before resume, want PAUSED at 1", tr.ID, tr.Status, tr.Iteration)
		}
	}
	a, err := Resume(context.Background(), exp(nil))
	if err != nil {
		t.Fatalf("resume: %v", err)
	}
	its := map[int]int{}
	for _, tr := range a.Trials {
		its[tr.Iteration]++
		if tr.Status != Terminated {
			t.Errorf("trial %s ended %s", tr.ID, tr.Status)
		}
	}
	if its[1] != 6 || its[3] != 2 || its[9] != 1 {
		t.Fatalf("iterations per trial %v, want 6 at 1, 2 at 3, 1 at 9", its)
	}
	if b := a.Trials[best]; b.Iteration != 9 {
		t.Errorf("the best trial %s ran to %d, want 9", b.ID, b.Iteration)
	}
}
