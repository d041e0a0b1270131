package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gray-ml/gray/platform/checkpoint"
	"github.com/gray-ml/gray/platform/config"
	"github.com/gray-ml/gray/platform/runlog"
	"github.com/gray-ml/gray/platform/runner"
	"github.com/gray-ml/gray/platform/sweep"
	"github.com/gray-ml/gray/platform/tensorboard"
	"github.com/gray-ml/gray/rllib"
)

// TestMain serves as a runtime worker when started as one, and lets a
// test run the real main in a child process (for signals).
func TestMain(m *testing.M) {
	// The runtime starts this test binary again as its workers.
	setup()
	if os.Getenv("GRAY_TRAIN_TEST_MAIN") == "1" {
		main()
		return
	}
	os.Exit(m.Run())
}

type outcome struct {
	code           int
	stdout, stderr string
}

func train(t *testing.T, args ...string) outcome {
	t.Helper()
	var out, errb bytes.Buffer
	code := run(context.Background(), args, &out, &errb)
	return outcome{code, out.String(), errb.String()}
}

// runDir finds the single run folder under local/default.
func runDir(t *testing.T, local string) string {
	t.Helper()
	dirs, _ := filepath.Glob(filepath.Join(local, "*", "FakeAlg_*"))
	if len(dirs) != 1 {
		t.Fatalf("run folders under %s: %v, want one", local, dirs)
	}
	return dirs[0]
}

