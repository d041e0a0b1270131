// Package ppo implements Proximal Policy Optimization (Schulman et al. 2017)
// with the adaptive KL penalty of the original RLlib PPO, rollout workers
// as actors, and generalized advantage estimation. Importing it registers
// the algorithm "PPO".
package ppo

import (
	"fmt"

	"github.com/gray-ml/gray/models"
	"github.com/gray-ml/gray/rllib"
	"github.com/gray-ml/gray/rllib/schedule"
)

// Config is PPO's configuration. Every key has a default (DefaultConfig);
// users override keys by name with JSON or YAML.
type Config struct {
	// Training holds the common keys: num_workers (rollout worker actors; 0
	// samples in the driver, RLlib's local worker), seed and num_gpus (0 or
	// 1); and num_envs_per_worker, gamma, lr, lr_schedule, grad_clip,
	// metrics_smoothing_episodes and num_learner_threads.
	rllib.Training
	// TrainBatchSize is the number of environment steps per iteration,
	// split evenly over workers and their environments (rounded up).
	TrainBatchSize int `json:"train_batch_size"`
	// Lambda is GAE's λ.
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
	// LRFinal, when set, makes the learning rate decay linearly from lr to
	// LRFinal over LRDecayTimesteps (lr_schedule overrides both).
	LRFinal          *float64 `json:"lr_final"`
	LRDecayTimesteps int64    `json:"lr_decay_timesteps"`
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
	// SampleAsync overlaps sampling with learning (RLlib's key): as soon
	// as an iteration's batches are in, the rollout workers start on the
	// next iteration's with the weights the learner has not yet updated,
	// so each iteration learns from samples of weights one iteration old
	// (slightly off-policy; PPO's ratio clip and KL term see the sampling
	// distribution, as they do on-policy). Off by default: on-policy.
	// Needs num_workers of 1 or more (the driver's own sampling would
	// compete with the learner for its CPUs).
	SampleAsync bool `json:"sample_async"`
}

// DefaultConfig returns PPO's defaults. They solve CartPole-v1 (a mean
// return of 475 over the last 100 episodes) in about 100,000 steps; see
// benchmarks/results/rl.md for the tuned CartPole and Pendulum settings.
func DefaultConfig() Config {
	t := rllib.DefaultTraining()
	t.NumEnvsPerWorker, t.GradClip = 8, 0.5
	return Config{
		Training:            t,
		TrainBatchSize:      512,
		Lambda:              0.95,
		ClipParam:           0.2,
		VFClipParam:         0,
		VFLossCoeff:         0.5,
		EntropyCoeff:        0,
		KLCoeff:             0.2,
		KLTarget:            0.01,
		NumSGDIter:          8,
		SGDMinibatchSize:    128,
		NormalizeAdvantages: true,
		ObservationFilter:   "NoFilter",
		Model:               defaultModel(),
	}
}

func defaultModel() models.ModelOptions {
	m := models.DefaultModelOptions()
	m.FreeLogStd = true
	return m
}

// Validate checks every value's range, naming the key at fault.
func (c *Config) Validate() error {
	ck := rllib.NewCheck("PPO", &c.Common)
	c.Training.Check(ck)
	ck.Key("train_batch_size", c.TrainBatchSize >= 1, "must be at least 1")
	ck.Key("lambda", rllib.Finite(c.Lambda) && c.Lambda >= 0 && c.Lambda <= 1, "must be in [0, 1]")
	ck.Key("clip_param", rllib.Finite(c.ClipParam) && c.ClipParam > 0, "must be positive")
	ck.Key("vf_clip_param", rllib.Finite(c.VFClipParam) && c.VFClipParam >= 0, "must be 0 (off) or positive")
	ck.Key("vf_loss_coeff", rllib.Finite(c.VFLossCoeff) && c.VFLossCoeff >= 0, "must be 0 or more")
	ck.Key("entropy_coeff", rllib.Finite(c.EntropyCoeff), "must be a finite number")
	ck.Key("kl_coeff", rllib.Finite(c.KLCoeff) && c.KLCoeff >= 0, "must be 0 (off) or positive")
	ck.Key("kl_target", rllib.Finite(c.KLTarget) && c.KLTarget > 0, "must be positive")
	ck.Key("num_sgd_iter", c.NumSGDIter >= 1, "must be at least 1")
	ck.Key("sgd_minibatch_size", c.SGDMinibatchSize >= 1, "must be at least 1")
	ck.Key("sgd_minibatch_size", c.SGDMinibatchSize <= c.TrainBatchSize,
		fmt.Sprintf("(%d) must not exceed train_batch_size (%d): a minibatch is a slice of the train batch; lower it or raise train_batch_size",
			c.SGDMinibatchSize, c.TrainBatchSize))
	ck.Key("lr_final", c.LRFinal == nil || (rllib.Finite(*c.LRFinal) && *c.LRFinal >= 0), "must be 0 or more")
	ck.Key("lr_decay_timesteps", c.LRFinal == nil || c.LRDecayTimesteps > 0, "must be positive when lr_final is set")
	ck.Key("observation_filter", c.ObservationFilter == "NoFilter" || c.ObservationFilter == "MeanStdFilter", `must be "NoFilter" or "MeanStdFilter"`)
	ck.Key("sample_async", !c.SampleAsync || c.NumWorkers >= 1, "needs num_workers of 1 or more (rollout worker actors to sample while the driver learns); set num_workers or drop sample_async")
	ck.Key("num_gpus", c.NumGPUs == 0 || c.NumGPUs == 1, fmt.Sprintf("(%g) must be 0 (learn on the CPU) or 1 (learn on one GPU)", c.NumGPUs))
	ck.Model(c.Model)
	return ck.Err()
}

// lrSchedule is the learning rate as a function of timesteps.
func (c *Config) lrSchedule() schedule.Piecewise {
	if c.LRFinal != nil && len(c.LRSchedule) == 0 {
		return schedule.Linear(c.LR, *c.LRFinal, c.LRDecayTimesteps)
	}
	return c.LearningRate()
}

// fragmentLength is the number of steps of each environment per iteration.
func (c *Config) fragmentLength() int { return c.StepsPerEnv(c.TrainBatchSize) }
