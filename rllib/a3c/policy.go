package a3c

import (
	"fmt"

	"github.com/gray-ml/gray/envs"
	"github.com/gray-ml/gray/models"
	"github.com/gray-ml/gray/rllib/rollout"
)

// policy is A3C's actor-critic, the one PPO shares (rollout.ActorCritic),
// with the catalog's preprocessor as its rollout.ObsProcessor and a tape
// for the loss. Runners and the driver each hold one.
type policy struct {
	*rollout.ActorCritic
	pre models.Preprocessor
	// grad records the loss.
	grad *models.Tape
}

// newPolicy builds the networks for the environment's spaces; the same
// seed gives the same initial weights in every process.
func newPolicy(env string, obs, act envs.Space, opts models.ModelOptions, seed int64) (*policy, error) {
	pre, err := models.PreprocessorFor(env, obs, opts.Image())
	if err != nil {
		return nil, err
	}
	if sp, ok := pre.(models.StreamPreprocessor); ok && sp.Stateful() {
		return nil, fmt.Errorf("model: framestack and frame_diff need an algorithm that tracks episodes per environment (PPO); remove them from the model config")
	}
	ac, err := rollout.NewActorCritic(pre, act, opts, seed)
	if err != nil {
		return nil, err
	}
	return &policy{ActorCritic: ac, pre: pre, grad: models.NewTape()}, nil
}

// Size implements rollout.ObsProcessor.
func (p *policy) Size() int { return p.pre.Size() }

// Process implements rollout.ObsProcessor: the catalog's preprocessor (A3C
// keeps no running observation filter).
func (p *policy) Process(dst, raw []float64, _ bool) error {
	if err := p.pre.Transform(raw, dst); err != nil {
		return fmt.Errorf("observation: %w", err)
	}
	return nil
}
