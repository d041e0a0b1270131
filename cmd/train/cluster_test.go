package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gray-ml/gray/internal/clustertest"
	"github.com/gray-ml/gray/platform/runlog"
	"github.com/gray-ml/gray/runtime/session"
)

// Tests of train on a Gray cluster: real clusters of `gray node` processes
// on loopback (internal/clustertest). The driver is this test process (its
// run function, as `train` runs it); the nodes fetch this test binary as
// their workers' program, and TestMain serves as a worker there.

// workerLogs lists the worker log files of every job on node n: a node
// writes <temp-dir>/logs/<job>-worker-<id>.out for each worker process it
// starts for a driver, so a file there means a worker ran on that node.
func workerLogs(t *testing.T, n *clustertest.Node) map[string]bool {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(n.TempDir, "logs", "*-worker-*.out"))
	if err != nil {
		t.Fatal(err)
	}
	m := make(map[string]bool, len(files))
	for _, f := range files {
		m[f] = true
	}
	return m
}

// newFiles counts the files of after not in before.
func newFiles(before, after map[string]bool) int {
	n := 0
	for f := range after {
		if !before[f] {
			n++
		}
	}
	return n
}

// clusterArgs are the flags that run train on c.
func clusterArgs(c *clustertest.Cluster) []string {
	return []string{"--address", c.Address(), "--token-file", c.TokenFile()}
}

// checkIterations fails unless dir's result.json holds iterations 1..n,
// each once, in order.
func checkIterations(t *testing.T, dir string, n int) {
	t.Helper()
	results, err := runlog.ReadResults(dir)
	if err != nil {
		t.Fatal(err)
	}
	var got []int
	for _, r := range results {
		it, _ := r["training_iteration"].(json.Number).Int64()
		got = append(got, int(it))
	}
	ok := len(got) == n
	for i := 0; ok && i < n; i++ {
		ok = got[i] == i+1
	}
	if !ok {
		t.Errorf("%s: iterations %v, want 1..%d each once", dir, got, n)
	}
}

// `train --address` places the rollout workers of PPO and A3C, ES's workers
// and DQN's samplers across the cluster's nodes: with three workers of one
// CPU each on three nodes of one CPU each, the two nodes besides the
// driver's each start a worker of the run.
func TestTrainOnClusterSpreadsWorkers(t *testing.T) {
	c := clustertest.Start(t, clustertest.Options{Nodes: 2, CPUsPerNode: 1})
	for _, tc := range []struct{ alg, config string }{
		{"PPO", `{"num_workers": 3, "train_batch_size": 150, "sgd_minibatch_size": 50, "num_sgd_iter": 2}`},
		{"A3C", `{"num_workers": 3, "rollout_fragment_length": 10, "updates_per_iter": 6, "min_iter_time_s": 0}`},
		{"ES", `{"num_workers": 3, "episodes_per_batch": 6, "train_batch_size": 60, "noise_size": 200000, "eval_prob": 0}`},
		{"DQN", `{"num_workers": 3, "timesteps_per_iteration": 60, "learning_starts": 30, "train_batch_size": 16, "buffer_size": 500}`},
	} {
		t.Run(tc.alg, func(t *testing.T) {
			before := []map[string]bool{workerLogs(t, c.Node(1)), workerLogs(t, c.Node(2))}
			local := t.TempDir()
			args := append([]string{"--env", "CartPole-v1", "--alg", tc.alg, "--local-dir", local, "--seed", "1",
				"--stop", `{"training_iteration": 2}`, "--config", tc.config}, clusterArgs(c)...)
			o := train(t, args...)
			if o.code != 0 {
				t.Fatalf("exit %d\n%s\n%s", o.code, o.stdout, o.stderr)
			}
			dirs, _ := filepath.Glob(filepath.Join(local, "default", tc.alg+"_*"))
			if len(dirs) != 1 {
				t.Fatalf("run folders: %v", dirs)
			}
			checkIterations(t, dirs[0], 2)
			for i, b := range before {
				if n := newFiles(b, workerLogs(t, c.Node(i+1))); n == 0 {
					t.Errorf("no worker of the run started on node %d", i+1)
				}
			}
		})
	}
}

