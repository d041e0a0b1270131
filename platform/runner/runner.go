// Package runner runs experiments: it resolves the algorithm and
// environment, writes the run folder, trains an agent iteration by
// iteration until a stop criterion, an error or an interrupt, checkpoints
// it, and evaluates saved checkpoints. cmd/train is its command line.
package runner

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	goruntime "runtime"
	"runtime/debug"
	"strings"
	"time"

	"github.com/gray-ml/gray"
	"github.com/gray-ml/gray/envs"
	"github.com/gray-ml/gray/platform/checkpoint"
	"github.com/gray-ml/gray/platform/config"
	"github.com/gray-ml/gray/platform/progress"
	"github.com/gray-ml/gray/platform/runlog"
	"github.com/gray-ml/gray/rllib"
)

// SaveTimeout bounds the final checkpoint after an interrupt, whose context
// is already cancelled.
const SaveTimeout = 2 * time.Minute

// Summary is how a run ended.
type Summary struct {
	// RunDir is the run folder.
	RunDir string
	// Iterations is the number of results logged.
	Iterations int
	// Last is the last result as logged (nested), nil when there was none.
	Last map[string]any
	// Checkpoint is the last checkpoint written ("" when none).
	Checkpoint string
	// StoppedBy says why the run ended: "episode_reward_mean >= 475",
	// "interrupted", or "error".
	StoppedBy string
	// Interrupted is true when the context was cancelled (Ctrl-C).
	Interrupted bool
}

// Resolved is an experiment checked against the registries: the algorithm
// found, the configuration it will run with, and the environment config.
type Resolved struct {
	Alg rllib.Algorithm
	// Env is the environment's registered name (the user's may differ in
	// case, or be a bare family name).
	Env string
	// Config is the algorithm's config: its defaults with the user's keys
	// decoded over them and validated, once, here; the agent takes it as
	// it is.
	Config    rllib.Config
	EnvConfig map[string]any
}

// Resolve checks exp's algorithm, environment and configuration without
// creating anything on disk: unknown names list the known ones, an unknown
// or wrong-typed config key is named by rllib.Decode.
func Resolve(exp config.Experiment) (Resolved, error) {
	if exp.Alg == "" {
		return Resolved{}, fmt.Errorf("no algorithm given: use --alg NAME (known algorithms: %s)", strings.Join(rllib.AlgorithmNames(), ", "))
	}
	alg, err := rllib.Lookup(exp.Alg)
	if err != nil {
		return Resolved{}, err
	}
	r := Resolved{Alg: alg, EnvConfig: exp.EnvConfig}
	r.Config, err = alg.Decode(exp.Config)
	if err != nil && exp.Config["env_config"] != nil {
		// Ray puts env_config inside config; when the algorithm does not
		// know the key, it is the environment's.
		user := maps.Clone(exp.Config)
		ec, ok := user["env_config"].(map[string]any)
		if !ok {
			return Resolved{}, fmt.Errorf("config: env_config must be an object, got %v", user["env_config"])
		}
		delete(user, "env_config")
		if r.Config, err = alg.Decode(user); err == nil {
			r.EnvConfig = config.DeepMerge(ec, exp.EnvConfig)
		}
	}
	if err != nil {
		return Resolved{}, err
	}
	if err := checkLearnerThreads(alg.Name, r.Config, exp.NumCPUs); err != nil {
		return Resolved{}, err
	}
	if exp.Env == "" {
		return Resolved{}, fmt.Errorf("no environment given: use --env NAME (known environments: %s)", strings.Join(envs.Names(), ", "))
	}
	// One form for every value, wherever the environment is made: see
	// envs.NormalizeConfig.
	if r.EnvConfig, err = envs.NormalizeConfig(r.EnvConfig); err != nil {
		return Resolved{}, err
	}
	if err := CheckEnv(exp.Env, r.EnvConfig); err != nil {
		return Resolved{}, err
	}
	r.Env = envs.Canonical(exp.Env)
	return r, nil
}

// checkLearnerThreads checks num_learner_threads, when the config has it,
// against the CPUs of the runtime the run will use: the one already
// running, else the one the train command starts (numCPUs, 0 meaning all
// of this host's, as gray.Init counts them).
func checkLearnerThreads(alg string, cfg rllib.Config, numCPUs int) error {
	c, ok := cfg.(rllib.LearnerThreadsConfig)
	if !ok {
		return nil
	}
	set, workers := c.LearnerThreads()
	cpus := float64(numCPUs)
	if res := gray.ClusterResources(); res != nil {
		cpus = res["CPU"]
	} else if numCPUs == 0 {
		cpus = float64(goruntime.NumCPU())
	}
	return rllib.CheckLearnerThreads(alg, set, workers, cpus)
}

