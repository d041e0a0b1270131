package ppo

import (
	"context"
	"fmt"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/gray-ml/gray/models"
	"github.com/gray-ml/gray/rllib"
	"github.com/gray-ml/gray/rllib/sample"
)

// benchAgent builds a CartPole agent and one batch with advantages.
func benchAgent(b *testing.B, cfg map[string]any) (*Agent, sample.Batch) {
	return benchAgentOn(b, "CartPole-v1", cfg)
}

// benchAgentOn builds an agent on env and one batch with advantages.
func benchAgentOn(b *testing.B, env string, cfg map[string]any) (*Agent, sample.Batch) {
	b.Helper()
	ctx := context.Background()
	a, err := newFromKeys(ctx, rllib.Options{Env: env, Seed: 1}, cfg)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = a.Stop() })
	parts, _, err := a.samplers.sample(ctx, a)
	if err != nil {
		b.Fatal(err)
	}
	batch := parts[0].Batch
	if err := sample.ComputeGAE(&batch, 0.99, 0.95); err != nil {
		b.Fatal(err)
	}
	return a, batch
}

// BenchmarkLearn measures SGD throughput (learner rows per second) on a
// CartPole batch for several network, batch and minibatch sizes.
func BenchmarkLearn(b *testing.B) {
	for _, bc := range []struct {
		name    string
		hiddens []int
		batch   int
		mb      int
	}{
		{"64x64/batch2048/mb128", []int{64, 64}, 2048, 128},
		{"64x64/batch2048/mb256", []int{64, 64}, 2048, 256},
		{"32x32/batch2048/mb128", []int{32, 32}, 2048, 128},
		{"32x32/batch512/mb128", []int{32, 32}, 512, 128},
	} {
		b.Run(bc.name, func(b *testing.B) {
			a, batch := benchAgent(b, map[string]any{
				"train_batch_size": bc.batch, "sgd_minibatch_size": bc.mb,
				"model": map[string]any{"fcnet_hiddens": bc.hiddens},
			})
			b.ResetTimer()
			rows := 0
			for i := 0; i < b.N; i++ {
				if _, err := a.learner.learn(context.Background(), &batch, 3e-4, 0.2, shuffleRNG(1, i)); err != nil {
					b.Fatal(err)
				}
				rows += batch.Len() * a.Cfg.NumSGDIter
			}
			b.ReportMetric(float64(rows)/b.Elapsed().Seconds(), "steps/s")
		})
	}
}

// BenchmarkSample measures sampling throughput of the local worker.
func BenchmarkSample(b *testing.B) {
	a, _ := benchAgent(b, nil)
	ctx := context.Background()
	b.ResetTimer()
	rows := 0
	for i := 0; i < b.N; i++ {
		parts, _, err := a.samplers.sample(ctx, a)
		if err != nil {
			b.Fatal(err)
		}
		rows += parts[0].Batch.Len()
	}
	b.ReportMetric(float64(rows)/b.Elapsed().Seconds(), "steps/s")
}

// pixelPongBenchCfg is configs/pixelpong-ppo.yaml's network and minibatch:
// two 40×40 frame differences, conv 16 4×4 stride 4, 128 ReLU units, a
// shared value head, minibatches of 256 rows (Adam).
func pixelPongBenchCfg() map[string]any {
	return map[string]any{
		"num_envs_per_worker": 8, "train_batch_size": 512, "sgd_minibatch_size": 256,
		"model": map[string]any{
			"crop": []int{34, 16, 0, 0}, "dim": 40, "grayscale": true, "frame_diff": true, "framestack": 2,
			"conv_filters": []any{[]any{16, []int{4, 4}, 4}}, "fcnet_hiddens": []int{128},
			"fcnet_activation": "relu", "vf_share_layers": true,
		},
	}
}

// benchThreads are the learner thread counts the step benchmarks run at.
// Counts above this host's cores still run (the goroutines take turns),
// so a table from a small host shows where scaling stops.
var benchThreads = []int{1, 2, 4, 8, 16}

// benchLearner builds a benchmark's own learner of a's policy with the
// given threads (the runtime TestMain starts has fewer CPUs than the
// largest thread counts), closed when b ends.
func benchLearner(b *testing.B, a *Agent, threads int) *learner {
	b.Helper()
	l, err := newLearner(&a.Cfg, a.pol, threads, func() (*policy, error) {
		return newPolicy(a.proc.pre, a.actor.Space(), a.Cfg.Model, a.Seed)
	})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = l.close() })
	l.opt.LR = 1e-4
	return l
}

// firstRows is the minibatch of a batch's first n rows.
func firstRows(n int) []int {
	idx := make([]int, n)
	for i := range idx {
		idx[i] = i
	}
	return idx
}

