// Package rllib holds what every reinforcement-learning algorithm shares,
// so that each algorithm's package keeps only what is its own: the agent
// contract (agent.go), the registry (registry.go), the typed config, its
// decoding and its range checks (config.go), an agent's start and
// checkpointed state (base.go: NewBase, TrainState), checkpoint files
// (checkpoint.go), and the worker actors' registration, construction,
// start, wait and stop (workers.go: WorkerActor, NewRolloutActor,
// BuildWorker, StartWorkerActors, AwaitStarted, KillWorkers). Rollouts and the
// actor-critic policy, sample batches, replay buffers, schedules and
// parameter servers are sub-packages beside the algorithms;
// internal/agenttest holds the checks their tests share.
package rllib

import (
	"context"
	"fmt"
	"time"

	"github.com/gray-ml/gray/envs"
)

// Agent is a trainable policy: one algorithm bound to one environment.
type Agent interface {
	// Train runs one training iteration and reports its result.
	Train(ctx context.Context) (Result, error)
	// Save writes a checkpoint into the agent's run folder and returns its path.
	Save(ctx context.Context) (string, error)
	// Restore loads a checkpoint written by Save of the same algorithm and
	// environment.
	Restore(ctx context.Context, path string) error
	// ComputeAction returns the policy's action for one observation.
	ComputeAction(obs []float64) ([]float64, error)
	// Iteration is the number of training iterations completed.
	Iteration() int
	// LogDir is the agent's run folder.
	LogDir() string
	// Stop releases the agent's workers and resources.
	Stop() error
}

// EpisodeStarter is implemented by agents whose ComputeAction depends on
// the earlier observations of an episode: a recurrent policy
// (model.use_lstm) carries its state from call to call, and a model config
// that stacks or differences frames keeps a history. Code stepping an
// environment with ComputeAction calls StartEpisode before each episode's
// first observation.
type EpisodeStarter interface {
	StartEpisode()
}

// Options are the settings every agent receives besides its config.
type Options struct {
	// Env names the environment (a registered name or a plugin reference).
	Env string
	// EnvConfig is passed to the environment's creator.
	EnvConfig map[string]any
	// LogDir is the run folder; checkpoints go into it.
	LogDir string
	// Seed makes a run reproducible: same seed, same run.
	Seed int64
}

// Result is what one training iteration reports. The platform adds the
// bookkeeping keys (date, hostname, pid, time_total_s, ...) when it logs it.
type Result struct {
	TrainingIteration int     `json:"training_iteration"`
	TimestepsTotal    int64   `json:"timesteps_total"`
	TimestepsThisIter int64   `json:"timesteps_this_iter"`
	EpisodesTotal     int64   `json:"episodes_total"`
	EpisodesThisIter  int     `json:"episodes_this_iter"`
	EpisodeRewardMean float64 `json:"episode_reward_mean"`
	EpisodeRewardMin  float64 `json:"episode_reward_min"`
	EpisodeRewardMax  float64 `json:"episode_reward_max"`
	EpisodeLenMean    float64 `json:"episode_len_mean"`
	TimeThisIterS     float64 `json:"time_this_iter_s"`
	// Learner holds the algorithm's statistics: for PPO policy_loss,
	// vf_loss, total_loss, entropy, kl, kl_coeff, cur_lr, explained_variance.
	Learner map[string]float64 `json:"learner,omitempty"`
	// Extra holds any further numeric results (e.g. evaluation returns).
	Extra map[string]float64 `json:"extra,omitempty"`
}

// PerSecond is n per second of d, for a Result's rates (steps per second
// of sampling or learning). A d too short for the clock to see counts as a
// nanosecond rather than dividing by zero: JSON has no Inf.
func PerSecond(n float64, d time.Duration) float64 {
	return n / max(d.Seconds(), 1e-9)
}

// EnvSpaces builds opts.Env once, with opts.EnvConfig, to read its
// observation and action spaces, and closes it again: the driver needs the
// spaces to build its networks before any worker exists. Errors start with
// "<alg>: ".
func EnvSpaces(alg string, opts Options) (obs, act envs.Space, err error) {
	env, err := envs.Make(opts.Env, envs.Config(opts.EnvConfig))
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", alg, err)
	}
	defer func() { _ = env.Close() }()
	return env.ObservationSpace(), env.ActionSpace(), nil
}
