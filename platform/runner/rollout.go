package runner

import (
	"context"
	"fmt"
	"io"
	"math"
	"os"

	"github.com/gray-ml/gray/envs"
	"github.com/gray-ml/gray/platform/checkpoint"
	"github.com/gray-ml/gray/rllib"
)

// RolloutOptions tune Rollout.
type RolloutOptions struct {
	// Episodes is the number of episodes to run (at least 1).
	Episodes int
	// Seed seeds episode i's reset with Seed+i.
	Seed int64
	// MaxSteps caps each episode, so that an environment without a time
	// limit cannot run forever; 0 means 100,000.
	MaxSteps int
	// Render, when set, records the episodes' frames (the environment must
	// implement envs.Renderer): an animated GIF for a path ending in .gif,
	// numbered PNG files in a folder otherwise.
	Render string
	// RenderFrames caps the frames recorded; 0 means 3,000.
	RenderFrames int
}

// Rollout evaluates a checkpoint: it rebuilds the agent from the
// checkpoint's metadata (algorithm, environment, config), restores it, and
// runs episodes on a fresh environment with ComputeAction, printing each
// return and their mean to out. It returns the returns.
func Rollout(ctx context.Context, path string, opts RolloutOptions, out io.Writer, ropts Options) ([]float64, error) {
	if opts.Episodes < 1 {
		return nil, fmt.Errorf("--episodes must be at least 1, got %d", opts.Episodes)
	}
	if opts.MaxSteps <= 0 {
		opts.MaxSteps = 100_000
	}
	meta, agentPath, err := checkpoint.Read(path)
	if err != nil {
		return nil, err
	}
	alg, err := rllib.Lookup(meta.Algorithm)
	if err != nil {
		return nil, fmt.Errorf("checkpoint %s: %w", path, err)
	}
	// The config is decoded once, before the runtime starts: its size may
	// depend on num_workers.
	cfg, err := alg.Decode(meta.Config)
	if err != nil {
		return nil, fmt.Errorf("rebuilding the %s agent of %s: %w", meta.Algorithm, path, err)
	}
	// The agent gets a scratch folder: evaluating must not write into the
	// run that produced the checkpoint.
	scratch, err := os.MkdirTemp("", "gray-rollout-")
	if err != nil {
		return nil, fmt.Errorf("rollout: %w", err)
	}
	defer os.RemoveAll(scratch)
	if ropts.StartRuntime != nil {
		stop, err := ropts.StartRuntime(ctx, scratch, cfg)
		if err != nil {
			return nil, fmt.Errorf("starting the runtime: %w", err)
		}
		defer stop()
	}
	var agent rllib.Agent
	if err := safely("creating the agent", func() error {
		var e error
		agent, e = alg.New(ctx, rllib.Options{Env: meta.Env, EnvConfig: meta.EnvConfig, LogDir: scratch, Seed: meta.Seed}, cfg)
		return e
	}); err != nil {
		return nil, fmt.Errorf("rebuilding the %s agent of %s: %w", meta.Algorithm, path, err)
	}
	defer safely("stopping the agent", agent.Stop)
	if err := safely("restoring", func() error { return agent.Restore(ctx, agentPath) }); err != nil {
		return nil, fmt.Errorf("restoring %s: %w", path, err)
	}
	env, view, err := rolloutEnv(meta.Env, meta.EnvConfig, opts.Render != "")
	if err != nil {
		return nil, err
	}
	defer env.Close()
	var rec *recorder
	if view != nil {
		if opts.RenderFrames <= 0 {
			opts.RenderFrames = 3000
		}
		if rec, err = newRecorder(opts.Render, opts.RenderFrames); err != nil {
			return nil, err
		}
	}
	fmt.Fprintf(out, "%s on %s, checkpoint %s (iteration %d)\n", meta.Algorithm, meta.Env, path, meta.Iteration)
	returns := make([]float64, 0, opts.Episodes)
	sum := 0.0
	for ep := range opts.Episodes {
		ret, steps, err := episode(ctx, agent, env, opts.Seed+int64(ep), opts.MaxSteps, view, rec)
		if err != nil {
			return returns, fmt.Errorf("episode %d: %w", ep+1, err)
		}
		returns = append(returns, ret)
		sum += ret
		fmt.Fprintf(out, "episode %d: return %.2f (%d steps)\n", ep+1, ret, steps)
	}
	fmt.Fprintf(out, "mean return over %d episodes: %.2f\n", len(returns), sum/float64(len(returns)))
	if rec != nil {
		what, err := rec.close()
		if err != nil {
			return returns, err
		}
		fmt.Fprintf(out, "rendered %s\n", what)
	}
	return returns, nil
}

