package tune_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
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

// ppoSolved is CartPole-v1's solving mean return (Gymnasium's
// reward_threshold), and ppoConcurrent the trials run at once: one per core
// of the 2-core machine the figures come from.
const (
	ppoSolved     = 475
	ppoConcurrent = 2
)

// ppoSweep is one PPO random-search setting, shared by FIFO and ASHA: the
// same sampled configs in the same order, the same per-trial budget.
type ppoSweep struct {
	name     string
	space    func() map[string]any
	trials   int     // configs sampled
	timeAttr string  // the budget's unit, and ASHA's time attribute
	maxT     float64 // each trial's budget in timeAttr
	grace    float64 // ASHA's first rung in timeAttr
}

// ppoSweeps are the settings BenchmarkPPOTimeToSolveASHAvsFIFO knows, by
// PPO_SWEEP_SPACE. ASHA's reduction factor is 3 in all.
var ppoSweeps = map[string]ppoSweep{
	// Rungs at 15k, 45k and 135k steps.
	"narrow": {"narrow", ppoNarrowSpace, 16, "timesteps_total", 150_000, 15_000},
	"wide":   {"wide", ppoWideSpace, 16, "timesteps_total", 300_000, 15_000},
	// A budget of training time instead of steps, as when what matters is
	// the wall time: rungs at 1, 3 and 9 seconds, at most 30 seconds a trial.
	"wide-time": {"wide-time", ppoWideSpace, 16, "time_total_s", 30, 1},
}

// ppoNarrowSpace searches the four keys users tune first: learning rates
// over four decades (below ~1e-4 PPO barely learns in the budget, above
// ~1e-2 it often diverges), batch and minibatch sizes, and SGD epochs from
// 1 (sample-inefficient) to 30 (slow per iteration). About half of its
// configs solve CartPole within 150,000 steps.
func ppoNarrowSpace() map[string]any {
	return map[string]any{
		"num_workers":         0,
		"num_envs_per_worker": 8,
		"lr":                  tune.LogUniform{Lo: 1e-5, Hi: 1e-1},
		"train_batch_size":    tune.Choice{Values: []any{512, 1024, 2048, 4096}},
		"sgd_minibatch_size":  tune.Choice{Values: []any{64, 128, 256, 512}},
		"num_sgd_iter":        tune.Choice{Values: []any{1, 3, 10, 30}},
	}
}