func TestBadInput(t *testing.T) {
	local := t.TempDir()
	notDir := filepath.Join(t.TempDir(), "file")
	os.WriteFile(notDir, nil, 0o644)
	badYAML := filepath.Join(t.TempDir(), "exp.yaml")
	os.WriteFile(badYAML, []byte("env: Corridor-v0\nalg: FakeAlg\nconfig:\n  lr: 0.1\n   gamma: 0.9\n"), 0o644)
	unknownKey := filepath.Join(t.TempDir(), "exp.yaml")
	os.WriteFile(unknownKey, []byte("env: Corridor-v0\nalg: FakeAlg\nstopp: {}\n"), 0o644)
	base := []string{"--local-dir", local}
	for _, c := range []struct {
		name string
		args []string
		want []string
	}{
		{"unknown env", []string{"--env", "Nope-v9", "--alg", "FakeAlg"}, []string{`unknown environment "Nope-v9"`, "Corridor-v0", "Ring-v0"}},
		{"unknown alg", []string{"--env", "Corridor-v0", "--alg", "XYZ"}, []string{`unknown algorithm "XYZ"`, "FakeAlg", "OtherAlg"}},
		{"no env", []string{"--alg", "FakeAlg"}, []string{"no environment given", "Corridor-v0"}},
		{"no alg", []string{"--env", "Corridor-v0"}, []string{"no algorithm given", "FakeAlg"}},
		{"wrong-typed key", []string{"--env", "Corridor-v0", "--alg", "FakeAlg", "--config", `{"lr": "fast"}`},
			[]string{`key "lr" must be a number`, `"fast"`}},
		{"wrong-typed nested key", []string{"--env", "Corridor-v0", "--alg", "FakeAlg", "--config", `{"model": {"fcnet_hiddens": 64}}`},
			[]string{`"model.fcnet_hiddens"`, "must be a list of integers", "got number"}},
		{"unknown config key", []string{"--env", "Corridor-v0", "--alg", "FakeAlg", "--config", `{"learning_rate": 0.1}`},
			[]string{`unknown key "learning_rate"`, "known keys:", "lr"}},
		{"malformed config JSON", []string{"--env", "Corridor-v0", "--alg", "FakeAlg", "--config", `{"lr": 0.1`},
			[]string{"--config: malformed JSON"}},
		{"malformed stop JSON", []string{"--env", "Corridor-v0", "--alg", "FakeAlg", "--stop", `{"a" 1}`},
			[]string{"--stop: malformed JSON at byte 5", "^"}},
		{"malformed YAML", []string{"-f", badYAML}, []string{"exp.yaml:5", "malformed YAML", "gamma: 0.9"}},
		{"unknown file key", []string{"-f", unknownKey}, []string{"exp.yaml:3:1", `unknown key "stopp"`, `did you mean "stop"`}},
		{"bad env config", []string{"--env", "Ring-v0", "--alg", "FakeAlg", "--env-config", `{"bad": 1}`},
			[]string{`creating "Ring-v0"`, `unknown env_config key "bad"`}},
		{"unwritable local dir", []string{"--env", "Corridor-v0", "--alg", "FakeAlg", "--local-dir", filepath.Join(notDir, "results")},
			[]string{"cannot create experiment folder", "file/results", "writable"}},
		{"stop key never reported", []string{"--env", "Corridor-v0", "--alg", "FakeAlg", "--stop", `{"episode_reward": 5}`},
			[]string{"stop criteria episode_reward are not keys of the first result", "episode_reward_mean", "could never stop"}},
		{"misspelled alg", []string{"--env", "Corridor-v0", "--alg", "FakeAlgo"}, []string{`unknown algorithm "FakeAlgo"`, `did you mean "FakeAlg"?`}},
		{"misspelled env", []string{"--env", "CartPol-v1", "--alg", "FakeAlg"}, []string{`unknown environment "CartPol-v1"`, `did you mean "CartPole-v1"?`}},
		{"missing plugin", []string{"--env", "plugin:/nonexistent/catch", "--alg", "FakeAlg"}, []string{"/nonexistent/catch: no such file"}},
		{"out-of-range hyperparameter", []string{"--env", "CartPole-v1", "--alg", "PPO", "--config", `{"lr": -1}`}, []string{"PPO config: lr must be positive"}},
		{"minibatch over train batch", []string{"--env", "CartPole-v1", "--alg", "PPO", "--config", `{"train_batch_size": 100}`},
			[]string{"sgd_minibatch_size (128) must not exceed train_batch_size (100)"}},
		{"env config of the wrong type", []string{"--env", "CartPole-v1", "--alg", "FakeAlg", "--env-config", `{"max_episode_steps": "50"}`},
			[]string{`"max_episode_steps" must be an integer`}},
		{"restore missing", []string{"--env", "Corridor-v0", "--alg", "FakeAlg", "--restore", "/nonexistent/checkpoint_3"},
			[]string{"checkpoint /nonexistent/checkpoint_3 does not exist"}},
		{"restore non-checkpoint", []string{"--env", "Corridor-v0", "--alg", "FakeAlg", "--restore", local},
			[]string{"is not a Gray checkpoint"}},
		{"unknown flag", []string{"--enviroment", "x"}, []string{"unknown flag: --enviroment", "train --help"}},
		{"stray argument", []string{"CartPole"}, []string{`unknown command "CartPole"`}},
		{"show-config without alg", []string{"--show-config"}, []string{"--show-config needs --alg", "FakeAlg"}},
		{"rollout without checkpoint", []string{"rollout"}, []string{"rollout needs --checkpoint"}},
		{"plot not a run", []string{"plot", local, "-o", filepath.Join(local, "x.png")}, []string{"neither a run folder"}},
		{"zero episodes", []string{"rollout", "--checkpoint", local, "--episodes", "0"}, []string{"--episodes must be at least 1"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			args := c.args
			if len(args) == 0 || (args[0] != "rollout" && args[0] != "plot") {
				args = append(append([]string(nil), base...), args...)
			}
			before, _ := filepath.Glob(filepath.Join(local, "*", "*"))
			o := train(t, args...)
			t.Log(o.stderr)
			// Bad input fails before anything is written (a stop key is
			// checked against the first result).
			started := c.name == "stop key never reported"
			if after, _ := filepath.Glob(filepath.Join(local, "*", "*")); len(after) != len(before) && !started {
				t.Errorf("a failed start left run folders: %v", after)
			}
			// Nor does it tell how to watch a run that never began.
			if strings.Contains(o.stdout, "gray dashboard") && !started {
				t.Errorf("stdout of a failed start:\n%s", o.stdout)
			}
			if o.code != exitError {
				t.Errorf("exit code %d, want %d; stdout:\n%s", o.code, exitError, o.stdout)
			}
			for _, w := range c.want {
				if !strings.Contains(o.stderr, w) {
					t.Errorf("stderr\n%s\nlacks %q", o.stderr, w)
				}
			}
			if strings.Contains(o.stderr, "goroutine ") {
				t.Errorf("raw panic:\n%s", o.stderr)
			}
		})
	}
}

