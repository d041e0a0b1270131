package ppo

import (
	"context"
	"fmt"
	"time"

	"github.com/gray-ml/gray"
	"github.com/gray-ml/gray/rllib"
	"github.com/gray-ml/gray/rllib/sample"
)

// workerActor is the rollout worker actor and its Sample method.
var workerActor = rllib.NewRolloutActor("ppo.RolloutWorker", NewRolloutWorker, (*RolloutWorker).Sample)

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
// every worker, which reads them from shared memory.
type actorSamplers struct {
	hs []gray.Handle[RolloutWorker]
	// pending are the calls prefetch started for iteration pendingIter
	// (sample_async), nil when none are out.
	pending     []gray.Ref[Samples]
	pendingIter int
	// putTime is the driver's time putting weights and submitting calls
	// since the last sample returned.
	putTime time.Duration
	// held are the references to the batches sample returned last: a
	// large batch is read in place from the object store (zero-copy), and
	// stays there only while its reference is reachable, so they are kept
	// until the agent is done with the batches (recycle).
	held []gray.Ref[Samples]
}

func newActorSamplers(ctx context.Context, a *Agent) (*actorSamplers, error) {
	hs, err := rllib.StartWorkerActors(ctx, &a.Base, workerActor.ActorType, "rollout worker", a.Cfg.NumWorkers, "to sample in this process")
	if err != nil {
		return nil, err
	}
	return &actorSamplers{hs: hs}, nil
}

func (s *actorSamplers) sample(ctx context.Context, a *Agent) ([]Samples, time.Duration, error) {
	iter := a.iteration + 1
	if s.pending != nil && s.pendingIter != iter {
		// The agent is not where prefetch left it (an iteration failed, or
		// a checkpoint was restored): those samples are of other weights.
		s.pending = nil
	}
	if s.pending == nil {
		if err := s.submit(ctx, a, iter); err != nil {
			return nil, 0, err
		}
	}
	refs := s.pending
	s.pending, s.held = nil, refs
	out, err := gray.GetAll(ctx, refs)
	if err != nil {
		return nil, 0, fmt.Errorf("rollout workers: %w", err)
	}
	put := s.putTime
	s.putTime = 0
	return out, put, nil
}

// submit puts the agent's weights into the object store once and starts
// every worker's Sample call for iteration iter with their reference.
func (s *actorSamplers) submit(ctx context.Context, a *Agent, iter int) error {
	start := time.Now()
	ref, err := gray.Put(ctx, a.weights())
	if err != nil {
		return fmt.Errorf("putting the weights: %w", err)
	}
	refs := make([]gray.Ref[Samples], len(s.hs))
	for i, h := range s.hs {
		refs[i] = workerActor.Sample.Remote(h, ref, iter)
	}
	s.pending, s.pendingIter = refs, iter
	s.putTime += time.Since(start)
	return nil
}

// prefetch starts the next iteration's sampling with the current weights
// (sample_async), before the learner updates them. Its time belongs to
// the iteration that calls it, which times it (Train), so the next
// sample does not report it again.
func (s *actorSamplers) prefetch(ctx context.Context, a *Agent) error {
	put := s.putTime
	err := s.submit(ctx, a, a.iteration+2)
	s.putTime = put
	return err
}

// recycle lets the batches of the last sample go: the agent copied what it
// keeps of them (sample.Concat).
func (s *actorSamplers) recycle(sample.Batch) { s.held = nil }

func (s *actorSamplers) close() error {
	err := rllib.KillWorkers(s.hs)
	s.hs = nil
	return err
}
