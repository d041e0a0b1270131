package ppo

import (
	"context"
	"fmt"

	"github.com/gray-ml/gray"
	"github.com/gray-ml/gray/rllib"
	"github.com/gray-ml/gray/rllib/sample"
)

// Rollout workers as actors: registered at package level so that driver
// and worker processes (the same executable) agree on the names. Each
// holds one CPU while it lives (rllib.CheckWorkers counts on it), so the
// scheduler spreads them over the CPUs it has, a cluster's nodes
// included, rather than packing them all beside the driver. A checkpoint
// after every call (an empty one: see RolloutWorker.Checkpoint) keeps a
// cluster's replay log of each worker short.
var (
	workerActor  = gray.Actor1("ppo.RolloutWorker", NewRolloutWorker, gray.CPUs(1), gray.CheckpointInterval(1))
	sampleMethod = gray.Method2(workerActor, "Sample", (*RolloutWorker).Sample)

	_ gray.Checkpointer = (*RolloutWorker)(nil)
)

// newSamplers picks the local worker (num_workers 0) or rollout worker
// actors.
func newSamplers(ctx context.Context, a *Agent) (samplers, error) {
	if a.Cfg.NumWorkers == 0 {
		return newLocalSampler(ctx, a)
	}
	return newActorSamplers(ctx, a)
}

// actorSamplers drives num_workers rollout worker actors: each iteration it
// puts the weights into the object store once and passes the reference to
// every worker.
type actorSamplers struct {
	hs []gray.Handle[RolloutWorker]
	// held are the references to the batches sample returned last: a
	// large batch is read in place from the object store (zero-copy), and
	// stays there only while its reference is reachable, so they are kept
	// until the agent is done with the batches (recycle).
	held []gray.Ref[Samples]
}

func newActorSamplers(ctx context.Context, a *Agent) (*actorSamplers, error) {
	hs, err := rllib.StartWorkers(ctx, "PPO", "rollout worker", a.Cfg.NumWorkers, "to sample in this process",
		func(ctx context.Context, i int) (gray.Handle[RolloutWorker], error) {
			return workerActor.Remote(ctx, a.WorkerSpec(i))
		})
	if err != nil {
		return nil, err
	}
	return &actorSamplers{hs: hs}, nil
}

func (s *actorSamplers) sample(ctx context.Context, a *Agent) ([]Samples, error) {
	ref, err := gray.Put(ctx, a.weights())
	if err != nil {
		return nil, fmt.Errorf("putting the weights: %w", err)
	}
	refs := make([]gray.Ref[Samples], len(s.hs))
	for i, h := range s.hs {
		refs[i] = sampleMethod.Remote(h, ref, a.iteration+1)
	}
	s.held = refs
	out, err := gray.GetAll(ctx, refs)
	if err != nil {
		return nil, fmt.Errorf("rollout workers: %w", err)
	}
	return out, nil
}

// recycle lets the batches of the last sample go: the agent copied what it
// keeps of them (sample.Concat).
func (s *actorSamplers) recycle(sample.Batch) { s.held = nil }

func (s *actorSamplers) close() error {
	err := rllib.KillWorkers(s.hs)
	s.hs = nil
	return err
}