func TestTrainWritesRunFolder(t *testing.T) {
	local := t.TempDir()
	o := train(t, "--env", "Corridor-v0", "--alg", "fakealg", "--local-dir", local, "--name", "exp1",
		"--config", `{"lr": 0.5, "model": {"fcnet_hiddens": [4]}, "extra_after": 3}`,
		"--stop", `{"training_iteration": 4, "episode_reward_mean": 1000, "evaluation_reward_mean": 100}`, "--checkpoint-freq", "2", "--checkpoint-at-end")
	if o.code != 0 {
		t.Fatalf("exit %d\n%s\n%s", o.code, o.stdout, o.stderr)
	}
	dir := runDir(t, local)
	if !regexp.MustCompile(`/exp1/FakeAlg_Corridor-v0_\d{4}-\d\d-\d\d_\d\d-\d\d-\d\d_[0-9a-f]{6}$`).MatchString(dir) {
		t.Errorf("run folder %s", dir)
	}
	lines := regexp.MustCompile(`(?m)^iter +(\d+) +steps +([\d,]+) +reward +([\d.]+) \(min +[\d.]+, max +[\d.]+\) +len +[\d.]+ +[\d,]+ steps/s +[\d.]+s$`).FindAllStringSubmatch(o.stdout, -1)
	if len(lines) != 4 || lines[3][1] != "4" || lines[3][2] != "400" || lines[3][3] != "40.00" {
		t.Errorf("progress lines %v in\n%s", lines, o.stdout)
	}
	for _, w := range []string{"checkpoint saved: " + filepath.Join(dir, "checkpoint_2"), "checkpoint saved: " + filepath.Join(dir, "checkpoint_4"),
		"done: training_iteration >= 4", "results: " + dir, "warning: stop criteria evaluation_reward_mean are not keys of the first result"} {
		if !strings.Contains(o.stdout, w) {
			t.Errorf("stdout lacks %q:\n%s", w, o.stdout)
		}
	}

	// config.json: every hyperparameter used, defaults included.
	var cfg map[string]any
	b, _ := os.ReadFile(filepath.Join(dir, "config.json"))
	json.Unmarshal(b, &cfg)
	model, _ := cfg["model"].(map[string]any)
	if cfg["lr"] != 0.5 || cfg["train_batch_size"] != 100.0 || model["fcnet_activation"] != "tanh" || len(model["fcnet_hiddens"].([]any)) != 1 {
		t.Errorf("config.json = %s", b)
	}
	// result.json: one object per iteration with the bookkeeping keys.
	results, err := runlog.ReadResults(dir)
	if err != nil || len(results) != 4 {
		t.Fatalf("result.json: %d results, %v", len(results), err)
	}
	last := runlog.Flatten(results[3])
	for _, k := range []string{"training_iteration", "timesteps_total", "timesteps_this_iter", "episode_reward_mean",
		"episode_reward_min", "episode_reward_max", "episode_len_mean", "episodes_this_iter", "time_this_iter_s",
		"time_total_s", "date", "hostname", "pid", "done", "info/learner/policy_loss", "info/learner/vf_loss",
		"info/learner/total_loss", "info/learner/entropy", "info/learner/kl", "info/learner/kl_coeff",
		"info/learner/cur_lr", "info/learner/explained_variance", "evaluation_reward_mean"} {
		if _, ok := last[k]; !ok {
			t.Errorf("last result lacks %q", k)
		}
	}
	if last["done"] != true || results[0]["done"] != false || last["time_total_s"] != json.Number("1") {
		t.Errorf("done %v/%v, time_total_s %v", results[0]["done"], last["done"], last["time_total_s"])
	}
	// progress.csv: same columns, widened when evaluation_reward_mean appeared.
	f, _ := os.Open(filepath.Join(dir, "progress.csv"))
	rows, err := csv.NewReader(f).ReadAll()
	f.Close()
	if err != nil || len(rows) != 5 {
		t.Fatalf("progress.csv: %d rows, %v", len(rows), err)
	}
	if len(rows[0]) != len(last) {
		t.Errorf("progress.csv has %d columns, result.json %d keys", len(rows[0]), len(last))
	}
	// Event file: every numeric result at step timesteps_total.
	evs, _ := filepath.Glob(filepath.Join(dir, "events.out.tfevents.*"))
	if len(evs) != 1 {
		t.Fatalf("event files %v", evs)
	}
	events, err := tensorboard.ReadFile(evs[0])
	if err != nil || len(events) != 5 {
		t.Fatalf("events: %d, %v", len(events), err)
	}
	if events[4].Step != 400 || events[4].Scalars["episode_reward_mean"] != 40 || events[4].Scalars["info/learner/kl"] != float32(0.01) {
		t.Errorf("last event %+v", events[4])
	}
	// The runtime's workers write their output into logs/.
	if logs, _ := filepath.Glob(filepath.Join(dir, "logs", "worker-*")); len(logs) == 0 {
		t.Error("no worker output files in logs/")
	}
	// Checkpoint metadata.
	meta, _, err := checkpoint.Read(filepath.Join(dir, "checkpoint_4"))
	if err != nil || meta.Algorithm != "FakeAlg" || meta.Env != "Corridor-v0" || meta.Iteration != 4 || meta.TimestepsTotal != 400 {
		t.Errorf("checkpoint meta %+v, %v", meta, err)
	}
}

