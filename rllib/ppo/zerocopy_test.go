package ppo

import (
	"runtime"
	"runtime/debug"
	"testing"
	"time"

	"github.com/gray-ml/gray/rllib/internal/agenttest"
)

// Rollout workers' batches of 2,000 steps are over the object store's
// inline threshold, so the agent reads them in place from shared memory.
// They must stay there until the learner is done with them, whatever the
// garbage collector does meanwhile (here it runs without pause), and a
// lone worker's batch, learned from in place, must get advantages of its
// own before they are standardized: either mistake stops the test binary
// with a fault.
func TestLargeWorkerBatchesOutliveGC(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(1))
	stop, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-stop:
				return
			default:
				runtime.GC()
				time.Sleep(200 * time.Microsecond)
			}
		}
	}()
	defer func() { close(stop); <-done }()
	for _, workers := range []int{1, 2} {
		cfg := map[string]any{"num_workers": workers, "num_envs_per_worker": 4, "train_batch_size": 4000,
			"sgd_minibatch_size": 1000, "num_sgd_iter": 1}
		a := newAgent(t, "CartPole-v1", cfg, 1)
		r := agenttest.Train(t, a, 3)
		if r.TimestepsThisIter < 4000 {
			t.Errorf("num_workers %d: %d steps in an iteration, want 4000", workers, r.TimestepsThisIter)
		}
		if err := a.Stop(); err != nil {
			t.Fatal(err)
		}
	}
}
