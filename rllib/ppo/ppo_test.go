package ppo

import (
	"context"
	"errors"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/gray-ml/gray/envs"
	"github.com/gray-ml/gray/rllib/internal/agenttest"
	"github.com/gray-ml/gray/rllib/schedule"
)

// fastCartPole is a CI-sized configuration.
func fastCartPole() map[string]any {
	return map[string]any{
		"num_envs_per_worker": 8, "train_batch_size": 1024, "num_sgd_iter": 4,
		"sgd_minibatch_size": 256, "lr": 0.001,
	}
}

func TestRegistered(t *testing.T) {
	agenttest.Registered(t, "ppo", func(cfg *Config) bool { return cfg.ClipParam == 0.2 })
}

// tunedCartPole is the CartPole setting of benchmarks/rl.
func tunedCartPole() map[string]any {
	return map[string]any{
		"lr": 0.002, "lr_final": 0, "lr_decay_timesteps": 150000,
		"model": map[string]any{"fcnet_hiddens": []int{32, 32}},
	}
}

func TestLearnsCartPole(t *testing.T) {
	t.Run("local worker", func(t *testing.T) { learnsCartPole(t, tunedCartPole()) })
	t.Run("two actors", func(t *testing.T) {
		cfg := tunedCartPole()
		cfg["num_workers"], cfg["num_envs_per_worker"] = 2, 4
		learnsCartPole(t, cfg)
	})
	// Sampling the next batch while learning from this one (weights one
	// iteration old) still learns.
	t.Run("two actors, sample_async", func(t *testing.T) {
		cfg := tunedCartPole()
		cfg["num_workers"], cfg["num_envs_per_worker"], cfg["sample_async"] = 2, 4, true
		learnsCartPole(t, cfg)
	})
}

// TestSampleAsync checks the overlap of sampling and learning: each
// iteration leaves the next one's sampling running, reports the driver's
// share, and the same seed gives the same run.
func TestSampleAsync(t *testing.T) {
	cfg := fastCartPole()
	cfg["num_workers"], cfg["num_envs_per_worker"], cfg["sample_async"] = 2, 4, true
	var runs [2][]float64
	for i := range runs {
		a := newAgent(t, "CartPole-v1", cfg, 3)
		for range 3 {
			r := agenttest.Train(t, a, 1)
			share, ok := r.Extra["driver_share"]
			if !ok || share < 0 || share > 1 || r.Extra["driver_time_s"] > r.TimeThisIterS {
				t.Fatalf("driver_share %v (present %v), driver_time_s %v of %v s: want a share in [0, 1]", share, ok, r.Extra["driver_time_s"], r.TimeThisIterS)
			}
		}
		s := a.samplers.(*actorSamplers)
		if s.pending == nil || s.pendingIter != a.iteration+1 {
			t.Fatalf("after iteration %d the next sampling is not out (pending for %d)", a.iteration, s.pendingIter)
		}
		runs[i] = a.Weights()
		// Its workers hold a CPU each: free them for the next agent.
		if err := a.Stop(); err != nil {
			t.Fatal(err)
		}
	}
	if !slices.Equal(runs[0], runs[1]) {
		t.Error("two sample_async runs with seed 3 differ")
	}
}

func learnsCartPole(t *testing.T, cfg map[string]any) {
	if testing.Short() {
		t.Skip("learning test")
	}
	a := newAgent(t, "CartPole-v1", cfg, 1)
	var best float64
	for a.timesteps < 50_000 {
		r := agenttest.Train(t, a, 1)
		best = math.Max(best, r.EpisodeRewardMean)
		for _, k := range []string{"policy_loss", "vf_loss", "total_loss", "entropy", "kl", "kl_coeff", "cur_lr", "explained_variance"} {
			if _, ok := r.Learner[k]; !ok {
				t.Fatalf("result lacks learner statistic %q: %v", k, r.Learner)
			}
		}
		if best >= 150 {
			break
		}
	}
	if best < 150 {
		t.Fatalf("mean episode reward reached %.1f within %d steps, want at least 150", best, a.timesteps)
	}
	t.Logf("mean reward %.1f after %d steps", best, a.timesteps)
}