// CheckEnv makes one copy of the environment and closes it, so that an
// unknown name or a bad env_config fails before any folder or worker
// exists. Prefixed references (plugin:...) are only resolved (a missing or
// non-executable plugin fails here): the agent starts them anyway.
func CheckEnv(name string, cfg map[string]any) error {
	if strings.Contains(name, ":") {
		// Resolving a plugin reference checks its executable without
		// starting it.
		return envs.Check(name)
	}
	v, err := envs.MakeVector(name, cfg, 1)
	if err != nil {
		return err
	}
	return v.Close()
}

// ConfigMap is cfg as the JSON object of its keys, for records that hold
// a config as a map (checkpoint metadata, a sweep's trial results):
// numbers are int64 for integer literals, else float64.
func ConfigMap(cfg rllib.Config) (map[string]any, error) {
	b, err := json.Marshal(cfg)
	if err != nil {
		return nil, err
	}
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var m map[string]any
	if err := d.Decode(&m); err != nil {
		return nil, err
	}
	return plainNumbers(m).(map[string]any), nil
}

// plainNumbers turns json.Numbers into int64 (integer literals) or float64,
// so that printing the config as YAML shows numbers, not strings.
func plainNumbers(v any) any {
	switch x := v.(type) {
	case json.Number:
		if i, err := x.Int64(); err == nil {
			return i
		}
		f, _ := x.Float64()
		return f
	case map[string]any:
		for k, e := range x {
			x[k] = plainNumbers(e)
		}
	case []any:
		for i, e := range x {
			x[i] = plainNumbers(e)
		}
	}
	return v
}

// Options connect Train and Rollout to what surrounds them.
type Options struct {
	// StartRuntime, when set, is called once the run folder exists and
	// before the agent is created (agents create their rollout actors on
	// the runtime); logDir is where worker processes should write their
	// output; cfg is the run's config as decoded (Resolved.Config, or the
	// checkpoint's for Rollout), nil for a sweep, whose trials' configs
	// differ but for the keys they share (then cfg holds those). The
	// function it returns is called after the agent stops.
	StartRuntime func(ctx context.Context, logDir string, cfg rllib.Config) (stop func(), err error)
}

// LogsDir is the folder inside a run folder where worker processes write
// their standard output and error.
const LogsDir = "logs"

