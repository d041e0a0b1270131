package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"testing"
	"time"

	"github.com/gray-ml/gray/internal/clustertest"
	"github.com/gray-ml/gray/platform/runlog"
)

// The figures of benchmarks/results/cluster.md, "Training on a loopback
// cluster". They take a minute or two, so they run only with
// GRAY_TRAIN_CLUSTER_BENCH=1:
//
//	GRAY_TRAIN_CLUSTER_BENCH=1 go test -run 'TestClusterBench' -v ./cmd/train

func benchOnly(t *testing.T) {
	if os.Getenv("GRAY_TRAIN_CLUSTER_BENCH") == "" {
		t.Skip("a measurement: set GRAY_TRAIN_CLUSTER_BENCH=1 to run it")
	}
}

// throughput returns timesteps_total / time_total_s of the last result in
// dir, and the median time_this_iter_s.
func throughput(t *testing.T, dir string) (stepsPerS, medianIter float64) {
	t.Helper()
	results, err := runlog.ReadResults(dir)
	if err != nil || len(results) == 0 {
		t.Fatalf("results of %s: %v", dir, err)
	}
	num := func(r map[string]any, k string) float64 {
		v, _ := r[k].(json.Number).Float64()
		return v
	}
	last := results[len(results)-1]
	var iters []float64
	for _, r := range results {
		iters = append(iters, num(r, "time_this_iter_s"))
	}
	sort.Float64s(iters)
	return num(last, "timesteps_total") / num(last, "time_total_s"), iters[len(iters)/2]
}

// PPO on CartPole with three rollout workers: on this machine alone, then
// on a head and two nodes of one CPU each (a worker on each).
func TestClusterBenchPPOThroughput(t *testing.T) {
	benchOnly(t)
	const cfg = `{"num_workers": 3, "num_envs_per_worker": 4, "train_batch_size": 4000, "sgd_minibatch_size": 500, "num_sgd_iter": 4}`
	runOnce := func(extra ...string) (float64, float64) {
		local := t.TempDir()
		args := append([]string{"--env", "CartPole-v1", "--alg", "PPO", "--local-dir", local, "--seed", "1",
			"--stop", `{"training_iteration": 8}`, "--config", cfg}, extra...)
		o := train(t, args...)
		if o.code != 0 {
			t.Fatalf("exit %d\n%s\n%s", o.code, o.stdout, o.stderr)
		}
		dirs, _ := filepath.Glob(filepath.Join(local, "default", "PPO_*"))
		return throughput(t, dirs[0])
	}
	one, oneIter := runOnce("--num-cpus", "3")
	c := clustertest.Start(t, clustertest.Options{Nodes: 2, CPUsPerNode: 1})
	three, threeIter := runOnce(clusterArgs(c)...)
	t.Logf("PPO CartPole, 3 workers, 4000 steps/iteration: one machine %.0f steps/s (median iteration %.3f s); "+
		"3-node loopback cluster %.0f steps/s (median iteration %.3f s); ratio cluster/one machine %.2f",
		one, oneIter, three, threeIter, three/one)
}

