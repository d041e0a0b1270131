// Package a3c implements Asynchronous Advantage Actor-Critic (Mnih et al.
// 2016) exactly as section 1.16 of the Ray documentation lays it out:
// runner actors, each holding its own environments and a copy of the
// policy, compute a gradient on a short rollout from the weights they are
// sent; the driver waits for whichever runner finishes first, applies its
// gradient at once and sends that runner the new weights with its next
// task. Importing the package registers the algorithm "A3C".
package a3c

import (
	"fmt"
	"math"

	"github.com/gray-ml/gray/models"
	"github.com/gray-ml/gray/rllib/schedule"
)

// Config is A3C's configuration. Every key has a default (DefaultConfig);
// users override keys by name with JSON or YAML.
type Config struct {
	// NumWorkers is the number of runner actors; each reserves one CPU.
	NumWorkers int `json:"num_workers"`
	// NumEnvsPerWorker is the number of environments each runner steps
	// together.
	NumEnvsPerWorker int `json:"num_envs_per_worker"`
	// RolloutFragmentLength is the number of steps of each of a runner's
	// environments per gradient (the n of n-step returns).
	RolloutFragmentLength int `json:"rollout_fragment_length"`
	// Gamma is the discount factor. With UseGAE advantages are GAE(γ, λ);
	// without it they are n-step returns minus the value estimates.
	Gamma  float64 `json:"gamma"`
	UseGAE bool    `json:"use_gae"`
	Lambda float64 `json:"lambda"`
	// VFLossCoeff weighs the value loss and EntropyCoeff the entropy bonus.
	VFLossCoeff  float64 `json:"vf_loss_coeff"`
	EntropyCoeff float64 `json:"entropy_coeff"`
	// LR is the driver's Adam learning rate; LRSchedule, a list of
	// [timestep, lr] points interpolated linearly, overrides it.
	LR         float64      `json:"lr"`
	LRSchedule [][2]float64 `json:"lr_schedule"`
	// GradClip is the global-norm limit runners clip their gradients to;
	// 0 disables clipping.
	GradClip float64 `json:"grad_clip"`
	// Model configures the policy and value networks (RLlib's keys;
	// use_lstm makes the policy recurrent, trained over sequences of at
	// most max_seq_len steps of each rollout).
	Model models.ModelOptions `json:"model"`
	// UpdatesPerIter is the number of gradients one Train call applies at
	// least, and MinIterTimeS the seconds it lasts at least.
	UpdatesPerIter int     `json:"updates_per_iter"`
	MinIterTimeS   float64 `json:"min_iter_time_s"`
	// MetricsSmoothingEpisodes is the number of most recent episodes the
	// reported episode statistics average over.
	MetricsSmoothingEpisodes int `json:"metrics_smoothing_episodes"`
	// RunnerStartTimeoutS bounds how long the agent waits for its runners
	// to start: runners that cannot get a CPU by then mean num_workers is
	// more than the runtime can host.
	RunnerStartTimeoutS float64 `json:"runner_start_timeout_s"`
	// MaxRunnerRestarts is how many times in a row one runner may die and
	// be replaced before the iteration fails.
	MaxRunnerRestarts int `json:"max_runner_restarts"`
	// Seed, when set, overrides the run's seed.
	Seed *int64 `json:"seed"`
	// NumGPUs is RLlib's num_gpus. A3C learns on the CPU: only 0 is
	// accepted for now (PPO has a GPU learner; models/cuda has A3C's loss
	// kernel, not yet its learner).
	NumGPUs float64 `json:"num_gpus"`
}

// DefaultConfig returns A3C's defaults, tuned to solve CartPole-v1.
func DefaultConfig() Config {
	return Config{
		NumWorkers:               2,
		NumEnvsPerWorker:         4,
		RolloutFragmentLength:    20,
		Gamma:                    0.99,
		UseGAE:                   true,
		Lambda:                   1.0,
		VFLossCoeff:              0.5,
		EntropyCoeff:             0.01,
		LR:                       1e-3,
		GradClip:                 40,
		Model:                    models.DefaultModelOptions(),
		UpdatesPerIter:           50,
		MinIterTimeS:             0,
		MetricsSmoothingEpisodes: 100,
		RunnerStartTimeoutS:      60,
		MaxRunnerRestarts:        3,
	}
}

// Validate checks every value's range, naming the key at fault.
func (c *Config) Validate() error {
	finite := func(x float64) bool { return !math.IsNaN(x) && !math.IsInf(x, 0) }
	rules := []struct {
		key string
		ok  bool
		msg string
	}{
		{"num_workers", c.NumWorkers >= 1, "must be at least 1 (A3C's gradients come from runner actors)"},
		{"num_envs_per_worker", c.NumEnvsPerWorker >= 1, "must be at least 1"},
		{"rollout_fragment_length", c.RolloutFragmentLength >= 1, "must be at least 1"},
		{"gamma", finite(c.Gamma) && c.Gamma >= 0 && c.Gamma <= 1, "must be in [0, 1]"},
		{"lambda", finite(c.Lambda) && c.Lambda >= 0 && c.Lambda <= 1, "must be in [0, 1]"},
		{"vf_loss_coeff", finite(c.VFLossCoeff) && c.VFLossCoeff >= 0, "must be 0 or more"},
		{"entropy_coeff", finite(c.EntropyCoeff), "must be a finite number"},
		{"lr", finite(c.LR) && c.LR > 0, "must be positive"},
		{"grad_clip", finite(c.GradClip) && c.GradClip >= 0, "must be 0 (off) or positive"},
		{"updates_per_iter", c.UpdatesPerIter >= 1, "must be at least 1"},
		{"min_iter_time_s", finite(c.MinIterTimeS) && c.MinIterTimeS >= 0, "must be 0 or more"},
		{"metrics_smoothing_episodes", c.MetricsSmoothingEpisodes >= 1, "must be at least 1"},
		{"runner_start_timeout_s", finite(c.RunnerStartTimeoutS) && c.RunnerStartTimeoutS > 0, "must be positive"},
		{"max_runner_restarts", c.MaxRunnerRestarts >= 0, "must be 0 or more"},
		{"num_gpus", c.NumGPUs == 0, fmt.Sprintf("(%g): A3C learns on the CPU only for now; set num_gpus: 0 (PPO has a GPU learner)", c.NumGPUs)},
	}
	for _, r := range rules {
		if !r.ok {
			return fmt.Errorf("A3C config: %s %s", r.key, r.msg)
		}
	}
	if err := c.Model.Validate(); err != nil {
		return fmt.Errorf("A3C config: model: %w", err)
	}
	if len(c.LRSchedule) > 0 {
		if _, err := schedule.NewPiecewise(c.LRSchedule); err != nil {
			return fmt.Errorf("A3C config: lr_schedule: %w", err)
		}
	}
	return nil
}

// lrSchedule is the learning rate as a function of timesteps.
func (c *Config) lrSchedule() schedule.Piecewise {
	if len(c.LRSchedule) > 0 {
		p, _ := schedule.NewPiecewise(c.LRSchedule) // checked by Validate
		return p
	}
	return schedule.Constant(c.LR)
}
