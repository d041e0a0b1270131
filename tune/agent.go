package tune

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/gray-ml/gray/platform/checkpoint"
	"github.com/gray-ml/gray/rllib"
)

// AgentOptions adapt AgentTrainableWith to its caller. The zero value
// gives AgentTrainable's behaviour.
type AgentOptions struct {
	// Result turns an iteration's rllib.Result into the trial's result;
	// an error ends the trial. Default: rllib.Result's JSON keys.
	Result func(r rllib.Result, config map[string]any) (map[string]any, error)
	// ConfigKeys is the configuration recorded in checkpoints and handed to
	// Result, from the trial's config as the algorithm decoded it
	// (rllib.Algorithm.Decode, once per trial). Default: the trial's config
	// as given.
	ConfigKeys func(cfg rllib.Config) (map[string]any, error)
}

// AgentTrainable adapts a registered rllib algorithm (rllib.Lookup(alg))
// trained on env: each Step is one Train iteration and the trial's config
// is the agent's config. See AgentTrainableWith for its checkpoints.
func AgentTrainable(alg, env string, envConfig map[string]any, seed int64) TrainableFactory {
	return AgentTrainableWith(alg, env, envConfig, seed, AgentOptions{})
}

// AgentTrainableWith is AgentTrainable adapted by opts. Its Save has the
// agent write its checkpoint and moves it into the runner's checkpoint
// folder, which then also holds the checkpoint's metadata
// (platform/checkpoint, with a relative path to the agent's files). So the
// runner's folder is itself a checkpoint that `train rollout` and --restore
// accept, can be moved or copied (by PBT too), and removing it
// (keep_checkpoints_num) frees the agent's files.
func AgentTrainableWith(alg, env string, envConfig map[string]any, seed int64, opts AgentOptions) TrainableFactory {
	return func() Trainable {
		return &agentTrainable{alg: alg, env: env, envConfig: envConfig, seed: seed, opts: opts}
	}
}

type agentTrainable struct {
	alg, env  string
	envConfig map[string]any
	seed      int64
	opts      AgentOptions

	name      string // the algorithm's registered name
	config    map[string]any
	agent     rllib.Agent
	timeTotal float64
	steps     int64
}

func (a *agentTrainable) Setup(ctx context.Context, config map[string]any, dir string) error {
	algo, err := rllib.Lookup(a.alg)
	if err != nil {
		return err
	}
	cfg, err := algo.Decode(config)
	if err != nil {
		return err
	}
	full := config
	if a.opts.ConfigKeys != nil {
		if full, err = a.opts.ConfigKeys(cfg); err != nil {
			return err
		}
	}
	agent, err := algo.New(ctx, rllib.Options{Env: a.env, EnvConfig: a.envConfig, LogDir: dir, Seed: a.seed}, cfg)
	if err != nil {
		return fmt.Errorf("tune: creating %s agent on %s: %w", algo.Name, a.env, err)
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
	var m map[string]any
	if a.opts.Result != nil {
		if m, err = a.opts.Result(r, a.config); err != nil {
			return nil, err
		}
	} else {
		b, err := json.Marshal(r)
		if err != nil {
			return nil, fmt.Errorf("tune: encoding %s result: %w", a.alg, err)
		}
		if err := json.Unmarshal(b, &m); err != nil {
			return nil, err
		}
	}
	// The runner counts iterations (and time) across restarts itself.
	delete(m, "training_iteration")
	return m, nil
}

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

// legacyPointers are the pointer files checkpoint folders of sweeps run by
// older builds held: the agent's checkpoint path, absolute or relative to
// the folder.
var legacyPointers = []string{"agent_checkpoint_path", "agent_checkpoint"}

func (a *agentTrainable) Restore(ctx context.Context, dir string) error {
	target := dir
	for _, name := range legacyPointers {
		if b, err := os.ReadFile(filepath.Join(dir, name)); err == nil {
			target = strings.TrimSpace(string(b))
			if !filepath.IsAbs(target) {
				target = filepath.Join(dir, target)
			}
			if _, _, err := checkpoint.Read(target); err != nil {
				// An agent checkpoint without platform metadata.
				return a.agent.Restore(ctx, target)
			}
			break
		}
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
