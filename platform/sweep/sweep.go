// Package sweep runs hyperparameter sweeps described in experiment files:
// `train -f sweep.yaml` where the config holds search spaces (grid_search,
// choice, uniform, ...) or the file sets a scheduler or num_samples. Tune
// (package tune) runs the trials; this package turns the file's keys into a
// tune.Experiment whose trials write the platform's run-folder layout.
package sweep

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/gray-ml/gray"
	"github.com/gray-ml/gray/envs"
	"github.com/gray-ml/gray/platform/config"
	"github.com/gray-ml/gray/platform/runner"
	"github.com/gray-ml/gray/platform/tunelog"
	"github.com/gray-ml/gray/rllib"
	"github.com/gray-ml/gray/tune"
)

// Keys are the top-level keys a sweep file may hold besides config.Keys
// (those of tune.ExperimentSpec).
var Keys = []string{"num_samples", "scheduler", "search_alg", "metric", "mode", "resources_per_trial",
	"max_concurrent", "max_failures", "keep_checkpoints_num", "checkpoint_score_attr", "time_budget_s",
	"stop_experiment"}

// Spec turns exp into Tune's experiment spec, with Tune's checks of the
// sweep keys.
func Spec(exp config.Experiment) (*tune.ExperimentSpec, error) {
	m := map[string]any{
		"name": exp.Name, "run": exp.Alg, "env": exp.Env, "checkpoint_freq": exp.CheckpointFreq,
		"checkpoint_at_end": exp.CheckpointAtEnd, "local_dir": exp.LocalDir, "seed": exp.Seed, "num_cpus": exp.NumCPUs,
	}
	if exp.Config != nil {
		m["config"] = exp.Config
	}
	if exp.EnvConfig != nil {
		m["env_config"] = exp.EnvConfig
	}
	if exp.Stop != nil {
		m["stop"] = map[string]float64(exp.Stop)
	}
	for k, v := range exp.Extra {
		m[k] = v
	}
	return tune.SpecFromMap(exp.Name, m)
}

// IsSweep reports whether exp is a sweep: its config holds a search space,
// or it sets a sweep key (a key such as max_failures means nothing to a
// single run, so it is not silently dropped).
func IsSweep(exp config.Experiment) (bool, error) {
	for _, k := range Keys {
		if _, ok := exp.Extra[k]; ok {
			return true, nil
		}
	}
	spec, err := Spec(exp)
	if err != nil {
		return false, err
	}
	return spec.IsSweep(), nil
}

// Build turns exp into a tune.Experiment whose trials train exp.Alg on
// exp.Env as `train` does and write the platform's run-folder layout; out
// receives the status table.
func Build(exp config.Experiment, out io.Writer) (tune.Experiment, error) {
	te, _, err := build(exp, out)
	return te, err
}

// build is Build that also returns the config of the keys every trial
// shares, decoded (the rest at their defaults).
func build(exp config.Experiment, out io.Writer) (tune.Experiment, rllib.Config, error) {
	if exp.Alg == "" {
		return tune.Experiment{}, nil, fmt.Errorf("no algorithm given: set alg (known algorithms: %s)", strings.Join(rllib.AlgorithmNames(), ", "))
	}
	alg, err := rllib.Lookup(exp.Alg)
	if err != nil {
		return tune.Experiment{}, nil, err
	}
	if exp.Env == "" {
		return tune.Experiment{}, nil, fmt.Errorf("no environment given: set env")
	}
	if err := runner.CheckEnv(exp.Env, exp.EnvConfig); err != nil {
		return tune.Experiment{}, nil, err
	}
	exp.Env = envs.Canonical(exp.Env)
	spec, err := Spec(exp)
	if err != nil {
		return tune.Experiment{}, nil, err
	}
	// Keys every trial shares are checked now: a typo would otherwise fail
	// each trial, max_failures times over.
	space, err := tune.ParseSpace(exp.Config)
	if err != nil {
		return tune.Experiment{}, nil, err
	}
	shared, err := alg.CheckKeys(fixedKeys(space))
	if err != nil {
		return tune.Experiment{}, nil, err
	}
	te, err := spec.Build(tune.BuildOptions{
		ResultsDir: exp.LocalDir,
		Trainable:  tune.Registered(trialTrainable, trialArgs(exp)),
		Logger:     tunelog.Factory(tunelog.Options{}),
		Reporter:   tune.NewTableReporter(out),
	})
	return te, shared, err
}

