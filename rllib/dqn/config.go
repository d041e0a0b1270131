// Package dqn implements Deep Q-Networks (Mnih et al. 2015) with the
// extensions RLlib's DQN offers: double Q-learning (van Hasselt et al.
// 2016), dueling heads (Wang et al. 2016), n-step returns and prioritised
// replay (Schaul et al. 2016). Sampling runs in the driver (num_workers 0)
// or in rollout worker actors that feed the replay buffer. Importing it
// registers the algorithm "DQN".
//
// One iteration reads top to bottom in Agent.Train: sample train_freq
// steps with ε-greedy actions, add their n-step transitions to the replay
// buffer, and, once learning_starts steps have been taken, sync the target
// network when due and take gradient_steps Adam steps on Huber TD errors
// of train_batch_size transitions each; repeat until
// timesteps_per_iteration steps have been taken.
//
// Checkpoints (Save, Restore) hold the online and target weights, the
// optimizer state and the counters that set ε, β and the target network's
// schedule; the replay buffer is not saved, so a restored agent refills it
// before it learns again.
package dqn

import (
	"github.com/gray-ml/gray/models"
	"github.com/gray-ml/gray/rllib"
	"github.com/gray-ml/gray/rllib/schedule"
)

// Config is DQN's configuration. Every key has a default (DefaultConfig);
// users override keys by name with JSON or YAML.
type Config struct {
	// Training holds the common keys: num_workers (rollout worker actors; 0
	// samples in the driver, the fastest choice for cheap environments such
	// as CartPole), seed and num_gpus (only 0: DQN learns on the CPU for
	// now; models/cuda has its loss kernel, not yet its learner); and
	// num_envs_per_worker, gamma, lr (Adam's), lr_schedule, grad_clip,
	// metrics_smoothing_episodes and num_learner_threads.
	rllib.Training
	// TimestepsPerIteration is the least number of environment steps one
	// Train call takes (rounded up to whole sampling rounds).
	TimestepsPerIteration int `json:"timesteps_per_iteration"`
	// TrainFreq is the number of environment steps sampled between
	// training rounds, and GradientSteps the number of gradient steps of
	// each round (SB3's train_freq and gradient_steps).
	TrainFreq     int `json:"train_freq"`
	GradientSteps int `json:"gradient_steps"`
	// TrainBatchSize is the number of transitions per gradient step.
	TrainBatchSize int `json:"train_batch_size"`
	// LearningStarts is the number of environment steps taken before the
	// first gradient step.
	LearningStarts int `json:"learning_starts"`
	// TargetNetworkUpdateFreq is the number of environment steps between
	// copies of the online network into the target network; the copy
	// happens at the start of a training round.
	TargetNetworkUpdateFreq int `json:"target_network_update_freq"`
	// BufferSize is the replay buffer's capacity in transitions.
	BufferSize int `json:"buffer_size"`
	// PrioritizedReplay samples transitions in proportion to
	// (|TD error| + prioritized_replay_eps)^prioritized_replay_alpha and
	// weighs their loss by importance weights whose exponent β goes from
	// prioritized_replay_beta to final_prioritized_replay_beta over
	// schedule_max_timesteps.
	PrioritizedReplay          bool    `json:"prioritized_replay"`
	PrioritizedReplayAlpha     float64 `json:"prioritized_replay_alpha"`
	PrioritizedReplayBeta      float64 `json:"prioritized_replay_beta"`
	FinalPrioritizedReplayBeta float64 `json:"final_prioritized_replay_beta"`
	PrioritizedReplayEps       float64 `json:"prioritized_replay_eps"`
	// NStep is the number of steps summed into each transition's return.
	NStep int `json:"n_step"`
	// DoubleQ picks the next action with the online network and values it
	// with the target network; Dueling splits the Q head into a value and
	// a mean-subtracted advantage stream.
	DoubleQ bool `json:"double_q"`
	Dueling bool `json:"dueling"`
	// HuberDelta is the Huber loss's threshold.
	HuberDelta float64 `json:"huber_delta"`
	// ε-greedy exploration: ε goes linearly from exploration_initial_eps to
	// exploration_final_eps over the first exploration_fraction of
	// schedule_max_timesteps steps, then stays.
	ScheduleMaxTimesteps  int64   `json:"schedule_max_timesteps"`
	ExplorationFraction   float64 `json:"exploration_fraction"`
	ExplorationInitialEps float64 `json:"exploration_initial_eps"`
	ExplorationFinalEps   float64 `json:"exploration_final_eps"`
	// Model configures the Q network (fcnet_hiddens, fcnet_activation,
	// init); free_log_std and vf_share_layers do not apply.
	Model models.ModelOptions `json:"model"`
}

