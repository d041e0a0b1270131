package plugins

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gray-ml/gray/envs"
	"github.com/gray-ml/gray/rllib"
)

// TestAgentPluginTrainsThroughRllib runs the random-search agent plugin the
// way `train --alg plugin:<path>` does: rllib.Lookup, New, Train, Save,
// Restore, ComputeAction, Stop. Its environment is itself a plugin.
func TestAgentPluginTrainsThroughRllib(t *testing.T) {
	alg, err := rllib.Lookup(Prefix + agentBin)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	dir := t.TempDir()
	agent, err := alg.Make(ctx, rllib.Options{
		Env:    Prefix + gridworldBin,
		LogDir: dir, Seed: 1}, map[string]any{"directions": 8, "noise": 1.0, "step_size": 4.0, "max_episode_steps": 50})
	if err != nil {
		t.Fatal(err)
	}
	defer agent.Stop()
	best := -1.0
	var first rllib.Result
	for i := 0; i < 15; i++ {
		r, err := agent.Train(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			first = r
		}
		best = max(best, r.Extra["eval_return"])
	}
	if agent.Iteration() != 15 || first.TrainingIteration != 1 || first.EpisodesThisIter != 16 {
		t.Errorf("iteration %d, first result %+v; want 15 iterations of 16 episodes", agent.Iteration(), first)
	}
	// Walking to the goal takes at most 8 steps on the 5×5 grid: a return
	// above 0.5 means the policy found the goal every time, or nearly.
	if best < 0.5 {
		t.Errorf("best evaluation return %.3f after 15 iterations, want > 0.5", best)
	}
	path, err := agent.Save(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if filepath.Dir(path) != dir {
		t.Errorf("checkpoint %s not in the log folder %s", path, dir)
	}
	act, err := agent.ComputeAction([]float64{0, 0})
	if err != nil || len(act) != 1 || !(envs.Discrete{N: 4}).Contains(act) {
		t.Errorf("ComputeAction = %v, %v; want one action of Discrete(4)", act, err)
	}
	if err := agent.Restore(ctx, path); err != nil {
		t.Fatal(err)
	}
	if err := agent.Restore(ctx, filepath.Join(dir, "missing.json")); err == nil || !strings.Contains(err.Error(), "missing.json") {
		t.Errorf("restoring a missing checkpoint: %v, want an error naming it", err)
	}
}

func TestAgentPluginRejectsBadConfig(t *testing.T) {
	alg, err := rllib.Lookup(Prefix + agentBin)
	if err != nil {
		t.Fatal(err)
	}
	_, err = alg.Make(context.Background(), rllib.Options{Env: Prefix + gridworldBin}, map[string]any{"directionz": 4})
	if err == nil || !strings.Contains(err.Error(), "directionz") || !strings.Contains(err.Error(), agentBin) {
		t.Errorf("got %v, want an error naming the plugin and the unknown key", err)
	}
	if _, err := rllib.Lookup(Prefix + gridworldBin); err != nil {
		t.Fatal(err) // resolving only checks the file; starting checks the kind
	}
	alg, _ = rllib.Lookup(Prefix + gridworldBin)
	if _, err := alg.Make(context.Background(), rllib.Options{}, nil); err == nil || !strings.Contains(err.Error(), `"env" plugin`) {
		t.Errorf("an env plugin as an agent: %v, want a wrong-kind error", err)
	}
}

func install(t *testing.T, dst, src string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(src, dst); err != nil {
		t.Fatal(err)
	}
}

func TestPluginsFolderAndConfigRegisterNames(t *testing.T) {
	dir := t.TempDir()
	install(t, filepath.Join(dir, "env", "FolderGrid-v0"), gridworldBin)
	install(t, filepath.Join(dir, "agent", "FolderSearch"), agentBin)
	if err := RegisterFolder(dir); err != nil {
		t.Fatal(err)
	}
	v, err := envs.MakeVector("FolderGrid-v0", nil, 2)
	if err != nil {
		t.Fatal(err)
	}
	rollout(t, v, 5, 4)
	v.Close()
	if _, err := rllib.Lookup("FolderSearch"); err != nil {
		t.Error(err)
	}
	if err := RegisterFolder(dir); err == nil || !strings.Contains(err.Error(), "already registered") {
		t.Errorf("registering a name twice: %v, want an error", err)
	}
	if err := RegisterFolder(filepath.Join(dir, "none")); err != nil {
		t.Errorf("a missing folder: %v, want no error", err)
	}

	cfgDir := t.TempDir()
	install(t, filepath.Join(cfgDir, "bin", "grid"), gridworldBin)
	cfg := filepath.Join(cfgDir, "plugins.yaml")
	if err := os.WriteFile(cfg, []byte("env:\n  ConfigGrid-v0: bin/grid\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := RegisterConfig(cfg); err != nil {
		t.Fatal(err)
	}
	if v, err := envs.MakeVector("ConfigGrid-v0", nil, 1); err != nil {
		t.Error(err)
	} else {
		v.Close()
	}
	bad := filepath.Join(cfgDir, "bad.yaml")
	if err := os.WriteFile(bad, []byte("model:\n  X: bin/grid\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := RegisterConfig(bad); err == nil || !strings.Contains(err.Error(), `unknown plugin kind "model"`) {
		t.Errorf("unknown kind: %v, want an error", err)
	}
	missing := filepath.Join(cfgDir, "missing.yaml")
	if err := os.WriteFile(missing, []byte("env:\n  Gone-v0: bin/gone\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := RegisterConfig(missing); err == nil || !strings.Contains(err.Error(), "no such file") {
		t.Errorf("missing executable: %v, want an error", err)
	}
}
