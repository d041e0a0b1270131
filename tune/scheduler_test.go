package tune

import (
	"strings"
	"testing"
)

// fakeCtl records what schedulers ask of the runner.
type fakeCtl struct {
	stopped     []string
	checkpoints map[string]int
	reconfig    map[string]map[string]any
	from        map[string]string
}

func newFakeCtl() *fakeCtl {
	return &fakeCtl{checkpoints: map[string]int{}, reconfig: map[string]map[string]any{}, from: map[string]string{}}
}

func (c *fakeCtl) Checkpoint(t *Trial) (Checkpoint, error) {
	c.checkpoints[t.ID]++
	cp := Checkpoint{Path: "cp-" + t.ID, Iteration: t.Iteration}
	t.Checkpoints = append(t.Checkpoints, cp)
	return cp, nil
}
func (c *fakeCtl) Reconfigure(t *Trial, cfg map[string]any, cp Checkpoint) {
	c.reconfig[t.ID] = cfg
	c.from[t.ID] = cp.Path
}
func (c *fakeCtl) Stop(t *Trial) { c.stopped = append(c.stopped, t.ID) }

func res(iter int, v float64) map[string]any {
	return map[string]any{"training_iteration": iter, "score": v}
}

func mkTrials(n int) []*Trial {
	ts := make([]*Trial, n)
	for i := range ts {
		ts[i] = &Trial{ID: trialIDString(i), Status: Running, Config: map[string]any{"q": float64(i)}}
	}
	return ts
}

func TestASHAPromotesTopAndStopsRest(t *testing.T) {
	a, err := NewASHA(ASHAConfig{MaxT: 27, GracePeriod: 1, ReductionFactor: 3})
	if err != nil {
		t.Fatal(err)
	}
	if err := a.SetMetric("score", Max); err != nil {
		t.Fatal(err)
	}
	if got := a.Milestones(0); len(got) != 3 || got[0] != 1 || got[1] != 3 || got[2] != 9 {
		t.Fatalf("milestones %v, want [1 3 9]", got)
	}
	// Trials arrive in order of increasing quality: each later trial beats
	// the cutoff, so ASHA never stops them; the worse ones arriving after
	// good ones are stopped.
	ts := mkTrials(9)
	ctl := newFakeCtl()
	quality := []float64{5, 6, 7, 1, 2, 8, 0.5, 9, 3}
	stoppedAt := map[string]int{}
	for _, tr := range ts {
		a.OnTrialAdd(tr)
	}
	// Synthetic curves: score = quality * iteration; run trials one after
	// another (asynchronously arriving at rungs).
	for i, tr := range ts {
		for it := 1; it <= 27; it++ {
			d := a.OnTrialResult(ctl, tr, res(it, quality[i]*float64(it)))
			if d == Stop {
				stoppedAt[tr.ID] = it
				break
			}
		}
	}
	// The first trial sees empty rungs and runs to max_t.
	if stoppedAt["00000"] != 27 {
		t.Errorf("first trial stopped at %d, want 27 (max_t)", stoppedAt["00000"])
	}
	// Poor trials arriving after better ones are cut at the first rung.
	for _, id := range []string{"00003", "00004", "00006", "00008"} {
		if stoppedAt[id] != 1 {
			t.Errorf("trial %s (poor) stopped at %d, want 1", id, stoppedAt[id])
		}
	}
	// The best trial is promoted through every rung.
	if stoppedAt["00007"] != 27 {
		t.Errorf("best trial stopped at %d, want 27", stoppedAt["00007"])
	}
}

func TestASHAOptionsValidated(t *testing.T) {
	cases := map[string]ASHAConfig{
		"reduction_factor must be > 1": {ReductionFactor: 1},
		"grace_period must be in":      {MaxT: 10, GracePeriod: 20},
		"brackets must be >= 1":        {Brackets: -1},
		"max_t must be > 0":            {MaxT: -5},
	}
	for want, cfg := range cases {
		if _, err := NewASHA(cfg); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%+v: error %v, want %q", cfg, err, want)
		}
	}
	a, _ := NewASHA(ASHAConfig{})
	if err := a.SetMetric("", Max); err == nil || !strings.Contains(err.Error(), "needs a metric") {
		t.Errorf("missing metric: %v", err)
	}
	if err := a.SetMetric("x", "up"); err == nil || !strings.Contains(err.Error(), "mode must be") {
		t.Errorf("bad mode: %v", err)
	}
	if _, err := NewHyperBand(HyperBandConfig{ReductionFactor: 0.5}); err == nil {
		t.Error("hyperband eta 0.5 accepted")
	}
	if _, err := NewMedianStopping(MedianStoppingConfig{MinSamplesRequired: -1}); err == nil {
		t.Error("median min_samples -1 accepted")
	}
	if _, err := NewPBT(PBTConfig{QuantileFraction: 0.7, HyperparamMutations: map[string]any{"a": []any{1}}}); err == nil ||
		!strings.Contains(err.Error(), "quantile_fraction") {
		t.Errorf("pbt quantile 0.7: %v", err)
	}
	if _, err := NewPBT(PBTConfig{}); err == nil || !strings.Contains(err.Error(), "hyperparam_mutations") {
		t.Errorf("pbt without mutations: %v", err)
	}
}

