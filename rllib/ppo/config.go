// Package ppo implements Proximal Policy Optimization (Schulman et al. 2017)
// with the adaptive KL penalty of the original RLlib PPO, rollout workers
// as actors, and generalized advantage estimation. Importing it registers
// the algorithm "PPO".
package ppo

import (
	"fmt"
	"math"

	"github.com/gray-ml/gray/models"
	"github.com/gray-ml/gray/rllib"
	"github.com/gray-ml/gray/rllib/schedule"
)

// Config is PPO's configuration. Every key has a default (DefaultConfig);
// users override keys by name with JSON or YAML.
type Config struct {
	// NumWorkers is the number of rollout worker actors; 0 samples in the
	// driver (RLlib's local worker).
	NumWorkers int `json:"num_workers"`
	// NumEnvsPerWorker is the number of environments each worker steps
	// together.
	NumEnvsPerWorker int `json:"num_envs_per_worker"`
	// TrainBatchSize is the number of environment steps per iteration,
	// split evenly over workers and their environments (rounded up).
	TrainBatchSize int `json:"train_batch_size"`
	// Gamma is the discount factor and Lambda GAE's λ.
	Gamma  float64 `json:"gamma"`
	Lambda float64 `json:"lambda"`
	// ClipParam is the surrogate objective's ratio clip ε.
	ClipParam float64 `json:"clip_param"`
	// VFClipParam clips the change of value predictions in the value loss
	// (as PPO2 does); 0 disables it.
	VFClipParam float64 `json:"vf_clip_param"`
	// VFLossCoeff weighs the value loss and EntropyCoeff the entropy bonus.
	VFLossCoeff  float64 `json:"vf_loss_coeff"`
	EntropyCoeff float64 `json:"entropy_coeff"`
	// KLCoeff is the initial KL penalty coefficient, adapted each iteration
	// toward KLTarget (×1.5 when the KL exceeds twice the target, ×0.5 when
	// it is below half); 0 disables the penalty.
	KLCoeff  float64 `json:"kl_coeff"`
	KLTarget float64 `json:"kl_target"`
	// NumSGDIter is the number of epochs over each batch, in minibatches of
	// SGDMinibatchSize rows. With a recurrent model (model.use_lstm) the
	// batch is shuffled by sequences, SGDMinibatchSize / model.max_seq_len
	// of them per minibatch.
	NumSGDIter       int `json:"num_sgd_iter"`
	SGDMinibatchSize int `json:"sgd_minibatch_size"`
	// LR is the Adam learning rate. With LRFinal set it decays linearly to
	// LRFinal over LRDecayTimesteps; LRSchedule, a list of [timestep, lr]
	// points interpolated linearly, overrides both.
	LR               float64      `json:"lr"`
	LRFinal          *float64     `json:"lr_final"`
	LRDecayTimesteps int64        `json:"lr_decay_timesteps"`
	LRSchedule       [][2]float64 `json:"lr_schedule"`
	// GradClip is the global gradient-norm limit; 0 disables clipping.
	GradClip float64 `json:"grad_clip"`
	// NormalizeAdvantages standardizes advantages over each batch.
	NormalizeAdvantages bool `json:"normalize_advantages"`
	// ObservationFilter is "NoFilter" or "MeanStdFilter" (a running
	// mean/std normalizer kept in sync across workers).
	ObservationFilter string `json:"observation_filter"`
	// Model configures the policy and value networks (RLlib's keys:
	// fcnet_hiddens, fcnet_activation, free_log_std, vf_share_layers,
	// init; use_lstm, lstm_cell_size and max_seq_len for a recurrent
	// policy). free_log_std applies to Gaussian policies only.
	Model models.ModelOptions `json:"model"`
	// MetricsSmoothingEpisodes is the number of most recent episodes the
	// reported episode statistics average over.
	MetricsSmoothingEpisodes int `json:"metrics_smoothing_episodes"`
	// SampleAsync overlaps sampling with learning (RLlib's key): as soon
	// as an iteration's batches are in, the rollout workers start on the
	// next iteration's with the weights the learner has not yet updated,
	// so each iteration learns from samples of weights one iteration old
	// (slightly off-policy; PPO's ratio clip and KL term see the sampling
	// distribution, as they do on-policy). Off by default: on-policy.
	// Needs num_workers of 1 or more (the driver's own sampling would
	// compete with the learner for its CPUs).
	SampleAsync bool `json:"sample_async"`
	// NumLearnerThreads is the number of goroutines each SGD minibatch is
	// split over (fixed shards whose gradients are summed in a fixed
	// order: a seed and a thread count give the same run anywhere). Unset,
	// it is the CPUs the learner reserves: the runtime's less one per
	// rollout worker (rllib.LearnerThreads).
	NumLearnerThreads *int `json:"num_learner_threads"`
	// Seed, when set, overrides the run's seed.
	Seed *int64 `json:"seed"`
	// NumGPUs is RLlib's num_gpus: 1 runs the learner on a GPU, in an
	// actor that reserves it (the rollout workers stay on CPUs); 0, the
	// default, learns in the driver on the CPU.
	NumGPUs float64 `json:"num_gpus"`
}

