package config

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/pflag"
)

func resolve(t *testing.T, file string, args ...string) (Experiment, error) {
	t.Helper()
	fs := pflag.NewFlagSet("train", pflag.ContinueOnError)
	AddFlags(fs)
	if file != "" {
		path := filepath.Join(t.TempDir(), "exp.yaml")
		if err := os.WriteFile(path, []byte(file), 0o644); err != nil {
			t.Fatal(err)
		}
		args = append(args, "-f", path)
	}
	if err := fs.Parse(args); err != nil {
		t.Fatal(err)
	}
	return Resolve(fs)
}

const cartpole = `# PPO on CartPole
name: cartpole
env: CartPole-v1
run: PPO
stop:
  episode_reward_mean: 475
  timesteps_total: 500000
checkpoint_freq: 5
checkpoint_at_end: true
seed: 7
config:
  lr: 0.0003
  num_sgd_iter: 10
  model:
    fcnet_hiddens: [64, 64]
    fcnet_activation: tanh
`

func TestResolveFileAndFlags(t *testing.T) {
	exp, err := resolve(t, cartpole, "--seed", "9", "--config", `{"lr": 0.001, "model": {"fcnet_activation": "relu"}}`,
		"--stop", `{"training_iteration": 3}`)
	if err != nil {
		t.Fatal(err)
	}
	home, _ := os.UserHomeDir()
	want := Experiment{Name: "cartpole", Env: "CartPole-v1", Alg: "PPO", CheckpointFreq: 5, CheckpointAtEnd: true,
		Seed: 9, LocalDir: filepath.Join(home, "gray_results"),
		Stop: Stop{"episode_reward_mean": 475, "timesteps_total": 500000, "training_iteration": 3},
		Config: map[string]any{"lr": json.Number("0.001"), "num_sgd_iter": 10,
			"model": map[string]any{"fcnet_hiddens": []any{64, 64}, "fcnet_activation": "relu"}}}
	got, _ := json.Marshal(exp)
	w, _ := json.Marshal(want)
	if string(got) != string(w) {
		t.Errorf("Resolve =\n%s\nwant\n%s", got, w)
	}
}

func TestResolveFlagsOnlyAndRayForm(t *testing.T) {
	exp, err := resolve(t, "", "--env", "Pendulum", "--alg", "PPO", "--local-dir", "/tmp/r")
	if err != nil {
		t.Fatal(err)
	}
	if exp.Env != "Pendulum" || exp.Alg != "PPO" || exp.LocalDir != "/tmp/r" || exp.Name != DefaultName || exp.Config != nil {
		t.Errorf("flags only: %+v", exp)
	}
	exp, err = resolve(t, "my-exp:\n  env: CartPole-v0\n  run: PPO\n  local_dir: /tmp/x\n", "--name", "other")
	if err != nil {
		t.Fatal(err)
	}
	if exp.Env != "CartPole-v0" || exp.Alg != "PPO" || exp.Name != "other" || exp.LocalDir != "/tmp/x" {
		t.Errorf("Ray form with --name: %+v", exp)
	}
	t.Setenv("GRAY_LOCAL_DIR", "/tmp/from-env")
	if exp, _ = resolve(t, "", "--env", "CartPole"); exp.LocalDir != "/tmp/from-env" {
		t.Errorf("GRAY_LOCAL_DIR ignored: %s", exp.LocalDir)
	}
}