func TestSameSeedSameRun(t *testing.T) {
	for _, workers := range []int{0, 2} {
		cfg := fastCartPole()
		cfg["num_workers"] = workers
		cfg["observation_filter"] = "MeanStdFilter"
		var runs [2][]float64
		var rewards [2]float64
		for i := range runs {
			a := newAgent(t, "CartPole-v1", cfg, 7)
			r := agenttest.Train(t, a, 3)
			runs[i], rewards[i] = a.Weights(), r.EpisodeRewardMean
			// Its workers hold a CPU each: free them for the next agent.
			if err := a.Stop(); err != nil {
				t.Fatal(err)
			}
		}
		if !slices.Equal(runs[0], runs[1]) || rewards[0] != rewards[1] {
			t.Errorf("num_workers %d: two runs with seed 7 differ (rewards %v)", workers, rewards)
		}
		other := newAgent(t, "CartPole-v1", cfg, 8)
		agenttest.Train(t, other, 3)
		if slices.Equal(runs[0], other.Weights()) {
			t.Errorf("num_workers %d: seeds 7 and 8 gave the same weights", workers)
		}
	}
}

// TestSameThreadsSameRun checks that the learner's result depends on the
// seed and num_learner_threads alone: two runs with the same thread count
// match bit for bit (goroutines finishing in any order), and every thread
// count learns.
func TestSameThreadsSameRun(t *testing.T) {
	for _, threads := range []int{1, 3} {
		cfg := fastCartPole()
		cfg["num_learner_threads"] = threads
		var runs [2][]float64
		for i := range runs {
			a := newAgent(t, "CartPole-v1", cfg, 5)
			agenttest.Train(t, a, 3)
			if got := a.learner.team.Size(); got != threads {
				t.Fatalf("num_learner_threads %d: the learner has %d threads", threads, got)
			}
			runs[i] = a.Weights()
		}
		if !slices.Equal(runs[0], runs[1]) {
			t.Errorf("num_learner_threads %d: two runs with seed 5 differ", threads)
		}
	}
}

// TestNetworkSplitSameAsOneThread checks what splitting a shard by network
// promises: a policy with a value network of its own (the default model)
// trains on two learner threads to the weights one thread gives, bit for
// bit, with the work of each step split between the policy's and the
// value function's parts; with shared layers (nothing to split by
// network) two threads shard the rows, and the run differs.
func TestNetworkSplitSameAsOneThread(t *testing.T) {
	for _, tc := range []struct {
		name  string
		model map[string]any
		same  bool
	}{
		{"separate value network", map[string]any{"fcnet_hiddens": []int{32, 32}}, true},
		{"shared layers", map[string]any{"fcnet_hiddens": []int{32, 32}, "vf_share_layers": true}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var runs [2][]float64
			var last [2]map[string]float64
			for i, threads := range []int{1, 2} {
				cfg := fastCartPole()
				cfg["model"] = tc.model
				cfg["num_learner_threads"] = threads
				a := newAgent(t, "CartPole-v1", cfg, 5)
				r := agenttest.Train(t, a, 2)
				runs[i], last[i] = a.Weights(), r.Learner
				if split := a.learner.shards[0].towers[0].Forward != nil; split != (threads == 2 && tc.same) {
					t.Fatalf("%d threads: split by network %v", threads, split)
				}
			}
			if same := slices.Equal(runs[0], runs[1]); same != tc.same {
				t.Errorf("1 and 2 threads gave the same weights: %v, want %v", same, tc.same)
			}
			if tc.same {
				for _, k := range []string{"policy_loss", "vf_loss", "total_loss", "kl", "entropy", "grad_gnorm"} {
					if last[0][k] != last[1][k] {
						t.Errorf("%s: %v on 1 thread, %v on 2", k, last[0][k], last[1][k])
					}
				}
			}
		})
	}
}

