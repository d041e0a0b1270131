package tune_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"sync"
	"testing"
	"time"

	_ "github.com/gray-ml/gray/rllib/ppo"
	"github.com/gray-ml/gray/tune"
)

// PPO sweep budget shared by FIFO and ASHA: ppoTrials sampled configs, each
// run for at most ppoMaxSteps environment steps, ppoConcurrent at a time.
const (
	ppoTrials     = 16
	ppoMaxSteps   = 150_000
	ppoConcurrent = 2
	ppoSolved     = 475
)

// ppoSweepSpace is a realistic PPO search space in which many
// configurations are poor: learning rates over four decades (below ~1e-4
// PPO barely learns in the budget, above ~1e-2 it diverges), batch and
// minibatch sizes, and SGD epochs from 1 (sample-inefficient) to 30
// (slow per iteration and prone to overfitting the batch).
func ppoSweepSpace() map[string]any {
	return map[string]any{
		"num_workers":         0,
		"num_envs_per_worker": 8,
		"lr":                  tune.LogUniform{Lo: 1e-5, Hi: 1e-1},
		"train_batch_size":    tune.Choice{Values: []any{512, 1024, 2048, 4096}},
		"sgd_minibatch_size":  tune.Choice{Values: []any{64, 128, 256, 512}},
		"num_sgd_iter":        tune.Choice{Values: []any{1, 3, 10, 30}},
	}
}

// ppoSweepRun is one sweep's outcome.
type ppoSweepRun struct {
	wall   time.Duration // until the first solve, or the whole sweep
	cpu    time.Duration // the process's CPU time (all trials) until then
	steps  int64         // environment steps sampled by all trials until then
	solved bool
	solver string // the solving trial's config
	trials int    // trials started until then
}

// ppoTimeToSolve runs the PPO sweep with seed under sched (nil: FIFO) and
// stops at the first trial whose episode_reward_mean reaches 475. The
// searcher's seed fixes the sampled configs and their order, so FIFO and
// ASHA see the same trials.
func ppoTimeToSolve(b *testing.B, sched tune.Scheduler, seed int64) ppoSweepRun {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var mu sync.Mutex
	var out ppoSweepRun
	// Environment steps sampled per trial: the compute spent, which unlike
	// wall time does not depend on the machine's load.
	steps := map[string]int64{}
	start, cpu0 := time.Now(), cpuTime()
	an, err := tune.Run(ctx, tune.Experiment{
		Dir:        filepath.Join(b.TempDir(), "exp"),
		Trainable:  tune.AgentTrainable("PPO", "CartPole-v1", nil, seed),
		Space:      ppoSweepSpace(),
		NumSamples: ppoTrials, Seed: seed,
		Metric: "episode_reward_mean", Scheduler: sched,
		Stop: map[string]float64{"timesteps_total": ppoMaxSteps},
		StopFunc: func(id string, r map[string]any) bool {
			mu.Lock()
			defer mu.Unlock()
			ts, _ := tune.ResultFloat(r, "timesteps_total")
			steps[id] = int64(ts)
			if v, _ := tune.ResultFloat(r, "episode_reward_mean"); v >= ppoSolved && !out.solved {
				out.solved, out.wall, out.cpu, out.solver = true, time.Since(start), cpuTime()-cpu0, id
				for _, n := range steps {
					out.steps += n
				}
				out.trials = len(steps)
				cancel()
			}
			return false
		},
		Resources: tune.Resources{CPU: 1}, NodeResources: tune.Resources{CPU: ppoConcurrent},
	})
	if err != nil && !errors.Is(err, context.Canceled) {
		b.Fatal(err)
	}
	if an != nil {
		for _, t := range an.Trials {
			if t.ID == out.solver {
				c := t.Config
				out.solver = fmt.Sprintf("%s(lr=%.2g batch=%v mb=%v epochs=%v)", t.ID, c["lr"], c["train_batch_size"], c["sgd_minibatch_size"], c["num_sgd_iter"])
			}
		}
	}
	if !out.solved {
		out.wall, out.cpu = time.Since(start), cpuTime()-cpu0
		for _, n := range steps {
			out.steps += n
		}
		out.trials = len(steps)
	}
	return out
}

// BenchmarkPPOTimeToSolveASHAvsFIFO compares, on real PPO and CartPole-v1,
// the wall time a random search needs to find a configuration that solves
// it (mean return 475) under FIFO and under ASHA on timesteps_total (grace
// 15,000 steps, reduction factor 3, max_t 150,000: rungs at 15k, 45k and
// 135k steps), with the same 16 sampled configs in the same order, the same
// per-trial budget and 2 trials at a time, over several sweep seeds
// (PPO_SWEEP_SEEDS, default 3). It takes many minutes.
func BenchmarkPPOTimeToSolveASHAvsFIFO(b *testing.B) {
	seeds := int64(3)
	if s, err := strconv.Atoi(os.Getenv("PPO_SWEEP_SEEDS")); err == nil && s > 0 {
		seeds = int64(s)
	}
	for i := 0; i < b.N; i++ {
		var ratios, cpuRatios, stepRatios []float64
		for seed := int64(0); seed < seeds; seed++ {
			asha := func() ppoSweepRun {
				s, err := tune.NewASHA(tune.ASHAConfig{TimeAttr: "timesteps_total", MaxT: ppoMaxSteps, GracePeriod: 15_000, ReductionFactor: 3})
				if err != nil {
					b.Fatal(err)
				}
				return ppoTimeToSolve(b, s, seed)
			}
			// Alternate which goes first, so that a change in the shared
			// machine's load does not always favour the same one.
			var f, a ppoSweepRun
			if seed%2 == 0 {
				f, a = ppoTimeToSolve(b, nil, seed), asha()
			} else {
				a, f = asha(), ppoTimeToSolve(b, nil, seed)
			}
			line := fmt.Sprintf("seed %d: fifo %.1fs (cpu %.1fs) %d steps %d trials (solved %v by %s) | asha %.1fs (cpu %.1fs) %d steps %d trials (solved %v by %s) | wall ratio %.2f, cpu ratio %.2f",
				seed, f.wall.Seconds(), f.cpu.Seconds(), f.steps, f.trials, f.solved, f.solver,
				a.wall.Seconds(), a.cpu.Seconds(), a.steps, a.trials, a.solved, a.solver,
				a.wall.Seconds()/f.wall.Seconds(), a.cpu.Seconds()/f.cpu.Seconds())
			// Printed as each seed finishes too: the whole run takes many minutes.
			fmt.Fprintln(os.Stderr, line)
			b.Log(line)
			ratios = append(ratios, a.wall.Seconds()/f.wall.Seconds())
			cpuRatios = append(cpuRatios, a.cpu.Seconds()/f.cpu.Seconds())
			stepRatios = append(stepRatios, float64(a.steps)/float64(f.steps))
		}
		for _, xs := range [][]float64{ratios, cpuRatios, stepRatios} {
			sort.Float64s(xs)
		}
		b.ReportMetric(ratios[len(ratios)/2], "asha/fifo-wall-median")
		b.ReportMetric(cpuRatios[len(cpuRatios)/2], "asha/fifo-cpu-median")
		b.ReportMetric(stepRatios[len(stepRatios)/2], "asha/fifo-steps-median")
	}
}