// ppoWideSpace is the sweep of a user who does not yet know where PPO's
// good region lies: the narrow space plus the entropy bonus, the clip
// range, the discount, GAE's λ and the network's size, each over the range
// found in published PPO configurations. A third of its configs solve
// CartPole within 150,000 steps.
func ppoWideSpace() map[string]any {
	s := ppoNarrowSpace()
	s["entropy_coeff"] = tune.LogUniform{Lo: 1e-4, Hi: 1e-1}
	s["clip_param"] = tune.Uniform{Lo: 0.05, Hi: 0.5}
	s["gamma"] = tune.Uniform{Lo: 0.9, Hi: 0.999}
	s["lambda"] = tune.Uniform{Lo: 0.8, Hi: 1.0}
	s["model"] = map[string]any{"fcnet_hiddens": tune.Choice{Values: []any{[]any{16}, []any{64, 64}, []any{256, 256}}}}
	return s
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

// ppoTimeToSolve runs sweep with seed under sched (nil: FIFO) and stops at
// the first trial whose episode_reward_mean reaches 475. The searcher's
// seed fixes the sampled configs and their order, so FIFO and ASHA see the
// same trials.
func ppoTimeToSolve(b *testing.B, sw ppoSweep, sched tune.Scheduler, seed int64) ppoSweepRun {
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
		Space:      sw.space(),
		NumSamples: sw.trials, Seed: seed,
		Metric: "episode_reward_mean", Scheduler: sched,
		Stop: map[string]float64{sw.timeAttr: sw.maxT},
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
				out.solver = fmt.Sprintf("%s%v", t.ID, describePPO(t.Config))
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

// describePPO shortens a sampled PPO config to the keys that were searched.
func describePPO(c map[string]any) string {
	s := fmt.Sprintf("(lr=%.2g batch=%v mb=%v epochs=%v", c["lr"], c["train_batch_size"], c["sgd_minibatch_size"], c["num_sgd_iter"])
	if e, ok := tune.Float(c, "entropy_coeff"); ok {
		h, _ := tune.Spec(c).Get("model.fcnet_hiddens")
		g, _ := tune.Float(c, "gamma")
		l, _ := tune.Float(c, "lambda")
		cl, _ := tune.Float(c, "clip_param")
		s += fmt.Sprintf(" ent=%.2g clip=%.2f gamma=%.3f lambda=%.2f hiddens=%v", e, cl, g, l, h)
	}
	return s + ")"
}

// BenchmarkPPOTimeToSolveASHAvsFIFO compares, on real PPO and CartPole-v1,
// the wall time a random search needs to find a configuration that solves
// it (mean return 475) under FIFO and under ASHA, with the same sampled
// configs in the same order, the same per-trial budget and 2 trials at a
// time, over several sweep seeds. PPO_SWEEP_SPACE picks the setting of
// ppoSweeps (default wide-time) and PPO_SWEEP_SEEDS the number of seeds (default 3), starting at
// PPO_SWEEP_SEED0 (default 0). Besides the median of per-seed ratios it
// reports the ratio of mean times with a 90% bootstrap interval. It takes
// many minutes.
func BenchmarkPPOTimeToSolveASHAvsFIFO(b *testing.B) {
	seeds, seed0 := int64(3), int64(0)
	if s, err := strconv.Atoi(os.Getenv("PPO_SWEEP_SEEDS")); err == nil && s > 0 {
		seeds = int64(s)
	}
	// A long run can be split: PPO_SWEEP_SEED0 is the first seed.
	if s, err := strconv.Atoi(os.Getenv("PPO_SWEEP_SEED0")); err == nil && s >= 0 {
		seed0 = int64(s)
	}
	name := os.Getenv("PPO_SWEEP_SPACE")
	if name == "" {
		name = "wide-time"
	}
	sw, ok := ppoSweeps[name]
	if !ok {
		b.Fatalf("PPO_SWEEP_SPACE=%q: want narrow, wide or wide-time", name)
	}
	for i := 0; i < b.N; i++ {
		var ratios, cpuRatios, stepRatios []float64
		var fifoWall, ashaWall, fifoCPU, ashaCPU time.Duration
		var fifoWalls, ashaWalls []float64
		for seed := seed0; seed < seed0+seeds; seed++ {
			asha := func() ppoSweepRun {
				s, err := tune.NewASHA(tune.ASHAConfig{TimeAttr: sw.timeAttr, MaxT: sw.maxT, GracePeriod: sw.grace, ReductionFactor: 3})
				if err != nil {
					b.Fatal(err)
				}
				return ppoTimeToSolve(b, sw, s, seed)
			}
			// Alternate which goes first, so that a change in the shared
			// machine's load does not always favour the same one.
			var f, a ppoSweepRun
			if seed%2 == 0 {
				f, a = ppoTimeToSolve(b, sw, nil, seed), asha()
			} else {
				a, f = asha(), ppoTimeToSolve(b, sw, nil, seed)
			}
			line := fmt.Sprintf("%s seed %d: fifo %.1fs (cpu %.1fs) %d steps %d trials (solved %v by %s) | asha %.1fs (cpu %.1fs) %d steps %d trials (solved %v by %s) | wall ratio %.2f, cpu ratio %.2f",
				sw.name, seed, f.wall.Seconds(), f.cpu.Seconds(), f.steps, f.trials, f.solved, f.solver,
				a.wall.Seconds(), a.cpu.Seconds(), a.steps, a.trials, a.solved, a.solver,
				a.wall.Seconds()/f.wall.Seconds(), a.cpu.Seconds()/f.cpu.Seconds())
			// Printed as each seed finishes too: the whole run takes many minutes.
			fmt.Fprintln(os.Stderr, line)
			b.Log(line)
			ratios = append(ratios, a.wall.Seconds()/f.wall.Seconds())
			cpuRatios = append(cpuRatios, a.cpu.Seconds()/f.cpu.Seconds())
			stepRatios = append(stepRatios, float64(a.steps)/float64(f.steps))
			fifoWalls, ashaWalls = append(fifoWalls, f.wall.Seconds()), append(ashaWalls, a.wall.Seconds())
			fifoWall, ashaWall = fifoWall+f.wall, ashaWall+a.wall
			fifoCPU, ashaCPU = fifoCPU+f.cpu, ashaCPU+a.cpu
		}
		for _, xs := range [][]float64{ratios, cpuRatios, stepRatios} {
			sort.Float64s(xs)
		}
		b.ReportMetric(ratios[len(ratios)/2], "asha/fifo-wall-median")
		b.ReportMetric(cpuRatios[len(cpuRatios)/2], "asha/fifo-cpu-median")
		b.ReportMetric(stepRatios[len(stepRatios)/2], "asha/fifo-steps-median")
		// The ratio of mean times: what a user waits on average over many
		// sweeps, which the median of per-sweep ratios hides when a few
		// sweeps are long.
		b.ReportMetric(ashaWall.Seconds()/fifoWall.Seconds(), "asha/fifo-wall-mean")
		b.ReportMetric(ashaCPU.Seconds()/fifoCPU.Seconds(), "asha/fifo-cpu-mean")
		lo, hi := bootstrapMeanRatio(ashaWalls, fifoWalls, 10_000, 0.90)
		b.ReportMetric(lo, "asha/fifo-wall-mean-p05")
		b.ReportMetric(hi, "asha/fifo-wall-mean-p95")
	}
}

// bootstrapMeanRatio returns a level confidence interval for
// mean(a)/mean(b) over paired samples (one pair per sweep seed), from n
// resamples of the pairs with replacement.
func bootstrapMeanRatio(a, b []float64, n int, level float64) (lo, hi float64) {
	rng := rand.New(rand.NewPCG(1, 2))
	ratios := make([]float64, n)
	for k := range ratios {
		var sa, sb float64
		for range a {
			i := rng.IntN(len(a))
			sa, sb = sa+a[i], sb+b[i]
		}
		ratios[k] = sa / sb
	}
	sort.Float64s(ratios)
	tail := (1 - level) / 2
	return ratios[int(tail*float64(n))], ratios[int((1-tail)*float64(n))-1]
}
