// Package es implements Evolution Strategies (Salimans et al. 2017, "Evolution
// Strategies as a Scalable Alternative to Reinforcement Learning") as the
// original RLlib ES did, on the gray runtime:
//
//   - a block of Gaussian noise is created once by a remote task, seeded, and
//     kept in the object store; every worker actor receives it by reference
//     when it starts and reads perturbations from it by offset, so a
//     perturbation travels as one integer;
//   - each worker samples noise offsets and runs antithetic (mirrored)
//     episodes: θ+σε and θ−σε from the same offset and the same environment
//     seed, returning both returns, both lengths, the offsets and what its
//     observation filter saw;
//   - the driver turns all returns into centred ranks, forms the gradient
//     estimate Σ (rank⁺ − rank⁻) ε / N, adds weight decay and takes an Adam
//     step; observation statistics are merged from the workers and sent back
//     with the next weights;
//   - every iteration also evaluates the unperturbed policy.
//
// Policies are deterministic: the argmax of the logits for a Discrete action
// space, the network's output clipped to the bounds for a Box (optionally
// with Gaussian action noise during perturbed episodes). Importing the
// package registers the algorithm "ES".
package es

import (
	"github.com/gray-ml/gray/models"
	"github.com/gray-ml/gray/rllib"
)

// Config is ES's configuration. Keys and defaults follow the original
// RLlib ES, except noise_size (RLlib used 250,000,000 float32 values; the
// default here is 25,000,000, 100 MB) and num_workers (sized for a small
// machine).
type Config struct {
	// Common holds num_workers (worker actors, each reserving one CPU; 0
	// runs the episodes in the driver, no runtime needed), seed and
	// num_gpus (only 0: ES evaluates on the CPU).
	rllib.Common
	// EpisodesPerBatch and TrainBatchSize are the iteration's stopping rule:
	// it runs perturbed episodes until it has at least EpisodesPerBatch of
	// them (two per antithetic pair) and at least TrainBatchSize steps.
	// Both are split evenly over the workers (rounded up).
	EpisodesPerBatch int `json:"episodes_per_batch"`
	TrainBatchSize   int `json:"train_batch_size"`
	// NoiseStdev is σ, the scale of the parameter perturbations.
	NoiseStdev float64 `json:"noise_stdev"`
	// Stepsize is Adam's learning rate.
	Stepsize float64 `json:"stepsize"`
	// L2Coeff is the weight decay added to the gradient estimate.
	L2Coeff float64 `json:"l2_coeff"`
	// NoiseSize is the number of float32 values in the shared noise table.
	NoiseSize int `json:"noise_size"`
	// ReturnProcMode is how returns become fitness: "centered_rank" (ranks
	// scaled to [-0.5, 0.5]).
	ReturnProcMode string `json:"return_proc_mode"`
	// ActionNoiseStd adds Gaussian noise of this deviation to Box actions in
	// perturbed episodes (not in evaluation); ignored for Discrete spaces.
	ActionNoiseStd float64 `json:"action_noise_std"`
	// EvalEpisodes is the number of unperturbed episodes run each iteration
	// to report eval_reward_mean; EvalProb adds one more, with this
	// probability, after each antithetic pair (RLlib's eval_prob).
	EvalEpisodes int     `json:"eval_episodes"`
	EvalProb     float64 `json:"eval_prob"`
	// ObservationFilter is "MeanStdFilter" (a running mean/std normalizer
	// kept in sync across workers) or "NoFilter".
	ObservationFilter string `json:"observation_filter"`
	// Model configures the policy network (fcnet_hiddens, fcnet_activation,
	// init).
	Model models.ModelOptions `json:"model"`
	// MaxWorkerRestarts bounds how many times one iteration replaces dead
	// workers before it fails.
	MaxWorkerRestarts int `json:"max_worker_restarts"`
	// WorkerStartTimeoutS is how long, once some workers have started, to
	// wait for the others before reporting that the runtime cannot host
	// num_workers of them.
	WorkerStartTimeoutS float64 `json:"worker_start_timeout_s"`
}

// DefaultConfig returns ES's defaults.
func DefaultConfig() Config {
	m := models.DefaultModelOptions()
	m.Hiddens = []int{32, 32}
	return Config{
		Common:              rllib.Common{NumWorkers: 2},
		EpisodesPerBatch:    1000,
		TrainBatchSize:      10000,
		NoiseStdev:          0.02,
		Stepsize:            0.01,
		L2Coeff:             0.005,
		NoiseSize:           25_000_000,
		ReturnProcMode:      "centered_rank",
		ActionNoiseStd:      0.01,
		EvalEpisodes:        2,
		EvalProb:            0.003,
		ObservationFilter:   "MeanStdFilter",
		Model:               m,
		MaxWorkerRestarts:   3,
		WorkerStartTimeoutS: 30,
	}
}

// Validate checks every value's range, naming the key at fault.
func (c *Config) Validate() error {
	ck := rllib.NewCheck("ES", &c.Common)
	ck.Key("episodes_per_batch", c.EpisodesPerBatch >= 1, "must be at least 1")
	ck.Key("train_batch_size", c.TrainBatchSize >= 1, "must be at least 1")
	ck.Key("noise_stdev", rllib.Finite(c.NoiseStdev) && c.NoiseStdev > 0, "must be positive")
	ck.Key("stepsize", rllib.Finite(c.Stepsize) && c.Stepsize > 0, "must be positive")
	ck.Key("l2_coeff", rllib.Finite(c.L2Coeff) && c.L2Coeff >= 0, "must be 0 or more")
	ck.Key("noise_size", c.NoiseSize >= 1, "must be positive")
	ck.Key("return_proc_mode", c.ReturnProcMode == "centered_rank", `must be "centered_rank"`)
	ck.Key("action_noise_std", rllib.Finite(c.ActionNoiseStd) && c.ActionNoiseStd >= 0, "must be 0 or more")
	ck.Key("eval_episodes", c.EvalEpisodes >= 0, "must be 0 or more")
	ck.Key("eval_prob", rllib.Finite(c.EvalProb) && c.EvalProb >= 0 && c.EvalProb <= 1, "must be in [0, 1]")
	ck.Key("observation_filter", c.ObservationFilter == "NoFilter" || c.ObservationFilter == "MeanStdFilter", `must be "NoFilter" or "MeanStdFilter"`)
	ck.Key("max_worker_restarts", c.MaxWorkerRestarts >= 0, "must be 0 or more")
	ck.Key("worker_start_timeout_s", rllib.Finite(c.WorkerStartTimeoutS) && c.WorkerStartTimeoutS > 0, "must be positive")
	c.Common.CheckCPUOnly(ck)
	ck.Model(c.Model)
	ck.FeedForward(c.Model)
	return ck.Err()
}

// workers is the number of rollout workers: the driver counts as one.
func (c *Config) workers() int { return max(1, c.NumWorkers) }

// share is worker index's part (0-based) of total split over the workers,
// rounded up so the parts add up to at least total.
func share(total, workers int) int { return (total + workers - 1) / workers }

// evalShare is worker index's part of the evaluation episodes: they are
// dealt out one by one so the parts add up to exactly total.
func evalShare(total, workers, index int) int {
	n := total / workers
	if index < total%workers {
		n++
	}
	return n
}