func TestExperimentFileWithFlagOverrides(t *testing.T) {
	local := t.TempDir()
	file := filepath.Join(t.TempDir(), "exp.yaml")
	os.WriteFile(file, []byte(`fake-corridor:
  env: Corridor-v0
  run: FakeAlg
  local_dir: `+local+`
  stop: {training_iteration: 5}
  config:
    lr: 0.2
    train_batch_size: 10
`), 0o644)
	o := train(t, "-f", file, "--stop", `{"training_iteration": 2}`, "--config", `{"train_batch_size": 50}`)
	if o.code != 0 {
		t.Fatalf("exit %d\n%s", o.code, o.stderr)
	}
	dir := runDir(t, local)
	if filepath.Base(filepath.Dir(dir)) != "fake-corridor" {
		t.Errorf("experiment folder %s, want fake-corridor", filepath.Dir(dir))
	}
	results, _ := runlog.ReadResults(dir)
	var cfg map[string]any
	b, _ := os.ReadFile(filepath.Join(dir, "config.json"))
	json.Unmarshal(b, &cfg)
	if len(results) != 2 || cfg["lr"] != 0.2 || cfg["train_batch_size"] != 50.0 {
		t.Errorf("%d results, config %s", len(results), b)
	}
}

func TestShowConfig(t *testing.T) {
	o := train(t, "--alg", "FakeAlg", "--show-config")
	var cfg map[string]any
	if err := json.Unmarshal([]byte(o.stdout), &cfg); err != nil || cfg["lr"] != 0.01 || o.code != 0 {
		t.Errorf("--show-config: %v\n%s%s", err, o.stdout, o.stderr)
	}
	o = train(t, "--alg", "FakeAlg", "--show-config", "--format", "yaml", "--config", `{"lr": 0.5}`)
	for _, w := range []string{"alg: FakeAlg", "lr: 0.5", "train_batch_size: 100", "fcnet_activation: tanh"} {
		if !strings.Contains(o.stdout, w) {
			t.Errorf("--show-config --format yaml lacks %q:\n%s%s", w, o.stdout, o.stderr)
		}
	}
}

func TestFailuresKeepLastGoodCheckpoint(t *testing.T) {
	for _, c := range []struct {
		name, cfg string
		want      []string
		results   int
		ckpt      string
	}{
		{"agent error", `{"err_at": 5}`, []string{"iteration 5 failed: total_loss is NaN at SGD epoch 2, minibatch 3",
			"last good checkpoint: ", "checkpoint_4", "--restore"}, 4, "checkpoint_4"},
		{"NaN statistic", `{"nan_stat_at": 3}`, []string{"iteration 3: the learner reported kl=NaN", "last good checkpoint: ", "checkpoint_2"}, 3, "checkpoint_2"},
		{"blown-up loss", `{"blow_up_at": 3}`, []string{"iteration 3: the learner reported vf_loss=4.2e+13", "training diverged",
			"lower the learning rate (lr is 0.01)", "last good checkpoint: ", "checkpoint_2"}, 3, "checkpoint_2"},
		{"panic", `{"panic_at": 3}`, []string{"panic while training iteration 3", "index out of range",
			"fake_test.go", "please report", "checkpoint_2"}, 2, "checkpoint_2"},
	} {
		t.Run(c.name, func(t *testing.T) {
			local := t.TempDir()
			o := train(t, "--env", "Corridor-v0", "--alg", "FakeAlg", "--local-dir", local, "--checkpoint-freq", "2", "--config", c.cfg,
				"--stop", `{"training_iteration": 10}`)
			if o.code != exitError {
				t.Errorf("exit %d, want %d", o.code, exitError)
			}
			for _, w := range c.want {
				if !strings.Contains(o.stderr, w) {
					t.Errorf("stderr lacks %q:\n%s", w, o.stderr)
				}
			}
			if strings.Contains(o.stderr, "goroutine ") {
				t.Errorf("raw stack in stderr:\n%s", o.stderr)
			}
			dir := runDir(t, local)
			if !strings.Contains(o.stderr, "results so far are in "+dir) {
				t.Errorf("stderr does not point at the run folder:\n%s", o.stderr)
			}
			if results, _ := runlog.ReadResults(dir); len(results) != c.results {
				t.Errorf("%d results kept, want %d", len(results), c.results)
			}
			// The last good checkpoint is there; the failed state was not saved.
			ckpts, _ := filepath.Glob(filepath.Join(dir, "checkpoint_*"))
			if len(ckpts) == 0 || filepath.Base(ckpts[len(ckpts)-1]) != c.ckpt {
				t.Errorf("checkpoints %v, want the last to be %s", ckpts, c.ckpt)
			}
		})
	}
}

