package tune

import (
	"context"

	"github.com/gray-ml/gray/rllib"
	_ "github.com/gray-ml/gray/rllib/ppo"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestShippedConfigsParse(t *testing.T) {
	for _, f := range []string{"cartpole-ppo-sweep.yaml", "cartpole-ppo-pbt.yaml"} {
		data, err := os.ReadFile(filepath.Join("..", "configs", f))
		if err != nil {
			t.Fatal(err)
		}
		specs, err := parseExperimentFile(data)
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		if len(specs) != 1 || specs[0].Run != "PPO" {
			t.Fatalf("%s: %+v", f, specs)
		}
		exp, err := specs[0].Build(BuildOptions{ResultsDir: t.TempDir()})
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		if exp.Scheduler == nil || exp.Searcher == nil {
			t.Fatalf("%s: no scheduler/searcher", f)
		}
		// Every sampled config is one PPO accepts.
		alg, err := rllib.Lookup(specs[0].Run)
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i < 3; i++ {
			cfg, err := exp.Searcher.Suggest(trialIDString(i))
			if err != nil {
				t.Fatal(err)
			}
			agent, err := alg.Make(context.Background(), rllib.Options{Env: specs[0].Env, LogDir: t.TempDir()}, cfg)
			if err != nil {
				t.Fatalf("%s: sampled config %s: %v", f, show(cfg), err)
			}
			agent.Stop()
		}
	}
}

func TestExperimentFileRunsWithGoTrainable(t *testing.T) {
	src := `
sweep:
  num_samples: 2
  metric: score
  stop: {training_iteration: 4}
  resources_per_trial: {cpu: 1}
  scheduler: {type: median_stopping, grace_period: 2}
  search_alg: {type: tpe, n_startup: 2, max_concurrent: 2}
  config:
    quality: {uniform: [0, 10]}
    nested: {list: [1, {choice: [a, b]}]}
`
	specs, err := parseExperimentFile([]byte(src))
	if err != nil {
		t.Fatal(err)
	}
	exp, err := specs[0].Build(BuildOptions{ResultsDir: t.TempDir(), Trainable: FuncTrainable(curve), NodeResources: Resources{CPU: 2}})
	if err != nil {
		t.Fatal(err)
	}
	a, err := Run(context.Background(), exp)
	if err != nil {
		t.Fatal(err)
	}
	if len(a.Trials) != 2 {
		t.Fatalf("%d trials, want num_samples=2", len(a.Trials))
	}
	v := a.Trials[0].Config["nested"].(map[string]any)["list"].([]any)[1]
	if v != "a" && v != "b" {
		t.Fatalf("nested choice resolved to %v", v)
	}
}

func TestExperimentFileErrors(t *testing.T) {
	cases := map[string]string{
		"x: {run: PPO, env: E, stopp: {a: 1}}":                             `unknown field "stopp"`,
		"x: {run: PPO, env: E, scheduler: {type: asha, max_tt: 3}}":        `asha options: json: unknown field "max_tt"`,
		"x: {run: PPO, env: E, scheduler: {type: asha, grace_period: -1}}": "grace_period must be in",
		"x: {run: PPO, env: E, scheduler: {type: magic}}":                  `scheduler type "magic" unknown`,
		"x: {run: PPO, env: E, search_alg: {type: bayes}}":                 `search_alg type "bayes" unknown`,
		"x: {run: PPO, env: E, config: {lr: {uniform: [1, 0]}}}":           "config.lr: uniform needs low < high",
		"x: {run: PPO, env: E, time_budget_s: -5}":                         "time_budget_s is -5",
		"x: {run: PPO, env: E, time_budget_s: an hour}":                    "time_budget_s",
		"x: {env: E}": "needs run",
		"x: [1, 2]":   `experiment "x" must be a map`,
		"x: {run: PPO, env: E, scheduler: {type: pbt, quantile_fraction: 0.9, hyperparam_mutations: {lr: [1]}}}": "quantile_fraction must be in",
	}
	for src, want := range cases {
		specs, err := parseExperimentFile([]byte(src))
		if err == nil {
			_, err = specs[0].Build(BuildOptions{ResultsDir: t.TempDir()})
		}
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: got %v, want %q", src, err, want)
		}
	}
}

func TestIsSweepAndSpecFromMap(t *testing.T) {
	s, err := SpecFromMap("x", map[string]any{"run": "PPO", "env": "E", "config": map[string]any{"lr": 0.1}})
	if err != nil || s.IsSweep() {
		t.Fatalf("plain run: %v %v", s, err)
	}
	s, _ = SpecFromMap("x", map[string]any{"run": "PPO", "env": "E", "config": map[string]any{"m": map[string]any{"lr": map[string]any{"uniform": []any{0, 1}}}}})
	if !s.IsSweep() {
		t.Fatal("nested search space not seen as a sweep")
	}
	if _, err := SpecFromMap("x", map[string]any{"run": "PPO", "bogus": 1}); err == nil || !strings.Contains(err.Error(), `unknown field "bogus"`) {
		t.Fatalf("unknown key: %v", err)
	}
}

func TestPlatformStyleSingleExperimentFile(t *testing.T) {
	src := "name: one\nalg: PPO\nenv: CartPole-v1\nnum_cpus: 3\nconfig:\n  lr: {uniform: [0.001, 0.01]}\n"
	specs, err := parseExperimentFile([]byte(src))
	if err != nil {
		t.Fatal(err)
	}
	if len(specs) != 1 || specs[0].Name != "one" || specs[0].Run != "PPO" || !specs[0].IsSweep() {
		t.Fatalf("%+v", specs[0])
	}
	exp, err := specs[0].Build(BuildOptions{ResultsDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if exp.NodeResources.CPU != 3 || filepath.Base(exp.Dir) != "one" {
		t.Fatalf("node %v dir %s", exp.NodeResources, exp.Dir)
	}
}