// DefaultConfig returns DQN's defaults. They start from the published
// tuned CartPole hyperparameters of Stable-Baselines3's zoo (batch 64,
// buffer 100k, learning starts 1000, 128 gradient steps every 256
// environment steps, ε to 0.04 over 16% of 50k steps) and change what
// Gray's measurements favoured (benchmarks/results/rl.md, DQN): a 64-64 ReLU
// network instead of 256-256 (a quarter of the time per step, as good),
// lr 1e-3 instead of 2.3e-3, and 3-step returns; double Q-learning and
// dueling heads are on. They solve CartPole-v1; configs/cartpole-dqn.yaml
// adds a learning-rate decay that makes the solution hold.
func DefaultConfig() Config {
	m := models.DefaultModelOptions()
	m.Hiddens = []int{64, 64}
	m.Activation = "relu"
	t := rllib.DefaultTraining()
	t.GradClip = 10
	return Config{
		Training:                   t,
		TimestepsPerIteration:      1000,
		TrainFreq:                  256,
		GradientSteps:              128,
		TrainBatchSize:             64,
		LearningStarts:             1000,
		TargetNetworkUpdateFreq:    10,
		BufferSize:                 100_000,
		PrioritizedReplay:          false,
		PrioritizedReplayAlpha:     0.6,
		PrioritizedReplayBeta:      0.4,
		FinalPrioritizedReplayBeta: 1.0,
		PrioritizedReplayEps:       1e-6,
		NStep:                      3,
		DoubleQ:                    true,
		Dueling:                    true,
		HuberDelta:                 1,
		ScheduleMaxTimesteps:       50_000,
		ExplorationFraction:        0.16,
		ExplorationInitialEps:      1.0,
		ExplorationFinalEps:        0.04,
		Model:                      m,
	}
}

// Validate checks every value's range, naming the key at fault.
func (c *Config) Validate() error {
	prob := func(x float64) bool { return rllib.Finite(x) && x >= 0 && x <= 1 }
	ck := rllib.NewCheck("DQN", &c.Common)
	c.Training.Check(ck)
	ck.Key("timesteps_per_iteration", c.TimestepsPerIteration >= 1, "must be at least 1")
	ck.Key("train_freq", c.TrainFreq >= 1, "must be at least 1")
	ck.Key("gradient_steps", c.GradientSteps >= 1, "must be at least 1")
	ck.Key("train_batch_size", c.TrainBatchSize >= 1, "must be at least 1")
	ck.Key("learning_starts", c.LearningStarts >= 0, "must be 0 or more")
	ck.Key("target_network_update_freq", c.TargetNetworkUpdateFreq >= 1, "must be at least 1")
	ck.Key("buffer_size", c.BufferSize >= 1, "must be at least 1")
	ck.Key("prioritized_replay_alpha", rllib.Finite(c.PrioritizedReplayAlpha) && c.PrioritizedReplayAlpha >= 0, "must be 0 or more")
	ck.Key("prioritized_replay_beta", prob(c.PrioritizedReplayBeta), "must be in [0, 1]")
	ck.Key("final_prioritized_replay_beta", prob(c.FinalPrioritizedReplayBeta), "must be in [0, 1]")
	ck.Key("prioritized_replay_eps", rllib.Finite(c.PrioritizedReplayEps) && c.PrioritizedReplayEps > 0, "must be positive")
	ck.Key("n_step", c.NStep >= 1, "must be at least 1")
	ck.Key("huber_delta", rllib.Finite(c.HuberDelta) && c.HuberDelta > 0, "must be positive")
	ck.Key("schedule_max_timesteps", c.ScheduleMaxTimesteps >= 1, "must be at least 1")
	ck.Key("exploration_fraction", prob(c.ExplorationFraction), "must be in [0, 1]")
	ck.Key("exploration_initial_eps", prob(c.ExplorationInitialEps), "must be in [0, 1]")
	ck.Key("exploration_final_eps", prob(c.ExplorationFinalEps), "must be in [0, 1]")
	c.Common.CheckCPUOnly(ck)
	ck.Key("model.free_log_std", !c.Model.FreeLogStd, "applies to Gaussian policies only; DQN's actions are Discrete")
	ck.Model(c.Model)
	ck.FeedForward(c.Model)
	return ck.Err()
}

// epsilonSchedule is ε as a function of timesteps.
func (c *Config) epsilonSchedule() schedule.Piecewise {
	steps := int64(c.ExplorationFraction * float64(c.ScheduleMaxTimesteps))
	return schedule.Linear(c.ExplorationInitialEps, c.ExplorationFinalEps, steps)
}

// betaSchedule is the importance-weight exponent β as a function of
// timesteps.
func (c *Config) betaSchedule() schedule.Piecewise {
	return schedule.Linear(c.PrioritizedReplayBeta, c.FinalPrioritizedReplayBeta, c.ScheduleMaxTimesteps)
}

// roundSteps is the number of vector steps each sampler takes per
// training round, so that a round covers at least train_freq steps.
func (c *Config) roundSteps() int { return c.StepsPerEnv(c.TrainFreq) }
