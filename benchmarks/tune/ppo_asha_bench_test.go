package tune_test

import (
	"context"
	"errors"
	"path/filepath"
	"runtime"
	"sort"
	"sync"
	"testing"
	"time"

	_ "github.com/gray-ml/gray/rllib/ppo"
	"github.com/gray-ml/gray/tune"
)

// ppoTimeToSolve runs a random search for PPO on CartPole-v1 (12 trials:
// learning rate log-uniform in [1e-5, 1e-2] x timesteps_per_batch in
// {1024, 2048}, at most 100 iterations each, one CPU per trial, as many at
// once as the machine has cores) and returns the wall time until the first
// trial's mean return reaches 475, or the whole run's time if none does.
func ppoTimeToSolve(b *testing.B, sched tune.Scheduler, seed int64) (time.Duration, bool) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var mu sync.Mutex
	var solved time.Duration
	start := time.Now()
	_, err := tune.Run(ctx, tune.Experiment{
		Dir:       filepath.Join(b.TempDir(), "exp"),
		Trainable: tune.AgentTrainable("PPO", "CartPole-v1", nil, seed),
		Space: map[string]any{
			"num_workers":         0,
			"lr":                  tune.LogUniform{Lo: 1e-5, Hi: 1e-2},
			"timesteps_per_batch": tune.Grid(1024, 2048),
		},
		NumSamples: 6, Seed: seed,
		Metric: "episode_reward_mean", Scheduler: sched,
		Stop: map[string]float64{"training_iteration": 100},
		StopFunc: func(_ string, r map[string]any) bool {
			if v, _ := tune.ResultFloat(r, "episode_reward_mean"); v >= 475 {
				mu.Lock()
				if solved == 0 {
					solved = time.Since(start)
				}
				mu.Unlock()
				cancel()
			}
			return false
		},
		Resources: tune.Resources{CPU: 1}, NodeResources: tune.Resources{CPU: float64(runtime.NumCPU())},
	})
	if err != nil && !errors.Is(err, context.Canceled) {
		b.Fatal(err)
	}
	if solved == 0 {
		return time.Since(start), false
	}
	return solved, true
}

// BenchmarkPPOTimeToSolveASHAvsFIFO compares, on real PPO and CartPole-v1,
// the wall time random search needs to find a solving configuration under
// FIFO and under ASHA (grace 5, reduction factor 3, max_t 100), over 3
// seeds with the same 12 configurations for both. It takes minutes.
func BenchmarkPPOTimeToSolveASHAvsFIFO(b *testing.B) {
	for i := 0; i < b.N; i++ {
		var fifo, asha []float64
		for seed := int64(0); seed < 3; seed++ {
			f, okF := ppoTimeToSolve(b, nil, seed)
			s, err := tune.NewASHA(tune.ASHAConfig{MaxT: 100, GracePeriod: 5, ReductionFactor: 3})
			if err != nil {
				b.Fatal(err)
			}
			a, okA := ppoTimeToSolve(b, s, seed)
			b.Logf("seed %d: fifo %.1fs (solved %v), asha %.1fs (solved %v)", seed, f.Seconds(), okF, a.Seconds(), okA)
			fifo = append(fifo, f.Seconds())
			asha = append(asha, a.Seconds())
		}
		sort.Float64s(fifo)
		sort.Float64s(asha)
		b.ReportMetric(fifo[1], "fifo-median-s")
		b.ReportMetric(asha[1], "asha-median-s")
		b.ReportMetric(asha[1]/fifo[1], "asha/fifo")
	}
}
