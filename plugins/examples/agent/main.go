// Command agent is an example Gray agent plugin: basic random search (Mania
// et al., 2018) over a linear policy. Build it and train with it:
//
//	go build -o bin/randomsearch ./plugins/examples/agent
//	train --env CartPole-v1 --alg plugin:./bin/randomsearch
//
// The environment is made inside the plugin by name, so it can itself be a
// plugin ("plugin:./bin/gridworld"): importing package plugins makes those
// names resolve here as they do in the host.
package main

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
	_ "github.com/gray-ml/gray/plugins" // resolves plugin:<path> environments
	"github.com/gray-ml/gray/plugins/sdk"
	"github.com/gray-ml/gray/rllib"
)

func main() {
	sdk.ServeAgent("RandomSearch", newAgent)
}

// config is the agent's configuration; keys are checked by rllib.Decode.
type config struct {
	// Directions is how many perturbations are tried per iteration.
	Directions int `json:"directions"`
	// StepSize is the learning rate.
	StepSize float64 `json:"step_size"`
	// Noise is the perturbations' standard deviation.
	Noise float64 `json:"noise"`
	// MaxEpisodeSteps cuts episodes that never end.
	MaxEpisodeSteps int `json:"max_episode_steps"`
}

func defaults() config {
	return config{Directions: 4, StepSize: 0.05, Noise: 0.1, MaxEpisodeSteps: 500}
}

// agent holds a linear policy: one row of weights (plus a bias) per action
// (Discrete: argmax of the rows) or per action dimension (Box: clipped).
type agent struct {
	cfg      config
	env      envs.Vector
	logDir   string
	rng      *rand.Rand
	theta    []float64
	obsSize  int
	outs     int
	discrete bool
	actSpace envs.Space
	iter     int
	steps    int64
	episodes int64
	seed     int64
}

func newAgent(_ context.Context, o rllib.Options, user map[string]any) (rllib.Agent, error) {
	cfg := defaults()
	if err := rllib.Decode("RandomSearch", user, &cfg); err != nil {
		return nil, err
	}
	if cfg.Directions < 1 || cfg.MaxEpisodeSteps < 1 || cfg.Noise <= 0 {
		return nil, fmt.Errorf("RandomSearch: need directions >= 1, max_episode_steps >= 1 and noise > 0")
	}
	env, err := envs.MakeVector(o.Env, o.EnvConfig, 1)
	if err != nil {
		return nil, err
	}
	a := &agent{cfg: cfg, env: env, logDir: o.LogDir, rng: rand.New(rand.NewPCG(uint64(o.Seed), 42)), seed: o.Seed}
	a.obsSize = env.ObservationSpace().Size()
	a.actSpace = env.ActionSpace()
	switch s := a.actSpace.(type) {
	case envs.Discrete:
		a.outs, a.discrete = s.N, true
	case envs.Box:
		a.outs = s.Size()
	default:
		env.Close()
		return nil, fmt.Errorf("RandomSearch: unsupported action space %s", a.actSpace)
	}
	a.theta = make([]float64, a.outs*(a.obsSize+1))
	return a, nil
}

func (a *agent) act(theta, obs []float64) []float64 {
	out := make([]float64, a.outs)
	for j := range out {
		row := theta[j*(a.obsSize+1) : (j+1)*(a.obsSize+1)]
		v := row[a.obsSize]
		for i, x := range obs {
			v += row[i] * x
		}
		out[j] = v
	}
	if a.discrete {
		best := 0
		for j, v := range out {
			if v > out[best] {
				best = j
			}
		}
		return []float64{float64(best)}
	}
	b := a.actSpace.(envs.Box)
	for j := range out {
		out[j] = math.Max(b.Low[j], math.Min(b.High[j], out[j]))
	}
	return out
}

// episode runs one episode with theta and returns its return and length.
func (a *agent) episode(theta []float64) (float64, int, error) {
	a.seed++
	obs, err := a.env.Reset([]int64{a.seed})
	if err != nil {
		return 0, 0, err
	}
	o, total := obs[0], 0.0
	for t := 1; t <= a.cfg.MaxEpisodeSteps; t++ {
		st, err := a.env.Step([][]float64{a.act(theta, o)})
		if err != nil {
			return 0, 0, err
		}
		total += st.Rewards[0]
		if st.Terminated[0] || st.Truncated[0] {
			return total, t, nil
		}
		o = st.Obs[0]
	}
	return total, a.cfg.MaxEpisodeSteps, nil
}

