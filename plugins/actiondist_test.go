package plugins

import (
	"context"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/gray-ml/gray/envs"
	"github.com/gray-ml/gray/models"
	"github.com/gray-ml/gray/rllib"
)

// catalogDist builds a distribution plugin the way an agent does: through
// the model catalog, named by custom_action_dist.
func catalogDist(t *testing.T, path string, options map[string]any, space envs.Space) models.ActionDist {
	t.Helper()
	d, err := models.NewActionDist(space, models.ModelOptions{CustomActionDist: Prefix + path, CustomActionDistOptions: options})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = models.CloseActionDist(d) })
	return d
}

// TestActionDistPluginStandsInForCategorical: the example categorical
// plugin at temperature 1, built through the catalog, gives the built-in
// Categorical's log-likelihoods, entropies and KL divergences with the same
// gradients through the tape, the same log-probabilities and modes on the
// rollout path, and samples that depend only on the host's generator.
func TestActionDistPluginStandsInForCategorical(t *testing.T) {
	path := buildExample(t, "distribution")
	space := envs.Discrete{N: 3}
	plug := catalogDist(t, path, nil, space)
	builtin := models.Categorical{N: 3}
	if plug.Name() != Prefix+path || plug.InputSize() != 3 || plug.ActionSize() != 1 {
		t.Fatalf("Name %q, InputSize %d, ActionSize %d", plug.Name(), plug.InputSize(), plug.ActionSize())
	}
	p := []float64{0.5, -1, 2, 1, 1, 0, -3, 0.2, 0.1}
	q := []float64{0, 0, 0, -2, 1, 3, 1, 1, 1}
	actions := []float64{2, 0, 1}
	type result struct{ vals, gp, gq []float64 }
	run := func(d models.ActionDist, which string) result {
		tape := models.NewTape()
		pt, qt := tape.Variable(3, 3, p), tape.Variable(3, 3, q)
		var y *models.Tensor
		switch which {
		case "loglik":
			y = d.LogLikelihood(tape, pt, tape.Const(3, 1, actions))
		case "entropy":
			y = d.Entropy(tape, pt)
		case "kl":
			y = d.KL(tape, pt, qt)
		}
		w := tape.Const(3, 1, []float64{1, -2, 0.5})
		tape.Backward(tape.Sum(tape.Mul(y, w)))
		if err := tape.Err(); err != nil {
			t.Fatalf("%s: %v", which, err)
		}
		return result{append([]float64(nil), y.Data...), append([]float64(nil), pt.Grad...), append([]float64(nil), qt.Grad...)}
	}
	near := func(what string, got, want []float64) {
		t.Helper()
		for i := range want {
			if math.Abs(got[i]-want[i]) > 1e-9*(1+math.Abs(want[i])) {
				t.Fatalf("%s[%d] = %v, built-in %v", what, i, got[i], want[i])
			}
		}
	}
	for _, which := range []string{"loglik", "entropy", "kl"} {
		got, want := run(plug, which), run(builtin, which)
		near(which+" value", got.vals, want.vals)
		near(which+" gradient in p", got.gp, want.gp)
		near(which+" gradient in q", got.gq, want.gq)
	}
	lpGot, lpWant := make([]float64, 3), make([]float64, 3)
	if err := plug.LogProb(p, actions, lpGot); err != nil {
		t.Fatal(err)
	}
	_ = builtin.LogProb(p, actions, lpWant)
	near("LogProb", lpGot, lpWant)
	modeGot, modeWant := make([]float64, 3), make([]float64, 3)
	if err := plug.Mode(p, modeGot); err != nil {
		t.Fatal(err)
	}
	_ = builtin.Mode(p, modeWant)
	near("Mode", modeGot, modeWant)

	sample := func(seed uint64) []float64 {
		rows := make([]float64, 0, 3*64)
		for i := 0; i < 64; i++ {
			rows = append(rows, 0, 0, 0)
		}
		a := make([]float64, 64)
		if err := plug.Sample(rand.New(rand.NewPCG(seed, 1)), rows, a); err != nil {
			t.Fatal(err)
		}
		return a
	}
	a1, a2, a3 := sample(1), sample(1), sample(2)
	seen := map[float64]bool{}
	for i := range a1 {
		if a1[i] != a2[i] {
			t.Fatalf("same host seed, different samples: %v vs %v", a1, a2)
		}
		seen[a1[i]] = true
	}
	if len(seen) != 3 || slicesEqual(a1, a3) {
		t.Errorf("uniform logits: samples %v (seed 1) and %v (seed 2); want all three actions and seed-dependent draws", a1, a3)
	}
	if err := plug.Sample(rand.New(rand.NewPCG(1, 1)), p[:4], make([]float64, 2)); err == nil || !strings.Contains(err.Error(), "do not fit") {
		t.Errorf("inputs that are not whole rows: %v", err)
	}
}

