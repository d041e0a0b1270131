package dqn

import (
	"context"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/gray-ml/gray"
	"github.com/gray-ml/gray/models"
	"github.com/gray-ml/gray/rllib"
	"github.com/gray-ml/gray/rllib/internal/agenttest"
	"github.com/gray-ml/gray/rllib/schedule"
)

// smallCartPole is a quick configuration for tests that do not need
// learning: a small network and few steps per iteration.
func smallCartPole() map[string]any {
	return map[string]any{
		"model":                   map[string]any{"fcnet_hiddens": []int{32, 32}},
		"timesteps_per_iteration": 256, "train_freq": 128, "gradient_steps": 8,
		"learning_starts": 256, "buffer_size": 5000,
	}
}

func TestRegistered(t *testing.T) {
	agenttest.Registered(t, "dqn", func(cfg *Config) bool { return cfg.TargetNetworkUpdateFreq != 0 && cfg.DoubleQ })
}

// TestLearnsCartPole is the CI-sized learning run: the default
// hyperparameters with a smaller network.
func TestLearnsCartPole(t *testing.T) {
	if testing.Short() || raceEnabled {
		t.Skip("learning test (run without -race and -short)")
	}
	a := newAgent(t, "CartPole-v1", ciCartPole(), 1)
	var best float64
	var r rllib.Result
	for a.timesteps < 30_000 {
		r = agenttest.Train(t, a, 1)
		best = math.Max(best, r.EpisodeRewardMean)
		if best >= 100 {
			break
		}
	}
	for _, k := range []string{"loss", "mean_q", "mean_td_error", "grad_gnorm", "epsilon", "cur_lr", "num_target_updates"} {
		if _, ok := r.Learner[k]; !ok {
			t.Errorf("result lacks learner statistic %q: %v", k, r.Learner)
		}
	}
	if best < 100 {
		t.Fatalf("mean episode reward reached %.1f within %d steps, want at least 100", best, a.timesteps)
	}
	t.Logf("mean reward %.1f after %d steps", best, a.timesteps)
}

func TestDuelingAggregation(t *testing.T) {
	opts := models.ModelOptions{Hiddens: []int{16}, Activation: "relu"}
	q, err := newQNetwork([]int{4}, 3, opts, true, 5)
	if err != nil {
		t.Fatal(err)
	}
	// Make the streams non-trivial.
	for i, w := range q.params.Flat() {
		q.params.Flat()[i] = w + 0.1*math.Sin(float64(i))
	}
	obs := []float64{0.1, -0.2, 0.3, 0.05, 1, 2, -1, 0.5}
	tape := models.NewTape()
	o := q.model.Forward(tape, tape.Const(2, 4, obs))
	got := q.values(obs, 2)
	for i := range 2 {
		v := o.Value.Data[i]
		adv := o.Out.Row(i)
		mean := (adv[0] + adv[1] + adv[2]) / 3
		for j := range 3 {
			want := v + adv[j] - mean
			if math.Abs(got[i*3+j]-want) > 1e-12 {
				t.Errorf("Q[%d][%d] = %v, want V + A - mean(A) = %v", i, j, got[i*3+j], want)
			}
		}
		if qm := (got[i*3] + got[i*3+1] + got[i*3+2]) / 3; math.Abs(qm-v) > 1e-12 {
			t.Errorf("row %d: mean over actions of Q is %v, want V = %v", i, qm, v)
		}
	}
	plain, err := newQNetwork([]int{4}, 3, opts, false, 5)
	if err != nil {
		t.Fatal(err)
	}
	if plain.params.Len() >= q.params.Len() {
		t.Errorf("dueling network has %d weights, plain %d: want an extra value stream", q.params.Len(), plain.params.Len())
	}
}

func TestBoxActionSpaceError(t *testing.T) {
	_, err := newFromKeys(context.Background(), rllib.Options{Env: "Pendulum-v1"}, nil)
	if err == nil {
		t.Fatal("DQN on Pendulum-v1 (Box actions): want an error")
	}
	for _, want := range []string{"Discrete", "Pendulum-v1", "PPO", "A3C", "ES"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %s", err, want)
		}
	}
}

func TestBadConfig(t *testing.T) {
	refuses := agenttest.Refuses(t, newFromKeys)
	refuses(map[string]any{"target_update_freq": 3}, `unknown key "target_update_freq"`)
	refuses(map[string]any{"lr": "fast"}, `"lr" must be a number`)
	refuses(map[string]any{"n_step": 0}, "n_step must be at least 1")
	refuses(map[string]any{"exploration_final_eps": 1.5}, "exploration_final_eps must be in [0, 1]")
	refuses(map[string]any{"prioritized_replay_eps": 0}, "prioritized_replay_eps must be positive")
	refuses(map[string]any{"gamma": -1}, "gamma must be in [0, 1]")
	refuses(map[string]any{"lr_schedule": [][]float64{{100, 1e-3}, {50, 1e-4}}}, "lr_schedule")
	refuses(map[string]any{"model": map[string]any{"free_log_std": true}}, "free_log_std")
	refuses(map[string]any{"model": map[string]any{"fcnet_hidens": []int{8}}}, "fcnet_hidens")
	refuses(map[string]any{"model": map[string]any{"use_lstm": true}}, "model.use_lstm: DQN trains feed-forward policies only")
	refuses(map[string]any{"num_learner_threads": 0}, "num_learner_threads must be at least 1, got 0")
	// The runtime's 4 CPUs are all the learner has with no workers.
	refuses(map[string]any{"num_learner_threads": 5}, "num_learner_threads 5 is more than the learner's 4 CPUs")
	refuses(map[string]any{"num_gpus": 1}, "num_gpus (1): DQN learns on the CPU only for now; set num_gpus: 0")
	// TestMain gives the runtime 4 CPUs and each rollout worker reserves one.
	refuses(map[string]any{"num_workers": 5}, "num_workers=5 needs 5 CPUs (each worker actor reserves one); the runtime has 4: set num_workers to at most 4")
}

