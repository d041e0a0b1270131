package a3c

import (
	"context"
	"math"
	"os"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gray-ml/gray/rllib"
	"github.com/gray-ml/gray/rllib/internal/agenttest"
)

// newAgent is an agent on CartPole-v1 (agenttest.New), stopped when the
// test ends.
func newAgent(t *testing.T, cfg map[string]any, seed int64) *Agent {
	t.Helper()
	return agenttest.New(t, newFromKeys, rllib.Options{Env: "CartPole-v1", Seed: seed}, cfg)
}

// train runs one training iteration.
func train(t *testing.T, a *Agent) rllib.Result {
	t.Helper()
	return agenttest.Train(t, a, 1)
}

func TestRegistered(t *testing.T) {
	agenttest.Registered(t, "a3c", func(cfg *Config) bool { return cfg.RolloutFragmentLength == 20 })
}

// TestLearnsCartPole trains with two asynchronous runners: runs are not
// bit-reproducible, so the threshold leaves a wide margin (a random policy
// scores about 22).
func TestLearnsCartPole(t *testing.T) {
	if testing.Short() || raceEnabled {
		t.Skip("learning test (runs in the non-race pass)")
	}
	a := newAgent(t, map[string]any{"num_workers": 2}, 1)
	var best float64
	var r rllib.Result
	for r.TimestepsTotal < 60_000 {
		r = train(t, a)
		best = math.Max(best, r.EpisodeRewardMean)
		if best >= 150 {
			break
		}
	}
	if best < 150 {
		t.Fatalf("episode_reward_mean reached only %.1f in %d steps, want 150", best, r.TimestepsTotal)
	}
	for _, k := range []string{"policy_loss", "vf_loss", "entropy", "grad_gnorm", "cur_lr", "num_updates"} {
		if _, ok := r.Learner[k]; !ok {
			t.Errorf("learner stats lack %q: %v", k, r.Learner)
		}
	}
}

// With one runner the run is deterministic: same seed, same weights.
func TestOneRunnerIsDeterministic(t *testing.T) {
	cfg := map[string]any{"num_workers": 1, "updates_per_iter": 5}
	a, b := newAgent(t, cfg, 7), newAgent(t, cfg, 7)
	for range 2 {
		ra, rb := train(t, a), train(t, b)
		if ra.TimestepsTotal != rb.TimestepsTotal || ra.Learner["policy_loss"] != rb.Learner["policy_loss"] {
			t.Fatalf("runs differ: %+v vs %+v", ra, rb)
		}
	}
	wa, wb := a.Weights(), b.Weights()
	for i := range wa {
		if wa[i] != wb[i] {
			t.Fatalf("weight %d differs: %v vs %v", i, wa[i], wb[i])
		}
	}
}

// The driver's step gives the same weights for any num_learner_threads:
// with one runner, runs at 1 and 3 threads match bit for bit.
func TestLearnerThreadsSameWeights(t *testing.T) {
	var weights [][]float64
	for _, threads := range []int{1, 3} {
		a := newAgent(t, map[string]any{"num_workers": 1, "updates_per_iter": 5, "num_learner_threads": threads}, 7)
		r := train(t, a)
		if got := r.Extra["learner_threads"]; got != float64(threads) {
			t.Fatalf("num_learner_threads %d: learner_threads reported %v", threads, got)
		}
		weights = append(weights, a.Weights())
	}
	if !slices.Equal(weights[0], weights[1]) {
		t.Error("runs at 1 and 3 learner threads differ")
	}
}