func TestBadInputSaysWhere(t *testing.T) {
	for _, c := range []struct {
		name, file string
		args       []string
		want       []string
	}{
		{"yaml syntax", "env: CartPole-v1\nconfig:\n  lr: [0.1\nstop: {}\n", nil,
			[]string{"exp.yaml:", "malformed YAML", "|"}},
		{"yaml tab indent", "env: CartPole-v1\nconfig:\n\tlr: 1\n", nil, []string{"exp.yaml:3", "malformed YAML"}},
		{"unknown key", "env: CartPole-v1\nlearning_rate: 0.1\n", nil,
			[]string{"exp.yaml:2:1", `unknown key "learning_rate"`, "known keys: name, env, alg", "2 | learning_rate: 0.1"}},
		{"typo suggestion", "env: CartPole-v1\ncheckpoint_frq: 2\n", nil, []string{`did you mean "checkpoint_freq"`}},
		{"wrong type int", "env: CartPole-v1\ncheckpoint_freq: often\n", nil,
			[]string{"exp.yaml:2:18", `checkpoint_freq must be an integer, got "often"`, "^"}},
		{"wrong type bool", "checkpoint_at_end: maybe\n", nil, []string{"exp.yaml:1:20", "must be a boolean"}},
		{"config not a map", "config: 3\n", nil, []string{"exp.yaml:1:9", "config must be a mapping"}},
		{"stop not a number", "stop:\n  episode_reward_mean: high\n", nil,
			[]string{"exp.yaml:2:24", `stop criterion "episode_reward_mean" must be a number`}},
		{"not a mapping", "- env: x\n", nil, []string{"exp.yaml:1:1", "must be a mapping"}},
		{"empty file", "", []string{"-f", "/dev/null"}, []string{"empty"}},
		{"alg and run disagree", "alg: PPO\nrun: DQN\n", nil, []string{"alg and run disagree"}},
		{"json syntax", "", []string{"--config", `{"lr": 0.1,}`},
			[]string{"--config: malformed JSON at byte 11", `{"lr": 0.1,}`, "           ^"}},
		{"json not object", "", []string{"--config", `[1, 2]`}, []string{"--config must be a JSON object", "array"}},
		{"json cut short", "", []string{"--stop", `{"timesteps_total": 5`}, []string{"--stop: malformed JSON", "cut short"}},
		{"json trailing", "", []string{"--stop", `{"a": 1} x`}, []string{"unexpected text after the object at byte"}},
		{"stop string", "", []string{"--stop", `{"a": "b"}`}, []string{`stop criterion "a" must be a number`}},
		{"negative freq", "", []string{"--checkpoint-freq", "-1"}, []string{"checkpoint_freq must be 0"}},
		{"missing file", "", []string{"-f", "/nonexistent/exp.yaml"}, []string{"/nonexistent/exp.yaml", "no such file"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := resolve(t, c.file, c.args...)
			if err == nil {
				t.Fatalf("no error, want one containing %q", c.want)
			}
			t.Logf("%v", err)
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error\n%v\nlacks %q", err, w)
				}
			}
		})
	}
}

func TestExtraKeys(t *testing.T) {
	exp, err := Parse([]byte("env: CartPole\nnum_samples: 4\n"), "sweep.yaml", "num_samples")
	if err != nil {
		t.Fatal(err)
	}
	if exp.Extra["num_samples"] != 4 {
		t.Errorf("Extra = %v", exp.Extra)
	}
}

func TestStop(t *testing.T) {
	s := Stop{"episode_reward_mean": 475, "timesteps_total": 500000, "info/learner/kl": 1}
	for _, c := range []struct {
		result map[string]any
		key    string
		met    bool
	}{
		{map[string]any{"episode_reward_mean": 474.9, "timesteps_total": int64(1000)}, "", false},
		{map[string]any{"episode_reward_mean": 475.0, "timesteps_total": int64(1000)}, "episode_reward_mean", true},
		{map[string]any{"episode_reward_mean": 20.0, "timesteps_total": json.Number("500000")}, "timesteps_total", true},
		{map[string]any{"info/learner/kl": 2.0}, "info/learner/kl", true},
	} {
		key, met := s.Met(c.result)
		if key != c.key || met != c.met {
			t.Errorf("Met(%v) = %q, %v; want %q, %v", c.result, key, met, c.key, c.met)
		}
	}
	if got := s.Missing(map[string]any{"episode_reward_mean": 1.0}); strings.Join(got, ",") != "info/learner/kl,timesteps_total" {
		t.Errorf("Missing = %v", got)
	}
}

func TestDeepMergeLeavesInputs(t *testing.T) {
	base := map[string]any{"model": map[string]any{"a": 1, "b": 2}}
	out := DeepMerge(base, map[string]any{"model": map[string]any{"b": 3}})
	if base["model"].(map[string]any)["b"] != 2 || out["model"].(map[string]any)["b"] != 3 || out["model"].(map[string]any)["a"] != 1 {
		t.Errorf("DeepMerge: base %v out %v", base, out)
	}
}
