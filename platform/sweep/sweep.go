// Package sweep runs hyperparameter sweeps described in experiment files:
// `train -f sweep.yaml` where the config holds search spaces (grid_search,
// choice, uniform, ...) or the file sets a scheduler or num_samples. Tune
// (package tune) runs the trials; this package turns the file's keys into a
// tune.Experiment whose trials write the platform's run-folder layout.
package sweep

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"reflect"
	"sort"
	"strings"

	"github.com/gray-ml/gray/platform/config"
	"github.com/gray-ml/gray/platform/runner"
	"github.com/gray-ml/gray/platform/tunelog"
	"github.com/gray-ml/gray/rllib"
	"github.com/gray-ml/gray/tune"
)

// Keys are the top-level keys a sweep file may hold besides config.Keys.
var Keys = []string{"num_samples", "scheduler", "search_alg", "metric", "mode", "resources_per_trial",
	"max_concurrent", "max_failures", "keep_checkpoints_num", "checkpoint_score_attr"}

// IsSweep reports whether exp is a sweep: it sets a sweep key or its
// config holds a search space.
func IsSweep(exp config.Experiment) (bool, error) {
	for _, k := range Keys {
		if _, ok := exp.Extra[k]; ok {
			return true, nil
		}
	}
	space, err := tune.ParseSpace(exp.Config)
	if err != nil {
		return false, err
	}
	return hasDomain(space), nil
}

func hasDomain(v any) bool {
	switch x := v.(type) {
	case tune.Domain:
		return true
	case map[string]any:
		for _, e := range x {
			if hasDomain(e) {
				return true
			}
		}
	case []any:
		for _, e := range x {
			if hasDomain(e) {
				return true
			}
		}
	}
	return false
}

// Build turns exp into a tune.Experiment; out receives the status table.
func Build(exp config.Experiment, out io.Writer) (tune.Experiment, error) {
	if exp.Alg == "" {
		return tune.Experiment{}, fmt.Errorf("no algorithm given: set alg (known algorithms: %s)", strings.Join(rllib.AlgorithmNames(), ", "))
	}
	if _, err := rllib.Lookup(exp.Alg); err != nil {
		return tune.Experiment{}, err
	}
	if exp.Env == "" {
		return tune.Experiment{}, fmt.Errorf("no environment given: set env")
	}
	if err := runner.CheckEnv(exp.Env, exp.EnvConfig); err != nil {
		return tune.Experiment{}, err
	}
	space, err := tune.ParseSpace(exp.Config)
	if err != nil {
		return tune.Experiment{}, err
	}
	te := tune.Experiment{
		Name:            exp.Name,
		Dir:             filepath.Join(exp.LocalDir, exp.Name),
		Trainable:       agentFactory(exp.Alg, exp.Env, exp.EnvConfig, exp.Seed),
		Space:           space,
		Stop:            exp.Stop,
		CheckpointFreq:  exp.CheckpointFreq,
		CheckpointAtEnd: exp.CheckpointAtEnd,
		Seed:            exp.Seed,
		Logger:          tunelog.Factory(tunelog.Options{}),
		Reporter:        tune.NewTableReporter(out),
	}
	if exp.NumCPUs > 0 {
		te.NodeResources.CPU = float64(exp.NumCPUs)
	}
	x := exp.Extra
	if err := decode(x, "num_samples", &te.NumSamples); err != nil {
		return te, err
	}
	if err := decode(x, "metric", &te.Metric); err != nil {
		return te, err
	}
	var mode string
	if err := decode(x, "mode", &mode); err != nil {
		return te, err
	}
	te.Mode = tune.Mode(mode)
	if err := decode(x, "resources_per_trial", &te.Resources); err != nil {
		return te, err
	}
	if err := decode(x, "max_concurrent", &te.MaxConcurrent); err != nil {
		return te, err
	}
	if err := decode(x, "max_failures", &te.MaxFailures); err != nil {
		return te, err
	}
	if err := decode(x, "keep_checkpoints_num", &te.KeepCheckpointsNum); err != nil {
		return te, err
	}
	if err := decode(x, "checkpoint_score_attr", &te.CheckpointScoreAttr); err != nil {
		return te, err
	}
	if te.Scheduler, err = scheduler(x["scheduler"]); err != nil {
		return te, err
	}
	if te.Searcher, err = searcher(x["search_alg"], space); err != nil {
		return te, err
	}
	return te, nil
}

// Run runs (or, with resume, continues) the sweep exp describes. start,
// when set, starts the runtime with worker output in the experiment's
// logs folder.
func Run(ctx context.Context, exp config.Experiment, resume bool, out io.Writer, opts runner.Options) (*tune.Analysis, error) {
	te, err := Build(exp, out)
	if err != nil {
		return nil, err
	}
	if opts.StartRuntime != nil {
		stop, err := opts.StartRuntime(ctx, filepath.Join(te.Dir, runner.LogsDir))
		if err != nil {
			return nil, fmt.Errorf("starting the runtime: %w", err)
		}
		defer stop()
	}
	if resume {
		return tune.Resume(ctx, te)
	}
	return tune.Run(ctx, te)
}