// TestDivergenceMessages: a failure before the first checkpoint does not
// advise the --checkpoint-freq already given, and a collapsed entropy is
// warned about once.
func TestDivergenceMessages(t *testing.T) {
	o := train(t, "--env", "Corridor-v0", "--alg", "FakeAlg", "--local-dir", t.TempDir(), "--checkpoint-freq", "5",
		"--config", `{"nan_stat_at": 2}`, "--stop", `{"training_iteration": 10}`)
	if o.code != exitError || strings.Contains(o.stderr, "use --checkpoint-freq") ||
		!strings.Contains(o.stderr, "no checkpoint was written yet (--checkpoint-freq 5 writes the first at iteration 5)") {
		t.Errorf("NaN before the first checkpoint: exit %d\n%s", o.code, o.stderr)
	}
	o = train(t, "--env", "Corridor-v0", "--alg", "FakeAlg", "--local-dir", t.TempDir(),
		"--config", `{"collapse_at": 2}`, "--stop", `{"training_iteration": 4}`)
	if o.code != 0 || strings.Count(o.stdout, "warning: iteration 2: the policy's entropy fell to 0") != 1 || !strings.Contains(o.stdout, "(lr 0.01)") {
		t.Errorf("entropy collapse: exit %d\n%s\n%s", o.code, o.stdout, o.stderr)
	}
}

func TestRestoreAndRollout(t *testing.T) {
	local := t.TempDir()
	if o := train(t, "--env", "Corridor-v0", "--alg", "FakeAlg", "--local-dir", local, "--stop", `{"training_iteration": 2}`,
		"--checkpoint-at-end", "--seed", "5", "--config", `{"lr": 0.5, "model": {"fcnet_hiddens": [3]}}`); o.code != 0 {
		t.Fatalf("first run: %s", o.stderr)
	}
	ckpt := filepath.Join(runDir(t, local), "checkpoint_2")

	for _, c := range []struct {
		name string
		args []string
		want string
	}{
		{"other algorithm", []string{"--alg", "OtherAlg", "--env", "Corridor-v0"}, "written by algorithm FakeAlg, not OtherAlg"},
		{"other env", []string{"--alg", "FakeAlg", "--env", "Ring-v0"}, "trained on environment Corridor-v0, not Ring-v0"},
	} {
		t.Run(c.name, func(t *testing.T) {
			o := train(t, append(c.args, "--local-dir", t.TempDir(), "--restore", ckpt)...)
			if o.code != exitError || !strings.Contains(o.stderr, c.want) {
				t.Errorf("exit %d, stderr %s; want %q", o.code, o.stderr, c.want)
			}
		})
	}

	// Restoring continues the iteration count, the timesteps and the time.
	local2 := t.TempDir()
	o := train(t, "--env", "Corridor-v0", "--alg", "FakeAlg", "--local-dir", local2, "--restore", ckpt, "--stop", `{"training_iteration": 3}`,
		"--config", `{"lr": 0.25}`)
	if o.code != 0 {
		t.Fatalf("restored run: %s", o.stderr)
	}
	// It keeps the checkpoint's config, with keys given now over it.
	var cfg map[string]any
	b, _ := os.ReadFile(filepath.Join(runDir(t, local2), "config.json"))
	json.Unmarshal(b, &cfg)
	if cfg["lr"] != 0.25 || len(cfg["model"].(map[string]any)["fcnet_hiddens"].([]any)) != 1 {
		t.Errorf("restored run's config.json = %s; want the checkpoint's model and the new lr", b)
	}
	results, _ := runlog.ReadResults(runDir(t, local2))
	if len(results) != 1 || results[0]["training_iteration"] != json.Number("3") || results[0]["timesteps_total"] != json.Number("300") ||
		results[0]["time_total_s"] != json.Number("0.75") {
		t.Errorf("restored run results %v", results)
	}

	o = train(t, "rollout", "--checkpoint", ckpt, "--episodes", "3")
	if o.code != 0 {
		t.Fatalf("rollout: %s", o.stderr)
	}
	for _, w := range []string{"FakeAlg on Corridor-v0", "episode 1: return 0.70 (4 steps)", "episode 3: return 0.70",
		"mean return over 3 episodes: 0.70"} {
		if !strings.Contains(o.stdout, w) {
			t.Errorf("rollout output lacks %q:\n%s", w, o.stdout)
		}
	}
}

