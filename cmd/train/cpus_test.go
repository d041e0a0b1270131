package main

import (
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/gray-ml/gray/tune"
)

func TestOwnRuntimeCPUs(t *testing.T) {
	for _, tc := range []struct {
		name    string
		numCPUs int
		config  map[string]any
		machine int
		want    int
		note    string
	}{
		{"no workers", 0, map[string]any{"lr": 0.1}, 2, 0, ""},
		{"workers that fit", 0, map[string]any{"num_workers": 1}, 2, 0, ""},
		{"workers that fit exactly", 0, map[string]any{"num_workers": 15.0}, 16, 0, ""},
		{"more workers than cores", 0, map[string]any{"num_workers": 14.0}, 2, 15, "num_workers 14 needs 15 CPUs (one per worker, one for the learner) and this machine has 2: the runtime offers 15"},
		{"--num-cpus given is kept", 2, map[string]any{"num_workers": 14}, 2, 2, ""},
		{"14 workers on one core", 0, map[string]any{"num_workers": 14}, 1, 15, "this machine has 1"},
		{"a slip: far more workers than cores", 0, map[string]any{"num_workers": 1000}, 2, 0, ""},
		{"num_workers under search", 0, map[string]any{"num_workers": tune.Grid(1, 14)}, 2, 0, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, note := ownRuntimeCPUs(tc.numCPUs, tc.config, tc.machine)
			if got != tc.want || !strings.Contains(note, tc.note) || (tc.note == "") != (note == "") {
				t.Fatalf("ownRuntimeCPUs = %d, %q; want %d and a note saying %q", got, note, tc.want, tc.note)
			}
		})
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
