package main

// A tiny algorithm and two tiny environments registered for the tests: test
// doubles for the platform, which must work with any registered algorithm.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"time"

	"github.com/gray-ml/gray/envs"
	"github.com/gray-ml/gray/rllib"
)

type fakeConfig struct {
	LR             float64 `json:"lr"`
	TrainBatchSize int     `json:"train_batch_size"`
	NumWorkers     int     `json:"num_workers"` // sizes sweep trials (1 CPU + num_workers)
	Model          struct {
		Hiddens    []int  `json:"fcnet_hiddens"`
		Activation string `json:"fcnet_activation"`
	} `json:"model"`
	// Failure injection.
	ErrAt      int     `json:"err_at"`       // Train returns a NaN error at this iteration
	NaNStatAt  int     `json:"nan_stat_at"`  // Train reports a NaN learner statistic
	BlowUpAt   int     `json:"blow_up_at"`   // from this iteration on, vf_loss is huge but finite
	CollapseAt int     `json:"collapse_at"`  // from this iteration on, entropy is 0
	PanicAt    int     `json:"panic_at"`     // Train panics
	SleepS     float64 `json:"sleep_s"`      // each Train sleeps (for interrupts)
	Stubborn   bool    `json:"stubborn"`     // the sleep ignores ctx
	ExtraAfter int     `json:"extra_after"`  // from this iteration on, report an extra key
	SaveToFile bool    `json:"save_to_file"` // Save writes a file instead of a folder
}

func defaultFakeConfig() fakeConfig {
	c := fakeConfig{LR: 0.01, TrainBatchSize: 100}
	c.Model.Hiddens = []int{8, 8}
	c.Model.Activation = "tanh"
	return c
}

type fakeState struct {
	Iter      int     `json:"iter"`
	Timesteps int64   `json:"timesteps"`
	Weight    float64 `json:"weight"`
}

type fakeAgent struct {
	name   string
	cfg    fakeConfig
	logDir string
	st     fakeState
	rng    *rand.Rand
}

func newFake(name string) func(context.Context, rllib.Options, fakeConfig) (*fakeAgent, error) {
	return func(ctx context.Context, opts rllib.Options, cfg fakeConfig) (*fakeAgent, error) {
		if _, err := envs.Make(opts.Env, opts.EnvConfig); err != nil {
			return nil, err
		}
		return &fakeAgent{name: name, cfg: cfg, logDir: opts.LogDir, rng: rand.New(rand.NewPCG(uint64(opts.Seed), 1))}, nil
	}
}

func (a *fakeAgent) Train(ctx context.Context) (rllib.Result, error) {
	next := a.st.Iter + 1
	if a.cfg.SleepS > 0 && a.cfg.Stubborn {
		// Tells TestSecondSIGINTQuits that a stubborn iteration is under way.
		fmt.Fprintf(os.Stderr, "fake: iteration %d started\n", next)
		time.Sleep(time.Duration(a.cfg.SleepS * float64(time.Second)))
	} else if a.cfg.SleepS > 0 {
		select {
		case <-time.After(time.Duration(a.cfg.SleepS * float64(time.Second))):
		case <-ctx.Done():
			return rllib.Result{}, ctx.Err()
		}
	}
	switch next {
	case a.cfg.ErrAt:
		return rllib.Result{}, errors.New("total_loss is NaN at SGD epoch 2, minibatch 3")
	case a.cfg.PanicAt:
		var xs []int
		_ = xs[next] // a real bug: index out of range
	}
	a.st.Iter = next
	a.st.Timesteps += int64(a.cfg.TrainBatchSize)
	a.st.Weight += a.cfg.LR
	r := rllib.Result{
		TrainingIteration: next, TimestepsTotal: a.st.Timesteps, TimestepsThisIter: int64(a.cfg.TrainBatchSize),
		EpisodesThisIter: 5, EpisodeRewardMean: float64(10 * next), EpisodeRewardMin: float64(5 * next),
		EpisodeRewardMax: float64(20 * next), EpisodeLenMean: float64(10 * next), TimeThisIterS: 0.25,
		Learner: map[string]float64{"policy_loss": -0.1, "vf_loss": 1, "total_loss": 0.9, "entropy": 0.6,
			"kl": 0.01, "kl_coeff": 0.2, "cur_lr": a.cfg.LR, "explained_variance": 0.5},
	}
	if a.cfg.BlowUpAt > 0 && next >= a.cfg.BlowUpAt {
		r.Learner["vf_loss"] = 4.2e13
	}
	if a.cfg.CollapseAt > 0 && next >= a.cfg.CollapseAt {
		r.Learner["entropy"] = 0
	}
	if next == a.cfg.NaNStatAt {
		r.Learner["kl"] = math.NaN()
	}
	if a.cfg.ExtraAfter > 0 && next >= a.cfg.ExtraAfter {
		r.Extra = map[string]float64{"evaluation_reward_mean": float64(next)}
	}
	return r, nil
}

