package ppo

import (
	"runtime"
	"slices"
	"testing"

	"github.com/gray-ml/gray/models"
)

// BenchmarkLearnerStepPaired measures what a second learner thread buys
// when the machine is loaded by others: it alternates rounds of steps on
// three learners over one batch — 1 thread, 2 shards run one after the
// other on one goroutine, and 2 threads — so that all three see the same
// load, and reports medians per step over the rounds (b.N of them): the
// 1-thread CPU time (t1-ms), the sequential shards' CPU against it
// (seq-extra-%), the 2-thread step's work against it (work-extra-%), its
// critical path and serial part (path-ms, serial-ms), and t1-over-path,
// the speed-up the path implies for an idle 2-core machine.
func BenchmarkLearnerStepPaired(b *testing.B) {
	for _, bc := range []struct {
		name  string
		env   string
		cfg   map[string]any
		steps int // per round
	}{
		{"PixelPong", "PixelPong-v0", pixelPongBenchCfg(), 4},
		{"CartPole", "CartPole-v1", map[string]any{"train_batch_size": 512, "sgd_minibatch_size": 128}, 100},
	} {
		b.Run(bc.name, func(b *testing.B) {
			a, batch := benchAgentOn(b, bc.env, bc.cfg)
			newL := func(threads int, sequential bool) *learner {
				l, err := newLearner(&a.Cfg, a.pol, threads, func() (*policy, error) {
					return newPolicy(a.proc.pre, a.actor.Space(), a.Cfg.Model, a.Seed)
				})
				if err != nil {
					b.Fatal(err)
				}
				if sequential { // the same shards on the caller's goroutine alone
					l.team.Close()
					l.team = models.NewTeam(1)
				}
				b.Cleanup(func() { _ = l.close() })
				l.opt.LR = 1e-4
				return l
			}
			one, seq, two := newL(1, false), newL(2, true), newL(2, false)
			idx := make([]int, a.Cfg.SGDMinibatchSize)
			for i := range idx {
				idx[i] = i
			}
			run := func(l *learner) float64 {
				cpu := processCPUNanos()
				for range bc.steps {
					if _, err := l.step(&batch, idx, 0.2); err != nil {
						b.Fatal(err)
					}
				}
				return float64(processCPUNanos()-cpu) / 1e6 / float64(bc.steps)
			}
			// The owner stays on one thread so that the trace can count
			// its CPU time between Runs.
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			var t1, ts, work, path, serial []float64
			per := func(ns int64) float64 { return float64(ns) / 1e6 / float64(bc.steps) }
			b.ResetTimer()
			for range b.N {
				t1 = append(t1, run(one))
				ts = append(ts, run(seq))
				two.team.Trace(true)
				run(two)
				tr := two.team.Trace(false)
				work = append(work, per(int64(tr.Work+tr.Serial)))
				path = append(path, per(int64(tr.Path+tr.Serial)))
				serial = append(serial, per(int64(tr.Serial)))
			}
			med := func(x []float64) float64 { slices.Sort(x); return x[len(x)/2] }
			m1, mp := med(t1), med(path)
			b.ReportMetric(m1, "t1-ms")
			b.ReportMetric(100*(med(ts)/m1-1), "seq-extra-%")
			b.ReportMetric(100*(med(work)/m1-1), "work-extra-%")
			b.ReportMetric(mp, "path-ms")
			b.ReportMetric(med(serial), "serial-ms")
			b.ReportMetric(m1/mp, "t1-over-path")
		})
	}
}
