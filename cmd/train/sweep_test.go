package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/gray-ml/gray/platform/runlog"
)

const sweepFile = `name: lr-sweep
env: Corridor-v0
alg: FakeAlg
stop: {training_iteration: 3}
checkpoint_at_end: true
metric: episode_reward_mean
mode: max
scheduler: {type: fifo}
config:
  lr: {grid_search: [0.1, 0.2, 0.3]}
  train_batch_size: 50
`

func TestSweepRunLsBest(t *testing.T) {
	local := t.TempDir()
	file := filepath.Join(t.TempDir(), "sweep.yaml")
	os.WriteFile(file, []byte(sweepFile), 0o644)
	o := train(t, "-f", file, "--local-dir", local)
	if o.code != 0 {
		t.Fatalf("sweep: exit %d\n%s\n%s", o.code, o.stdout, o.stderr)
	}
	exp := filepath.Join(local, "lr-sweep")
	if !strings.Contains(o.stdout, "3 trials in "+exp) {
		t.Errorf("stdout:\n%s", o.stdout)
	}
	// Each trial has a run folder in the platform's layout.
	params, _ := filepath.Glob(filepath.Join(exp, "*", "params.json"))
	if len(params) != 3 {
		t.Fatalf("params.json files: %v", params)
	}
	for _, p := range params {
		dir := filepath.Dir(p)
		results, err := runlog.ReadResults(dir)
		if err != nil || len(results) != 3 {
			t.Errorf("%s: %d results, %v", dir, len(results), err)
			continue
		}
		if flat := runlog.Flatten(results[2]); flat["info/learner/kl"] == nil || flat["time_total_s"] == nil {
			t.Errorf("%s: last result %v", dir, flat)
		}
		for _, f := range []string{"progress.csv", "config.json"} {
			if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
				t.Error(err)
			}
		}
		if ev, _ := filepath.Glob(filepath.Join(dir, "events.out.tfevents.*")); len(ev) == 0 {
			t.Errorf("%s: no event file", dir)
		}
	}

	o = train(t, "ls", "lr-sweep", "--local-dir", local, "--sort=-episode_reward_mean")
	if o.code != 0 {
		t.Fatalf("ls: %s", o.stderr)
	}
	if !regexp.MustCompile(`trial +status +iter +lr +episode_reward_mean`).MatchString(o.stdout) ||
		strings.Count(o.stdout, "TERMINATED") != 3 || !strings.Contains(o.stdout, "3 trials") {
		t.Errorf("ls:\n%s", o.stdout)
	}
	o = train(t, "best", exp, "--metric", "info/learner/cur_lr")
	if o.code != 0 || !strings.Contains(o.stdout, "info/learner/cur_lr = 0.3") || !strings.Contains(o.stdout, `"lr": 0.3`) {
		t.Errorf("best: %s%s", o.stdout, o.stderr)
	}

	// The checkpoint best prints is a platform checkpoint as it is:
	// rollout and --restore accept it.
	m := regexp.MustCompile(`(?m)^checkpoint: (.+)$`).FindStringSubmatch(o.stdout)
	if m == nil {
		t.Fatalf("best prints no checkpoint:\n%s", o.stdout)
	}
	if o = train(t, "rollout", "--checkpoint", m[1], "--episodes", "1"); o.code != 0 || !strings.Contains(o.stdout, "return 0.70") {
		t.Errorf("rollout of the checkpoint best printed: %s%s", o.stdout, o.stderr)
	}
	if o = train(t, "--env", "Corridor-v0", "--alg", "FakeAlg", "--local-dir", t.TempDir(), "--restore", m[1],
		"--stop", `{"training_iteration": 4}`); o.code != 0 || !strings.Contains(o.stdout, "(iteration 3)") {
		t.Errorf("--restore of the checkpoint best printed: %s%s", o.stdout, o.stderr)
	}

	// The same experiment again is refused; --resume continues it (here:
	// nothing is left to run).
	if o = train(t, "-f", file, "--local-dir", local); o.code != exitError || !strings.Contains(o.stderr, "already holds an experiment") {
		t.Errorf("rerun: %d %s", o.code, o.stderr)
	}
	if o = train(t, "-f", file, "--local-dir", local, "--resume"); o.code != 0 {
		t.Errorf("resume: %d %s", o.code, o.stderr)
	}
}