// BenchmarkLearnerStep times one PPO minibatch step (forward, loss,
// backward, gradient sum, Adam) on PixelPong's conv net (256 rows) and
// CartPole's 64×64 tanh net (128 rows) at several num_learner_threads.
// benchmarks/scaling/learner.sh runs it beside the PyTorch peer
// (benchmarks/models/torch_ppo_step.py), which times the same steps.
//
// Besides the means (ms/step wall and cpu-ms/step of the process, of b.N
// steps untraced; then of b.N steps traced, the team's trace:
// path-ms/step, work-ms/step), it reports the medians over
// the steps of the work and of the critical path (med-work-ms,
// med-path-ms; on one thread both are the step's process CPU). On a
// loaded machine some steps cost far more CPU than others, at any thread
// count (a thread that got its core back finds its caches refilled by
// others; a shard waiting for a transpose chunk the other shard writes
// spins), so means carry the load's tail; the medians are the step's own
// cost, the figures to set against one thread's (as
// BenchmarkLearnerStepPaired's medians of rounds are).
func BenchmarkLearnerStep(b *testing.B) {
	for _, bc := range []struct {
		name string
		env  string
		cfg  map[string]any
	}{
		{"PixelPong", "PixelPong-v0", pixelPongBenchCfg()},
		{"CartPole", "CartPole-v1", map[string]any{"train_batch_size": 512, "sgd_minibatch_size": 128}},
	} {
		for _, threads := range benchThreads {
			b.Run(fmt.Sprintf("%s/threads=%d", bc.name, threads), func(b *testing.B) {
				a, batch := benchAgentOn(b, bc.env, bc.cfg)
				l := benchLearner(b, a, threads)
				idx := firstRows(a.Cfg.SGDMinibatchSize)
				// The owner stays on one thread so that the team's trace
				// can count its CPU time between Runs.
				runtime.LockOSThread()
				defer runtime.UnlockOSThread()
				ms := func(ns int64) float64 { return float64(ns) / 1e6 }
				step := func() {
					if _, err := l.step(&batch, idx, 0.2); err != nil {
						b.Fatal(err)
					}
				}
				// The wall and CPU time untraced: the trace reads each
				// thread's CPU clock (a system call) around every part,
				// a cost the user's steps do not have.
				b.ResetTimer()
				cpu0 := processCPUNanos()
				for range b.N {
					step()
				}
				b.StopTimer()
				b.ReportMetric(float64(b.Elapsed().Microseconds())/1e3/float64(b.N), "ms/step")
				cpu := ms(processCPUNanos()-cpu0) / float64(b.N)
				b.ReportMetric(cpu, "cpu-ms/step")
				// Then as many steps traced, for the work and the path.
				work, path := make([]float64, 0, b.N), make([]float64, 0, b.N)
				l.team.Trace(true)
				last := l.team.Traced()
				for range b.N {
					c := processCPUNanos()
					step()
					c = processCPUNanos() - c
					now := l.team.Traced()
					d := now.Minus(last)
					last = now
					if d.Runs == 0 { // one thread: the step's CPU
						work, path = append(work, ms(c)), append(path, ms(c))
						continue
					}
					// The owner's time between Runs counts in the next
					// step, as the trace adds it at the next Run.
					work = append(work, ms(int64(d.Work+d.Serial)))
					path = append(path, ms(int64(d.Path+d.Serial)))
				}
				tr := l.team.Trace(false)
				// path-ms/step: the step's critical path in CPU time (the
				// serial stretches plus each Run's busiest goroutine), the
				// wall time a core per thread would give; on one thread,
				// the CPU time. Unlike wall time it holds on a loaded machine.
				meanPath := cpu
				if tr.Runs > 0 {
					meanPath = ms(int64(tr.Serial+tr.Path)) / float64(b.N)
				}
				b.ReportMetric(meanPath, "path-ms/step")
				med := func(x []float64) float64 { slices.Sort(x); return x[len(x)/2] }
				b.ReportMetric(med(work), "med-work-ms")
				b.ReportMetric(med(path), "med-path-ms")
				if tr.Runs > 0 {
					b.ReportMetric(ms(int64(tr.Serial))/float64(b.N), "serial-ms/step")
					b.ReportMetric(float64(tr.Runs)/float64(b.N), "runs/step")
					b.ReportMetric(ms(int64(tr.Work+tr.Serial))/float64(b.N), "work-ms/step")
				}
			})
		}
	}
}

