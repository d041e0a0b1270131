package plugins

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// buildTrain builds cmd/train, the front door users run plugins through.
func buildTrain(t *testing.T) string {
	t.Helper()
	out := filepath.Join(t.TempDir(), "train")
	if b, err := exec.Command("go", "build", "-o", out, "../cmd/train").CombinedOutput(); err != nil {
		t.Fatalf("building cmd/train: %v\n%s", err, b)
	}
	return out
}

// runTrain runs train with args in a fresh home folder and returns its
// combined output.
func runTrain(t *testing.T, train, home string, args ...string) (string, error) {
	t.Helper()
	cmd := exec.Command(train, append(args, "--local-dir", filepath.Join(t.TempDir(), "results"))...)
	cmd.Env = append(os.Environ(), "HOME="+home)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// TestTrainCommandRunsPlugins goes through `train` as a user does: an agent
// plugin on an environment plugin by path, PPO on an environment plugin
// found by name in ~/.gray/plugins (sampled in a rollout worker process),
// and PPO on an environment plugin by path (plugin:<path>).
func TestTrainCommandRunsPlugins(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs cmd/train")
	}
	train := buildTrain(t)
	home := t.TempDir()
	install(t, filepath.Join(home, ".gray", "plugins", "env", "GridWorld-v0"), gridworldBin)

	out, err := runTrain(t, train, home, "--env", Prefix+gridworldBin, "--alg", Prefix+agentBin,
		"--stop", `{"training_iteration": 3}`)
	if err != nil || !strings.Contains(out, "done: training_iteration >= 3") {
		t.Errorf("train --alg plugin:... --env plugin:...: %v\n%s", err, out)
	}

	out, err = runTrain(t, train, home, "--env", "GridWorld-v0", "--alg", "PPO",
		"--config", `{"num_workers": 1, "num_envs_per_worker": 4}`, "--stop", `{"training_iteration": 2}`)
	if err != nil || !strings.Contains(out, "done: training_iteration >= 2") {
		t.Errorf("train --env GridWorld-v0 (plugins folder) --alg PPO: %v\n%s", err, out)
	}

	out, err = runTrain(t, train, home, "--env", Prefix+gridworldBin, "--alg", "PPO",
		"--stop", `{"training_iteration": 2}`)
	if err != nil || !strings.Contains(out, "done: training_iteration >= 2") {
		t.Errorf("train --env plugin:... --alg PPO: %v\n%s", err, out)
	}
}