func TestSweepBadInput(t *testing.T) {
	for _, c := range []struct {
		name, extra string
		args        []string
		want        string
	}{
		{"unknown scheduler", "scheduler: {type: bogus}\n", nil, `scheduler type "bogus" unknown`},
		{"bad scheduler option", "scheduler: {type: asha, max_tt: 10}\n", nil, `unknown field "max_tt"`},
		{"bad num_samples", "num_samples: many\n", nil, "num_samples"},
		{"bad resources", "resources_per_trial: {cpu: lots}\n", nil, "resources_per_trial"},
		{"unknown search_alg", "search_alg: {type: bayes}\n", nil, `search_alg type "bayes" unknown`},
		{"malformed space", "", []string{"--config", `{"lr2": {"uniform": [1]}}`}, "config.lr2"},
		{"misspelled space type", "", []string{"--config", `{"train_batch_size": {"logunifrom": [10, 100]}}`}, `unknown search space type "logunifrom" (did you mean "loguniform"?)`},
		{"unknown fixed key", "", []string{"--config", `{"learning_rate": 0.1}`}, `unknown key "learning_rate"`},
	} {
		t.Run(c.name, func(t *testing.T) {
			file := filepath.Join(t.TempDir(), "sweep.yaml")
			os.WriteFile(file, []byte(sweepFile+c.extra), 0o644)
			o := train(t, append([]string{"-f", file, "--local-dir", t.TempDir()}, c.args...)...)
			t.Log(o.stderr)
			if o.code != exitError || !strings.Contains(o.stderr, c.want) {
				t.Errorf("exit %d, stderr %s; want %q", o.code, o.stderr, c.want)
			}
		})
	}
	o := train(t, "--env", "Corridor-v0", "--alg", "FakeAlg", "--resume", "--local-dir", t.TempDir())
	if o.code != exitError || !strings.Contains(o.stderr, "--resume continues a sweep") {
		t.Errorf("--resume on a single run: %s", o.stderr)
	}
	o = train(t, "ls", "nonexistent", "--local-dir", t.TempDir())
	if o.code != exitError || !strings.Contains(o.stderr, `no experiment "nonexistent"`) {
		t.Errorf("ls on a non-experiment: %d %s", o.code, o.stdout)
	}
	t.Log(o.stderr)
}

// TestSweepRetryRestoresCheckpoint: a failing trial is retried from its
// last checkpoint (through the platform's checkpoint metadata).
func TestSweepRetryRestoresCheckpoint(t *testing.T) {
	local := t.TempDir()
	file := filepath.Join(t.TempDir(), "sweep.yaml")
	os.WriteFile(file, []byte(`name: retry
env: Corridor-v0
alg: FakeAlg
stop: {training_iteration: 4}
checkpoint_freq: 1
max_failures: 1
config: {err_at: 3}
`), 0o644)
	o := train(t, "-f", file, "--local-dir", local)
	if o.code != exitError || !strings.Contains(o.stderr, "1 of 1 trials failed") || !strings.Contains(o.stderr, "(2 failures)") ||
		!strings.Contains(o.stderr, "total_loss is NaN") {
		t.Errorf("exit %d\n%s\n%s", o.code, o.stdout, o.stderr)
	}
	// Both attempts failed at iteration 3; the retry restored checkpoint 2
	// rather than starting over, so only iterations 1 and 2 were logged.
	params, _ := filepath.Glob(filepath.Join(local, "retry", "*", "params.json"))
	if len(params) != 1 {
		t.Fatalf("trials: %v", params)
	}
	if results, _ := runlog.ReadResults(filepath.Dir(params[0])); len(results) != 2 {
		t.Errorf("%d results logged, want 2 (the retry must resume from the checkpoint)", len(results))
	}
}