func TestSaveRestoreContinue(t *testing.T) {
	cfg := smallCartPole()
	cfg["prioritized_replay"] = true
	a := newAgent(t, "CartPole-v1", cfg, 3)
	agenttest.Train(t, a, 3)
	path := agenttest.Checkpoint(t, a)
	fresh := func() *Agent { return newAgent(t, "CartPole-v1", cfg, 3) }
	b, c := agenttest.Restored(t, fresh, path), agenttest.Restored(t, fresh, path)
	if !slices.Equal(a.Weights(), b.Weights()) || !slices.Equal(a.target.params.Flat(), b.target.params.Flat()) {
		t.Fatal("restored online or target weights differ")
	}
	if b.Iteration() != 3 || b.timesteps != a.timesteps || b.Epsilon() != a.Epsilon() || b.gradSteps != a.gradSteps {
		t.Fatalf("restored counters: iteration %d timesteps %d epsilon %v grad steps %d; want %d %d %v %d",
			b.Iteration(), b.timesteps, b.Epsilon(), b.gradSteps, a.Iteration(), a.timesteps, a.Epsilon(), a.gradSteps)
	}
	if as, bs := a.learner.opt.State(), b.learner.opt.State(); as.Step != bs.Step || !slices.Equal(as.M, bs.M) {
		t.Fatal("restored Adam state differs")
	}
	agenttest.TrainAlike(t, b, c, 2, 5)
	if slices.Equal(b.Weights(), a.Weights()) {
		t.Error("a restored agent did not learn on (its buffer refills after restore)")
	}
}

func TestRestoreRejectsOtherCheckpoints(t *testing.T) {
	a := newAgent(t, "CartPole-v1", smallCartPole(), 1)
	agenttest.Train(t, a, 1)
	path := agenttest.Checkpoint(t, a)
	cfg := smallCartPole()
	cfg["model"] = map[string]any{"fcnet_hiddens": []int{8}}
	bigger := newAgent(t, "CartPole-v1", cfg, 1)
	if err := bigger.Restore(context.Background(), path); err == nil || !strings.Contains(err.Error(), "weights") {
		t.Errorf("restoring into a different network: %v, want an error about the weights", err)
	}
	agenttest.RefusesOther(t, a, newAgent(t, "Acrobot-v1", smallCartPole(), 1), path, "DQN", "PPO")
}

func TestSameSeedSameRun(t *testing.T) {
	for _, tc := range []struct{ workers, threads int }{{0, 1}, {0, 3}, {2, 2}} {
		workers := tc.workers
		cfg := smallCartPole()
		cfg["num_workers"] = workers
		// Each shard's gradient is summed in a fixed order: the same seed
		// and thread count give the same weights.
		cfg["num_learner_threads"] = tc.threads
		var runs [2][]float64
		for i := range runs {
			a := newAgent(t, "CartPole-v1", cfg, 7)
			agenttest.Train(t, a, 2)
			if got := len(a.learner.shards); got != tc.threads {
				t.Fatalf("num_learner_threads %d: the learner has %d shards", tc.threads, got)
			}
			runs[i] = a.Weights()
		}
		if !slices.Equal(runs[0], runs[1]) {
			t.Errorf("num_workers %d, num_learner_threads %d: two runs with seed 7 differ", workers, tc.threads)
		}
	}
}

func TestWorkersFeedTheBuffer(t *testing.T) {
	cfg := smallCartPole()
	cfg["num_workers"] = 2
	cfg["num_envs_per_worker"] = 2
	cfg["n_step"] = 3
	a := newAgent(t, "CartPole-v1", cfg, 1)
	r := agenttest.Train(t, a, 2)
	// 128 steps per round over 2 workers × 2 environments: 32 vector steps
	// each; two rounds per iteration of 256 steps.
	if r.TimestepsTotal != 512 || r.TimestepsThisIter != 256 {
		t.Errorf("timesteps total %d, this iteration %d; want 512 and 256", r.TimestepsTotal, r.TimestepsThisIter)
	}
	if a.buf.Len() < 500 || r.Learner["num_grad_steps"] == 0 {
		t.Errorf("buffer holds %d transitions after 512 steps, %v gradient steps", a.buf.Len(), r.Learner["num_grad_steps"])
	}
}