// trialTrainable is the registered trainable of a sweep's trials: the agent
// as `train` runs it. Registered, so that on a cluster (train --address)
// trials run in gray actors on any node, each made in its worker process
// (this same program) from the arguments trialArgs gives.
const trialTrainable = "sweep.agent"

func init() {
	tune.RegisterTrainable(trialTrainable, func(args map[string]any) (tune.Trainable, error) {
		alg, _ := args["alg"].(string)
		env, _ := args["env"].(string)
		envCfg, _ := args["env_config"].(map[string]any)
		seedText, _ := args["seed"].(string)
		seed, err := strconv.ParseInt(seedText, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("sweep: trial seed %q: %w", seedText, err)
		}
		return agentTrainable(alg, env, envCfg, seed)(), nil
	})
}

// trialArgs are what a trial's worker process needs to make its trainable
// (JSON: the seed as text, so that all 64 bits survive).
func trialArgs(exp config.Experiment) map[string]any {
	return map[string]any{"alg": exp.Alg, "env": exp.Env, "env_config": exp.EnvConfig, "seed": strconv.FormatInt(exp.Seed, 10)}
}

func agentTrainable(alg, env string, envConfig map[string]any, seed int64) tune.TrainableFactory {
	return tune.AgentTrainableWith(alg, env, envConfig, seed, tune.AgentOptions{
		Result:     trialResult,
		ConfigKeys: runner.ConfigMap,
	})
}

// Run runs (or, with resume, continues) the sweep exp describes.
// opts.StartRuntime, when set, starts the runtime with worker output in
// the experiment folder's logs/.
func Run(ctx context.Context, exp config.Experiment, resume bool, out io.Writer, opts runner.Options) (*tune.Analysis, error) {
	te, shared, err := build(exp, out)
	if err != nil {
		return nil, err
	}
	if opts.StartRuntime != nil {
		logs := filepath.Join(te.Dir, runner.LogsDir)
		if err := os.MkdirAll(logs, 0o755); err != nil {
			return nil, fmt.Errorf("creating %s: %w (choose a writable local dir)", logs, err)
		}
		stop, err := opts.StartRuntime(ctx, logs, shared)
		if err != nil {
			return nil, fmt.Errorf("starting the runtime: %w", err)
		}
		defer stop()
		// On a cluster Tune follows what its nodes offer, and places each
		// trial in a gray actor on any node with room.
		if te.NodeResources == (tune.Resources{}) && !gray.OnCluster() {
			te.NodeResources = runtimeResources()
		}
	}
	if resume {
		return tune.Resume(ctx, te)
	}
	return tune.Run(ctx, te)
}

// runtimeResources is what the runtime has in all for trials to share;
// zero (Tune's default: this machine's CPUs) when the runtime does not
// say.
func runtimeResources() tune.Resources {
	res := gray.ClusterResources()
	if res == nil || res["CPU"] <= 0 {
		return tune.Resources{}
	}
	return tune.Resources{CPU: res["CPU"], GPU: res["GPU"]}
}

// fixedKeys is space without its search spaces (tune.Domain values), in
// nested objects too: the keys every trial gets as they are.
func fixedKeys(space map[string]any) map[string]any {
	out := make(map[string]any, len(space))
	for k, v := range space {
		switch x := v.(type) {
		case tune.Domain:
		case map[string]any:
			out[k] = fixedKeys(x)
		default:
			if !hasDomain(v) {
				out[k] = v
			}
		}
	}
	return out
}

// hasDomain reports whether v holds a search space at any depth.
func hasDomain(v any) bool {
	switch x := v.(type) {
	case tune.Domain:
		return true
	case []any:
		for _, e := range x {
			if hasDomain(e) {
				return true
			}
		}
	case map[string]any:
		for _, e := range x {
			if hasDomain(e) {
				return true
			}
		}
	}
	return false
}

// trialResult lays a trial's result out as `train` logs a run's
// (runner.ResultMap: info/learner/...), and ends the trial when training
// diverged (runner.Divergence).
func trialResult(r rllib.Result, config map[string]any) (map[string]any, error) {
	if err := runner.Divergence(r.Learner, config); err != nil {
		return nil, fmt.Errorf("iteration %d: %w", r.TrainingIteration, err)
	}
	return runner.ResultMap(r), nil
}