// A wrong token (well formed) is named as such, with what to do, and
// leaves no run folder behind. Given with --token, it is also warned
// about (every local user can read it there).
func TestTrainRefusedTokenLeavesNothing(t *testing.T) {
	c := clustertest.Start(t, clustertest.Options{})
	local := t.TempDir()
	o := train(t, "--env", "CartPole-v1", "--alg", "PPO", "--local-dir", local, "--stop", `{"training_iteration": 1}`,
		"--address", c.Address(), "--token", strings.Repeat("ab", 32))
	if o.code != exitError || !strings.Contains(o.stderr, "refused the password") || !strings.Contains(o.stderr, "--token") {
		t.Errorf("wrong token: exit %d\n%s", o.code, o.stderr)
	}
	if !strings.Contains(o.stderr, "warning: --token on the command line") {
		t.Errorf("--token on the command line gave no warning:\n%s", o.stderr)
	}
	if ents, _ := os.ReadDir(local); len(ents) != 0 {
		t.Errorf("a refused token left %d entries in --local-dir (want none): %v", len(ents), ents)
	}
}

// `train --address` with an address nothing listens at, one that is not
// IP:PORT, or a token that is not one fails at once, before making a run
// folder, saying what to check.
func TestTrainClusterAddressErrors(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := ln.Addr().String()
	ln.Close()
	tok := strings.Repeat("ab", 32)
	for _, c := range []struct {
		name string
		args []string
		want []string
	}{
		{"nothing listens", []string{"--address", closed, "--token", tok},
			[]string{"cannot reach the Gray cluster at " + closed, "gray start --head", "gray status --address " + closed}},
		{"not ip:port", []string{"--address", "localhost", "--token", tok}, []string{`--address "localhost" is not IP:PORT`}},
		{"bad token", []string{"--address", closed, "--token", "secret"}, []string{"token"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Setenv(session.EnvIndexDir, t.TempDir()) // no session of this machine's clusters to find a token in
			local := t.TempDir()
			args := append([]string{"--env", "CartPole-v1", "--alg", "PPO", "--local-dir", local, "--stop", `{"training_iteration": 1}`}, c.args...)
			o := train(t, args...)
			if o.code != exitError {
				t.Fatalf("exit %d, want %d\n%s", o.code, exitError, o.stderr)
			}
			if ents, _ := os.ReadDir(local); len(ents) > 0 {
				t.Errorf("a run folder was made before the cluster was checked: %v", ents)
			}
			for _, w := range c.want {
				if !strings.Contains(o.stderr, w) {
					t.Errorf("stderr lacks %q:\n%s", w, o.stderr)
				}
			}
		})
	}
}

// resultLines counts the lines of the result.json files matching glob.
func resultLines(glob string) int {
	files, _ := filepath.Glob(glob)
	n := 0
	for _, f := range files {
		b, _ := os.ReadFile(f)
		n += strings.Count(string(b), "\n")
	}
	return n
}

// busyNode returns a node besides the head that runs workers of the
// driver, with how many workers it started.
func busyNode(t *testing.T, c *clustertest.Cluster) (int, int) {
	t.Helper()
	for i := 1; i < c.Size(); i++ {
		if n := len(workerLogs(t, c.Node(i))); n > 0 {
			return i, n
		}
	}
	t.Fatal("no node besides the head runs a worker")
	return 0, 0
}

// trainAsync runs train in the background; the returned function waits
// for its outcome.
func trainAsync(t *testing.T, args ...string) func() outcome {
	done := make(chan outcome, 1)
	go func() {
		var o outcome
		defer func() { done <- o }()
		o = trainNoHelper(args...)
	}()
	return func() outcome {
		select {
		case o := <-done:
			return o
		case <-time.After(3 * time.Minute):
			t.Fatal("train did not finish within 3 minutes")
			return outcome{}
		}
	}
}

func trainNoHelper(args ...string) outcome {
	var out, errb strings.Builder
	code := run(context.Background(), args, &out, &errb)
	return outcome{code, out.String(), errb.String()}
}