func TestCheckpointAsFile(t *testing.T) {
	local := t.TempDir()
	o := train(t, "--env", "Corridor-v0", "--alg", "FakeAlg", "--local-dir", local, "--stop", `{"training_iteration": 1}`,
		"--checkpoint-at-end", "--config", `{"save_to_file": true}`)
	if o.code != 0 {
		t.Fatal(o.stderr)
	}
	file := filepath.Join(runDir(t, local), "state-1.json")
	if o := train(t, "rollout", "--checkpoint", file, "--episodes", "1"); o.code != 0 || !strings.Contains(o.stdout, "return 0.70") {
		t.Errorf("rollout of a file checkpoint: %s%s", o.stdout, o.stderr)
	}
}

func TestPlot(t *testing.T) {
	local := t.TempDir()
	for range 2 {
		if o := train(t, "--env", "Corridor-v0", "--alg", "FakeAlg", "--local-dir", local, "--stop", `{"training_iteration": 3}`); o.code != 0 {
			t.Fatal(o.stderr)
		}
	}
	out := filepath.Join(t.TempDir(), "curve.png")
	o := train(t, "plot", filepath.Join(local, "default"), "-o", out)
	if o.code != 0 || !strings.Contains(o.stdout, "(2 runs)") {
		t.Fatalf("plot: %s%s", o.stdout, o.stderr)
	}
	b, _ := os.ReadFile(out)
	if !bytes.HasPrefix(b, []byte("\x89PNG")) {
		t.Errorf("%s is not a PNG", out)
	}
	o = train(t, "plot", filepath.Join(local, "default"), "--metric", "reward", "-o", out)
	if o.code != exitError || !strings.Contains(o.stderr, `no numeric "timesteps_total" and "reward"`) || !strings.Contains(o.stderr, "episode_reward_mean") {
		t.Errorf("unknown metric: %s", o.stderr)
	}
}

// TestSIGINTSavesCheckpoint runs the real main in a child process and
// interrupts it as Ctrl-C in a terminal does: SIGINT to the whole process
// group, the runtime's workers included.
func TestSIGINTSavesCheckpoint(t *testing.T) {
	local := t.TempDir()
	cmd := exec.Command(os.Args[0], "--env", "Corridor-v0", "--alg", "FakeAlg", "--local-dir", local, "--config", `{"sleep_s": 0.05}`)
	cmd.Env = append(os.Environ(), "GRAY_TRAIN_TEST_MAIN=1")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	stdout, _ := cmd.StdoutPipe()
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(stdout)
	var out strings.Builder
	signalled := false
	for sc.Scan() {
		out.WriteString(sc.Text() + "\n")
		if !signalled && strings.HasPrefix(sc.Text(), "iter    2") {
			syscall.Kill(-cmd.Process.Pid, syscall.SIGINT)
			signalled = true
		}
	}
	io.Copy(io.Discard, stdout)
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var err error
	select {
	case err = <-done:
	case <-time.After(60 * time.Second):
		cmd.Process.Kill()
		t.Fatalf("train did not stop after SIGINT:\n%s", out.String())
	}
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != exitInterrupted {
		t.Errorf("exit: %v, want code %d\n%s\n%s", err, exitInterrupted, out.String(), stderr.String())
	}
	if !strings.Contains(out.String(), "interrupted: saving a final checkpoint") || !strings.Contains(out.String(), "checkpoint saved:") {
		t.Errorf("stdout:\n%s", out.String())
	}
	if strings.Contains(stderr.String(), "gray:") || strings.Contains(stderr.String(), "runtime") {
		t.Errorf("runtime complaints on stderr (did Ctrl-C reach the workers?):\n%s", stderr.String())
	}
	dir := runDir(t, local)
	ckpts, _ := filepath.Glob(filepath.Join(dir, "checkpoint_*"))
	results, _ := runlog.ReadResults(dir)
	if len(ckpts) != 1 || len(results) < 2 {
		t.Fatalf("checkpoints %v, %d results", ckpts, len(results))
	}
	meta, _, err := checkpoint.Read(ckpts[0])
	if err != nil || meta.Iteration != len(results) {
		t.Errorf("final checkpoint at iteration %d, %v; %d results logged", meta.Iteration, err, len(results))
	}
}

