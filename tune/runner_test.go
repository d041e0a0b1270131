package tune

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// counterState is what the synthetic trainable checkpoints.
type counterState struct {
	Step int     `json:"step"`
	Acc  float64 `json:"acc"`
}

// curve is a synthetic learning curve: score climbs towards config
// "quality" over iterations. It checkpoints its step so restores resume.
func curve(ctx context.Context, cfg map[string]any, report ReportFunc) error {
	q, _ := Float(cfg, "quality")
	var st counterState
	if _, err := LoadState(ctx, &st); err != nil {
		return err
	}
	for {
		st.Step++
		st.Acc = q * (1 - 1/float64(st.Step+1))
		if err := SaveState(ctx, st); err != nil {
			return err
		}
		if err := report(map[string]any{"score": st.Acc, "step": st.Step}); err != nil {
			return nil
		}
	}
}

func readResults(t *testing.T, dir string) []map[string]any {
	t.Helper()
	f, err := os.Open(filepath.Join(dir, "result.json"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []map[string]any
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatal(err)
		}
		out = append(out, m)
	}
	return out
}

func TestRunGridWithStopCriteria(t *testing.T) {
	dir := t.TempDir()
	a, err := Run(context.Background(), Experiment{
		Dir:           filepath.Join(dir, "exp"),
		Trainable:     FuncTrainable(curve),
		Space:         map[string]any{"quality": Grid(1.0, 2.0, 3.0)},
		NumSamples:    2,
		Metric:        "score",
		Stop:          map[string]float64{"training_iteration": 5},
		NodeResources: Resources{CPU: 2},
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(a.Trials) != 6 {
		t.Fatalf("%d trials, want 6", len(a.Trials))
	}
	for _, tr := range a.Trials {
		if tr.Status != Terminated || tr.Iteration != 5 {
			t.Errorf("trial %s: %s after %d iterations, want TERMINATED after 5", tr.ID, tr.Status, tr.Iteration)
		}
		rs := readResults(t, tr.Dir)
		if len(rs) != 5 {
			t.Errorf("trial %s logged %d results, want 5", tr.ID, len(rs))
		}
		if _, err := os.Stat(filepath.Join(tr.Dir, "params.json")); err != nil {
			t.Error(err)
		}
	}
	best, err := a.Best("score", Max)
	if err != nil || best.Config["quality"] != 3.0 {
		t.Fatalf("best %v %v", best, err)
	}
	// The same answer from the folder alone.
	bs, err := BestTrial(filepath.Join(dir, "exp"), "score", Max)
	if err != nil || bs.ID != best.ID {
		t.Fatalf("BestTrial %v %v, want %s", bs, err, best.ID)
	}
}

// gauge is a trainable that records how many instances step at once.
type gauge struct {
	cur, peak atomic.Int64
}

func (g *gauge) factory() TrainableFactory {
	return FuncTrainable(func(ctx context.Context, cfg map[string]any, report ReportFunc) error {
		n := g.cur.Add(1)
		defer g.cur.Add(-1)
		for {
			p := g.peak.Load()
			if n <= p || g.peak.CompareAndSwap(p, n) {
				break
			}
		}
		for i := 0; ; i++ {
			time.Sleep(2 * time.Millisecond)
			if err := report(map[string]any{"score": float64(i)}); err != nil {
				return nil
			}
		}
	})
}

func TestConcurrencyBoundedByResources(t *testing.T) {
	cases := []struct {
		trial, node Resources
		want        int64
	}{
		{Resources{CPU: 1}, Resources{CPU: 3}, 3},
		{Resources{CPU: 2}, Resources{CPU: 5}, 2},
		{Resources{CPU: 1, GPU: 1}, Resources{CPU: 8, GPU: 2}, 2},
		{Resources{CPU: 0.5}, Resources{CPU: 2}, 4},
	}
	for _, c := range cases {
		var g gauge
		a, err := Run(context.Background(), Experiment{
			Dir: filepath.Join(t.TempDir(), "exp"), Trainable: g.factory(),
			Space: map[string]any{"x": Uniform{0, 1}}, NumSamples: 10,
			Stop:      map[string]float64{"training_iteration": 10},
			Resources: c.trial, NodeResources: c.node,
		})
		if err != nil {
			t.Fatal(err)
		}
		if len(a.Trials) != 10 {
			t.Fatal(len(a.Trials))
		}
		if p := g.peak.Load(); p > c.want || p < 1 {
			t.Errorf("trial %v on node %v: %d trials at once, want at most %d", c.trial, c.node, p, c.want)
		}
	}
	_, err := Run(context.Background(), Experiment{
		Dir: filepath.Join(t.TempDir(), "exp"), Trainable: FuncTrainable(curve),
		Resources: Resources{CPU: 1, GPU: 1}, NodeResources: Resources{CPU: 4},
	})
	if err == nil || !strings.Contains(err.Error(), "each trial needs 1CPU 1GPU but the node has 4CPU") {
		t.Fatalf("oversized trial: %v", err)
	}
}

func TestMetricNotReportedFailsAfterFirstResult(t *testing.T) {
	var steps atomic.Int64
	tr := FuncTrainable(func(ctx context.Context, cfg map[string]any, report ReportFunc) error {
		for {
			steps.Add(1)
			if err := report(map[string]any{"loss": 1.0}); err != nil {
				return nil
			}
		}
	})
	_, err := Run(context.Background(), Experiment{
		Dir: filepath.Join(t.TempDir(), "exp"), Trainable: tr, Space: map[string]any{"a": Grid(1, 2, 3)},
		Metric: "accuracy", Stop: map[string]float64{"training_iteration": 1000}, NodeResources: Resources{CPU: 1},
	})
	if err == nil || !strings.Contains(err.Error(), `does not report metric "accuracy"; it reports: loss,`) {
		t.Fatalf("got %v", err)
	}
	if n := steps.Load(); n > 3 {
		t.Fatalf("ran %d steps before failing, want an error right after the first result", n)
	}
	// A stop_experiment key no trial reports would never end the sweep.
	_, err = Run(context.Background(), Experiment{
		Dir: filepath.Join(t.TempDir(), "exp"), Trainable: tr, Space: map[string]any{"a": Grid(1, 2, 3)},
		Metric: "loss", Stop: map[string]float64{"training_iteration": 1000}, NodeResources: Resources{CPU: 1},
		StopExperiment: map[string]float64{"reward": 10},
	})
	if err == nil || !strings.Contains(err.Error(), `does not report stop_experiment criterion "reward"`) {
		t.Fatalf("unreported stop_experiment key: got %v", err)
	}
}

func TestFailureRetriedFromCheckpoint(t *testing.T) {
	var crashed atomic.Bool
	var restoredAt atomic.Int64
	tr := FuncTrainable(func(ctx context.Context, cfg map[string]any, report ReportFunc) error {
		var st counterState
		if ok, _ := LoadState(ctx, &st); ok {
			restoredAt.Store(int64(st.Step))
		}
		for {
			st.Step++
			if st.Step == 7 && crashed.CompareAndSwap(false, true) {
				return errors.New("simulated crash")
			}
			SaveState(ctx, st)
			if err := report(map[string]any{"score": float64(st.Step), "step": st.Step}); err != nil {
				return nil
			}
		}
	})
	dir := filepath.Join(t.TempDir(), "exp")
	a, err := Run(context.Background(), Experiment{
		Dir: dir, Trainable: tr, Metric: "score",
		Stop:           map[string]float64{"training_iteration": 10},
		CheckpointFreq: 5, MaxFailures: 1, KeepCheckpointsNum: 1, CheckpointAtEnd: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	trial := a.Trials[0]
	if trial.Status != Terminated || trial.Failures != 1 {
		t.Fatalf("status %s failures %d, want TERMINATED after 1 failure", trial.Status, trial.Failures)
	}
	if restoredAt.Load() != 5 {
		t.Fatalf("restored at step %d, want 5 (the checkpoint)", restoredAt.Load())
	}
	if s, _ := trial.Metric("step"); s != 10 || trial.Iteration != 10 {
		t.Fatalf("ended at step %v iteration %d, want 10/10 (state carried across the retry)", s, trial.Iteration)
	}
	// keep 1: only the final checkpoint remains on disk.
	cps, _ := filepath.Glob(filepath.Join(trial.Dir, "checkpoint_*"))
	if len(cps) != 1 || filepath.Base(cps[0]) != "checkpoint_000010" {
		t.Fatalf("checkpoints on disk %v, want only checkpoint_000010", cps)
	}
	// Failure beyond max_failures: ERROR.
	always := FuncTrainable(func(context.Context, map[string]any, ReportFunc) error { return errors.New("boom") })
	a, err = Run(context.Background(), Experiment{Dir: filepath.Join(t.TempDir(), "e2"), Trainable: always, MaxFailures: 2})
	if err != nil {
		t.Fatal(err)
	}
	if tr := a.Trials[0]; tr.Status != Errored || tr.Failures != 3 || !strings.Contains(tr.Error, "boom") {
		t.Fatalf("got %s failures=%d err=%q, want ERROR after 3 tries", tr.Status, tr.Failures, tr.Error)
	}
}

func TestASHAEndToEndStopsPoorTrials(t *testing.T) {
	asha, err := NewASHA(ASHAConfig{MaxT: 27, GracePeriod: 1, ReductionFactor: 3})
	if err != nil {
		t.Fatal(err)
	}
	a, err := Run(context.Background(), Experiment{
		Dir: filepath.Join(t.TempDir(), "exp"), Trainable: FuncTrainable(curve),
		Space:  map[string]any{"quality": Grid(5.0, 9.0, 1.0, 8.0, 2.0, 7.0, 3.0, 6.0, 4.0)},
		Metric: "score", Scheduler: asha, NodeResources: Resources{CPU: 3},
	})
	if err != nil {
		t.Fatal(err)
	}
	total, full := 0, 0
	for _, tr := range a.Trials {
		total += tr.Iteration
		if tr.Iteration >= 27 {
			full++
		}
	}
	if full < 1 || full > 4 || total >= 9*27/2 {
		t.Fatalf("%d trials ran to max_t, %d iterations in all; ASHA should stop most early", full, total)
	}
	best, _ := a.Best("score", Max)
	if q := best.Config["quality"].(float64); q < 7 {
		t.Fatalf("best trial has quality %g; ASHA stopped the good ones", q)
	}
}

func TestHyperBandEndToEndPausesAndResumes(t *testing.T) {
	hb, err := NewHyperBand(HyperBandConfig{MaxT: 9, ReductionFactor: 3})
	if err != nil {
		t.Fatal(err)
	}
	a, err := Run(context.Background(), Experiment{
		Dir: filepath.Join(t.TempDir(), "exp"), Trainable: FuncTrainable(curve),
		Space:  map[string]any{"quality": Uniform{0, 10}},
		Metric: "score", Scheduler: hb, NumSamples: 9, Seed: 4, NodeResources: Resources{CPU: 4},
		CheckpointAtEnd: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	// One bracket of 9 with milestone 1: 3 go on to 3, 1 to 9.
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
	// The promoted trials continued from their pause checkpoints: their
	// own step counter matches the iteration count.
	for _, tr := range a.Trials {
		if s, _ := tr.Metric("step"); int(s) != tr.Iteration {
			t.Errorf("trial %s step %v at iteration %d: not resumed from its checkpoint", tr.ID, s, tr.Iteration)
		}
	}
}

func TestPBTEndToEndExploits(t *testing.T) {
	pbt, err := NewPBT(PBTConfig{
		PerturbationInterval: 4, QuantileFraction: 0.25, Seed: 1,
		HyperparamMutations: map[string]any{"quality": Uniform{0, 10}},
	})
	if err != nil {
		t.Fatal(err)
	}
	// PBT is asynchronous: a bottom trial exploits only a top trial that
	// has already passed a perturbation point (and so has a checkpoint).
	// Left to the goroutine scheduler, the two weakest trials can run all
	// 20 iterations before the two strongest reach iteration 4 (seen on a
	// loaded machine under -race), and nothing is exploited. So the weak
	// trials (quality 1 and 2) wait at their first perturbation point until
	// the strong ones (7 and 8) have passed theirs.
	var mu sync.Mutex
	strongPast := map[float64]bool{}
	gate := make(chan struct{})
	gated := FuncTrainable(func(ctx context.Context, cfg map[string]any, report ReportFunc) error {
		q, _ := Float(cfg, "quality")
		return curve(ctx, cfg, func(r map[string]any) error {
			step := r["step"].(int)
			switch {
			case (q == 7 || q == 8) && step == 5:
				mu.Lock()
				if !strongPast[q] {
					if strongPast[q] = true; len(strongPast) == 2 {
						close(gate)
					}
				}
				mu.Unlock()
			case q <= 2 && step >= 4:
				select {
				case <-gate:
				case <-ctx.Done():
					return ctx.Err()
				}
			}
			return report(r)
		})
	})
	dir := filepath.Join(t.TempDir(), "exp")
	a, err := Run(context.Background(), Experiment{
		Dir: dir, Trainable: gated,
		Space:  map[string]any{"quality": Grid(1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0)},
		Metric: "score", Scheduler: pbt, Stop: map[string]float64{"training_iteration": 20},
		NodeResources: Resources{CPU: 8},
	})
	if err != nil {
		t.Fatal(err)
	}
	if pbt.Exploits == 0 {
		t.Fatal("PBT never exploited")
	}
	// Exploited trials carry a config derived from a better trial's.
	changed := 0
	for i, tr := range a.Trials {
		if q := tr.Config["quality"].(float64); q != float64(i+1) {
			changed++
		}
		if tr.Status != Terminated || tr.Iteration != 20 {
			t.Errorf("trial %s: %s at %d", tr.ID, tr.Status, tr.Iteration)
		}
	}
	if changed == 0 {
		t.Fatal("no trial's config changed")
	}
	// The journal has the config changes.
	sums, err := LoadTrials(dir)
	if err != nil {
		t.Fatal(err)
	}
	for i, s := range sums {
		if fmt.Sprint(s.Config["quality"]) != fmt.Sprint(a.Trials[i].Config["quality"]) {
			t.Fatalf("journal config %v != trial config %v", s.Config, a.Trials[i].Config)
		}
	}
}

func TestResumeAfterCancelKeepsResults(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "exp")
	ctx, cancel := context.WithCancel(context.Background())
	var mu sync.Mutex
	reports := 0
	tr := FuncTrainable(func(c context.Context, cfg map[string]any, report ReportFunc) error {
		var st counterState
		LoadState(c, &st)
		for {
			st.Step++
			SaveState(c, st)
			mu.Lock()
			reports++
			if reports == 25 {
				cancel()
			}
			mu.Unlock()
			if err := report(map[string]any{"score": float64(st.Step), "step": st.Step}); err != nil {
				return nil
			}
		}
	})
	mk := func() Experiment {
		return Experiment{
			Dir: dir, Trainable: tr, Space: map[string]any{"q": Grid(1, 2, 3, 4)}, Metric: "score",
			Stop: map[string]float64{"training_iteration": 12}, CheckpointFreq: 3, NodeResources: Resources{CPU: 2},
		}
	}
	_, err := Run(ctx, mk())
	if err == nil || !errors.Is(err, context.Canceled) {
		t.Fatalf("interrupted run returned %v", err)
	}
	before, _ := LoadTrials(dir)
	a, err := Resume(context.Background(), mk())
	if err != nil {
		t.Fatal(err)
	}
	for _, trl := range a.Trials {
		if trl.Status != Terminated || trl.Iteration != 12 {
			t.Fatalf("trial %s %s at %d after resume", trl.ID, trl.Status, trl.Iteration)
		}
		if s, _ := trl.Metric("step"); s != 12 {
			t.Fatalf("trial %s step %v: not continued from checkpoint", trl.ID, s)
		}
	}
	if len(a.Trials) != 4 {
		t.Fatalf("%d trials after resume, want 4", len(a.Trials))
	}
	// Every result logged before the interruption is still there.
	for _, b := range before {
		if b.LastResult == nil {
			continue
		}
		rs := readResults(t, b.Dir)
		last, _ := ResultFloat(b.LastResult, "training_iteration")
		found := false
		for _, r := range rs {
			if it, _ := ResultFloat(r, "training_iteration"); it == last {
				found = true
			}
		}
		if !found {
			t.Fatalf("trial %s lost its result at iteration %v", b.ID, last)
		}
	}
}

func TestResumeErrors(t *testing.T) {
	dir := t.TempDir()
	_, err := Resume(context.Background(), Experiment{Dir: dir, Trainable: FuncTrainable(curve)})
	if err == nil || !strings.Contains(err.Error(), "is not a tune experiment folder") {
		t.Fatalf("non-experiment: %v", err)
	}
	exp := filepath.Join(dir, "exp")
	_, err = Run(context.Background(), Experiment{Dir: exp, Trainable: FuncTrainable(curve),
		Space: map[string]any{"quality": Uniform{0, 1}}, Stop: map[string]float64{"training_iteration": 2}})
	if err != nil {
		t.Fatal(err)
	}
	_, err = Resume(context.Background(), Experiment{Dir: exp, Trainable: FuncTrainable(curve),
		Space: map[string]any{"quality": Uniform{0, 2}}, Stop: map[string]float64{"training_iteration": 2}})
	if err == nil || !strings.Contains(err.Error(), "search space changed") {
		t.Fatalf("changed space: %v", err)
	}
	_, err = Run(context.Background(), Experiment{Dir: exp, Trainable: FuncTrainable(curve)})
	if err == nil || !strings.Contains(err.Error(), "already holds an experiment") {
		t.Fatalf("run over existing: %v", err)
	}
}

func TestResumeRefusedWhileRunning(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "exp")
	started := make(chan struct{})
	release := make(chan struct{})
	var once sync.Once
	blocker := FuncTrainable(func(ctx context.Context, cfg map[string]any, report ReportFunc) error {
		once.Do(func() { close(started) })
		select {
		case <-release:
		case <-ctx.Done():
		}
		return nil
	})
	done := make(chan error, 1)
	go func() {
		_, err := Run(context.Background(), Experiment{Dir: dir, Trainable: blocker})
		done <- err
	}()
	<-started
	_, err := Resume(context.Background(), Experiment{Dir: dir, Trainable: blocker})
	close(release)
	if err == nil || !strings.Contains(err.Error(), "being run by another process") {
		t.Fatalf("resume during run: %v", err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

func TestKeepBestCheckpointsByScore(t *testing.T) {
	// Score peaks at iteration 4, then falls.
	peaky := FuncTrainable(func(ctx context.Context, cfg map[string]any, report ReportFunc) error {
		var st counterState
		LoadState(ctx, &st)
		for {
			st.Step++
			SaveState(ctx, st)
			score := -float64((st.Step - 4) * (st.Step - 4))
			if err := report(map[string]any{"score": score}); err != nil {
				return nil
			}
		}
	})
	a, err := Run(context.Background(), Experiment{
		Dir: filepath.Join(t.TempDir(), "exp"), Trainable: peaky, Metric: "score",
		Stop:           map[string]float64{"training_iteration": 10},
		CheckpointFreq: 2, KeepCheckpointsNum: 2, CheckpointScoreAttr: "score",
	})
	if err != nil {
		t.Fatal(err)
	}
	tr := a.Trials[0]
	var names []string
	for _, c := range tr.Checkpoints {
		names = append(names, filepath.Base(c.Path))
	}
	// Kept: the best by score (iteration 4) and the newest (10).
	if strings.Join(names, ",") != "checkpoint_000004,checkpoint_000010" {
		t.Fatalf("kept %v, want the best (4) and the newest (10)", names)
	}
	onDisk, _ := filepath.Glob(filepath.Join(tr.Dir, "checkpoint_*"))
	if len(onDisk) != 2 {
		t.Fatalf("on disk: %v", onDisk)
	}
	sums, _ := LoadTrials(filepath.Dir(tr.Dir))
	if len(sums[0].Checkpoints) != 2 {
		t.Fatalf("journal keeps %d checkpoints, want 2", len(sums[0].Checkpoints))
	}
}

func TestInterruptAndResumeEverySchedulerAndSearcher(t *testing.T) {
	type setup func() (Scheduler, Searcher)
	space := map[string]any{"quality": Uniform{1, 10}}
	cases := map[string]setup{
		"fifo": func() (Scheduler, Searcher) { return nil, nil },
		"asha": func() (Scheduler, Searcher) {
			s, _ := NewASHA(ASHAConfig{MaxT: 12, GracePeriod: 1, ReductionFactor: 2, Brackets: 2})
			return s, nil
		},
		"hyperband": func() (Scheduler, Searcher) {
			s, _ := NewHyperBand(HyperBandConfig{MaxT: 9, ReductionFactor: 3})
			return s, nil
		},
		"median": func() (Scheduler, Searcher) {
			s, _ := NewMedianStopping(MedianStoppingConfig{GracePeriod: 2, MinSamplesRequired: 2})
			return s, nil
		},
		"pbt": func() (Scheduler, Searcher) {
			s, _ := NewPBT(PBTConfig{PerturbationInterval: 3, Seed: 2, HyperparamMutations: map[string]any{"quality": Uniform{1, 10}}})
			return s, nil
		},
		"tpe-limited": func() (Scheduler, Searcher) {
			tp, _ := NewTPE(space, TPEConfig{NumSamples: 12, NStartup: 4, Seed: 3})
			c, _ := NewConcurrencyLimiter(tp, 3)
			return nil, c
		},
	}
	for name, mk := range cases {
		t.Run(name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "exp")
			exp := func(ctx context.Context, cancelAt int, cancel func()) Experiment {
				sched, search := mk()
				var n atomic.Int64
				tr := FuncTrainable(func(c context.Context, cfg map[string]any, report ReportFunc) error {
					return curve(c, cfg, func(r map[string]any) error {
						if n.Add(1) == int64(cancelAt) {
							cancel()
						}
						return report(r)
					})
				})
				return Experiment{
					Dir: dir, Trainable: tr, Space: space, NumSamples: 12, Seed: 5,
					Scheduler: sched, Searcher: search, Metric: "score",
					Stop:           map[string]float64{"training_iteration": 12},
					CheckpointFreq: 2, NodeResources: Resources{CPU: 3},
				}
			}
			ctx, cancel := context.WithCancel(context.Background())
			_, err := Run(ctx, exp(ctx, 15, cancel))
			if !errors.Is(err, context.Canceled) {
				t.Fatalf("first run: %v", err)
			}
			before, _ := LoadTrials(dir)
			a, err := Resume(context.Background(), exp(context.Background(), -1, func() {}))
			if err != nil {
				t.Fatalf("resume: %v", err)
			}
			if len(a.Trials) != 12 {
				t.Fatalf("%d trials after resume, want 12", len(a.Trials))
			}
			for i, tr := range a.Trials {
				if !tr.Status.terminal() {
					t.Errorf("trial %s %s after resume", tr.ID, tr.Status)
				}
				if i < len(before) && before[i].Status.terminal() && before[i].Iteration != tr.Iteration {
					t.Errorf("trial %s finished at %d before the interruption, %d after resume", tr.ID, before[i].Iteration, tr.Iteration)
				}
			}
		})
	}
}

func TestJournalTornLastLineIgnoredCorruptMiddleReported(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "exp")
	_, err := Run(context.Background(), Experiment{Dir: dir, Trainable: FuncTrainable(curve),
		Space: map[string]any{"quality": Grid(1.0, 2.0)}, Stop: map[string]float64{"training_iteration": 3}})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, journalFile)
	good, _ := os.ReadFile(path)
	os.WriteFile(path, append(append([]byte(nil), good...), []byte(`{"e":"result","trial":"00000","res`)...), 0o644)
	if ts, err := LoadTrials(dir); err != nil || len(ts) != 2 {
		t.Fatalf("torn last line: %v, %d trials", err, len(ts))
	}
	bad := append([]byte("{not json}\n"), good...)
	bad = append([]byte(good[:strings.Index(string(good), "\n")+1]), bad...)
	os.WriteFile(path, bad, 0o644)
	if _, err := LoadTrials(dir); err == nil || !strings.Contains(err.Error(), "line 2 is corrupt") {
		t.Fatalf("corrupt middle line: %v", err)
	}
}

// A time budget ends the run: running trials stop after their step (with
// a final checkpoint), trials not started stay pending, and Resume starts
// those with a budget of its own while the ended trials stay as they were.
func TestTimeBudgetEndsRunAndResumeContinues(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "exp")
	endless := FuncTrainable(func(c context.Context, cfg map[string]any, report ReportFunc) error {
		for i := 1; ; i++ {
			time.Sleep(2 * time.Millisecond)
			if err := report(map[string]any{"score": float64(i)}); err != nil {
				return nil
			}
		}
	})
	mk := func(budget time.Duration, stop map[string]float64) Experiment {
		return Experiment{
			Dir: dir, Trainable: endless, Space: map[string]any{"q": Grid(1, 2, 3, 4, 5)}, Metric: "score",
			Stop: stop, CheckpointAtEnd: true, NodeResources: Resources{CPU: 2}, TimeBudget: budget,
		}
	}
	// Without the budget this run would never end: the trials have no
	// stop criterion. The context only keeps a broken budget from hanging.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	a, err := Run(ctx, mk(200*time.Millisecond, nil))
	if err != nil {
		t.Fatalf("run ended by its budget: %v", err)
	}
	if !a.BudgetSpent {
		t.Fatal("Analysis.BudgetSpent is false after the budget ended the run")
	}
	ended := map[string]int{}
	for _, trl := range a.Trials {
		switch {
		case trl.Status == Terminated && trl.Iteration > 0:
			if _, ok := trl.LatestCheckpoint(); !ok {
				t.Fatalf("trial %s ended by the budget without its final checkpoint", trl.ID)
			}
			ended[trl.ID] = trl.Iteration
		case trl.Status == Pending && trl.Iteration == 0:
		default:
			t.Fatalf("trial %s is %s at iteration %d after the budget", trl.ID, trl.Status, trl.Iteration)
		}
	}
	if len(ended) != 2 {
		t.Fatalf("%d trials ran before the budget ended the run, want the 2 that fit the node", len(ended))
	}
	if len(a.Unfinished()) != len(a.Trials)-2 {
		t.Fatalf("Unfinished: %d of %d trials", len(a.Unfinished()), len(a.Trials))
	}
	a, err = Resume(ctx, mk(0, map[string]float64{"training_iteration": 5}))
	if err != nil {
		t.Fatal(err)
	}
	if len(a.Trials) != 5 || a.BudgetSpent || len(a.Unfinished()) != 0 {
		t.Fatalf("after resume: %d trials, budget spent %v, %d unfinished; want 5, false, 0", len(a.Trials), a.BudgetSpent, len(a.Unfinished()))
	}
	for _, trl := range a.Trials {
		want := 5
		if it, ok := ended[trl.ID]; ok {
			want = it // ended by the budget: not run again
		}
		if trl.Status != Terminated || trl.Iteration != want {
			t.Fatalf("trial %s %s at iteration %d after resume, want terminated at %d", trl.ID, trl.Status, trl.Iteration, want)
		}
	}
}

// StopExperiment ends the sweep at the first result that reaches it:
// running trials stop, no further trial is created, and Resume has
// nothing to do.
func TestStopExperimentEndsSweep(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "exp")
	// score = x * iteration: x=1 and x=2 never reach 50 in 20 iterations;
	// x=3 reaches it at iteration 17 and x=4 at 13, both before either
	// ends, so x=5 and x=6 are never created.
	linear := FuncTrainable(func(c context.Context, cfg map[string]any, report ReportFunc) error {
		x, _ := Float(cfg, "x")
		for i := 1; ; i++ {
			time.Sleep(time.Millisecond)
			if err := report(map[string]any{"score": x * float64(i)}); err != nil {
				return nil
			}
		}
	})
	mk := func() Experiment {
		return Experiment{
			Dir: dir, Trainable: linear, Space: map[string]any{"x": Grid(1, 2, 3, 4, 5, 6)}, Metric: "score",
			Stop: map[string]float64{"training_iteration": 20}, StopExperiment: map[string]float64{"score": 50},
			NodeResources: Resources{CPU: 2},
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	a, err := Run(ctx, mk())
	if err != nil {
		t.Fatal(err)
	}
	check := func(when string, a *Analysis) {
		t.Helper()
		if !strings.Contains(a.Ended, "reached score >= 50") {
			t.Fatalf("%s: Analysis.Ended = %q", when, a.Ended)
		}
		if len(a.Trials) != 4 || len(a.Unfinished()) != 0 {
			t.Fatalf("%s: %d trials, %d unfinished; want 4 ended trials", when, len(a.Trials), len(a.Unfinished()))
		}
		reached := 0
		for _, trl := range a.Trials {
			if s, _ := trl.Metric("score"); s >= 50 {
				reached++
			}
			// x=3 and x=4 were running when the goal was met, by one of
			// them: both stopped short of their 20 iterations.
			if x, _ := Float(trl.Config, "x"); x >= 3 && trl.Iteration >= 20 {
				t.Fatalf("%s: trial %s (x=%v) ran all %d iterations after the experiment ended", when, trl.ID, x, trl.Iteration)
			}
			if trl.Status != Terminated {
				t.Fatalf("%s: trial %s is %s", when, trl.ID, trl.Status)
			}
		}
		if reached == 0 {
			t.Fatalf("%s: no trial's last score reached 50", when)
		}
	}
	check("run", a)
	a, err = Resume(ctx, mk())
	if err != nil {
		t.Fatal(err)
	}
	check("resume", a)
}