// Killing a node (kill -9) while PPO samples on rollout workers there
// recreates those workers on the nodes left, and training goes on: the run
// reaches its iteration count with every iteration in result.json once.
func TestTrainOnClusterSurvivesNodeKill(t *testing.T) {
	c := clustertest.Start(t, clustertest.Options{Nodes: 2, CPUsPerNode: 2})
	local := t.TempDir()
	const iters = 6
	args := append([]string{"--env", "CartPole-v1", "--alg", "PPO", "--local-dir", local, "--seed", "1",
		"--stop", fmt.Sprintf(`{"training_iteration": %d}`, iters),
		"--config", `{"num_workers": 4, "train_batch_size": 400, "sgd_minibatch_size": 100, "num_sgd_iter": 2}`}, clusterArgs(c)...)
	wait := trainAsync(t, args...)
	clustertest.WaitFor(t, 2*time.Minute, "the first iteration", func() bool {
		return resultLines(filepath.Join(local, "default", "PPO_*", "result.json")) >= 1
	})
	killed, had := busyNode(t, c)
	// The workers started on the nodes left, and the driver's own (the
	// head's, logged in the run folder).
	survivors := func() int {
		n, _ := filepath.Glob(filepath.Join(local, "default", "PPO_*", "logs", "worker-*.out"))
		m := len(n)
		for i := 1; i < c.Size(); i++ {
			if i != killed {
				m += len(workerLogs(t, c.Node(i)))
			}
		}
		return m
	}
	beforeKill := survivors()
	c.KillNode(killed)
	t.Logf("killed node %d, which had started %d workers, after %d iterations", killed, had,
		resultLines(filepath.Join(local, "default", "PPO_*", "result.json")))
	o := wait()
	if o.code != 0 {
		t.Fatalf("exit %d after node %d was killed\n%s\n%s", o.code, killed, o.stdout, o.stderr)
	}
	dirs, _ := filepath.Glob(filepath.Join(local, "default", "PPO_*"))
	if len(dirs) != 1 {
		t.Fatalf("run folders: %v", dirs)
	}
	checkIterations(t, dirs[0], iters)
	if got := survivors() - beforeKill; got < had {
		t.Errorf("node %d ran %d workers; %d were started on the nodes left after it died", killed, had, got)
	}
}

const clusterSweep = `name: cluster-sweep
env: CartPole-v1
alg: PPO
stop: {training_iteration: %d}
checkpoint_freq: 1
num_samples: 2
max_failures: 3
config:
  lr: {grid_search: [0.0003, 0.001]}
  num_workers: 1
  train_batch_size: 200
  sgd_minibatch_size: 50
  num_sgd_iter: 2
`

// trialNodes returns, for each trial folder under exp, the node_id of each
// result in its result.json, in order: the node its actor ran the
// iteration on.
func trialNodes(t *testing.T, exp string) map[string][]string {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(exp, "*", "result.json"))
	out := map[string][]string{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		var nodes []string
		for _, line := range strings.Split(string(b), "\n") {
			var r struct {
				Node string `json:"node_id"`
			}
			if json.Unmarshal([]byte(line), &r) == nil {
				nodes = append(nodes, r.Node)
			}
		}
		out[filepath.Dir(f)] = nodes
	}
	return out
}

