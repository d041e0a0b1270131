package ppo

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/gray-ml/gray/envs"
	"github.com/gray-ml/gray/rllib"
	"github.com/gray-ml/gray/rllib/internal/agenttest"
	"github.com/gray-ml/gray/rllib/rollout"
)

// recall is a memory task: the first observation shows a cue (±1), later
// ones show 0, and the last of recallSteps actions earns 1 if it names the
// cue (action 1 for +1, 0 for -1). The second observation value is the
// step's share of the episode, so a policy knows when to answer but only
// memory tells it what: a feed-forward policy scores 0.5 on average.
type recall struct {
	rng *rand.Rand
	cue float64
	t   int
}

const recallSteps = 4

func init() {
	envs.Register("Recall-test", func(envs.Config) (envs.Env, error) { return &recall{}, nil })
}

func (e *recall) ObservationSpace() envs.Space { return envs.NewBox(-1, 1, 2) }
func (e *recall) ActionSpace() envs.Space      { return envs.Discrete{N: 2} }
func (e *recall) Close() error                 { return nil }
func (e *recall) Reset(seed int64) ([]float64, error) {
	e.rng = rand.New(rand.NewPCG(uint64(seed), 7))
	e.t, e.cue = 0, 1
	if e.rng.IntN(2) == 0 {
		e.cue = -1
	}
	return []float64{e.cue, 0}, nil
}
func (e *recall) Step(a []float64) (envs.Step, error) {
	e.t++
	if e.t == recallSteps {
		r := 0.0
		if (a[0] == 1) == (e.cue > 0) {
			r = 1
		}
		return envs.Step{Obs: []float64{0, 1}, Reward: r, Terminated: true}, nil
	}
	return envs.Step{Obs: []float64{0, float64(e.t) / recallSteps}}, nil
}

func recallConfig(lstm bool) map[string]any {
	return map[string]any{
		"num_envs_per_worker": 8, "train_batch_size": 512, "num_sgd_iter": 6, "sgd_minibatch_size": 128,
		"lr": 0.005, "entropy_coeff": 0.0,
		"model": map[string]any{"use_lstm": lstm, "fcnet_hiddens": []int{16}, "lstm_cell_size": 16, "max_seq_len": 8},
	}
}

// TestLSTMSolvesRecall is the short learning test of recurrent PPO: with
// an LSTM the policy learns to answer the cue it saw three steps before
// (mean return near 1); the feed-forward policy, trained on the same
// budget, cannot beat chance (0.5).
func TestLSTMSolvesRecall(t *testing.T) {
	if testing.Short() || raceEnabled {
		t.Skip("learning test (runs in the non-race pass)")
	}
	const budget, want, chance = 40_000, 0.9, 0.7
	best := func(lstm bool) (float64, int64) {
		a := newAgent(t, "Recall-test", recallConfig(lstm), 1)
		var b float64
		for a.timesteps < budget {
			r := agenttest.Train(t, a, 1)
			b = math.Max(b, r.EpisodeRewardMean)
			if b >= want {
				break
			}
		}
		return b, a.timesteps
	}
	got, steps := best(true)
	if got < want {
		t.Fatalf("PPO with an LSTM reached mean return %.2f in %d steps, want %.2f", got, steps, want)
	}
	t.Logf("LSTM: mean return %.2f after %d steps", got, steps)
	ff, steps := best(false)
	if ff >= chance {
		t.Fatalf("feed-forward PPO reached %.2f in %d steps on a task it cannot solve without memory; the task leaks the cue", ff, steps)
	}
	t.Logf("feed-forward: best mean return %.2f in %d steps", ff, steps)
}

// TestLSTMRemoteWorkersAndComputeAction trains an iteration of recurrent
// PPO with rollout worker actors (sequences and states travel back in the
// batches) and checks that ComputeAction carries the state between calls
// until StartEpisode.
func TestLSTMRemoteWorkersAndComputeAction(t *testing.T) {
	cfg := recallConfig(true)
	cfg["num_workers"], cfg["num_envs_per_worker"] = 2, 2
	a := newAgent(t, "StatelessCartPole-v1", cfg, 2)
	r := agenttest.Train(t, a, 1)
	if r.TimestepsThisIter < 512 || math.IsNaN(r.Learner["total_loss"]) {
		t.Fatalf("result %+v", r)
	}
	obs := []float64{0.01, -0.02}
	first, err := a.ComputeAction(obs)
	if err != nil {
		t.Fatal(err)
	}
	zero := true
	for _, v := range a.actor.State() {
		zero = zero && v == 0
	}
	if zero {
		t.Fatal("ComputeAction left the recurrent state at zero")
	}
	var sa rllib.EpisodeStarter = a
	sa.StartEpisode()
	again, err := a.ComputeAction(obs)
	if err != nil {
		t.Fatal(err)
	}
	if first[0] != again[0] {
		t.Fatalf("after StartEpisode the same observation gave action %v, then %v", first, again)
	}
}

// TestStatelessCartPoleConfig checks that configs/statelesscartpole-ppo-
// lstm.yaml holds only keys PPO knows and builds a recurrent agent.
func TestStatelessCartPoleConfig(t *testing.T) {
	keys := agenttest.Experiment(t, "../../configs/statelesscartpole-ppo-lstm.yaml", "PPO", "StatelessCartPole-v1")
	a := newAgent(t, "StatelessCartPole-v1", keys, 1)
	if !a.Cfg.Model.UseLSTM || a.Cfg.Model.LSTMCellSize != 64 || a.Cfg.Model.MaxSeqLen != 20 || a.pol.RNN == nil {
		t.Errorf("decoded model %+v", a.Cfg.Model)
	}
}

// TestRecurrentActAllocatesNothing checks the rollout hot path of a
// recurrent policy: once warm, acting from a state allocates nothing.
func TestRecurrentActAllocatesNothing(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Model.UseLSTM = true
	proc, err := newObsProcessor("StatelessCartPole-v1", envs.NewBox(-1, 1, 2), "NoFilter", cfg.Model.Image())
	if err != nil {
		t.Fatal(err)
	}
	pol, err := newPolicy(proc.pre, envs.Discrete{N: 2}, cfg.Model, 1)
	if err != nil {
		t.Fatal(err)
	}
	const n = 8
	obs := make([]float64, n*2)
	state := make([]float64, n*pol.StateSize())
	var out rollout.Actions
	rng := rand.New(rand.NewPCG(1, 2))
	act := func() {
		if err := pol.ActRecurrent(obs, state, n, rng, &out); err != nil {
			t.Fatal(err)
		}
		copy(state, out.State)
	}
	act()
	if allocs := testing.AllocsPerRun(20, act); allocs != 0 {
		t.Fatalf("ActRecurrent allocated %v times per call", allocs)
	}
}
