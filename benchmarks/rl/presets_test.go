package main

import (
	"path/filepath"
	"reflect"
	"testing"

	"github.com/gray-ml/gray/platform/config"
	"github.com/gray-ml/gray/platform/sweep"
)

// TestPresetsAreTheShippedConfigs: each single-run file in configs/ is the
// preset of its algorithm and environment, read as it is.
func TestPresetsAreTheShippedConfigs(t *testing.T) {
	dir := filepath.Join("..", "..", "configs")
	files, _ := filepath.Glob(filepath.Join(dir, "*.yaml"))
	n := 0
	for _, f := range files {
		exp, err := config.LoadFile(f, sweep.Keys...)
		if err != nil {
			t.Fatal(err)
		}
		if isSweep, _ := sweep.IsSweep(exp); isSweep {
			continue
		}
		n++
		got, from, err := presetFor(dir, exp.Alg, exp.Env)
		if err != nil || from != f || !reflect.DeepEqual(got, exp.Config) {
			t.Errorf("preset of %s on %s came from %q (%v), want %s", exp.Alg, exp.Env, from, err, f)
		}
	}
	if n < 5 {
		t.Errorf("only %d single-run configs", n)
	}
	if cfg, from, err := presetFor(dir, "PPO", "Acrobot-v1"); err != nil || from != "" || len(cfg) != 0 {
		t.Errorf("no file: %v %q %v", cfg, from, err)
	}
}