func (a *agent) Train(ctx context.Context) (rllib.Result, error) {
	start := time.Now()
	grad := make([]float64, len(a.theta))
	var returns []float64
	var steps int64
	lenSum := 0
	for d := 0; d < a.cfg.Directions; d++ {
		if err := ctx.Err(); err != nil {
			return rllib.Result{}, err
		}
		delta := make([]float64, len(a.theta))
		plus, minus := make([]float64, len(a.theta)), make([]float64, len(a.theta))
		for i := range delta {
			delta[i] = a.rng.NormFloat64()
			plus[i] = a.theta[i] + a.cfg.Noise*delta[i]
			minus[i] = a.theta[i] - a.cfg.Noise*delta[i]
		}
		rp, lp, err := a.episode(plus)
		if err != nil {
			return rllib.Result{}, err
		}
		rm, lm, err := a.episode(minus)
		if err != nil {
			return rllib.Result{}, err
		}
		for i := range grad {
			grad[i] += (rp - rm) * delta[i]
		}
		returns = append(returns, rp, rm)
		steps += int64(lp + lm)
		lenSum += lp + lm
	}
	// Scale by the returns' spread, as ARS does, so the step size is unitless.
	mean, sd := stats(returns)
	if sd < 1e-8 {
		sd = 1
	}
	for i := range a.theta {
		a.theta[i] += a.cfg.StepSize / (float64(a.cfg.Directions) * sd) * grad[i]
	}
	a.iter++
	a.steps += steps
	a.episodes += int64(len(returns))
	lo, hi := returns[0], returns[0]
	for _, r := range returns {
		lo, hi = math.Min(lo, r), math.Max(hi, r)
	}
	// Evaluate the updated policy itself: the returns above are those of
	// perturbed policies.
	eval := 0.0
	for e := 0; e < evalEpisodes; e++ {
		r, _, err := a.episode(a.theta)
		if err != nil {
			return rllib.Result{}, err
		}
		eval += r / evalEpisodes
	}
	return rllib.Result{
		Extra:             map[string]float64{"eval_return": eval},
		TrainingIteration: a.iter, TimestepsTotal: a.steps, TimestepsThisIter: steps,
		EpisodesTotal: a.episodes, EpisodesThisIter: len(returns),
		EpisodeRewardMean: mean, EpisodeRewardMin: lo, EpisodeRewardMax: hi,
		EpisodeLenMean: float64(lenSum) / float64(len(returns)),
		TimeThisIterS:  time.Since(start).Seconds(),
	}, nil
}

// evalEpisodes is how many episodes evaluate the policy each iteration.
const evalEpisodes = 2

func stats(xs []float64) (mean, sd float64) {
	for _, x := range xs {
		mean += x
	}
	mean /= float64(len(xs))
	for _, x := range xs {
		sd += (x - mean) * (x - mean)
	}
	return mean, math.Sqrt(sd / float64(len(xs)))
}

type checkpoint struct {
	Iteration int       `json:"iteration"`
	Theta     []float64 `json:"theta"`
}

func (a *agent) Save(context.Context) (string, error) {
	if a.logDir == "" {
		return "", errors.New("RandomSearch: no log folder to save into")
	}
	data, err := json.Marshal(checkpoint{Iteration: a.iter, Theta: a.theta})
	if err != nil {
		return "", err
	}
	path := filepath.Join(a.logDir, fmt.Sprintf("randomsearch_checkpoint_%06d.json", a.iter))
	if err := os.WriteFile(path, data, 0o644); err != nil {
		return "", fmt.Errorf("RandomSearch: saving: %w", err)
	}
	return path, nil
}

func (a *agent) Restore(_ context.Context, path string) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("RandomSearch: restoring: %w", err)
	}
	var c checkpoint
	if err := json.Unmarshal(data, &c); err != nil {
		return fmt.Errorf("RandomSearch: %s is not a RandomSearch checkpoint: %w", path, err)
	}
	if len(c.Theta) != len(a.theta) {
		return fmt.Errorf("RandomSearch: %s holds %d weights, this environment needs %d", path, len(c.Theta), len(a.theta))
	}
	a.theta, a.iter = c.Theta, c.Iteration
	return nil
}

func (a *agent) ComputeAction(obs []float64) ([]float64, error) {
	if len(obs) != a.obsSize {
		return nil, fmt.Errorf("RandomSearch: observation of %d values, want %d", len(obs), a.obsSize)
	}
	return a.act(a.theta, obs), nil
}

func (a *agent) Iteration() int { return a.iter }
func (a *agent) LogDir() string { return a.logDir }
func (a *agent) Stop() error    { return a.env.Close() }
