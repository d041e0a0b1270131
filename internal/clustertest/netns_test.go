package clustertest_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gray-ml/gray/internal/clustertest"
	"github.com/gray-ml/gray/runtime/session"
)

// machineRun runs name with args on m, with env, and returns its output.
func machineRun(t *testing.T, m *clustertest.Machine, env []string, timeout time.Duration, name string, args ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := m.Command(ctx, name, args...)
	cmd.Env = env
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return out.String(), err
}

// machineEnv is the environment of commands on a lab machine: this
// process's, less what would point them at the host's cluster or files,
// with the nodes told to stop should this test binary die.
func machineEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		switch k {
		case session.EnvAddress, session.EnvToken, session.EnvIndexDir, "TMPDIR":
			continue
		}
		env = append(env, kv)
	}
	return append(env, "TMPDIR=/tmp", "GRAY_OWNER_PID="+strconv.Itoa(os.Getpid()))
}

// iterationsAndNodes reads a run folder's result.json (as the host sees
// it): the training_iteration and node_id of each result, in order.
func iterationsAndNodes(t *testing.T, dir string) ([]int, []string) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "result.json"))
	if err != nil {
		t.Fatal(err)
	}
	var its []int
	var nodes []string
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var r struct {
			It   int    `json:"training_iteration"`
			Node string `json:"node_id"`
		}
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatalf("%s: %q: %v", dir, line, err)
		}
		its = append(its, r.It)
		nodes = append(nodes, r.Node)
	}
	return its, nodes
}

func wantIterations(t *testing.T, dir string, its []int, n int) {
	t.Helper()
	ok := len(its) == n
	for i := 0; ok && i < n; i++ {
		ok = its[i] == i+1
	}
	if !ok {
		t.Errorf("%s: iterations %v, want 1..%d each once", dir, its, n)
	}
}

const nsSweep = `name: ns-sweep
env: CartPole-v1
alg: PPO
stop: {training_iteration: 2}
config:
  lr: {grid_search: [0.0003, 0.001]}
  num_workers: 1
  train_batch_size: 200
  sgd_minibatch_size: 50
  num_sgd_iter: 2
`

