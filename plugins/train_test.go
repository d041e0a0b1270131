package plugins

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// builds caches the executables tests build beyond those TestMain builds,
// so that each is built once per package run however many tests use it.
var builds = struct {
	sync.Mutex
	paths map[string]string
}{paths: map[string]string{}}

// built builds the Go package pkg into bins/name once and returns its path.
func built(t *testing.T, name, pkg string) string {
	t.Helper()
	builds.Lock()
	defer builds.Unlock()
	if p, ok := builds.paths[pkg]; ok {
		return p
	}
	out := filepath.Join(bins, name)
	if b, err := exec.Command("go", "build", "-o", out, pkg).CombinedOutput(); err != nil {
		t.Fatalf("building %s: %v\n%s", pkg, err, b)
	}
	builds.paths[pkg] = out
	return out
}

// buildTrain builds cmd/train, the front door users run plugins through.
func buildTrain(t *testing.T) string {
	t.Helper()
	return built(t, "train", "../cmd/train")
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

// TestEnvConfigReachesPluginsInWorkers: an env_config number reaches an
// environment plugin as the same JSON number whether it came from
// --env-config or a YAML file, and whether the plugin runs in the driver or
// in rollout-worker processes (A3C and ES sample in workers only). The
// gridworld example rejects anything but an integer "size".
func TestEnvConfigReachesPluginsInWorkers(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs cmd/train")
	}
	train := buildTrain(t)
	home := t.TempDir()
	out, err := runTrain(t, train, home, "--env", Prefix+gridworldBin, "--alg", "A3C", "--env-config", `{"size": 6}`,
		"--config", `{"num_workers": 1, "num_envs_per_worker": 2, "updates_per_iter": 2}`, "--stop", `{"training_iteration": 1}`)
	if err != nil || !strings.Contains(out, "done: training_iteration >= 1") {
		t.Errorf("A3C with --env-config: %v\n%s", err, out)
	}
	file := filepath.Join(t.TempDir(), "es.yaml")
	yaml := "env: " + Prefix + gridworldBin + "\nalg: ES\nenv_config: {size: 6, max_steps: 20}\nstop: {training_iteration: 1}\n" +
		"config: {num_workers: 1, episodes_per_batch: 2, train_batch_size: 10, noise_size: 100000, eval_episodes: 0}\n"
	if err := os.WriteFile(file, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err = runTrain(t, train, home, "-f", file)
	if err != nil || !strings.Contains(out, "done: training_iteration >= 1") {
		t.Errorf("ES with env_config in YAML: %v\n%s", err, out)
	}
}

// TestTrainPluginTimeouts: train sets the plugin call timeout
// (--plugin-call-timeout-s); a plugin that hangs in a step fails the run
// with a message naming that flag, and one whose Close hangs leaves a
// finished run exiting 0 with a warning saying so.
func TestTrainPluginTimeouts(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs cmd/train")
	}
	train := buildTrain(t)
	home := t.TempDir()
	args := []string{"--env", Prefix + faultyBin, "--alg", "PPO", "--plugin-call-timeout-s", "1", "--stop", `{"training_iteration": 1}`,
		"--config", `{"train_batch_size": 64, "sgd_minibatch_size": 32, "num_sgd_iter": 1}`}
	out, err := runTrain(t, train, home, append(args, "--env-config", `{"hang_on_close": true}`)...)
	if err != nil || !strings.Contains(out, "done: training_iteration >= 1") ||
		!strings.Contains(out, "warning: the run finished, but stopping the agent failed") || !strings.Contains(out, "close: no answer within 1s; the plugin was killed") {
		t.Errorf("a plugin whose Close hangs: %v\n%s", err, out)
	}
	out, err = runTrain(t, train, home, append(args, "--env-config", `{"hang_after": 5}`)...)
	if err == nil || !strings.Contains(out, "step: no answer within 1s; the plugin was killed") || !strings.Contains(out, "--plugin-call-timeout-s") {
		t.Errorf("a plugin that hangs in a step: %v\n%s", err, out)
	}
}