func TestSaveRestoreContinue(t *testing.T) {
	cfg := fastCartPole()
	cfg["observation_filter"] = "MeanStdFilter"
	a := newAgent(t, "CartPole-v1", cfg, 3)
	agenttest.Train(t, a, 2)
	path := agenttest.Checkpoint(t, a)
	fresh := func() *Agent { return newAgent(t, "CartPole-v1", cfg, 3) }
	b, c := agenttest.Restored(t, fresh, path), agenttest.Restored(t, fresh, path)
	if !slices.Equal(a.Weights(), b.Weights()) || b.Iteration() != 2 || b.timesteps != a.timesteps || b.klCoeff != a.klCoeff {
		t.Fatalf("restored agent differs: iteration %d timesteps %d kl_coeff %v; want %d %d %v",
			b.Iteration(), b.timesteps, b.klCoeff, a.Iteration(), a.timesteps, a.klCoeff)
	}
	if !slices.Equal(a.proc.filter.Stats().Mean, b.proc.filter.Stats().Mean) {
		t.Error("restored observation filter differs")
	}
	agenttest.TrainAlike(t, b, c, 2, 4)
}

func TestRestoreRejectsOtherCheckpoints(t *testing.T) {
	a := newAgent(t, "CartPole-v1", fastCartPole(), 1)
	agenttest.Train(t, a, 1)
	path := agenttest.Checkpoint(t, a)
	agenttest.RefusesOther(t, a, newAgent(t, "Acrobot-v1", fastCartPole(), 1), path, "PPO", "DQN")
	if err := a.Restore(context.Background(), t.TempDir()); err == nil {
		t.Error("restoring from an empty folder: want an error")
	}
}

func TestBadConfig(t *testing.T) {
	refuses := agenttest.Refuses(t, newFromKeys)
	refuses(map[string]any{"num_sgd_iters": 3}, `unknown key "num_sgd_iters"`)
	refuses(map[string]any{"lr": "fast"}, `"lr" must be a number`)
	refuses(map[string]any{"num_workers": 1.5}, `"num_workers" must be an integer`)
	refuses(map[string]any{"gamma": 1.5}, "gamma must be in [0, 1]")
	refuses(map[string]any{"observation_filter": "Fancy"}, "observation_filter")
	refuses(map[string]any{"model": map[string]any{"fcnet_hidens": []int{8}}}, "fcnet_hidens")
	refuses(map[string]any{"lr_schedule": [][]float64{{100, 1e-3}, {50, 1e-4}}}, "lr_schedule")
	refuses(map[string]any{"lr_final": 1e-5}, "lr_decay_timesteps")
	refuses(map[string]any{"train_batch_size": 200, "sgd_minibatch_size": 256}, "sgd_minibatch_size (256) must not exceed train_batch_size (200)")
	// TestMain gives the runtime 4 CPUs and each rollout worker
	// reserves one: a fifth would wait forever.
	refuses(map[string]any{"num_workers": 5}, "num_workers=5 needs 5 CPUs (each worker actor reserves one); the runtime has 4: set num_workers to at most 4")
	refuses(map[string]any{"sample_async": true}, "sample_async needs num_workers of 1 or more")
	// num_gpus 0 (every other test) and 1 (TestNumGPUsLearnerActor) are
	// the values accepted.
	for _, gpus := range []float64{0.5, 2, -1} {
		refuses(map[string]any{"num_gpus": gpus}, "must be 0 (learn on the CPU) or 1 (learn on one GPU)")
	}
	refuses(map[string]any{"num_learner_threads": 0}, "num_learner_threads must be at least 1, got 0")
	refuses(map[string]any{"num_learner_threads": -2}, "num_learner_threads must be at least 1, got -2")
	// Two workers leave the learner 2 of the runtime's 4 CPUs.
	refuses(map[string]any{"num_workers": 2, "num_learner_threads": 3}, "num_learner_threads 3 is more than the learner's 2 CPUs")
}

func TestNaNStopsIterationAndKeepsWeights(t *testing.T) {
	cfg := fastCartPole()
	a := newAgent(t, "CartPole-v1", cfg, 1)
	agenttest.Train(t, a, 1)
	// A learning rate this large sends the weights to Inf in one step.
	a.lr = schedule.Constant(1e300)
	agenttest.TrainFails[*nanError](t, a, "epoch 1, minibatch")
	a.lr = a.Cfg.lrSchedule()
	if _, err := a.Train(context.Background()); err != nil {
		t.Errorf("training after a failed iteration: %v", err)
	}
}