// journalEvents returns the events of a sweep's journal, by kind and trial.
func journalEvents(t *testing.T, exp string) map[string]map[string]int {
	t.Helper()
	journal, err := os.ReadFile(filepath.Join(exp, "journal.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]map[string]int{}
	for _, line := range strings.Split(strings.TrimSpace(string(journal)), "\n") {
		var ev struct{ E, Trial string }
		if err := json.Unmarshal([]byte(line), &ev); err != nil {
			t.Fatalf("journal line %q: %v", line, err)
		}
		if m[ev.E] == nil {
			m[ev.E] = map[string]int{}
		}
		m[ev.E][ev.Trial]++
	}
	return m
}

// `train -f sweep.yaml --address` runs each trial in a gray actor placed
// on any node of the cluster (its CPUs, not this machine's, bound how many
// run side by side), and killing a node mid-sweep loses no trial and no
// result: the trials that ran there restart from their last checkpoint on
// the nodes left, and every trial finishes with every iteration logged
// once.
func TestSweepOnClusterSurvivesNodeKill(t *testing.T) {
	c := clustertest.Start(t, clustertest.Options{Nodes: 2, CPUsPerNode: 2})
	local := t.TempDir()
	const iters = 5
	file := filepath.Join(t.TempDir(), "sweep.yaml")
	if err := os.WriteFile(file, []byte(fmt.Sprintf(clusterSweep, iters)), 0o644); err != nil {
		t.Fatal(err)
	}
	// The cluster named by the environment, as GRAY_ADDRESS=... train does.
	t.Setenv(session.EnvAddress, c.Address())
	t.Setenv(session.EnvToken, c.Token())
	wait := trainAsync(t, "-f", file, "--local-dir", local)
	exp := filepath.Join(local, "cluster-sweep")
	nodeIndex := map[string]int{}
	for i := 0; i < c.Size(); i++ {
		nodeIndex[c.Node(i).ID] = i
	}
	// Trials hold 1 + num_workers CPUs of the cluster's 6: three run side
	// by side (on a machine of 2 or 3 CPUs, as this test's, only one would
	// run at a time were they counted against it), and a trial's actor
	// runs on a node besides the head, whose node this test kills.
	var onKilled []string
	killed := 0
	clustertest.WaitFor(t, 2*time.Minute, "two trials running at once, one on a node besides the head", func() bool {
		running, on := 0, map[int][]string{}
		for dir, nodes := range trialNodes(t, exp) {
			if n := len(nodes); n >= 1 && n < iters {
				running++
				// Far enough from its end that it is still running when
				// the node dies a moment later.
				if n <= iters-3 {
					on[nodeIndex[nodes[n-1]]] = append(on[nodeIndex[nodes[n-1]]], dir)
				}
			}
		}
		for i := 1; i < c.Size() && running >= 2; i++ {
			if len(on[i]) > 0 {
				killed, onKilled = i, on[i]
				return true
			}
		}
		return false
	})
	c.KillNode(killed)
	t.Logf("killed node %d, which ran trials %v", killed, onKilled)
	o := wait()
	if o.code != 0 {
		t.Fatalf("exit %d after node %d was killed\n%s\n%s", o.code, killed, o.stdout, o.stderr)
	}
	if !strings.Contains(o.stdout, "4 trials in "+exp) {
		t.Errorf("stdout:\n%s", o.stdout)
	}
	params, _ := filepath.Glob(filepath.Join(exp, "*", "params.json"))
	if len(params) != 4 {
		t.Fatalf("trial folders: %v", params)
	}
	for _, p := range params {
		checkIterations(t, filepath.Dir(p), iters)
	}
	// Every iteration of every trial ran in an actor on a node of the
	// cluster, not in the driver, and trials ran on several nodes.
	nodes := trialNodes(t, exp)
	used := map[int]bool{}
	for dir, ns := range nodes {
		for i, n := range ns {
			k, ok := nodeIndex[n]
			if !ok {
				t.Errorf("%s: iteration %d ran on node %q, not a node of the cluster", dir, i+1, n)
			}
			used[k] = true
		}
	}
	if len(used) < 2 {
		t.Errorf("trials ran on nodes %v only, want them spread over the cluster", used)
	}
	// No iteration was computed twice (a trial started over would log its
	// iterations again in the sweep's journal), and the trials of the
	// killed node were restored from a checkpoint and finished elsewhere.
	ev := journalEvents(t, exp)
	for id, n := range ev["result"] {
		if n != iters {
			t.Errorf("trial %s logged %d results in the journal, want %d", id, n, iters)
		}
	}
	if len(ev["result"]) != 4 {
		t.Errorf("results of %d trials in the journal, want 4", len(ev["result"]))
	}
	for _, dir := range onKilled {
		id := strings.TrimPrefix(filepath.Base(dir), "trial_")
		if ev["restored"][id] == 0 {
			t.Errorf("trial %s ran on the killed node but the journal records no restore from a checkpoint", id)
		}
		if ns := nodes[dir]; len(ns) == 0 || nodeIndex[ns[len(ns)-1]] == killed {
			t.Errorf("trial %s: its last iteration ran on node %v, the killed one", id, ns)
		}
	}
}