// Sweep trials hold 1 CPU + num_workers unless resources_per_trial is set:
// one that cannot fit on the node is refused with a clear error, and with
// resources_per_trial it runs.
func TestSweepTrialResourcesFollowNumWorkers(t *testing.T) {
	file := filepath.Join(t.TempDir(), "sweep.yaml")
	os.WriteFile(file, []byte(strings.Replace(sweepFile, "train_batch_size: 50", "train_batch_size: 50\n  num_workers: 3", 1)), 0o644)
	o := train(t, "-f", file, "--local-dir", t.TempDir(), "--num-cpus", "2")
	if o.code == 0 || !strings.Contains(o.stderr, "needs 4CPU but the node has 2CPU; lower num_workers or num_learner_threads, or set resources_per_trial") {
		t.Fatalf("num_workers 3 on 2 CPUs: exit %d\n%s\n%s", o.code, o.stdout, o.stderr)
	}
	os.WriteFile(file, []byte(strings.Replace(sweepFile, "train_batch_size: 50", "train_batch_size: 50\n  num_workers: 3\nresources_per_trial: {cpu: 1}", 1)), 0o644)
	o = train(t, "-f", file, "--local-dir", t.TempDir(), "--num-cpus", "2")
	if o.code != 0 {
		t.Fatalf("num_workers 3 with resources_per_trial {cpu: 1}: exit %d\n%s\n%s", o.code, o.stdout, o.stderr)
	}
}

// A sweep that spends its time_budget_s says so and how to continue;
// --resume then finishes it.
func TestSweepTimeBudget(t *testing.T) {
	local := t.TempDir()
	file := filepath.Join(t.TempDir(), "sweep.yaml")
	// No stop criterion: without the budget the first trials would run on.
	src := strings.Replace(sweepFile, "stop: {training_iteration: 3}", "time_budget_s: 0.5\nnum_cpus: 1", 1)
	os.WriteFile(file, []byte(src), 0o644)
	src = strings.Replace(src, "checkpoint_at_end: true", "checkpoint_freq: 1", 1)
	os.WriteFile(file, []byte(src), 0o644)
	o := train(t, "-f", file, "--local-dir", local)
	// The hint is a command that works as it is: it names the local dir.
	if o.code != 0 || !strings.Contains(o.stdout, "time budget spent before the sweep finished") ||
		!strings.Contains(o.stdout, "train -f "+file+" --local-dir "+local+" --resume") {
		t.Fatalf("sweep with a time budget: exit %d\n%s\n%s", o.code, o.stdout, o.stderr)
	}
	// Moved elsewhere, and resumed with a stop criterion and no budget, it
	// finishes every trial from its checkpoints.
	moved := filepath.Join(t.TempDir(), "moved")
	if err := os.Rename(local, moved); err != nil {
		t.Fatal(err)
	}
	src = strings.Replace(sweepFile, "stop: {training_iteration: 3}", "stop: {training_iteration: 3}\nnum_cpus: 1", 1)
	os.WriteFile(file, []byte(strings.Replace(src, "checkpoint_at_end: true", "checkpoint_freq: 1", 1)), 0o644)
	o = train(t, "-f", file, "--local-dir", moved, "--resume")
	if o.code != 0 || !strings.Contains(o.stdout, "3 trials in") || strings.Contains(o.stdout, "time budget") {
		t.Fatalf("resumed sweep: exit %d\n%s\n%s", o.code, o.stdout, o.stderr)
	}
}

// TestSweepKeepCheckpointsNumFreesSpace: keep_checkpoints_num removes the
// agent's checkpoints, not only Tune's record of them.
func TestSweepKeepCheckpointsNumFreesSpace(t *testing.T) {
	local := t.TempDir()
	file := filepath.Join(t.TempDir(), "sweep.yaml")
	os.WriteFile(file, []byte("name: keep\nenv: Corridor-v0\nalg: FakeAlg\nstop: {training_iteration: 4}\ncheckpoint_freq: 1\nkeep_checkpoints_num: 1\n"), 0o644)
	if o := train(t, "-f", file, "--local-dir", local); o.code != 0 {
		t.Fatalf("exit %d\n%s\n%s", o.code, o.stdout, o.stderr)
	}
	var states []string
	filepath.WalkDir(filepath.Join(local, "keep"), func(p string, d os.DirEntry, err error) error {
		if err == nil && d.Name() == "state.json" {
			states = append(states, p)
		}
		return nil
	})
	if len(states) != 1 || !strings.Contains(states[0], "checkpoint_4") {
		t.Errorf("agent checkpoints left: %v, want only the newest", states)
	}
}