// Train runs exp to its end and prints one progress line per iteration to
// out. Cancelling ctx (Ctrl-C) ends the run after the current iteration,
// writes a final checkpoint and returns a Summary with Interrupted set and
// a nil error. An iteration that fails (NaN in a loss, say) ends the run
// without checkpointing the failed state; the error names the last good
// checkpoint.
func Train(ctx context.Context, exp config.Experiment, out io.Writer, opts Options) (sum Summary, err error) {
	var restoreMeta checkpoint.Meta
	var restorePath string
	if exp.Restore != "" {
		if restoreMeta, restorePath, err = checkpoint.Read(exp.Restore); err != nil {
			return sum, err
		}
		// Checked before the configs merge: another algorithm's config
		// would only fail with a confusing unknown key.
		if err := restoreMeta.Check(exp.Alg, exp.Env); err != nil {
			return sum, fmt.Errorf("--restore %s: %w", exp.Restore, err)
		}
		// A restored agent continues with the checkpoint's configuration
		// (its network shapes must match); keys given now override it.
		exp.Config = config.DeepMerge(restoreMeta.Config, exp.Config)
		exp.EnvConfig = config.DeepMerge(restoreMeta.EnvConfig, exp.EnvConfig)
	}
	res, err := Resolve(exp)
	if err != nil {
		return sum, err
	}
	exp.Env = res.Env
	// The checkpoints' metadata records the config as its JSON keys.
	cfgKeys, err := ConfigMap(res.Config)
	if err != nil {
		return sum, fmt.Errorf("%s config: %w", res.Alg.Name, err)
	}
	run, err := runlog.Create(runlog.Options{
		LocalDir: exp.LocalDir, Experiment: exp.Name, Alg: res.Alg.Name, Env: exp.Env,
		Config: res.Config,
		Info: map[string]any{
			"alg": res.Alg.Name, "env": exp.Env, "env_config": res.EnvConfig, "seed": exp.Seed,
			"stop": exp.Stop, "checkpoint_freq": exp.CheckpointFreq, "checkpoint_at_end": exp.CheckpointAtEnd,
			"restore": exp.Restore, "experiment": exp.Name, "file": exp.File, "command": os.Args,
		},
	})
	if err != nil {
		return sum, err
	}
	defer func() {
		if cerr := run.Close(); cerr != nil && err == nil {
			err = cerr
		}
	}()
	sum.RunDir = run.Dir()
	fmt.Fprintf(out, "%s on %s: run folder %s\n", res.Alg.Name, exp.Env, run.Dir())
	if len(exp.Stop) == 0 {
		fmt.Fprintln(out, "no stop criteria: training until interrupted (Ctrl-C saves a checkpoint and stops)")
	}

	if opts.StartRuntime != nil {
		logs := filepath.Join(run.Dir(), LogsDir)
		if err := os.MkdirAll(logs, 0o755); err != nil {
			return sum, fmt.Errorf("creating %s: %w", logs, err)
		}
		stop, err := opts.StartRuntime(ctx, logs, res.Config)
		if err != nil {
			if ctx.Err() != nil {
				sum.Interrupted, sum.StoppedBy = true, "interrupted"
				return sum, nil
			}
			return sum, fmt.Errorf("starting the runtime: %w", err)
		}
		// Deferred before the agent's Stop, so it runs after it.
		defer stop()
	}

	var agent rllib.Agent
	if err := safely("creating the agent", func() error {
		var e error
		agent, e = res.Alg.New(ctx, rllib.Options{Env: exp.Env, EnvConfig: res.EnvConfig, LogDir: run.Dir(), Seed: exp.Seed}, res.Config)
		return e
	}); err != nil {
		if ctx.Err() != nil {
			sum.Interrupted, sum.StoppedBy = true, "interrupted"
			return sum, nil
		}
		return sum, fmt.Errorf("creating %s agent for %s: %w", res.Alg.Name, exp.Env, err)
	}
	defer func() {
		serr := safely("stopping the agent", agent.Stop)
		switch {
		case serr == nil:
		case err == nil:
			// The run finished and its results and checkpoints are saved:
			// a failing clean-up (an environment plugin whose Close hangs,
			// say) is reported, not turned into a failed run.
			fmt.Fprintf(out, "warning: the run finished, but stopping the agent failed: %v\n", serr)
		default:
			fmt.Fprintf(out, "warning: stopping the agent also failed: %v\n", serr)
		}
	}()
	timeTotal := 0.0
	if restorePath != "" {
		if err := safely("restoring", func() error { return agent.Restore(ctx, restorePath) }); err != nil {
			if ctx.Err() != nil {
				sum.Interrupted, sum.StoppedBy = true, "interrupted"
				return sum, nil
			}
			return sum, fmt.Errorf("restoring %s: %w", exp.Restore, err)
		}
		timeTotal = restoreMeta.TimeTotalS
		sum.Checkpoint = exp.Restore
		fmt.Fprintf(out, "restored %s (iteration %d)\n", exp.Restore, restoreMeta.Iteration)
	}

	save := func(ctx context.Context, last map[string]any) error {
		var path string
		if err := safely("saving a checkpoint", func() error {
			var e error
			path, e = agent.Save(ctx)
			return e
		}); err != nil {
			return fmt.Errorf("saving a checkpoint: %w", err)
		}
		ts, _ := runlog.Numeric(last["timesteps_total"])
		if _, err := checkpoint.Write(path, checkpoint.Meta{
			Algorithm: res.Alg.Name, Env: exp.Env, Iteration: agent.Iteration(), TimestepsTotal: int64(ts),
			TimeTotalS: timeTotal, Seed: exp.Seed, Config: cfgKeys, EnvConfig: res.EnvConfig,
		}); err != nil {
			return err
		}
		sum.Checkpoint = path
		fmt.Fprintf(out, "checkpoint saved: %s\n", path)
		return nil
	}
	lastGood := func() string {
		switch {
		case sum.Checkpoint == "" && exp.CheckpointFreq > 0:
			return fmt.Sprintf("no checkpoint was written yet (--checkpoint-freq %d writes the first at iteration %d)", exp.CheckpointFreq, exp.CheckpointFreq)
		case sum.Checkpoint == "":
			return "no checkpoint was written (use --checkpoint-freq N to keep one)"
		}
		return "last good checkpoint: " + sum.Checkpoint + " (continue with --restore " + sum.Checkpoint + ")"
	}

	warnedEntropy := false
	framesPerStep := envs.FramesPerStep(exp.Env, envs.Config(res.EnvConfig))
	for {
		if ctx.Err() != nil {
			return interrupted(ctx, &sum, out, save)
		}
		var r rllib.Result
		iter := agent.Iteration() + 1
		err := safely(fmt.Sprintf("training iteration %d", iter), func() error {
			var e error
			r, e = agent.Train(ctx)
			return e
		})
		if err != nil {
			if ctx.Err() != nil && errors.Is(err, ctx.Err()) {
				return interrupted(ctx, &sum, out, save)
			}
			sum.StoppedBy = "error"
			return sum, fmt.Errorf("iteration %d failed: %w; the run stopped; %s", iter, err, lastGood())
		}
		timeTotal += r.TimeThisIterS
		m := ResultMap(r)
		m["time_total_s"] = timeTotal
		flat := runlog.Flatten(m)
		stopKey, done := exp.Stop.Met(flat)
		m["done"] = done
		logged, lerr := run.Log(m)
		if lerr != nil {
			return sum, fmt.Errorf("logging iteration %d: %w", r.TrainingIteration, lerr)
		}
		sum.Iterations++
		sum.Last = logged
		fmt.Fprintln(out, progress.LineFrames(flat, framesPerStep))

		if err := Divergence(r.Learner, cfgKeys); err != nil {
			sum.StoppedBy = "error"
			return sum, fmt.Errorf("iteration %d: %w; the run stopped; %s", r.TrainingIteration, err, lastGood())
		}
		if !warnedEntropy && entropyCollapsed(r.Learner) {
			warnedEntropy = true
			fmt.Fprintf(out, "warning: iteration %d: the policy's entropy fell to %g: it always takes the same action; early in training this means the learning rate%s is too high\n",
				r.TrainingIteration, r.Learner["entropy"], lrValue(cfgKeys))
		}
		if sum.Iterations == 1 {
			// A criterion naming no result key is most likely a typo. When
			// no criterion can ever be met the run would never stop: fail.
			// Otherwise warn, since a key may first appear later (an
			// evaluation every few iterations, say).
			if missing := exp.Stop.Missing(flat); len(missing) > 0 {
				msg := fmt.Sprintf("stop criteria %s are not keys of the first result (its keys: %s)",
					strings.Join(missing, ", "), strings.Join(runlog.NumericKeys(flat), ", "))
				if len(missing) == len(exp.Stop) {
					sum.StoppedBy = "error"
					return sum, fmt.Errorf("%s, so the run could never stop", msg)
				}
				fmt.Fprintf(out, "warning: %s; they stop the run only if a later result reports them\n", msg)
			}
		}
		if exp.CheckpointFreq > 0 && agent.Iteration()%exp.CheckpointFreq == 0 || done && exp.CheckpointAtEnd {
			if err := save(ctx, logged); err != nil {
				if ctx.Err() != nil {
					return interrupted(ctx, &sum, out, save)
				}
				return sum, err
			}
		}
		if done {
			sum.StoppedBy = fmt.Sprintf("%s >= %g", stopKey, exp.Stop[stopKey])
			fmt.Fprintf(out, "done: %s\n", sum.StoppedBy)
			return sum, nil
		}
	}
}

