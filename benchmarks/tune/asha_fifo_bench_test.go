package tune_test

import (
	"context"
	"errors"
	"math"
	"path/filepath"
	"sort"
	"testing"
	"time"

	"github.com/gray-ml/gray/tune"
)

// simulatedPPO stands in for PPO on CartPole-v1 until PPO lands: each
// iteration costs iterCost of wall time (scaled by the batch size), and the
// mean episode reward climbs, faster for larger batches, to a plateau that
// reaches the solving 475 only for a learning rate within about 0.1 decade
// of 1e-3 (about 5% of the log-uniform range searched).
func simulatedPPO(iterCost time.Duration) tune.TrainFunc {
	return func(ctx context.Context, cfg map[string]any, report tune.ReportFunc) error {
		lr, _ := tune.Float(cfg, "lr")
		batch, _ := tune.Float(cfg, "train_batch_size")
		plateau := 500 * math.Exp(-math.Pow(math.Log10(lr)+3, 2)/(2*0.3*0.3))
		rate := 0.1 * math.Sqrt(batch/2000)
		cost := time.Duration(float64(iterCost) * batch / 2000)
		for it := 1; ; it++ {
			select {
			case <-time.After(cost):
			case <-ctx.Done():
				return nil
			}
			reward := plateau * (1 - math.Exp(-rate*float64(it)))
			if err := report(map[string]any{"episode_reward_mean": reward}); err != nil {
				return nil
			}
		}
	}
}

// timeToSolve runs the sweep until some trial reaches 475 and returns the
// wall time that took.
func timeToSolve(b *testing.B, sched tune.Scheduler, seed int64) time.Duration {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	start := time.Now()
	var solved time.Duration
	_, err := tune.Run(ctx, tune.Experiment{
		Dir:       filepath.Join(b.TempDir(), "exp"),
		Trainable: tune.FuncTrainable(simulatedPPO(5 * time.Millisecond)),
		Space: map[string]any{
			"lr":               tune.LogUniform{Lo: 1e-5, Hi: 1e-1},
			"train_batch_size": tune.Grid(1000, 2000, 4000),
		},
		NumSamples: 20, Seed: seed,
		Metric: "episode_reward_mean", Scheduler: sched,
		Stop: map[string]float64{"training_iteration": 100},
		StopFunc: func(_ string, r map[string]any) bool {
			if v, _ := tune.ResultFloat(r, "episode_reward_mean"); v >= 475 && solved == 0 {
				solved = time.Since(start)
				cancel()
			}
			return false
		},
		Resources: tune.Resources{CPU: 1}, NodeResources: tune.Resources{CPU: 4},
	})
	if err != nil && !errors.Is(err, context.Canceled) {
		b.Fatal(err)
	}
	if solved == 0 {
		return time.Since(start) // never solved: the whole budget
	}
	return solved
}

// BenchmarkTimeToSolveASHAvsFIFO compares the wall time to a solving
// configuration of random search (60 trials, 4 at once) under FIFO and
// under ASHA, over 5 seeds, on the simulated PPO above.
func BenchmarkTimeToSolveASHAvsFIFO(b *testing.B) {
	for i := 0; i < b.N; i++ {
		var fifo, asha []float64
		for seed := int64(0); seed < 5; seed++ {
			fifo = append(fifo, timeToSolve(b, nil, seed).Seconds())
			s, err := tune.NewASHA(tune.ASHAConfig{MaxT: 100, GracePeriod: 5, ReductionFactor: 3})
			if err != nil {
				b.Fatal(err)
			}
			asha = append(asha, timeToSolve(b, s, seed).Seconds())
		}
		sort.Float64s(fifo)
		sort.Float64s(asha)
		b.ReportMetric(fifo[2], "fifo-median-s")
		b.ReportMetric(asha[2], "asha-median-s")
		b.ReportMetric(asha[2]/fifo[2], "asha/fifo")
		b.Logf("fifo %v\nasha %v", fifo, asha)
	}
}