// decode fills dst from the sweep key, when present, naming the key and
// the expected form when it does not fit. Unknown fields are errors.
func decode(x map[string]any, key string, dst any) error {
	v, ok := x[key]
	if !ok {
		return nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("%s: %w", key, err)
	}
	d := json.NewDecoder(bytes.NewReader(b))
	d.DisallowUnknownFields()
	if err := d.Decode(dst); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			field := key
			if te.Field != "" {
				field += "." + te.Field
			}
			return fmt.Errorf("%s must be %s, got %s", field, kind(te.Type), b)
		}
		return fmt.Errorf("%s: %s is not valid here: %v", key, b, err)
	}
	return nil
}

func kind(t reflect.Type) string {
	switch t.Kind() {
	case reflect.Int, reflect.Int64:
		return "an integer"
	case reflect.Float64:
		return "a number"
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "a boolean"
	case reflect.Struct, reflect.Map:
		return "a mapping"
	}
	return t.String()
}

// schedulers maps the scheduler type names a file may use to constructors.
var schedulers = map[string]func(opts map[string]any) (tune.Scheduler, error){
	"fifo": func(o map[string]any) (tune.Scheduler, error) {
		if len(o) > 0 {
			return nil, fmt.Errorf("scheduler fifo takes no options, got %s", strings.Join(sortedKeys(o), ", "))
		}
		return tune.FIFO{}, nil
	},
	"asha": func(o map[string]any) (tune.Scheduler, error) {
		var c tune.ASHAConfig
		if err := decode(map[string]any{"scheduler": o}, "scheduler", &c); err != nil {
			return nil, err
		}
		return tune.NewASHA(c)
	},
	"hyperband": func(o map[string]any) (tune.Scheduler, error) {
		var c tune.HyperBandConfig
		if err := decode(map[string]any{"scheduler": o}, "scheduler", &c); err != nil {
			return nil, err
		}
		return tune.NewHyperBand(c)
	},
	"median_stopping": func(o map[string]any) (tune.Scheduler, error) {
		var c tune.MedianStoppingConfig
		if err := decode(map[string]any{"scheduler": o}, "scheduler", &c); err != nil {
			return nil, err
		}
		return tune.NewMedianStopping(c)
	},
	"pbt": func(o map[string]any) (tune.Scheduler, error) {
		mut, _ := o["hyperparam_mutations"].(map[string]any)
		rest := make(map[string]any, len(o))
		for k, v := range o {
			if k != "hyperparam_mutations" {
				rest[k] = v
			}
		}
		var c tune.PBTConfig
		if err := decode(map[string]any{"scheduler": rest}, "scheduler", &c); err != nil {
			return nil, err
		}
		if mut != nil {
			m, err := tune.ParseSpace(mut)
			if err != nil {
				return nil, fmt.Errorf("scheduler.hyperparam_mutations: %w", err)
			}
			c.HyperparamMutations = m
		}
		return tune.NewPBT(c)
	},
}

// scheduler builds the scheduler a file describes: a type name, or a
// mapping with type and the scheduler's options.
func scheduler(v any) (tune.Scheduler, error) {
	if v == nil {
		return nil, nil
	}
	typ, opts, err := typed("scheduler", v)
	if err != nil {
		return nil, err
	}
	mk, ok := schedulers[typ]
	if !ok {
		return nil, fmt.Errorf("scheduler: unknown type %q; known: %s", typ, strings.Join(sortedKeys(schedulers), ", "))
	}
	return mk(opts)
}

// searcher builds the search algorithm: random/grid (the default variant
// generator) or tpe.
func searcher(v any, space map[string]any) (tune.Searcher, error) {
	if v == nil {
		return nil, nil
	}
	typ, opts, err := typed("search_alg", v)
	if err != nil {
		return nil, err
	}
	switch typ {
	case "random", "grid", "basic":
		if len(opts) > 0 {
			return nil, fmt.Errorf("search_alg %s takes no options (use num_samples), got %s", typ, strings.Join(sortedKeys(opts), ", "))
		}
		return nil, nil
	case "tpe":
		var c tune.TPEConfig
		if err := decode(map[string]any{"search_alg": opts}, "search_alg", &c); err != nil {
			return nil, err
		}
		return tune.NewTPE(space, c)
	}
	return nil, fmt.Errorf("search_alg: unknown type %q; known: basic, grid, random, tpe", typ)
}

// typed reads "name" or {type: name, options...}.
func typed(key string, v any) (string, map[string]any, error) {
	switch x := v.(type) {
	case string:
		return strings.ToLower(x), nil, nil
	case map[string]any:
		t, _ := x["type"].(string)
		if t == "" {
			return "", nil, fmt.Errorf("%s: give its type, e.g. %s: {type: ...}", key, key)
		}
		opts := make(map[string]any, len(x))
		for k, e := range x {
			if k != "type" {
				opts[k] = e
			}
		}
		return strings.ToLower(t), opts, nil
	}
	return "", nil, fmt.Errorf("%s must be a type name or a mapping with type and options, got %v", key, v)
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