// TestShippedConfigs checks that the tuned experiments in configs/ load and
// set every PPO key the issue lists. (Training them is the RL benchmarks'
// job.)
// TestShippedConfigs: every file in configs/ loads, and the values the
// algorithm runs with are the file's, key by key (an ignored, coerced or
// out-of-range value fails); sweep files build.
func TestShippedConfigs(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join("..", "..", "configs", "*.yaml"))
	if len(files) < 6 {
		t.Fatalf("configs: %v", files)
	}
	for _, file := range files {
		exp, err := config.LoadFile(file, sweep.Keys...)
		if err != nil {
			t.Fatal(err)
		}
		if len(exp.Stop) == 0 || exp.Config == nil {
			t.Errorf("%s: no stop criteria or no config: %+v", file, exp)
		}
		if isSweep, err := sweep.IsSweep(exp); err != nil || isSweep {
			exp.LocalDir = t.TempDir()
			if _, err := sweep.Build(exp, io.Discard); err != nil {
				t.Errorf("%s: %v", file, err)
			}
			continue
		}
		if !exp.CheckpointAtEnd {
			t.Errorf("%s: no checkpoint_at_end", file)
		}
		alg, err := rllib.Lookup(exp.Alg)
		if err != nil {
			t.Fatal(err)
		}
		decoded, err := alg.Decode(exp.Config)
		if err != nil {
			t.Errorf("%s: %v", file, err)
			continue
		}
		full, err := runner.ConfigMap(decoded)
		if err != nil {
			t.Fatal(err)
		}
		if err := runner.CheckEnv(exp.Env, exp.EnvConfig); err != nil {
			t.Errorf("%s: %v", file, err)
		}
		for _, diff := range configDiffs("", exp.Config, full) {
			t.Errorf("%s: %s", file, diff)
		}
	}
}

// configDiffs lists the keys of file (nested ones as a.b) whose value in
// used differs, comparing as JSON values.
func configDiffs(prefix string, file, used map[string]any) []string {
	var diffs []string
	for k, v := range file {
		if sub, ok := v.(map[string]any); ok {
			usedSub, _ := used[k].(map[string]any)
			diffs = append(diffs, configDiffs(prefix+k+".", sub, usedSub)...)
			continue
		}
		if a, b := asJSON(v), asJSON(used[k]); !reflect.DeepEqual(a, b) {
			diffs = append(diffs, fmt.Sprintf("%s%s is %v in the file but the algorithm runs with %v", prefix, k, a, b))
		}
	}
	sort.Strings(diffs)
	return diffs
}

func asJSON(v any) any {
	b, _ := json.Marshal(v)
	var out any
	_ = json.Unmarshal(b, &out)
	return out
}