func TestPendulumBoxActions(t *testing.T) {
	a := newAgent(t, "Pendulum-v1", map[string]any{"train_batch_size": 800, "observation_filter": "MeanStdFilter"}, 1)
	r := agenttest.Train(t, a, 2)
	if r.TimestepsTotal != 1600 || math.IsNaN(r.Learner["total_loss"]) {
		t.Errorf("after 2 iterations: %d timesteps, total loss %v", r.TimestepsTotal, r.Learner["total_loss"])
	}
	env, err := envs.Make("Pendulum-v1", nil)
	if err != nil {
		t.Fatal(err)
	}
	obs, _ := env.Reset(1)
	act, err := a.ComputeAction(obs)
	if err != nil {
		t.Fatal(err)
	}
	if !env.ActionSpace().Contains(act) {
		t.Errorf("ComputeAction = %v, outside the action space %v", act, env.ActionSpace())
	}
	if _, err := a.ComputeAction([]float64{1, 2}); err == nil {
		t.Error("ComputeAction with a 2-value observation for Pendulum: want an error")
	}
}

func TestComputeActionDiscrete(t *testing.T) {
	a := newAgent(t, "CartPole-v1", fastCartPole(), 1)
	act, err := a.ComputeAction([]float64{0, 0, 0.1, 0})
	if err != nil {
		t.Fatal(err)
	}
	if len(act) != 1 || (act[0] != 0 && act[0] != 1) {
		t.Errorf("ComputeAction = %v, want [0] or [1]", act)
	}
}

func TestTrainCancelledAndAfterStop(t *testing.T) {
	a := newAgent(t, "CartPole-v1", fastCartPole(), 1)
	agenttest.Train(t, a, 1)
	before := a.Weights()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := a.Train(ctx); !errors.Is(err, context.Canceled) {
		t.Errorf("Train with a cancelled context: %v, want context.Canceled", err)
	}
	if !slices.Equal(before, a.Weights()) || a.Iteration() != 1 {
		t.Error("a cancelled iteration changed the weights or the iteration count")
	}
	if err := a.Stop(); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Train(context.Background()); err == nil || !strings.Contains(err.Error(), "Stop") {
		t.Errorf("Train after Stop: %v, want an error", err)
	}
	if err := a.Stop(); err != nil {
		t.Errorf("second Stop: %v", err)
	}
}

func TestLearningRateSchedules(t *testing.T) {
	tests := []struct {
		name string
		cfg  map[string]any
		want []float64 // cur_lr of iterations 1..3 (1024 steps each)
	}{
		{"constant", map[string]any{"lr": 0.001}, []float64{0.001, 0.001, 0.001}},
		{"linear decay", map[string]any{"lr": 0.001, "lr_final": 0, "lr_decay_timesteps": 2048}, []float64{0.001, 0.0005, 0}},
		{"piecewise", map[string]any{"lr_schedule": [][]float64{{0, 0.01}, {1024, 0.001}, {4096, 0.001}}}, []float64{0.01, 0.001, 0.001}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := fastCartPole()
			for k, v := range tc.cfg {
				cfg[k] = v
			}
			cfg["num_sgd_iter"] = 1
			a := newAgent(t, "CartPole-v1", cfg, 1)
			for i, want := range tc.want {
				r := agenttest.Train(t, a, 1)
				if got := r.Learner["cur_lr"]; math.Abs(got-want) > 1e-12 {
					t.Errorf("iteration %d: cur_lr %v, want %v", i+1, got, want)
				}
			}
		})
	}
}

func TestAdaptiveKLCoefficient(t *testing.T) {
	a := newAgent(t, "CartPole-v1", fastCartPole(), 1)
	for _, tc := range []struct{ kl, want float64 }{
		{0.03, 0.3},   // above 2×target 0.01: ×1.5
		{0.01, 0.3},   // within [0.5, 2]×target: unchanged
		{0.001, 0.15}, // below 0.5×target: ×0.5
	} {
		a.updateKL(tc.kl)
		if math.Abs(a.klCoeff-tc.want) > 1e-12 {
			t.Errorf("after kl %v: kl_coeff %v, want %v", tc.kl, a.klCoeff, tc.want)
		}
	}
}