func TestASHAMinMode(t *testing.T) {
	a, _ := NewASHA(ASHAConfig{MaxT: 10, GracePeriod: 1, ReductionFactor: 2})
	a.SetMetric("score", Min)
	ts := mkTrials(2)
	ctl := newFakeCtl()
	a.OnTrialAdd(ts[0])
	a.OnTrialAdd(ts[1])
	if d := a.OnTrialResult(ctl, ts[0], res(1, 1.0)); d != Continue {
		t.Fatal(d)
	}
	// Higher loss than the only recorded one: stopped in min mode.
	if d := a.OnTrialResult(ctl, ts[1], res(1, 5.0)); d != Stop {
		t.Fatalf("worse loss got %v, want STOP", d)
	}
}

func TestHyperBandBracketsAndHalving(t *testing.T) {
	h, err := NewHyperBand(HyperBandConfig{MaxT: 9, ReductionFactor: 3})
	if err != nil {
		t.Fatal(err)
	}
	h.SetMetric("score", Max)
	sizes := h.BracketSizes()
	// sMax = 2: brackets (9 trials, r=1), (5, 3), (3, 9).
	want := [][2]float64{{9, 1}, {5, 3}, {3, 9}}
	if len(sizes) != 3 {
		t.Fatalf("brackets %v, want %v", sizes, want)
	}
	for i := range want {
		if sizes[i] != want[i] {
			t.Fatalf("brackets %v, want %v", sizes, want)
		}
	}
	ctl := newFakeCtl()
	ts := mkTrials(10)
	for _, tr := range ts {
		h.OnTrialAdd(tr)
	}
	if h.byTrial["00009"] == h.byTrial["00000"] || h.byTrial["00009"].s != 1 {
		t.Fatal("10th trial should open the second bracket (s=1)")
	}
	// First bracket: every trial reaches milestone 1 and pauses, except
	// the last, which triggers halving: keep 9/3 = 3 best.
	for i := 0; i < 8; i++ {
		if d := h.OnTrialResult(ctl, ts[i], res(1, float64(i))); d != Pause {
			t.Fatalf("trial %d at milestone: %v, want PAUSE", i, d)
		}
		ts[i].Status = Paused
	}
	if c := h.ChooseTrialToRun(ts[:8]); c != nil {
		t.Fatalf("a paused trial waiting at the milestone was chosen: %s", c.ID)
	}
	if d := h.OnTrialResult(ctl, ts[8], res(1, 8)); d != Continue {
		t.Fatalf("best trial completing the round: %v, want CONTINUE", d)
	}
	// Trials 0..5 stopped; 6 and 7 promoted and resumable.
	if len(ctl.stopped) != 6 {
		t.Fatalf("stopped %v, want 6 trials", ctl.stopped)
	}
	for _, id := range ctl.stopped {
		if id >= "00006" {
			t.Fatalf("a top trial was stopped: %v", ctl.stopped)
		}
	}
	if c := h.ChooseTrialToRun(ts[:8]); c == nil || c.ID != "00006" {
		t.Fatalf("want promoted trial 00006 chosen, got %v", c)
	}
	// Next milestone is 3.
	if d := h.OnTrialResult(ctl, ts[8], res(2, 8)); d != Continue {
		t.Fatal(d)
	}
	if d := h.OnTrialResult(ctl, ts[8], res(3, 8)); d != Pause {
		t.Fatalf("at milestone 3: %v, want PAUSE", d)
	}
	// Trial 6 errors out: completion of trial 7 at milestone 3 finishes the
	// round; 2 live trials / 3 -> keep 1 (the better, 8).
	h.OnTrialComplete(ctl, ts[6], nil)
	if d := h.OnTrialResult(ctl, ts[7], res(3, 7)); d != Stop {
		t.Fatalf("worse of the final two: %v, want STOP", d)
	}
	if d := h.OnTrialResult(ctl, ts[8], res(9, 8)); d != Stop {
		t.Fatalf("at max_t: %v, want STOP", d)
	}
}