// TestSecondSIGINTQuits: a second Ctrl-C ends a run whose iteration does
// not return, without a checkpoint.
func TestSecondSIGINTQuits(t *testing.T) {
	local := t.TempDir()
	cmd := exec.Command(os.Args[0], "--env", "Corridor-v0", "--alg", "FakeAlg", "--local-dir", local,
		"--config", `{"sleep_s": 2, "stubborn": true}`)
	cmd.Env = append(os.Environ(), "GRAY_TRAIN_TEST_MAIN=1")
	stderrPipe, _ := cmd.StderrPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	sc := bufio.NewScanner(stderrPipe)
	for sc.Scan() {
		stderr.WriteString(sc.Text() + "\n")
		switch {
		case strings.HasPrefix(sc.Text(), "fake: iteration 1 started"):
			// The first signal asks for a stop after the iteration, which
			// takes two seconds; the second must not wait for it.
			cmd.Process.Signal(syscall.SIGINT)
		case strings.Contains(sc.Text(), "Ctrl-C again to quit at once"):
			// Like a user, press Ctrl-C again once the first is answered
			// (two signals in quick succession may be delivered as one).
			cmd.Process.Signal(syscall.SIGINT)
		}
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var err error
	select {
	case err = <-done:
	case <-time.After(60 * time.Second):
		cmd.Process.Kill()
		t.Fatal("train did not quit after a second SIGINT")
	}
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != exitInterrupted || !strings.Contains(stderr.String(), "quitting without a checkpoint") {
		t.Errorf("exit %v, stderr:\n%s", err, stderr.String())
	}
	if ckpts, _ := filepath.Glob(filepath.Join(runDir(t, local), "checkpoint_*")); len(ckpts) != 0 {
		t.Errorf("checkpoints %v after quitting at once", ckpts)
	}
}

// TestEnvConfigNumbersAndEnvCase: a number in --env-config reaches a
// built-in environment as a number, and environment names resolve in any
// case (as algorithm names do), the run folder taking the registered name.
func TestEnvConfigNumbersAndEnvCase(t *testing.T) {
	local := t.TempDir()
	o := train(t, "--env", "cartpole-v1", "--alg", "FakeAlg", "--local-dir", local,
		"--env-config", `{"max_episode_steps": 50}`, "--stop", `{"training_iteration": 1}`)
	if o.code != 0 {
		t.Fatalf("exit %d\n%s\n%s", o.code, o.stdout, o.stderr)
	}
	if !strings.HasPrefix(filepath.Base(runDir(t, local)), "FakeAlg_CartPole-v1_") {
		t.Errorf("run folder %s, want it named after CartPole-v1", runDir(t, local))
	}
}

// TestHugeLearningRateIsCaught: with lr 1e6, PPO, A3C and DQN stay
// finite but blow up; the run stops at once and says so.
func TestHugeLearningRateIsCaught(t *testing.T) {
	for _, alg := range []string{"PPO", "A3C", "DQN"} {
		cfg := `{"lr": 1e6}`
		if alg == "PPO" {
			cfg = `{"lr": 1e6, "train_batch_size": 512}`
		}
		o := train(t, "--env", "CartPole-v1", "--alg", alg, "--local-dir", t.TempDir(), "--config", cfg, "--stop", `{"training_iteration": 8}`)
		if o.code != exitError || !strings.Contains(o.stderr, "training diverged; lower the learning rate (lr is 1000000)") {
			t.Errorf("%s with lr 1e6: exit %d\n%s\n%s", alg, o.code, o.stdout, o.stderr)
		}
	}
}

// TestRealAgentCheckpointHasOneHeader: a PPO checkpoint written by train
// has one header file, holding the agent's keys and the platform's, and
// restores and rolls out.
func TestRealAgentCheckpointHasOneHeader(t *testing.T) {
	local := t.TempDir()
	cfg := `{"train_batch_size": 256, "sgd_minibatch_size": 64, "num_sgd_iter": 1}`
	o := train(t, "--env", "CartPole-v1", "--alg", "PPO", "--local-dir", local, "--config", cfg, "--stop", `{"training_iteration": 1}`, "--checkpoint-at-end")
	ckpts, _ := filepath.Glob(filepath.Join(local, "default", "PPO_*", "checkpoint_1"))
	if o.code != 0 || len(ckpts) != 1 {
		t.Fatalf("exit %d, checkpoints %v\n%s\n%s", o.code, ckpts, o.stdout, o.stderr)
	}
	headers, _ := filepath.Glob(filepath.Join(ckpts[0], "*.json"))
	if len(headers) != 1 || filepath.Base(headers[0]) != checkpoint.MetaFile {
		t.Errorf("header files %v, want only %s", headers, checkpoint.MetaFile)
	}
	if b, _ := os.ReadFile(headers[0]); !strings.Contains(string(b), `"format"`) || !strings.Contains(string(b), `"files"`) {
		t.Errorf("the header lacks the agent's or the platform's keys:\n%s", b)
	}
	if o = train(t, "--env", "CartPole-v1", "--alg", "PPO", "--local-dir", local, "--restore", ckpts[0], "--stop", `{"training_iteration": 2}`); o.code != 0 {
		t.Errorf("restore: exit %d\n%s\n%s", o.code, o.stdout, o.stderr)
	}
	if o = train(t, "rollout", "--checkpoint", ckpts[0], "--episodes", "1"); o.code != 0 {
		t.Errorf("rollout: exit %d\n%s\n%s", o.code, o.stdout, o.stderr)
	}
}
