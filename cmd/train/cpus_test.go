package main

import (
	"fmt"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/gray-ml/gray/rllib"
)

// cfgWith is a Go algorithm's decoded config with num_workers n.
func cfgWith(n int) rllib.Config { return &commonOnly{rllib.Common{NumWorkers: n}} }

type commonOnly struct{ rllib.Common }

func (*commonOnly) Validate() error { return nil }

func TestOwnRuntimeCPUs(t *testing.T) {
	for _, tc := range []struct {
		name    string
		numCPUs int
		cfg     rllib.Config
		machine int
		want    int
		note    string
	}{
		{"no workers", 0, cfgWith(0), 2, 0, ""},
		{"workers that fit", 0, cfgWith(1), 2, 0, ""},
		{"a worker per core", 0, cfgWith(2), 2, 0, ""},
		{"workers that fit exactly", 0, cfgWith(15), 16, 0, ""},
		{"more workers than cores", 0, cfgWith(14), 2, 15, "num_workers 14 needs 15 CPUs (one per worker, one for the learner) and this machine has 2: the runtime offers 15"},
		{"--num-cpus given is kept", 2, cfgWith(14), 2, 2, ""},
		{"14 workers on one core", 0, cfgWith(14), 1, 15, "this machine has 1"},
		{"a slip: far more workers than cores", 0, cfgWith(1000), 2, 0, ""},
		{"a plugin's config is its own", 0, rllib.MapConfig{"num_workers": 14}, 2, 0, ""},
		{"no config", 0, nil, 2, 0, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, note := ownRuntimeCPUs(tc.numCPUs, tc.cfg, tc.machine)
			if got != tc.want || !strings.Contains(note, tc.note) || (tc.note == "") != (note == "") {
				t.Fatalf("ownRuntimeCPUs = %d, %q; want %d and a note saying %q", got, note, tc.want, tc.note)
			}
		})
	}
}

// TestOversubscribedRunRestoresAndRollsOut trains with one rollout worker
// more than this machine has cores, then restores and rolls out its
// checkpoint with no --config and no --num-cpus: each reads num_workers
// from the checkpoint's config, so each offers the CPUs the training had,
// where the runtime's own CPUs would refuse the agent.
func TestOversubscribedRunRestoresAndRollsOut(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a worker process per core and one more, three times")
	}
	dir := t.TempDir()
	workers := fmt.Sprintf(`{"num_workers": %d}`, runtime.NumCPU()+1)
	o := train(t, "-f", filepath.Join("..", "..", "configs", "cartpole-a3c.yaml"), "--local-dir", dir, "--name", "first",
		"--config", workers, "--stop", `{"training_iteration": 1}`, "--checkpoint-at-end")
	if o.code != 0 {
		t.Fatalf("train: exit %d\n%s\n%s", o.code, o.stdout, o.stderr)
	}
	_, ckpt, ok := strings.Cut(o.stdout, "last checkpoint: ")
	ckpt, _, _ = strings.Cut(ckpt, "\n")
	if !ok || ckpt == "" {
		t.Fatalf("no checkpoint in the output:\n%s", o.stdout)
	}
	for _, args := range [][]string{
		{"--alg", "A3C", "--env", "CartPole-v1", "--restore", ckpt, "--local-dir", dir, "--name", "restored", "--stop", `{"training_iteration": 2}`},
		{"rollout", "--checkpoint", ckpt, "--episodes", "1"},
	} {
		o := train(t, args...)
		if o.code != 0 {
			t.Fatalf("train %s: exit %d\n%s\n%s", strings.Join(args, " "), o.code, o.stdout, o.stderr)
		}
		if !strings.Contains(o.stderr, "so they take turns on its cores") {
			t.Errorf("train %s: no note that the workers share the cores:\n%s", strings.Join(args, " "), o.stderr)
		}
	}
}

// TestShippedConfigWithMoreWorkersThanCores runs a shipped config the way
// a user with a bigger machine raises it, num_workers 14, on whatever
// machine runs the test: it trains, with no error about CPUs.
func TestShippedConfigWithMoreWorkersThanCores(t *testing.T) {
	if testing.Short() {
		t.Skip("starts 14 workers")
	}
	o := train(t, "-f", filepath.Join("..", "..", "configs", "cartpole-a3c.yaml"), "--local-dir", t.TempDir(),
		"--config", `{"num_workers": 14}`, "--stop", `{"training_iteration": 1}`)
	if o.code != 0 {
		t.Fatalf("exit %d\n%s\n%s", o.code, o.stdout, o.stderr)
	}
	if runtime.NumCPU() < 15 && !strings.Contains(o.stderr, "so they take turns on its cores") {
		t.Errorf("no note that the workers share %d cores:\n%s", runtime.NumCPU(), o.stderr)
	}
}