// rolloutEnv makes the environment episodes run on: a one-copy Vector, as
// plugin environments are served as Vectors only; to render, an Env that
// implements envs.Renderer, wrapped as a Vector, and that Renderer.
func rolloutEnv(name string, cfg map[string]any, render bool) (envs.Vector, envs.Renderer, error) {
	if !render {
		v, err := envs.MakeVector(name, cfg, 1)
		return v, nil, err
	}
	e, err := envs.Make(name, cfg)
	if err != nil {
		return nil, nil, err
	}
	view, ok := e.(envs.Renderer)
	if !ok {
		_ = e.Close()
		return nil, nil, fmt.Errorf("--render: environment %q cannot render itself (it does not implement envs.Renderer)", name)
	}
	v, err := envs.NewVector(e)
	if err != nil {
		_ = e.Close()
		return nil, nil, err
	}
	return v, view, nil
}

// record adds the environment's current picture to rec, if recording.
func record(view envs.Renderer, rec *recorder) error {
	if rec == nil || rec.full() {
		return nil
	}
	img, err := view.Render()
	if err != nil {
		return fmt.Errorf("rendering: %w", err)
	}
	return rec.add(img)
}

func episode(ctx context.Context, agent rllib.Agent, env envs.Vector, seed int64, maxSteps int, view envs.Renderer, rec *recorder) (float64, int, error) {
	rows, err := env.Reset([]int64{seed})
	if err != nil {
		return 0, 0, fmt.Errorf("reset: %w", err)
	}
	if s, ok := agent.(rllib.EpisodeStarter); ok {
		s.StartEpisode()
	}
	if err := record(view, rec); err != nil {
		return 0, 0, err
	}
	obs := rows[0]
	space := env.ActionSpace()
	ret := 0.0
	for step := 1; ; step++ {
		if err := ctx.Err(); err != nil {
			return ret, step - 1, err
		}
		var act []float64
		if err := safely("computing an action", func() error {
			var e error
			act, e = agent.ComputeAction(obs)
			return e
		}); err != nil {
			return ret, step - 1, fmt.Errorf("step %d: %w", step, err)
		}
		if !space.Contains(act) {
			// A Gaussian policy's sample may leave a Box: clip it, as the
			// environment's own dynamics would. Anything else (a wrong size,
			// NaN, an invalid discrete action) is the agent's error.
			box, isBox := space.(envs.Box)
			if !isBox || !clipInto(box, act) {
				return ret, step - 1, fmt.Errorf("step %d: the agent's action %v is outside the action space %s", step, act, space)
			}
		}
		var s envs.VectorStep
		if err := safely("stepping the environment", func() error {
			var e error
			s, e = env.Step([][]float64{act})
			return e
		}); err != nil {
			return ret, step - 1, fmt.Errorf("step %d: %w", step, err)
		}
		ret += s.Rewards[0]
		// On the last step the Vector has already reset: the episode is
		// over, and its next observation belongs to the next one.
		if s.Terminated[0] || s.Truncated[0] || step >= maxSteps {
			return ret, step, nil
		}
		if err := record(view, rec); err != nil {
			return ret, step, err
		}
		obs = s.Obs[0]
	}
}

// clipInto clips act into box in place; it reports false when act cannot be
// clipped (wrong size or NaN).
func clipInto(box envs.Box, act []float64) bool {
	if len(act) != len(box.Low) {
		return false
	}
	for i, v := range act {
		if math.IsNaN(v) {
			return false
		}
		act[i] = math.Min(math.Max(v, box.Low[i]), box.High[i])
	}
	return true
}