// pixelPongTrainCfg is configs/pixelpong-ppo.yaml's config (keep the two
// alike): PixelPong's network with batches of 2,048 steps from 8
// environments, 3 epochs of minibatches of 256.
func pixelPongTrainCfg() map[string]any {
	cfg := pixelPongBenchCfg()
	for k, v := range map[string]any{
		"train_batch_size": 2048, "gamma": 0.99, "lambda": 0.95, "clip_param": 0.1, "kl_coeff": 0.0,
		"vf_loss_coeff": 0.5, "entropy_coeff": 0.01, "grad_clip": 0.5, "lr": 0.0005, "num_sgd_iter": 3,
	} {
		cfg[k] = v
	}
	return cfg
}

// pixelPongAgent is PPO on PixelPong-v0 with configs/pixelpong-ppo.yaml's
// settings (seed 1) and the given learner threads, stopped when b ends.
func pixelPongAgent(b *testing.B, threads int) *Agent {
	b.Helper()
	cfg := pixelPongTrainCfg()
	cfg["num_learner_threads"] = threads
	a, err := newFromKeys(context.Background(), rllib.Options{Env: "PixelPong-v0", Seed: 1}, cfg)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = a.Stop() })
	return a
}

// BenchmarkPixelPongIteration times whole training iterations of PixelPong
// PPO with num_workers 0 at 1 and 2 learner threads: steps/s, process CPU
// seconds per 1,000 steps, and the shares of the iteration's wall time
// spent sampling (the driver's 8 environments and the policy's forward
// passes) and learning. Run it with -cpuprofile to split the CPU time.
func BenchmarkPixelPongIteration(b *testing.B) {
	for _, threads := range []int{1, 2} {
		b.Run(fmt.Sprintf("threads=%d", threads), func(b *testing.B) {
			a := pixelPongAgent(b, threads)
			b.ResetTimer()
			cpu0 := processCPUNanos()
			steps, sampleS, learnS := 0.0, 0.0, 0.0
			for range b.N {
				r, err := a.Train(context.Background())
				if err != nil {
					b.Fatal(err)
				}
				steps += float64(r.TimestepsThisIter)
				sampleS += r.Extra["sample_time_s"]
				learnS += r.Extra["learn_time_s"]
			}
			wall := b.Elapsed().Seconds()
			b.ReportMetric(steps/wall, "steps/s")
			b.ReportMetric(float64(processCPUNanos()-cpu0)/1e9/steps*1000, "cpu-s/1k-steps")
			b.ReportMetric(sampleS/wall, "sample-share")
			b.ReportMetric(learnS/wall, "learn-share")
		})
	}
}

// BenchmarkPixelPongSample times the driver's sampling alone (num_workers
// 0): configs/pixelpong-ppo.yaml's 8 environments stepped for one batch of
// 2,048 steps, with preprocessing and the policy's forward passes, at 1
// and 2 learner threads (which sampling shares). It reports steps/s and
// process CPU seconds per 1,000 steps.
func BenchmarkPixelPongSample(b *testing.B) {
	for _, threads := range []int{1, 2} {
		b.Run(fmt.Sprintf("threads=%d", threads), func(b *testing.B) {
			a := pixelPongAgent(b, threads)
			ctx := context.Background()
			steps := 0
			sampleOnce := func() {
				parts, _, err := a.samplers.sample(ctx, a)
				if err != nil {
					b.Fatal(err)
				}
				steps += parts[0].Batch.Len()
				a.samplers.recycle(parts[0].Batch)
			}
			sampleOnce() // the batch buffer is allocated (and faulted in) once
			steps = 0
			b.ResetTimer()
			cpu0 := processCPUNanos()
			for range b.N {
				sampleOnce()
			}
			b.ReportMetric(float64(steps)/b.Elapsed().Seconds(), "steps/s")
			b.ReportMetric(float64(processCPUNanos()-cpu0)/1e9/float64(steps)*1000, "cpu-s/1k-steps")
		})
	}
}