// The time from kill -9 of a node running rollout workers of a sweep's
// trials until each trial that was running logs its next result, beside
// the trials' median iteration time.
func TestClusterBenchSweepKillRecovery(t *testing.T) {
	benchOnly(t)
	c := clustertest.Start(t, clustertest.Options{Nodes: 2, CPUsPerNode: 2})
	local := t.TempDir()
	const iters = 12
	file := filepath.Join(t.TempDir(), "sweep.yaml")
	sweep := fmt.Sprintf(clusterSweep, iters)
	sweep += "  num_envs_per_worker: 4\n"
	if err := os.WriteFile(file, []byte(sweep), 0o644); err != nil {
		t.Fatal(err)
	}
	wait := trainAsync(t, append([]string{"-f", file, "--local-dir", local, "--config", `{"train_batch_size": 2000, "sgd_minibatch_size": 250}`}, clusterArgs(c)...)...)
	exp := filepath.Join(local, "cluster-sweep")
	running := func() map[string]int {
		files, _ := filepath.Glob(filepath.Join(exp, "*", "result.json"))
		m := map[string]int{}
		for _, f := range files {
			if n := resultLines(f); n >= 3 && n < iters {
				m[f] = n
			}
		}
		return m
	}
	clustertest.WaitFor(t, 3*time.Minute, "three trials past their third iteration", func() bool { return len(running()) >= 3 })
	killed, _ := busyNode(t, c)
	at := running()
	c.KillNode(killed)
	o := wait()
	if o.code != 0 {
		t.Fatalf("exit %d\n%s\n%s", o.code, o.stdout, o.stderr)
	}
	// The iteration each running trial was in when the node died, beside
	// the median of its iterations.
	var worst, median float64
	for f, n := range at {
		results, err := runlog.ReadResults(filepath.Dir(f))
		if err != nil || len(results) <= n {
			t.Fatalf("%s: %d results after the kill (%v)", f, len(results), err)
		}
		v, _ := results[n]["time_this_iter_s"].(json.Number).Float64()
		worst = max(worst, v)
		_, m := throughput(t, filepath.Dir(f))
		median = max(median, m)
	}
	t.Logf("sweep of 4 PPO trials on 3 nodes: kill -9 of node %d with %d trials running; the iteration each was in took at most %.2f s; "+
		"their median iteration takes at most %.2f s", killed, len(at), worst, median)
}

// The wall time of one sweep of four PPO trials (num_workers 0: a trial
// is its learner, 1 CPU, checkpointing every iteration): on this machine
// with trials in the train process, then on a one-node cluster (the head,
// 2 CPUs) and on a two-node one, each trial in an actor. On a 2-core
// machine the nodes share the same cores, so the two-node figure shows
// what placing and shipping cost, not a speed-up.
func TestClusterBenchSweepNodes(t *testing.T) {
	benchOnly(t)
	const sweep = `name: nodes
env: CartPole-v1
alg: PPO
stop: {training_iteration: 8}
checkpoint_freq: 1
config:
  lr: {grid_search: [0.0003, 0.001, 0.003, 0.01]}
  num_workers: 0
  train_batch_size: 4000
  sgd_minibatch_size: 500
  num_sgd_iter: 4
`
	file := filepath.Join(t.TempDir(), "sweep.yaml")
	if err := os.WriteFile(file, []byte(sweep), 0o644); err != nil {
		t.Fatal(err)
	}
	runOnce := func(extra ...string) time.Duration {
		start := time.Now()
		o := train(t, append([]string{"-f", file, "--local-dir", t.TempDir()}, extra...)...)
		if o.code != 0 {
			t.Fatalf("exit %d\n%s\n%s", o.code, o.stdout, o.stderr)
		}
		return time.Since(start)
	}
	one := clustertest.Start(t, clustertest.Options{Nodes: 0, CPUsPerNode: 2})
	two := clustertest.Start(t, clustertest.Options{Nodes: 1, CPUsPerNode: 2})
	// Interleaved rounds; medians.
	var local, oneNode, twoNodes []float64
	for round := 0; round < 3; round++ {
		local = append(local, runOnce("--num-cpus", "2").Seconds())
		oneNode = append(oneNode, runOnce(clusterArgs(one)...).Seconds())
		twoNodes = append(twoNodes, runOnce(clusterArgs(two)...).Seconds())
	}
	med := func(v []float64) float64 { sort.Float64s(v); return v[len(v)/2] }
	l, o, w := med(local), med(oneNode), med(twoNodes)
	t.Logf("sweep of 4 PPO trials x 8 iterations of 4000 steps (medians of 3 interleaved rounds): in-process on 2 CPUs %.1f s; "+
		"in actors on a 1-node cluster (2 CPUs) %.1f s (%.2fx); on a 2-node cluster (2+2 CPUs, same cores) %.1f s (%.2fx)",
		l, o, o/l, w, w/l)
}