func TestDeadWorkerReplaced(t *testing.T) {
	cfg := smallCartPole()
	cfg["num_workers"] = 2
	a := newAgent(t, "CartPole-v1", cfg, 1)
	agenttest.Train(t, a, 1)
	s := a.samplers.(*actorSamplers)
	if err := gray.Kill(s.hs[0]); err != nil {
		t.Fatal(err)
	}
	r := agenttest.Train(t, a, 2)
	if r.Extra["workers_replaced"] < 1 {
		t.Errorf("workers_replaced = %v after killing a worker, want 1", r.Extra["workers_replaced"])
	}
	if r.TimestepsTotal != 768 {
		t.Errorf("timesteps %d after 3 iterations with a killed worker, want 768 (no lost steps)", r.TimestepsTotal)
	}
}

func TestNaNStopsRoundAndKeepsWeights(t *testing.T) {
	a := newAgent(t, "CartPole-v1", smallCartPole(), 1)
	agenttest.Train(t, a, 2)
	a.lr = schedule.Constant(1e300) // sends the weights to Inf in one step
	agenttest.TrainFails[*nanError](t, a, "gradient step")
}

func TestComputeActionGreedy(t *testing.T) {
	a := newAgent(t, "CartPole-v1", smallCartPole(), 1)
	obs := []float64{0, 0, 0.1, 0}
	qs, err := a.QValues(obs)
	if err != nil {
		t.Fatal(err)
	}
	for range 10 {
		act, err := a.ComputeAction(obs)
		if err != nil {
			t.Fatal(err)
		}
		if len(act) != 1 || int(act[0]) != argmax(qs) {
			t.Fatalf("ComputeAction = %v, want the greedy action %d of Q %v", act, argmax(qs), qs)
		}
	}
	if _, err := a.ComputeAction([]float64{1, 2}); err == nil {
		t.Error("ComputeAction with a 2-value observation for CartPole: want an error")
	}
}

// TestWorkerTruncationBootstraps checks the sampler end to end: with a time
// limit of 5 steps and 1-step returns, a transition that ends an episode by
// the time limit keeps the discount γ (the target bootstraps from the final
// observation) and one that ends it by failure gets 0.
func TestWorkerTruncationBootstraps(t *testing.T) {
	cfg := DefaultConfig()
	cfg.NStep = 1
	cfg.Model.Hiddens = []int{8}
	w, err := newRolloutWorker(WorkerSpec{
		Env: "CartPole-v1", EnvConfig: map[string]any{"max_episode_steps": 5}, Config: cfg, Seed: 1,
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	out, err := w.sample(context.Background(), SampleRequest{Round: 1, Steps: 200, Stride: 1})
	if err != nil {
		t.Fatal(err)
	}
	tr := out.Transitions
	if tr.Len() != 200 || out.Steps != 200 {
		t.Fatalf("%d transitions from %d steps, want 200 of each", tr.Len(), out.Steps)
	}
	truncated, terminal, steps := 0, 0, 0
	for i := range tr.Len() {
		steps++
		switch tr.Discounts[i] {
		case 0:
			terminal++
			steps = 0
		case cfg.Gamma:
			if steps == 5 {
				truncated++
				steps = 0
			}
		default:
			t.Fatalf("transition %d has discount %v, want γ or 0", i, tr.Discounts[i])
		}
		// Consecutive transitions chain: s' of one is s of the next
		// within an episode.
		if steps > 0 && i+1 < tr.Len() && !slices.Equal(tr.NextObs[i*4:i*4+4], tr.Obs[(i+1)*4:(i+1)*4+4]) {
			t.Fatalf("transition %d's next observation is not transition %d's observation", i, i+1)
		}
	}
	if truncated == 0 || truncated+terminal != len(out.Episodes) {
		t.Errorf("%d truncated and %d terminated episode ends, %d episodes reported; want truncations and every end counted",
			truncated, terminal, len(out.Episodes))
	}
}

func TestSchedules(t *testing.T) {
	cfg := DefaultConfig()
	eps, beta := cfg.epsilonSchedule(), cfg.betaSchedule()
	end := int64(cfg.ExplorationFraction * float64(cfg.ScheduleMaxTimesteps))
	for _, tc := range []struct {
		name      string
		got, want float64
	}{
		{"ε at 0", eps.Value(0), cfg.ExplorationInitialEps},
		{"ε halfway", eps.Value(end / 2), (cfg.ExplorationInitialEps + cfg.ExplorationFinalEps) / 2},
		{"ε at the end", eps.Value(end), cfg.ExplorationFinalEps},
		{"ε after", eps.Value(10 * end), cfg.ExplorationFinalEps},
		{"β at 0", beta.Value(0), cfg.PrioritizedReplayBeta},
		{"β at the end", beta.Value(cfg.ScheduleMaxTimesteps), cfg.FinalPrioritizedReplayBeta},
	} {
		if math.Abs(tc.got-tc.want) > 1e-12 {
			t.Errorf("%s = %v, want %v", tc.name, tc.got, tc.want)
		}
	}
}