func TestMedianStopping(t *testing.T) {
	m, err := NewMedianStopping(MedianStoppingConfig{GracePeriod: 3, MinSamplesRequired: 3})
	if err != nil {
		t.Fatal(err)
	}
	m.SetMetric("score", Max)
	ctl := newFakeCtl()
	ts := mkTrials(5)
	// Four good trials with scores 10..13 for 10 iterations.
	for i := 0; i < 4; i++ {
		for it := 1; it <= 10; it++ {
			if d := m.OnTrialResult(ctl, ts[i], res(it, float64(10+i))); d != Continue {
				t.Fatalf("good trial %d stopped at %d", i, it)
			}
		}
	}
	// A poor trial: not stopped within the grace period, stopped right
	// after it.
	for it := 1; it <= 10; it++ {
		d := m.OnTrialResult(ctl, ts[4], res(it, 1))
		if it < 3 && d != Continue {
			t.Fatalf("stopped within grace period at %d", it)
		}
		if it == 3 {
			if d != Stop {
				t.Fatalf("poor trial at 3: %v, want STOP", d)
			}
			break
		}
	}
	// A trial above the median continues.
	m2, _ := NewMedianStopping(MedianStoppingConfig{GracePeriod: 1, MinSamplesRequired: 3})
	m2.SetMetric("score", Max)
	for i := 0; i < 3; i++ {
		for it := 1; it <= 5; it++ {
			m2.OnTrialResult(ctl, ts[i], res(it, float64(i)))
		}
	}
	for it := 1; it <= 5; it++ {
		if d := m2.OnTrialResult(ctl, ts[3], res(it, 1.5)); d != Continue {
			t.Fatalf("above-median trial stopped at %d", it)
		}
	}
	// Too few others: never stops.
	m3, _ := NewMedianStopping(MedianStoppingConfig{GracePeriod: 1, MinSamplesRequired: 3})
	m3.SetMetric("score", Max)
	m3.OnTrialResult(ctl, ts[0], res(1, 100))
	if d := m3.OnTrialResult(ctl, ts[1], res(1, 0)); d != Continue {
		t.Fatal("stopped with only one other sample")
	}
}

func TestPBTExploitsTopAndExplores(t *testing.T) {
	p, err := NewPBT(PBTConfig{
		PerturbationInterval: 5, QuantileFraction: 0.25, ResampleProbability: 0.0001,
		HyperparamMutations: map[string]any{
			"lr":    Uniform{0.001, 0.1},
			"batch": []any{16, 32, 64, 128},
		},
		Seed: 3,
	})
	if err != nil {
		t.Fatal(err)
	}
	p.SetMetric("score", Max)
	ctl := newFakeCtl()
	ts := mkTrials(8)
	for i, tr := range ts {
		tr.Config = map[string]any{"lr": 0.01 * float64(i+1), "batch": 32, "fixed": "x"}
		p.OnTrialAdd(tr)
	}
	// Round 1: all report at t=5 with score = index. Perturbation only at
	// t >= interval; earlier results just record scores.
	for it := 1; it <= 5; it++ {
		for i, tr := range ts {
			tr.Iteration = it
			if d := p.OnTrialResult(ctl, tr, res(it, float64(i))); d != Continue {
				t.Fatalf("PBT returned %v", d)
			}
		}
	}
	for i, tr := range ts {
		want := 1
		if i < 2 {
			want = 0 // bottom trials are replaced, not saved
		}
		if ctl.checkpoints[tr.ID] != want {
			t.Fatalf("trial %s checkpointed %d times at the perturbation point, want %d", tr.ID, ctl.checkpoints[tr.ID], want)
		}
	}
	// The bottom trials reported before the top ones had a checkpoint, so
	// they exploit at their next result.
	if len(ctl.reconfig) != 0 {
		t.Fatalf("exploited before any donor checkpoint: %v", ctl.reconfig)
	}
	for i, tr := range ts {
		p.OnTrialResult(ctl, tr, res(6, float64(i)))
	}
	// Bottom 2 of 8 (trials 0, 1) exploit one of the top 2 (6, 7).
	if len(ctl.reconfig) != 2 {
		t.Fatalf("reconfigured %v, want trials 00000 and 00001", ctl.reconfig)
	}
	for _, id := range []string{"00000", "00001"} {
		cfg := ctl.reconfig[id]
		from := ctl.from[id]
		if from != "cp-00006" && from != "cp-00007" {
			t.Fatalf("trial %s exploited %s, want a top trial's checkpoint", id, from)
		}
		donorLR := 0.07
		if from == "cp-00007" {
			donorLR = 0.08
		}
		lr := cfg["lr"].(float64)
		if !(near(lr, donorLR*0.8) || near(lr, donorLR*1.2)) {
			t.Fatalf("trial %s lr %g, want donor's %g perturbed by 0.8 or 1.2", id, lr, donorLR)
		}
		if b := cfg["batch"]; b != 16 && b != 64 {
			t.Fatalf("batch %v, want a neighbour of 32 in the list", b)
		}
		if cfg["fixed"] != "x" {
			t.Fatal("unmutated key lost")
		}
	}
	// Before the next interval nothing happens.
	for i, tr := range ts {
		p.OnTrialResult(ctl, tr, res(7, float64(i)))
	}
	if p.Exploits != 2 {
		t.Fatalf("exploits %d, want 2", p.Exploits)
	}
}

func near(a, b float64) bool { return a-b < 1e-12 && b-a < 1e-12 }