// DefaultConfig returns PPO's defaults. They solve CartPole-v1 (a mean
// return of 475 over the last 100 episodes) in about 100,000 steps; see
// benchmarks/README.md for the tuned CartPole and Pendulum settings.
func DefaultConfig() Config {
	return Config{
		NumWorkers:               0,
		NumEnvsPerWorker:         8,
		TrainBatchSize:           512,
		Gamma:                    0.99,
		Lambda:                   0.95,
		ClipParam:                0.2,
		VFClipParam:              0,
		VFLossCoeff:              0.5,
		EntropyCoeff:             0,
		KLCoeff:                  0.2,
		KLTarget:                 0.01,
		NumSGDIter:               8,
		SGDMinibatchSize:         128,
		LR:                       1e-3,
		GradClip:                 0.5,
		NormalizeAdvantages:      true,
		ObservationFilter:        "NoFilter",
		Model:                    defaultModel(),
		MetricsSmoothingEpisodes: 100,
	}
}

func defaultModel() models.ModelOptions {
	m := models.DefaultModelOptions()
	m.FreeLogStd = true
	return m
}

// Validate checks every value's range, naming the key at fault.
func (c *Config) Validate() error {
	type rule struct {
		key string
		ok  bool
		msg string
	}
	finite := func(x float64) bool { return !math.IsNaN(x) && !math.IsInf(x, 0) }
	rules := []rule{
		{"num_workers", c.NumWorkers >= 0, "must be 0 or more"},
		{"num_envs_per_worker", c.NumEnvsPerWorker >= 1, "must be at least 1"},
		{"train_batch_size", c.TrainBatchSize >= 1, "must be at least 1"},
		{"gamma", finite(c.Gamma) && c.Gamma >= 0 && c.Gamma <= 1, "must be in [0, 1]"},
		{"lambda", finite(c.Lambda) && c.Lambda >= 0 && c.Lambda <= 1, "must be in [0, 1]"},
		{"clip_param", finite(c.ClipParam) && c.ClipParam > 0, "must be positive"},
		{"vf_clip_param", finite(c.VFClipParam) && c.VFClipParam >= 0, "must be 0 (off) or positive"},
		{"vf_loss_coeff", finite(c.VFLossCoeff) && c.VFLossCoeff >= 0, "must be 0 or more"},
		{"entropy_coeff", finite(c.EntropyCoeff), "must be a finite number"},
		{"kl_coeff", finite(c.KLCoeff) && c.KLCoeff >= 0, "must be 0 (off) or positive"},
		{"kl_target", finite(c.KLTarget) && c.KLTarget > 0, "must be positive"},
		{"num_sgd_iter", c.NumSGDIter >= 1, "must be at least 1"},
		{"sgd_minibatch_size", c.SGDMinibatchSize >= 1, "must be at least 1"},
		{"sgd_minibatch_size", c.SGDMinibatchSize <= c.TrainBatchSize,
			fmt.Sprintf("(%d) must not exceed train_batch_size (%d): a minibatch is a slice of the train batch; lower it or raise train_batch_size",
				c.SGDMinibatchSize, c.TrainBatchSize)},
		{"lr", finite(c.LR) && c.LR > 0, "must be positive"},
		{"lr_final", c.LRFinal == nil || (finite(*c.LRFinal) && *c.LRFinal >= 0), "must be 0 or more"},
		{"lr_decay_timesteps", c.LRFinal == nil || c.LRDecayTimesteps > 0, "must be positive when lr_final is set"},
		{"grad_clip", finite(c.GradClip) && c.GradClip >= 0, "must be 0 (off) or positive"},
		{"observation_filter", c.ObservationFilter == "NoFilter" || c.ObservationFilter == "MeanStdFilter", `must be "NoFilter" or "MeanStdFilter"`},
		{"metrics_smoothing_episodes", c.MetricsSmoothingEpisodes >= 1, "must be at least 1"},
		{"sample_async", !c.SampleAsync || c.NumWorkers >= 1, "needs num_workers of 1 or more (rollout worker actors to sample while the driver learns); set num_workers or drop sample_async"},
		{"num_gpus", c.NumGPUs == 0 || c.NumGPUs == 1, fmt.Sprintf("(%g) must be 0 (learn on the CPU) or 1 (learn on one GPU)", c.NumGPUs)},
	}
	for _, r := range rules {
		if !r.ok {
			return fmt.Errorf("PPO config: %s %s", r.key, r.msg)
		}
	}
	if err := rllib.CheckLearnerThreads("PPO", c.NumLearnerThreads, c.NumWorkers, 0); err != nil {
		return err
	}
	if err := c.Model.Validate(); err != nil {
		return fmt.Errorf("PPO config: model: %w", err)
	}
	if len(c.LRSchedule) > 0 {
		if _, err := schedule.NewPiecewise(c.LRSchedule); err != nil {
			return fmt.Errorf("PPO config: lr_schedule: %w", err)
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
	if c.LRFinal != nil {
		return schedule.Linear(c.LR, *c.LRFinal, c.LRDecayTimesteps)
	}
	return schedule.Constant(c.LR)
}

// LearnerThreads implements rllib.LearnerThreadsConfig.
func (c *Config) LearnerThreads() (*int, int) { return c.NumLearnerThreads, c.NumWorkers }

// workers is the number of samplers: the local worker counts as one.
func (c *Config) workers() int { return max(1, c.NumWorkers) }

// fragmentLength is the number of steps of each environment per iteration.
func (c *Config) fragmentLength() int {
	envs := c.workers() * c.NumEnvsPerWorker
	return (c.TrainBatchSize + envs - 1) / envs
}

// constantLR is a schedule that is always lr (for tests and callers that
// override the configured schedule).
func constantLR(lr float64) schedule.Piecewise { return schedule.Constant(lr) }
