package sweep

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/gray-ml/gray/platform/checkpoint"
	"github.com/gray-ml/gray/platform/runlog"
	"github.com/gray-ml/gray/platform/runner"
	"github.com/gray-ml/gray/rllib"
	"github.com/gray-ml/gray/tune"
)

// pointerFile, inside a checkpoint folder Tune made, holds the absolute
// path of the agent's own checkpoint. Absolute, because PBT copies
// checkpoint folders between trials.
const pointerFile = "agent_checkpoint_path"

// agentTrainable trains a registered algorithm as a Tune trial the way
// `train` runs it: results laid out by runlog.ResultMap (info/learner/...)
// and checkpoints with platform metadata, so that `train rollout` and
// `train --restore` accept a trial's checkpoints.
type agentTrainable struct {
	alg, env  string
	envConfig map[string]any
	seed      int64

	name      string // the algorithm's registered name
	config    map[string]any
	agent     rllib.Agent
	timeTotal float64
	steps     int64
}

func agentFactory(alg, env string, envConfig map[string]any, seed int64) tune.TrainableFactory {
	return func() tune.Trainable {
		return &agentTrainable{alg: alg, env: env, envConfig: envConfig, seed: seed}
	}
}

func (a *agentTrainable) Setup(ctx context.Context, config map[string]any, dir string) error {
	algo, err := rllib.Lookup(a.alg)
	if err != nil {
		return err
	}
	full, err := runner.FullConfig(algo, config)
	if err != nil {
		return err
	}
	agent, err := algo.New(ctx, rllib.Options{Env: a.env, EnvConfig: a.envConfig, Config: config, LogDir: dir, Seed: a.seed})
	if err != nil {
		return fmt.Errorf("creating %s agent on %s: %w", algo.Name, a.env, err)
	}
	a.name, a.config, a.agent = algo.Name, full, agent
	return nil
}

func (a *agentTrainable) Step(ctx context.Context) (map[string]any, error) {
	r, err := a.agent.Train(ctx)
	if err != nil {
		return nil, err
	}
	a.timeTotal += r.TimeThisIterS
	a.steps = r.TimestepsTotal
	m := runlog.ResultMap(r)
	// Tune counts iterations (and time) across restarts itself.
	delete(m, "training_iteration")
	return m, nil
}

func (a *agentTrainable) Save(ctx context.Context, dir string) error {
	path, err := a.agent.Save(ctx)
	if err != nil {
		return err
	}
	if _, err := checkpoint.Write(path, checkpoint.Meta{
		Algorithm: a.name, Env: a.env, Iteration: a.agent.Iteration(), TimestepsTotal: a.steps,
		TimeTotalS: a.timeTotal, Seed: a.seed, Config: a.config, EnvConfig: a.envConfig,
	}); err != nil {
		return err
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, pointerFile), []byte(abs+"\n"), 0o644)
}

func (a *agentTrainable) Restore(ctx context.Context, dir string) error {
	b, err := os.ReadFile(filepath.Join(dir, pointerFile))
	if err != nil {
		return fmt.Errorf("%s is not an agent checkpoint of a sweep: %w", dir, err)
	}
	meta, path, err := checkpoint.Read(strings.TrimSpace(string(b)))
	if err != nil {
		return err
	}
	if err := meta.Check(a.name, a.env); err != nil {
		return err
	}
	a.timeTotal, a.steps = meta.TimeTotalS, meta.TimestepsTotal
	return a.agent.Restore(ctx, path)
}

func (a *agentTrainable) Stop() error {
	if a.agent == nil {
		return nil
	}
	return a.agent.Stop()
}
