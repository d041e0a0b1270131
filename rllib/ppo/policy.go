package ppo

import (
	"errors"
	"fmt"

	"github.com/gray-ml/gray/envs"
	"github.com/gray-ml/gray/models"
	"github.com/gray-ml/gray/rllib/rollout"
)

// policy is PPO's actor-critic, the one A3C shares (rollout.ActorCritic).
type policy = rollout.ActorCritic

// newPolicy builds the networks for the environment's spaces.
func newPolicy(pre models.Preprocessor, act envs.Space, opts models.ModelOptions, seed int64) (*policy, error) {
	return rollout.NewActorCritic(pre, act, opts, seed)
}

// obsProcessor applies the catalog's preprocessor and, when configured,
// a running mean/std filter. It implements rollout.ObsProcessor.
type obsProcessor struct {
	pre    models.Preprocessor
	filter *models.MeanStdFilter
}

// filterClip bounds filtered observations, as RLlib's MeanStdFilter does.
const filterClip = 10

func newObsProcessor(envName string, obs envs.Space, filter string, image models.ImageOptions) (*obsProcessor, error) {
	pre, err := models.PreprocessorFor(envName, obs, image)
	if err != nil {
		return nil, err
	}
	p := &obsProcessor{pre: pre}
	switch filter {
	case "MeanStdFilter":
		p.filter = models.NewMeanStdFilter(pre.Size(), filterClip)
	case "NoFilter", "":
	default:
		return nil, fmt.Errorf("unknown observation_filter %q", filter)
	}
	return p, nil
}

// Size implements rollout.ObsProcessor.
func (p *obsProcessor) Size() int { return p.pre.Size() }

// Process implements rollout.ObsProcessor.
func (p *obsProcessor) Process(dst, raw []float64, update bool) error {
	if err := p.pre.Transform(raw, dst); err != nil {
		return err
	}
	return p.Filter(dst, update)
}

// ProcessStream implements rollout.StreamProcessor: a preprocessor that
// stacks or differences frames keeps one history per sub-environment.
func (p *obsProcessor) ProcessStream(stream int, start bool, dst, raw []float64, update bool) error {
	if err := p.Transform(stream, start, dst, raw, nil); err != nil {
		return err
	}
	return p.Filter(dst, update)
}

// Parts implements rollout.PartProcessor: the image preprocessor's
// streams may be transformed at once, and it reads 8-bit frames; other
// preprocessors (cheap ones, or a user's) run on one goroutine.
func (p *obsProcessor) Parts() (concurrent, frames bool) {
	_, image := p.pre.(*models.ImagePreprocessor)
	return image, image
}

// Transform implements rollout.PartProcessor.
func (p *obsProcessor) Transform(stream int, start bool, dst, raw []float64, frame []uint8) error {
	if frame != nil {
		img, ok := p.pre.(*models.ImagePreprocessor)
		if !ok {
			return errors.New("an 8-bit frame given to a preprocessor that reads no frames")
		}
		return img.TransformFrame(stream, start, frame, dst)
	}
	if sp, ok := p.pre.(models.StreamPreprocessor); ok && sp.Stateful() {
		return sp.TransformStream(stream, start, raw, dst)
	}
	return p.pre.Transform(raw, dst)
}

// Filter implements rollout.PartProcessor.
func (p *obsProcessor) Filter(dst []float64, update bool) error {
	if p.filter != nil {
		return p.filter.Apply(dst[:p.pre.Size()], update)
	}
	return nil
}

var _ rollout.PartProcessor = (*obsProcessor)(nil)

// stats returns the filter's statistics, nil without a filter.
func (p *obsProcessor) stats() *models.RunningStat {
	if p.filter == nil {
		return nil
	}
	s := p.filter.Stats()
	return &s
}

// setStats replaces the filter's statistics (nil: nothing to do).
func (p *obsProcessor) setStats(s *models.RunningStat) error {
	if s == nil {
		if p.filter != nil {
			return errors.New("observation filter statistics missing")
		}
		return nil
	}
	if p.filter == nil {
		return errors.New("observation filter statistics given, but observation_filter is NoFilter")
	}
	return p.filter.SetStats(*s)
}
