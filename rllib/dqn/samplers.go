package dqn

import (
	"context"
	"fmt"

	"github.com/gray-ml/gray"
	"github.com/gray-ml/gray/rllib"
)

// workerActor is the rollout worker actor and its Sample method.
var workerActor = rllib.NewRolloutActor("dqn.RolloutWorker", NewRolloutWorker, (*RolloutWorker).Sample)

// samplers is how the agent collects one training round's experience.
type samplers interface {
	sample(ctx context.Context, a *Agent, round int64) ([]Samples, error)
	close() error
}

// newSamplers picks the local sampler (num_workers 0) or rollout worker
// actors.
func newSamplers(ctx context.Context, a *Agent) (samplers, error) {
	if a.Cfg.NumWorkers == 0 {
		w, err := newRolloutWorker(a.WorkerSpec(0), a.q)
		if err != nil {
			return nil, err
		}
		return &localSampler{w: w}, nil
	}
	return newActorSamplers(ctx, a)
}

// localSampler samples in the driver with the learner's own network, so
// there are no weights to copy.
type localSampler struct{ w *RolloutWorker }

func (s *localSampler) sample(ctx context.Context, a *Agent, round int64) ([]Samples, error) {
	out, err := s.w.sample(ctx, a.sampleRequest(round))
	if err != nil {
		return nil, err
	}
	return []Samples{out}, nil
}

func (s *localSampler) close() error { return s.w.Close() }

// actorSamplers drives num_workers rollout worker actors. Each round it
// puts the online weights into the object store once and passes the
// reference to every worker. A worker that fails (its process died, its
// environment broke) is replaced by a fresh one, which takes the round's
// steps again; a second failure fails the round.
type actorSamplers struct {
	hs []gray.Handle[RolloutWorker]
	// held are the references to the samples of the last round: a large
	// one is read in place from the object store (zero-copy), and stays
	// there only while its reference is reachable, so they are kept until
	// the next round, by when the agent has copied them into its buffer.
	held []gray.Ref[Samples]
}

func newActorSamplers(ctx context.Context, a *Agent) (*actorSamplers, error) {
	hs, err := rllib.StartWorkerActors(ctx, &a.Base, workerActor.ActorType, "rollout worker", a.Cfg.NumWorkers,
		"to sample in this process (the fastest choice for cheap environments such as CartPole)")
	if err != nil {
		return nil, err
	}
	return &actorSamplers{hs: hs}, nil
}

func (s *actorSamplers) sample(ctx context.Context, a *Agent, round int64) ([]Samples, error) {
	ref, err := gray.Put(ctx, a.q.params.GetFlat(nil))
	if err != nil {
		return nil, fmt.Errorf("putting the weights: %w", err)
	}
	req := a.sampleRequest(round)
	refs := make([]gray.Ref[Samples], len(s.hs))
	for i, h := range s.hs {
		refs[i] = workerActor.Sample.Remote(h, ref, req)
	}
	s.held = refs
	out := make([]Samples, len(s.hs))
	for i := range refs {
		if out[i], err = gray.Get(ctx, refs[i]); err == nil {
			continue
		}
		if ctx.Err() != nil {
			return nil, fmt.Errorf("rollout worker %d: %w", i+1, err)
		}
		// Replace the worker and ask the new one for the same round.
		_ = gray.Kill(s.hs[i])
		h, rerr := workerActor.Remote(ctx, a.WorkerSpec(i+1))
		if rerr != nil {
			return nil, fmt.Errorf("rollout worker %d failed (%v) and could not be replaced: %w", i+1, err, rerr)
		}
		s.hs[i] = h
		refs[i] = workerActor.Sample.Remote(h, ref, req)
		if out[i], rerr = gray.Get(ctx, refs[i]); rerr != nil {
			return nil, fmt.Errorf("rollout worker %d failed (%v), and so did its replacement: %w", i+1, err, rerr)
		}
		a.workersReplaced++
	}
	return out, nil
}

func (s *actorSamplers) close() error {
	err := rllib.KillWorkers(s.hs)
	s.hs = nil
	return err
}