// interrupted writes the final checkpoint after Ctrl-C.
func interrupted(ctx context.Context, sum *Summary, out io.Writer, save func(context.Context, map[string]any) error) (Summary, error) {
	sum.Interrupted, sum.StoppedBy = true, "interrupted"
	fmt.Fprintln(out, "interrupted: saving a final checkpoint")
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), SaveTimeout)
	defer cancel()
	if err := save(sctx, sum.Last); err != nil {
		return *sum, fmt.Errorf("interrupted, and the final checkpoint failed: %w", err)
	}
	return *sum, nil
}

// safely runs f, turning a panic into an error that names what was being
// done, so that a bug in an agent never ends the run with a raw panic and
// the results so far are kept.
func safely(what string, f func() error) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = &PanicError{What: what, Value: p, Stack: debug.Stack()}
		}
	}()
	return f()
}

// PanicError is a panic recovered from an agent or environment.
type PanicError struct {
	// What was being done: "training iteration 3".
	What string
	// Value is what panic was called with.
	Value any
	// Stack is the panicking goroutine's stack.
	Stack []byte
}

// Error names the panic and where it happened; the whole stack is in Stack.
func (e *PanicError) Error() string {
	msg := fmt.Sprintf("panic while %s: %v", e.What, e.Value)
	if at := panicSite(e.Stack); at != "" {
		msg += " (at " + at + ")"
	}
	return msg + "; this is a bug in the agent or environment: please report it with the stack (set GRAY_DEBUG=1 to print it)"
}

// PanicStack returns the panicking goroutine's stack.
func (e *PanicError) PanicStack() []byte { return e.Stack }

// panicSite finds the function and file:line that called panic in a
// debug.Stack dump.
func panicSite(stack []byte) string {
	lines := strings.Split(string(stack), "\n")
	for i, l := range lines {
		if strings.HasPrefix(l, "panic(") && i+3 < len(lines) {
			fn := lines[i+2]
			if j := strings.LastIndexByte(fn, '('); j > 0 {
				fn = fn[:j]
			}
			loc := strings.TrimSpace(lines[i+3])
			if j := strings.LastIndex(loc, " +0x"); j > 0 {
				loc = loc[:j]
			}
			return fn + " " + loc
		}
	}
	return ""
}

// lrValue is " (lr X)" when config has an lr, else "".
func lrValue(config map[string]any) string {
	if lr, ok := config["lr"]; ok {
		return fmt.Sprintf(" (lr %v)", lr)
	}
	return ""
}