// A runner whose process is killed mid-run is replaced by a fresh actor and
// training goes on.
func TestKilledRunnerIsReplaced(t *testing.T) {
	ctx := context.Background()
	a := newAgent(t, map[string]any{"num_workers": 2, "updates_per_iter": 10}, 3)
	train(t, a)
	pids, err := a.RunnerPids(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if pids[0] == os.Getpid() {
		t.Fatal("the runner runs in the driver's process")
	}
	if err := syscall.Kill(pids[0], syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	var restarts float64
	for range 5 {
		r := train(t, a)
		restarts += r.Extra["runner_restarts"]
		if r.Learner["num_updates"] < 10 {
			t.Fatalf("iteration applied %v updates, want 10", r.Learner["num_updates"])
		}
	}
	if restarts != 1 {
		t.Fatalf("runner_restarts = %v, want 1", restarts)
	}
	after, err := a.RunnerPids(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if after[0] == pids[0] || after[1] != pids[1] {
		t.Fatalf("runner pids %v before, %v after; want runner 1 replaced and runner 2 kept", pids, after)
	}
}

func TestBadConfig(t *testing.T) {
	refuses := agenttest.Refuses(t, newFromKeys)
	refuses(map[string]any{"num_wrokers": 2}, `unknown key "num_wrokers"`)
	refuses(map[string]any{"lr": "fast"}, `key "lr" must be`)
	refuses(map[string]any{"num_workers": 0}, "num_workers must be at least 1")
	refuses(map[string]any{"gamma": 1.5}, "gamma must be in [0, 1]")
	refuses(map[string]any{"model": map[string]any{"fcnet_hidens": []int{8}}}, "fcnet_hidens")
	refuses(map[string]any{"num_gpus": 1}, "num_gpus (1): A3C learns on the CPU only for now; set num_gpus: 0")
	refuses(map[string]any{"num_learner_threads": 0}, "A3C config: num_learner_threads must be at least 1, got 0")
	refuses(map[string]any{"num_workers": 2, "num_learner_threads": 3}, "num_learner_threads 3 is more than the learner's 2 CPUs")
}

// More runners than the runtime has CPUs: a clear error, not a hang.
func TestTooManyWorkers(t *testing.T) {
	start := time.Now()
	_, err := newFromKeys(context.Background(), rllib.Options{Env: "CartPole-v1"}, map[string]any{
		"num_workers": testCPUs + 2,
	})
	if err == nil {
		t.Fatal("New succeeded with more runners than CPUs")
	}
	for _, want := range []string{"num_workers=6 needs 6 CPUs", "the runtime has 4", "set num_workers to at most 4", "--num-cpus"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
	t.Logf("failed after %v: %v", time.Since(start).Round(time.Millisecond), err)
	// The runners it started were released: a full-size agent starts now.
	newAgent(t, map[string]any{"num_workers": testCPUs, "updates_per_iter": 1}, 1)
}

func TestSaveRestoreComputeAction(t *testing.T) {
	ctx := context.Background()
	a := newAgent(t, map[string]any{"num_workers": 1, "updates_per_iter": 5}, 5)
	train(t, a)
	path, err := a.Save(ctx)
	if err != nil {
		t.Fatal(err)
	}
	obs := []float64{0.01, -0.02, 0.03, 0.04}
	want, err := a.ComputeAction(obs)
	if err != nil {
		t.Fatal(err)
	}
	weights := a.Weights()
	train(t, a) // move away, then back

	b := newAgent(t, map[string]any{"num_workers": 1, "updates_per_iter": 5}, 99)
	for _, ag := range []*Agent{a, b} {
		if err := ag.Restore(ctx, path); err != nil {
			t.Fatal(err)
		}
		if ag.Iteration() != 1 {
			t.Errorf("restored iteration %d, want 1", ag.Iteration())
		}
		got, err := ag.ComputeAction(obs)
		if err != nil {
			t.Fatal(err)
		}
		if got[0] != want[0] {
			t.Errorf("restored action %v, want %v", got, want)
		}
		w := ag.Weights()
		for i := range w {
			if w[i] != weights[i] {
				t.Fatalf("restored weight %d = %v, want %v", i, w[i], weights[i])
			}
		}
	}
	// Training goes on after a restore.
	if r := train(t, b); r.TrainingIteration != 2 {
		t.Errorf("iteration after restore %d, want 2", r.TrainingIteration)
	}
	if _, err := a.ComputeAction([]float64{1, 2}); err == nil {
		t.Error("ComputeAction accepted an observation of the wrong size")
	}
	if err := a.Restore(ctx, t.TempDir()); err == nil || !strings.Contains(err.Error(), "not a checkpoint folder") {
		t.Errorf("Restore of an empty folder: %v", err)
	}
}
