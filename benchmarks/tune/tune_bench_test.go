// Package tune_test measures Gray Tune's own overhead: the runner,
// journal, logger and scheduler cost per reported result, and the heap a
// finished trial keeps.
package tune_test

import (
	"context"
	"fmt"
	"path/filepath"
	"runtime"
	"syscall"
	"testing"
	"time"

	"github.com/gray-ml/gray/tune"
)

// reportOnly is a trainable that does no work: everything measured is
// Gray's overhead.
func reportOnly(ctx context.Context, cfg map[string]any, report tune.ReportFunc) error {
	x, _ := tune.Float(cfg, "x")
	for i := 1; ; i++ {
		if err := report(map[string]any{"score": x * float64(i)}); err != nil {
			return nil
		}
	}
}

func sweep(b *testing.B, dir string, trials, reports int, sched tune.Scheduler) *tune.Analysis {
	b.Helper()
	a, err := tune.Run(context.Background(), tune.Experiment{
		Dir:       dir,
		Trainable: tune.FuncTrainable(reportOnly),
		Space:     map[string]any{"x": tune.Uniform{Lo: 0, Hi: 1}},
		// One grid point repeated: the 1,000 trials.
		NumSamples: trials,
		Metric:     "score",
		Scheduler:  sched,
		Stop:       map[string]float64{"training_iteration": float64(reports)},
		Resources:  tune.Resources{CPU: 1},
		// Concurrency as on an 8-core node.
		NodeResources: tune.Resources{CPU: 8},
	})
	if err != nil {
		b.Fatal(err)
	}
	return a
}

// BenchmarkOverhead1000x100 runs 1,000 trials of 100 reports each and
// reports the wall time per result (all of it Gray's overhead).
func BenchmarkOverhead1000x100(b *testing.B) {
	for _, name := range []string{"fifo", "asha"} {
		b.Run(name, func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				var sched tune.Scheduler
				if name == "asha" {
					a, err := tune.NewASHA(tune.ASHAConfig{MaxT: 100, GracePeriod: 5, ReductionFactor: 3})
					if err != nil {
						b.Fatal(err)
					}
					sched = a
				}
				cpu0 := cpuTime()
				start := time.Now()
				a := sweep(b, filepath.Join(b.TempDir(), "exp"), 1000, 100, sched)
				el := time.Since(start)
				cpu := cpuTime() - cpu0
				results := 0
				for _, t := range a.Trials {
					results += t.Iteration
				}
				b.ReportMetric(float64(el.Microseconds())/float64(results), "µs/result")
				b.ReportMetric(float64(cpu.Microseconds())/float64(results), "cpu-µs/result")
				b.ReportMetric(float64(results), "results")
			}
		})
	}
}

// cpuTime is the process's user+system CPU time: on a loaded shared
// machine it is steadier than wall time.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkHeapPerFinishedTrial measures the heap kept after N finished
// trials, for N = 250, 500, 1000 and 10 or 100 reports each: it grows by a
// constant per trial (its config and last result), not with results.
func BenchmarkHeapPerFinishedTrial(b *testing.B) {
	for _, reports := range []int{10, 100} {
		for _, n := range []int{250, 500, 1000} {
			b.Run(fmt.Sprintf("trials=%d/reports=%d", n, reports), func(b *testing.B) {
				for i := 0; i < b.N; i++ {
					var before, after runtime.MemStats
					runtime.GC()
					runtime.ReadMemStats(&before)
					a := sweep(b, filepath.Join(b.TempDir(), "exp"), n, reports, nil)
					runtime.GC()
					runtime.ReadMemStats(&after)
					kept := float64(after.HeapAlloc) - float64(before.HeapAlloc)
					b.ReportMetric(kept/1024, "KiB-kept")
					b.ReportMetric(kept/float64(len(a.Trials)), "B/trial")
					runtime.KeepAlive(a)
				}
			})
		}
	}
}
