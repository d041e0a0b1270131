package ppo

import (
	"context"
	"errors"
	"fmt"
	"sync"
)

// newSamplers picks the local worker (num_workers 0) or rollout workers.
func newSamplers(ctx context.Context, a *Agent) (samplers, error) {
	if a.cfg.NumWorkers == 0 {
		return newLocalSampler(ctx, a)
	}
	return newThreadSamplers(ctx, a)
}

// threadSamplers runs RolloutWorkers in the driver's process, one goroutine
// each, with exactly the actors' protocol (weights in, samples and filter
// deltas out).
type threadSamplers struct{ ws []*RolloutWorker }

func newThreadSamplers(ctx context.Context, a *Agent) (*threadSamplers, error) {
	s := &threadSamplers{}
	for i := 1; i <= a.cfg.NumWorkers; i++ {
		w, err := NewRolloutWorker(ctx, a.workerSpec(i))
		if err != nil {
			_ = s.close()
			return nil, fmt.Errorf("PPO: %w", err)
		}
		s.ws = append(s.ws, w)
	}
	return s, nil
}

func (s *threadSamplers) sample(ctx context.Context, a *Agent) ([]Samples, error) {
	weights := a.weights()
	out := make([]Samples, len(s.ws))
	errs := make([]error, len(s.ws))
	var wg sync.WaitGroup
	for i, w := range s.ws {
		wg.Add(1)
		go func() {
			defer wg.Done()
			out[i], errs[i] = w.Sample(ctx, weights, a.iteration+1)
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return out, nil
}

func (s *threadSamplers) close() error {
	var errs []error
	for _, w := range s.ws {
		errs = append(errs, w.Close())
	}
	return errors.Join(errs...)
}
