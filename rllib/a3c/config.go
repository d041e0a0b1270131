// Package a3c implements Asynchronous Advantage Actor-Critic (Mnih et al.
// 2016) exactly as section 1.16 of the Ray documentation lays it out:
// runner actors, each holding its own environments and a copy of the
// policy, compute a gradient on a short rollout from the weights they are
// sent; the driver waits for whichever runner finishes first, applies its
// gradient at once and sends that runner the new weights with its next
// task. Importing the package registers the algorithm "A3C".
package a3c

import (
	"github.com/gray-ml/gray/models"
	"github.com/gray-ml/gray/rllib"
)

// Config is A3C's configuration. Every key has a default (DefaultConfig);
// users override keys by name with JSON or YAML.
type Config struct {
	// Training holds the common keys: num_workers (runner actors, at least
	// 1; each reserves one CPU), seed and num_gpus (only 0: A3C learns on
	// the CPU for now; models/cuda has its loss kernel, not yet its
	// learner); and num_envs_per_worker, gamma, lr (the driver's Adam),
	// lr_schedule, grad_clip (the global-norm limit runners clip their
	// gradients to), metrics_smoothing_episodes and num_learner_threads.
	rllib.Training
	// RolloutFragmentLength is the number of steps of each of a runner's
	// environments per gradient (the n of n-step returns).
	RolloutFragmentLength int `json:"rollout_fragment_length"`
	// With UseGAE advantages are GAE(γ, λ); without it they are n-step
	// returns minus the value estimates.
	UseGAE bool    `json:"use_gae"`
	Lambda float64 `json:"lambda"`
	// VFLossCoeff weighs the value loss and EntropyCoeff the entropy bonus.
	VFLossCoeff  float64 `json:"vf_loss_coeff"`
	EntropyCoeff float64 `json:"entropy_coeff"`
	// Model configures the policy and value networks (RLlib's keys;
	// use_lstm makes the policy recurrent, trained over sequences of at
	// most max_seq_len steps of each rollout).
	Model models.ModelOptions `json:"model"`
	// UpdatesPerIter is the number of gradients one Train call applies at
	// least, and MinIterTimeS the seconds it lasts at least.
	UpdatesPerIter int     `json:"updates_per_iter"`
	MinIterTimeS   float64 `json:"min_iter_time_s"`
	// RunnerStartTimeoutS bounds how long the agent waits for its first
	// runner to start (and half of it, at most 10 s, for each next one):
	// runners that cannot get a CPU by then mean num_workers is more than
	// the runtime can host.
	RunnerStartTimeoutS float64 `json:"runner_start_timeout_s"`
	// MaxRunnerRestarts is how many times in a row one runner may die and
	// be replaced before the iteration fails.
	MaxRunnerRestarts int `json:"max_runner_restarts"`
}

// DefaultConfig returns A3C's defaults, tuned to solve CartPole-v1.
func DefaultConfig() Config {
	t := rllib.DefaultTraining()
	t.NumWorkers, t.NumEnvsPerWorker, t.GradClip = 2, 4, 40
	return Config{
		Training:              t,
		RolloutFragmentLength: 20,
		UseGAE:                true,
		Lambda:                1.0,
		VFLossCoeff:           0.5,
		EntropyCoeff:          0.01,
		Model:                 models.DefaultModelOptions(),
		UpdatesPerIter:        50,
		MinIterTimeS:          0,
		RunnerStartTimeoutS:   60,
		MaxRunnerRestarts:     3,
	}
}

// Validate checks every value's range, naming the key at fault.
func (c *Config) Validate() error {
	ck := rllib.NewCheck("A3C", &c.Common)
	ck.Key("num_workers", c.NumWorkers >= 1, "must be at least 1 (A3C's gradients come from runner actors)")
	c.Training.Check(ck)
	ck.Key("rollout_fragment_length", c.RolloutFragmentLength >= 1, "must be at least 1")
	ck.Key("lambda", rllib.Finite(c.Lambda) && c.Lambda >= 0 && c.Lambda <= 1, "must be in [0, 1]")
	ck.Key("vf_loss_coeff", rllib.Finite(c.VFLossCoeff) && c.VFLossCoeff >= 0, "must be 0 or more")
	ck.Key("entropy_coeff", rllib.Finite(c.EntropyCoeff), "must be a finite number")
	ck.Key("updates_per_iter", c.UpdatesPerIter >= 1, "must be at least 1")
	ck.Key("min_iter_time_s", rllib.Finite(c.MinIterTimeS) && c.MinIterTimeS >= 0, "must be 0 or more")
	ck.Key("runner_start_timeout_s", rllib.Finite(c.RunnerStartTimeoutS) && c.RunnerStartTimeoutS > 0, "must be positive")
	ck.Key("max_runner_restarts", c.MaxRunnerRestarts >= 0, "must be 0 or more")
	c.Common.CheckCPUOnly(ck)
	ck.Model(c.Model)
	return ck.Err()
}
