package ppo

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"

	"github.com/gray-ml/gray/envs"
	"github.com/gray-ml/gray/models"
	"github.com/gray-ml/gray/rllib"
	"github.com/gray-ml/gray/rllib/rollout"
	"github.com/gray-ml/gray/rllib/sample"
)

// WorkerSpec is what a rollout worker is built from.
type WorkerSpec = rllib.WorkerSpec[Config]

// Weights is what the driver puts into the object store once per
// iteration for every worker: the policy's flat weights and the master
// observation filter's statistics (nil without a filter).
type Weights struct {
	Params []float64
	Filter *models.RunningStat
}

// Samples is a worker's answer: its batch and what its observation filter
// learned since the last sync (nil without a filter).
type Samples struct {
	Batch       sample.Batch
	FilterDelta *models.RunningStat
}

// RolloutWorker samples PPO experience. It is the state of a rollout
// worker actor; the driver also uses one directly when num_workers is 0.
type RolloutWorker struct {
	rllib.Stateless // its checkpoint is empty

	spec   WorkerSpec
	pol    *policy
	proc   *obsProcessor
	worker *rollout.Worker
	// ownsPolicy is set when the worker built pol (remote workers) rather
	// than sharing the learner's.
	ownsPolicy bool
	// last is a remote worker's previous batch: the runtime encoded it into
	// the object store when Sample returned, so the next Sample refills its
	// observation buffer instead of allocating (and faulting in) tens of
	// megabytes again.
	last sample.Batch
}

// NewRolloutWorker builds the worker's environments and policy.
func NewRolloutWorker(ctx context.Context, spec WorkerSpec) (*RolloutWorker, error) {
	return newRolloutWorker(spec, nil, nil, nil)
}

// newRolloutWorker builds a worker; with pol and proc given it shares them
// (the driver's local worker samples with the learner's own policy and
// master filter, so there are no weights to copy), and with runner it
// steps its environments in parts on runner's goroutines (the learner's,
// idle while the driver samples).
func newRolloutWorker(spec WorkerSpec, pol *policy, proc *obsProcessor, runner rollout.Runner) (*RolloutWorker, error) {
	cfg := spec.Config
	return rllib.BuildWorker("PPO worker", spec, cfg.NumEnvsPerWorker, func(vec envs.Vector) (*RolloutWorker, error) {
		var err error
		if proc == nil {
			if proc, err = newObsProcessor(spec.Env, vec.ObservationSpace(), cfg.ObservationFilter, cfg.Model.Image()); err != nil {
				return nil, err
			}
		}
		owns := pol == nil
		if owns {
			if pol, err = newPolicy(proc.pre, vec.ActionSpace(), cfg.Model, spec.Seed); err != nil {
				return nil, err
			}
		}
		w, err := rollout.NewWithVector(rollout.Config{
			Env: spec.Env, FragmentLength: cfg.fragmentLength(), Seed: spec.Seed, Index: spec.Index,
			MaxSeqLen: cfg.Model.MaxSeqLen, Runner: runner,
		}, vec, pol, proc)
		if err != nil {
			if owns {
				_ = pol.Close()
			}
			return nil, err
		}
		return &RolloutWorker{spec: spec, pol: pol, proc: proc, worker: w, ownsPolicy: owns}, nil
	})
}

// Sample sets the weights and filter, then collects one fragment from each
// environment. Action sampling draws from a generator seeded by the run's
// seed, the iteration and the worker's index, so a fixed worker count
// gives the same run.
func (w *RolloutWorker) Sample(ctx context.Context, weights Weights, iteration int) (Samples, error) {
	if err := w.pol.Params.SetFlat(weights.Params); err != nil {
		return Samples{}, fmt.Errorf("PPO worker %d: %w", w.spec.Index, err)
	}
	if err := w.proc.setStats(weights.Filter); err != nil {
		return Samples{}, fmt.Errorf("PPO worker %d: %w", w.spec.Index, err)
	}
	if w.ownsPolicy {
		w.worker.Recycle(w.last)
	}
	s, err := w.sample(ctx, iteration)
	if w.ownsPolicy {
		w.last = s.Batch
	}
	return s, err
}

// sample collects a batch with the worker's current weights.
func (w *RolloutWorker) sample(ctx context.Context, iteration int) (Samples, error) {
	b, err := w.worker.Sample(ctx, sampleRNG(w.spec.Seed, iteration, w.spec.Index))
	if err != nil {
		return Samples{}, fmt.Errorf("PPO worker %d: %w", w.spec.Index, err)
	}
	out := Samples{Batch: b}
	if w.proc.filter != nil {
		d := w.proc.filter.TakeDelta()
		out.FilterDelta = &d
	}
	return out, nil
}

// Close releases the worker's environments and, when the worker built its
// own policy, the model's outside resources.
func (w *RolloutWorker) Close() error {
	err := w.worker.Close()
	if w.ownsPolicy {
		err = errors.Join(err, w.pol.Close())
	}
	return err
}

// sampleRNG is the action-sampling generator of one worker in one
// iteration.
func sampleRNG(seed int64, iteration, index int) *rand.Rand {
	return rand.New(rand.NewPCG(uint64(seed), uint64(iteration)<<16|uint64(index)))
}