func (a *fakeAgent) Save(ctx context.Context) (string, error) {
	if a.cfg.Stubborn {
		time.Sleep(time.Duration(a.cfg.SleepS * float64(time.Second)))
	}
	b, _ := json.Marshal(a.st)
	if a.cfg.SaveToFile {
		path := filepath.Join(a.logDir, fmt.Sprintf("state-%d.json", a.st.Iter))
		return path, os.WriteFile(path, b, 0o644)
	}
	dir := filepath.Join(a.logDir, fmt.Sprintf("checkpoint_%d", a.st.Iter))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	return dir, os.WriteFile(filepath.Join(dir, "state.json"), b, 0o644)
}

func (a *fakeAgent) Restore(ctx context.Context, path string) error {
	if st, err := os.Stat(path); err == nil && st.IsDir() {
		path = filepath.Join(path, "state.json")
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, &a.st)
}

// ComputeAction walks right along the corridor.
func (a *fakeAgent) ComputeAction(obs []float64) ([]float64, error) { return []float64{1}, nil }
func (a *fakeAgent) Iteration() int                                 { return a.st.Iter }
func (a *fakeAgent) LogDir() string                                 { return a.logDir }
func (a *fakeAgent) Stop() error                                    { return nil }

// corridor: start at 0, action 1 moves right, 0 left; reaching 4 ends the
// episode with reward 1; every step costs 0.1; 20 steps truncate.
type corridor struct{ pos, t int }

func (c *corridor) ObservationSpace() envs.Space { return envs.NewBox(0, 4, 1) }
func (c *corridor) ActionSpace() envs.Space      { return envs.Discrete{N: 2} }
func (c *corridor) Reset(seed int64) ([]float64, error) {
	c.pos, c.t = 0, 0
	return []float64{0}, nil
}
func (c *corridor) Step(a []float64) (envs.Step, error) {
	c.t++
	if a[0] == 1 {
		c.pos++
	} else if c.pos > 0 {
		c.pos--
	}
	s := envs.Step{Obs: []float64{float64(c.pos)}, Reward: -0.1}
	if c.pos == 4 {
		s.Reward, s.Terminated = 1, true
	}
	s.Truncated = c.t >= 20
	return s, nil
}
func (c *corridor) Close() error { return nil }

func init() {
	rllib.Register(rllib.Define("FakeAlg", defaultFakeConfig, newFake("FakeAlg")))
	// OtherAlg has other config keys: restoring FakeAlg's checkpoint into
	// it must fail on the algorithm, not on a config key.
	rllib.Register(rllib.Define("OtherAlg", func() otherConfig { return otherConfig{Gamma: 0.99} },
		func(context.Context, rllib.Options, otherConfig) (*fakeAgent, error) {
			return nil, errors.New("OtherAlg cannot train")
		}))
	envs.Register("Corridor-v0", func(envs.Config) (envs.Env, error) { return &corridor{}, nil })
	envs.Register("Ring-v0", func(cfg envs.Config) (envs.Env, error) {
		if _, bad := cfg["bad"]; bad {
			return nil, errors.New(`unknown env_config key "bad"`)
		}
		return &corridor{}, nil
	})
}

// otherConfig is OtherAlg's config.
type otherConfig struct {
	Gamma float64 `json:"gamma"`
}

func (*otherConfig) Validate() error { return nil }

func (*fakeConfig) Validate() error { return nil }