// BenchmarkLearnerStepPaired measures what a second learner thread buys
// when the machine is loaded by others: it alternates rounds of steps on
// three learners over one batch — 1 thread, 2 shards run one after the
// other on one goroutine, and 2 threads — so that all three see the same
// load, and reports medians per step over the rounds (b.N of them): the
// 1-thread CPU time (t1-ms), the sequential shards' CPU against it
// (seq-extra-%), the 2-thread step's work against it (work-extra-%), its
// critical path and serial part (path-ms, serial-ms), and t1-over-path,
// the speed-up the path implies for an idle 2-core machine. By wall time,
// which is what a user sees, it reports the medians of the 1- and
// 2-thread rounds (wall1-ms, wall2-ms) and of each round's ratio of the
// two (wall1-over-wall2): the 2-thread round runs right after its 1-thread
// peer, so the ratio compares steps that saw about the same load. Where
// the wall time went, by the kernel's counts per step: the 1-thread
// owner's wait for a core (queue1-ms), the 2-thread owner's (queue2-own-ms)
// and its other threads' (queue2-rest-ms), and the time the 2-thread
// owner slept, neither running nor runnable (sleep2-own-ms: waiting for a
// member), and the process's CPU time beyond the 2-thread step's work
// (spin2-ms: members watching for each other, and the Go runtime's own
// spinning between goroutines), which on a loaded machine takes its share
// from the step. Against what the machine allows: each round also runs a
// 1-thread round on each of two independent learners at once, each on a
// thread of its own, and limit2 is the median of the rounds' steps per
// second over the 1-thread round's: what two cores of this machine give
// this very work at best (their caches and memory, and the VM's share of
// the host, included: on an idle machine with two whole cores, 2).
// wall2-of-limit is wall1-over-wall2 over limit2, the share of that the
// 2-thread learner gets.
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
			one, seq, two := benchLearner(b, a, 1), benchLearner(b, a, 2), benchLearner(b, a, 2)
			// other steps a policy of its own (a learner updates its
			// policy's weights) beside one.
			oa, obatch := benchAgentOn(b, bc.env, bc.cfg)
			other := benchLearner(b, oa, 1)
			seq.team.Close() // the same shards on the caller's goroutine alone
			seq.team = models.NewTeam(1)
			idx := firstRows(a.Cfg.SGDMinibatchSize)
			// The owner stays on one thread so that the trace can count
			// its CPU time between Runs, and the kernel's counts of its
			// thread can be told from the others'.
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			tid := threadID()
			per := func(ns int64) float64 { return float64(ns) / 1e6 / float64(bc.steps) }
			// run returns the CPU and wall milliseconds per step of a
			// round of steps on l, and the kernel's counts of its threads.
			run := func(l *learner) (cpuMs, wallMs float64, st schedTimes) {
				cpu, start, st0 := processCPUNanos(), time.Now(), readSched(tid)
				for range bc.steps {
					if _, err := l.step(&batch, idx, 0.2); err != nil {
						b.Fatal(err)
					}
				}
				wall := time.Since(start)
				return per(processCPUNanos() - cpu), per(wall.Nanoseconds()), readSched(tid).minus(st0)
			}
			// pair runs a round on one and other at once and returns the
			// wall milliseconds per step of each.
			pair := func() float64 {
				start := time.Now()
				errs := make(chan error, 1)
				go func() {
					runtime.LockOSThread()
					defer runtime.UnlockOSThread()
					var err error
					for range bc.steps {
						if _, err = other.step(&obatch, idx, 0.2); err != nil {
							break
						}
					}
					errs <- err
				}()
				for range bc.steps {
					if _, err := one.step(&batch, idx, 0.2); err != nil {
						b.Fatal(err)
					}
				}
				if err := <-errs; err != nil {
					b.Fatal(err)
				}
				return per(time.Since(start).Nanoseconds())
			}
			var t1, ts, work, path, serial, w1, w2, speedup, limit, q1, ownQ, ownSleep, restQ, idle []float64
			b.ResetTimer()
			for range b.N {
				c1, wall1, st1 := run(one)
				t1, w1, q1 = append(t1, c1), append(w1, wall1), append(q1, per(st1.ownWait))
				// The 2-thread round for the wall time runs untraced (the
				// trace reads a thread's CPU clock, a system call, around
				// every part), right after its 1-thread peer; a traced
				// round then gives the work and the path.
				c2, wall2, st2 := run(two)
				cs, _, _ := run(seq)
				ts = append(ts, cs)
				two.team.Trace(true)
				run(two)
				tr := two.team.Trace(false)
				idle = append(idle, c2-per(int64(tr.Work+tr.Serial)))
				w2 = append(w2, wall2)
				speedup = append(speedup, wall1/wall2)
				limit = append(limit, 2*wall1/pair())
				ownQ, restQ = append(ownQ, per(st2.ownWait)), append(restQ, per(st2.restWait))
				ownSleep = append(ownSleep, wall2-per(st2.ownRun+st2.ownWait))
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
			b.ReportMetric(med(w1), "wall1-ms")
			b.ReportMetric(med(w2), "wall2-ms")
			b.ReportMetric(med(speedup), "wall1-over-wall2")
			b.ReportMetric(med(limit), "limit2")
			b.ReportMetric(med(speedup)/med(limit), "wall2-of-limit")
			b.ReportMetric(med(q1), "queue1-ms")
			b.ReportMetric(med(ownQ), "queue2-own-ms")
			b.ReportMetric(med(restQ), "queue2-rest-ms")
			b.ReportMetric(med(ownSleep), "sleep2-own-ms")
			b.ReportMetric(med(idle), "spin2-ms")
		})
	}
}
