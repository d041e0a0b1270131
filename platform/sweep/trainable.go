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

// legacyPointerFile, in checkpoint folders of sweeps run by older builds,
// held the absolute path of the agent's checkpoint.
const legacyPointerFile = "agent_checkpoint_path"

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
	if err := runner.Divergence(r.Learner, a.config); err != nil {
		return nil, fmt.Errorf("iteration %d: %w", r.TrainingIteration, err)
	}
	a.timeTotal += r.TimeThisIterS
	a.steps = r.TimestepsTotal
	m := runlog.ResultMap(r)
	// Tune counts iterations (and time) across restarts itself.
	delete(m, "training_iteration")
	return m, nil
}

// Save has the agent save its checkpoint and moves it into dir, the
// checkpoint folder Tune made, which then holds the platform's metadata
// (checkpoint.WriteIn). So dir is itself a checkpoint `train rollout` and
// --restore accept (it is the path `train ls` and `train best` print),
// refers to the agent's files relatively (a sweep folder can be moved), and
// removing it (keep_checkpoints_num) frees the agent's files too.
func (a *agentTrainable) Save(ctx context.Context, dir string) error {
	path, err := a.agent.Save(ctx)
	if err != nil {
		return err
	}
	dst := filepath.Join(dir, filepath.Base(path))
	if err := os.Rename(path, dst); err != nil {
		return fmt.Errorf("moving the agent's checkpoint into %s: %w", dir, err)
	}
	_, err = checkpoint.WriteIn(dir, dst, checkpoint.Meta{
		Algorithm: a.name, Env: a.env, Iteration: a.agent.Iteration(), TimestepsTotal: a.steps,
		TimeTotalS: a.timeTotal, Seed: a.seed, Config: a.config, EnvConfig: a.envConfig,
	})
	return err
}

func (a *agentTrainable) Restore(ctx context.Context, dir string) error {
	target := dir
	if b, err := os.ReadFile(filepath.Join(dir, legacyPointerFile)); err == nil {
		target = strings.TrimSpace(string(b))
	}
	meta, path, err := checkpoint.Read(target)
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