// TestActionDistPluginFailures: a distribution plugin that returns errors,
// one that crashes, and one that does not fit the action space give
// errors naming the plugin, never a panic.
func TestActionDistPluginFailures(t *testing.T) {
	space := envs.Discrete{N: 2}
	in := []float64{0, 1, 1, 0}
	acts, logp := make([]float64, 2), make([]float64, 2)
	rng := rand.New(rand.NewPCG(1, 1))

	failing := catalogDist(t, faultyDistBin, map[string]any{"fail_after": 2}, space)
	if err := failing.Sample(rng, in, acts); err != nil {
		t.Fatalf("call 1 should work: %v", err)
	}
	if err := failing.LogProb(in, acts, logp); err == nil || !strings.Contains(err.Error(), "failing call 2") || !strings.Contains(err.Error(), faultyDistBin) {
		t.Errorf("LogProb of a failing plugin: %v", err)
	}
	tape := models.NewTape()
	y := failing.Entropy(tape, tape.Variable(2, 2, in))
	tape.Backward(tape.Sum(y))
	if err := tape.Err(); err == nil || !strings.Contains(err.Error(), "failing call") {
		t.Errorf("Entropy on the tape of a failing plugin: Tape.Err = %v", err)
	}

	crashing := catalogDist(t, faultyDistBin, map[string]any{"crash_after": 2}, space)
	if err := crashing.Mode(in, acts); err != nil {
		t.Fatalf("call 1 should work: %v", err)
	}
	err := crashing.Sample(rng, in, acts)
	if err == nil || !strings.Contains(err.Error(), "exited") || !strings.Contains(err.Error(), "crashing at call 2") {
		t.Errorf("Sample of a crashed plugin: %v; want an error saying it exited, with its stderr", err)
	}
	if err := crashing.Mode(in, acts); err == nil {
		t.Errorf("Mode after the crash: no error")
	}

	if _, err := models.NewActionDist(envs.NewBox(-1, 1, 2), models.ModelOptions{CustomActionDist: Prefix + faultyDistBin}); err == nil ||
		!strings.Contains(err.Error(), "custom_action_dist") || !strings.Contains(err.Error(), "needs a Discrete action space") {
		t.Errorf("a Box action space: %v", err)
	}
	if _, err := models.NewActionDist(space, models.ModelOptions{CustomActionDist: Prefix + "/no/such/plugin"}); err == nil ||
		!strings.Contains(err.Error(), "/no/such/plugin") {
		t.Errorf("a missing plugin: %v", err)
	}
}

// TestPPOLearnsWithDistributionPlugin trains PPO whose action
// distribution is the example plugin, named in the model config as a user
// does, on the grid world.
func TestPPOLearnsWithDistributionPlugin(t *testing.T) {
	if testing.Short() {
		t.Skip("learning test")
	}
	distBin := buildExample(t, "distribution")
	cfg := gridPPOConfig()
	cfg["model"] = map[string]any{"custom_action_dist": Prefix + distBin, "custom_action_dist_options": map[string]any{"temperature": 1}}
	if best := trainPPO(t, Prefix+gridworldBin, cfg, gridTarget, 60_000); best < gridTarget {
		t.Errorf("PPO with a distribution plugin on the grid world reached a mean return of %.3f, want %.2f", best, gridTarget)
	}
}

// TestPPOStopsWhenDistributionPluginCrashes: the distribution plugin dies
// during training; Train returns an error naming it instead of panicking.
func TestPPOStopsWhenDistributionPluginCrashes(t *testing.T) {
	alg, err := rllib.Lookup("PPO")
	if err != nil {
		t.Fatal(err)
	}
	cfg := gridPPOConfig()
	cfg["train_batch_size"] = 256
	cfg["sgd_minibatch_size"] = 128
	cfg["num_sgd_iter"] = 1
	cfg["model"] = map[string]any{"custom_action_dist": Prefix + faultyDistBin, "custom_action_dist_options": map[string]any{"crash_after": 60}}
	ctx := context.Background()
	a, err := alg.Make(ctx, rllib.Options{Env: Prefix + gridworldBin, Seed: 1, LogDir: t.TempDir()}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Stop()
	for i := 0; i < 5; i++ {
		if _, err = a.Train(ctx); err != nil {
			break
		}
	}
	t.Logf("Train: %v", err)
	if err == nil || !strings.Contains(err.Error(), faultyDistBin) || !strings.Contains(err.Error(), "exited") {
		t.Fatalf("Train with a crashing distribution plugin: %v; want an error naming the plugin and saying it exited", err)
	}
}