// A cluster of machines that share nothing — each node in its own network
// namespace, with its own address on a bridge, and its own /tmp and
// /dev/shm — trains PPO and runs a sweep with work on every machine. The
// driver's program is installed on the head's machine only: the other
// nodes run its workers from what they pulled over the network. So nothing
// relies on loopback, nor on files another node can see.
func TestNodesThatShareNothing(t *testing.T) {
	began := time.Now()
	lab := clustertest.StartLab(t, 3)
	grayBin, trainBin := clustertest.BuildGray(t), clustertest.BuildCommand(t, "train")
	t.Logf("lab up and programs built in %v", time.Since(began).Round(time.Millisecond))
	env := machineEnv()
	const gray, train, tempDir = "/tmp/bin/gray", "/tmp/bin/train", "/tmp/gray-node"
	for i := range 3 {
		if err := lab.Machine(i).Install(grayBin, gray); err != nil {
			t.Fatal(err)
		}
	}
	head := lab.Machine(0)
	if err := head.Install(trainBin, train); err != nil {
		t.Fatal(err)
	}
	// Stop every node before the lab goes (the lab kills what is left).
	t.Cleanup(func() {
		for i := range 3 {
			m := lab.Machine(i)
			if out, err := machineRun(t, m, env, time.Minute, gray, "stop"); err != nil {
				t.Errorf("gray stop on machine %d: %v\n%s", i, err, out)
			}
			if n := len(m.Processes()); n > 1 { // the lab's holder stays
				t.Errorf("machine %d: %d processes left after gray stop", i, n-1)
			}
		}
	})

	out, err := machineRun(t, head, env, 2*time.Minute, gray, "start", "--head", "--port", "0",
		"--node-ip-address", head.IP, "--num-cpus", "1", "--temp-dir", tempDir)
	if err != nil {
		t.Fatalf("gray start --head: %v\n%s", err, out)
	}
	m := regexp.MustCompile(`(?m)^gray start --address (\S+) --token-file (\S+)$`).FindStringSubmatch(out)
	if m == nil || !strings.HasPrefix(m[1], head.IP+":") {
		t.Fatalf("gray start --head printed no join command at %s:\n%s", head.IP, out)
	}
	addr, tokenFile := m[1], m[2]
	token, err := os.ReadFile(head.Path(tokenFile))
	if err != nil {
		t.Fatal(err)
	}
	ids := map[string]int{}
	for i := 1; i < 3; i++ {
		n := lab.Machine(i)
		if _, err := os.Stat(n.Path(tokenFile)); err == nil {
			t.Fatalf("machine %d sees the head's token file %s: /tmp is shared", i, tokenFile)
		}
		// The operator copies the token to each machine.
		if err := os.WriteFile(n.Path("/tmp/token"), token, 0o600); err != nil {
			t.Fatal(err)
		}
		if out, err := machineRun(t, n, env, 2*time.Minute, gray, "start", "--address", addr, "--token-file", "/tmp/token",
			"--node-ip-address", n.IP, "--num-cpus", "2", "--temp-dir", tempDir); err != nil {
			t.Fatalf("gray start on machine %d: %v\n%s", i, err, out)
		}
	}
	for i := range 3 {
		s, err := session.Read(lab.Machine(i).Path(tempDir))
		if err != nil {
			t.Fatal(err)
		}
		ids[s.NodeID] = i
	}
	clustertest.WaitFor(t, time.Minute, "3 nodes alive", func() bool {
		out, err := machineRun(t, head, env, time.Minute, gray, "status", "--json", "--address", addr)
		if err != nil {
			return false
		}
		st, err := clustertest.DecodeStatus([]byte(out))
		return err == nil && st.Alive == 3 && st.Total.CPU == 5
	})

	t.Logf("cluster of 3 machines up at %v", time.Since(began).Round(time.Millisecond))
	// PPO with 4 rollout workers: the head has 1 CPU, so the other two
	// machines run at least 3, and each runs at least one.
	out, err = machineRun(t, head, env, 4*time.Minute, train, "--address", addr, "--token-file", tokenFile,
		"--env", "CartPole-v1", "--alg", "PPO", "--local-dir", "/tmp/results", "--seed", "1",
		"--stop", `{"training_iteration": 3}`,
		"--config", `{"num_workers": 4, "train_batch_size": 400, "sgd_minibatch_size": 100, "num_sgd_iter": 2}`)
	if err != nil {
		t.Fatalf("train: %v\n%s", err, out)
	}
	t.Logf("PPO trained across the machines at %v", time.Since(began).Round(time.Millisecond))
	runs, _ := filepath.Glob(head.Path("/tmp/results/default/PPO_*"))
	if len(runs) != 1 {
		t.Fatalf("run folders %v, want one\n%s", runs, out)
	}
	its, _ := iterationsAndNodes(t, runs[0])
	wantIterations(t, runs[0], its, 3)
	for i := 1; i < 3; i++ {
		n := lab.Machine(i)
		logs, _ := filepath.Glob(n.Path(filepath.Join(tempDir, "logs", "*-worker-*.out")))
		if len(logs) == 0 {
			t.Errorf("no worker of the run started on machine %d", i)
		}
		if _, err := os.Stat(n.Path(train)); err == nil {
			t.Errorf("machine %d sees the driver's program %s: /tmp is shared", i, train)
		}
		if exes, _ := os.ReadDir(n.Path(filepath.Join(tempDir, "exe"))); len(exes) == 0 {
			t.Errorf("machine %d ran workers but holds no pulled executable", i)
		}
	}

	// A sweep of two trials, each a learner and a rollout worker of one
	// CPU: the head's one CPU holds at most one of the four, so trials run
	// on the other machines.
	if err := os.WriteFile(head.Path("/tmp/sweep.yaml"), []byte(nsSweep), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err = machineRun(t, head, env, 4*time.Minute, train, "-f", "/tmp/sweep.yaml", "--address", addr,
		"--token-file", tokenFile, "--local-dir", "/tmp/sweeps")
	if err != nil {
		t.Fatalf("sweep: %v\n%s", err, out)
	}
	trials, _ := filepath.Glob(head.Path("/tmp/sweeps/ns-sweep/*/params.json"))
	if len(trials) != 2 {
		t.Fatalf("trial folders %v, want 2\n%s", trials, out)
	}
	used := map[int]bool{}
	for _, p := range trials {
		dir := filepath.Dir(p)
		its, nodes := iterationsAndNodes(t, dir)
		wantIterations(t, dir, its, 2)
		for _, id := range nodes {
			k, ok := ids[id]
			if !ok {
				t.Errorf("%s: an iteration ran on %q, not a node of the cluster", dir, id)
			}
			used[k] = true
		}
	}
	if !used[1] && !used[2] {
		t.Errorf("trials ran on machines %v only, want some on the machines besides the head", used)
	}
	t.Logf("sweep done at %v; trials ran on machines %v", time.Since(began).Round(time.Millisecond), fmt.Sprint(used))
}
