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
// learning rate log-uniform in [lrLo, lrHi] x train_batch_size in
// {1024, 2048}, at most 100 iterations each, one CPU per trial, as many at
// once as the machine has cores) and returns the wall time until the first
// trial's mean return reaches 475, or the whole run's time if none does.
func ppoTimeToSolve(b *testing.B, sched tune.Scheduler, seed int64, lrLo, lrHi float64) (time.Duration, int64, bool) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var mu sync.Mutex
	var solved time.Duration
	// Environment steps sampled by all trials so far: the compute spent,
	// which unlike wall time does not depend on the machine's load.
	steps := map[string]int64{}
	var stepsAtSolve int64
	start := time.Now()
	_, err := tune.Run(ctx, tune.Experiment{
		Dir:       filepath.Join(b.TempDir(), "exp"),
		Trainable: tune.AgentTrainable("PPO", "CartPole-v1", nil, seed),
		Space: map[string]any{
			"num_workers":      0,
			"lr":               tune.LogUniform{Lo: lrLo, Hi: lrHi},
			"train_batch_size": tune.Grid(1024, 2048),
		},
		NumSamples: 6, Seed: seed,
		Metric: "episode_reward_mean", Scheduler: sched,
		Stop: map[string]float64{"training_iteration": 100},
		StopFunc: func(id string, r map[string]any) bool {
			mu.Lock()
			defer mu.Unlock()
			ts, _ := tune.ResultFloat(r, "timesteps_total")
			steps[id] = int64(ts)
			if v, _ := tune.ResultFloat(r, "episode_reward_mean"); v >= 475 && solved == 0 {
				solved = time.Since(start)
				for _, n := range steps {
					stepsAtSolve += n
				}
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
		var all int64
		for _, n := range steps {
			all += n
		}
		return time.Since(start), all, false
	}
	return solved, stepsAtSolve, true
}

// BenchmarkPPOTimeToSolveASHAvsFIFO compares, on real PPO and CartPole-v1,
// the wall time random search needs to find a solving configuration under
// FIFO and under ASHA (grace 5 or 10, reduction factor 3, max_t 100), with the
// same 12 configurations for both, over a narrow learning-rate range
// (1e-5..1e-2, where most configurations solve) and a wide one (1e-7..1e-1,
// where most do not). It takes many minutes.
func BenchmarkPPOTimeToSolveASHAvsFIFO(b *testing.B) {
	for _, c := range []struct {
		name   string
		lo, hi float64
		seeds  int64
		grace  float64
	}{
		{"lr=1e-5..1e-2/grace=5", 1e-5, 1e-2, 3, 5},
		{"lr=1e-7..1e-1/grace=5", 1e-7, 1e-1, 3, 5},
		{"lr=1e-7..1e-1/grace=10", 1e-7, 1e-1, 3, 10},
	} {
		b.Run(c.name, func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				var fifo, asha, fifoSteps, ashaSteps []float64
				for seed := int64(0); seed < c.seeds; seed++ {
					f, fs, okF := ppoTimeToSolve(b, nil, seed, c.lo, c.hi)
					s, err := tune.NewASHA(tune.ASHAConfig{MaxT: 100, GracePeriod: c.grace, ReductionFactor: 3})
					if err != nil {
						b.Fatal(err)
					}
					a, as, okA := ppoTimeToSolve(b, s, seed, c.lo, c.hi)
					b.Logf("seed %d: fifo %.1fs %d steps (solved %v), asha %.1fs %d steps (solved %v)", seed, f.Seconds(), fs, okF, a.Seconds(), as, okA)
					fifo, fifoSteps = append(fifo, f.Seconds()), append(fifoSteps, float64(fs))
					asha, ashaSteps = append(asha, a.Seconds()), append(ashaSteps, float64(as))
				}
				for _, xs := range [][]float64{fifo, asha, fifoSteps, ashaSteps} {
					sort.Float64s(xs)
				}
				m := len(fifo) / 2
				b.ReportMetric(fifo[m], "fifo-median-s")
				b.ReportMetric(asha[m], "asha-median-s")
				b.ReportMetric(asha[m]/fifo[m], "asha/fifo")
				b.ReportMetric(ashaSteps[m]/fifoSteps[m], "asha/fifo-steps")
			}
		})
	}
}
