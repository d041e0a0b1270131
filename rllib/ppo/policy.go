package ppo

import (
	"errors"
	"fmt"
	"math/rand/v2"

	"github.com/gray-ml/gray/envs"
	"github.com/gray-ml/gray/models"
	"github.com/gray-ml/gray/rllib/rollout"
)

// policy is PPO's actor-critic: the catalog's model (with a value output)
// and action distribution. It implements rollout.Policy.
type policy struct {
	model  models.Model
	dist   models.ActionDist
	params *models.Params
	// tape is a no-grad tape for acting; the learner has its own.
	tape    *models.Tape
	obsDim  int
	actDim  int
	distDim int
}

// newPolicy builds the networks for the environment's spaces. A free
// log-std applies to Gaussian policies only: for a Categorical it would turn
// half the logits into constants.
func newPolicy(pre models.Preprocessor, act envs.Space, opts models.ModelOptions, seed int64) (*policy, error) {
	dist, err := models.ActionDistFor(act, "")
	if err != nil {
		return nil, err
	}
	opts.Value = true
	if dist.Name() != "DiagGaussian" {
		opts.FreeLogStd = false
	}
	model, err := models.NewModel(pre.Shape(), dist.InputSize(), opts, uint64(seed))
	if err != nil {
		return nil, err
	}
	tape := models.NewTape()
	tape.SetNoGrad(true)
	return &policy{
		model: model, dist: dist, params: model.Params(), tape: tape,
		obsDim: pre.Size(), actDim: dist.ActionSize(), distDim: dist.InputSize(),
	}, nil
}

// close releases the model's outside resources (a model plugin's process).
func (p *policy) close() error { return models.CloseModel(p.model) }

// DistDim implements rollout.Policy.
func (p *policy) DistDim() int { return p.distDim }

// forward runs the model without gradients on n observations.
func (p *policy) forward(obs []float64, n int) models.Output {
	p.tape.Reset()
	return p.model.Forward(p.tape, p.tape.Const(n, p.obsDim, obs))
}

// Act implements rollout.Policy: it samples actions (rng nil: takes the
// distribution's mode) and reports their log-likelihoods, the value
// estimates and the distribution inputs.
func (p *policy) Act(obs []float64, n int, rng *rand.Rand, out *rollout.Actions) error {
	o := p.forward(obs, n)
	if err := p.tape.Err(); err != nil { // a custom model's failure
		return err
	}
	out.Actions = grow(out.Actions, n*p.actDim)
	out.Logp = grow(out.Logp, n)
	out.VPreds = grow(out.VPreds, n)
	out.DistInputs = grow(out.DistInputs, n*p.distDim)
	copy(out.DistInputs, o.Out.Data)
	copy(out.VPreds, o.Value.Data)
	if rng == nil {
		p.dist.Mode(out.DistInputs, out.Actions)
	} else {
		p.dist.Sample(rng, out.DistInputs, out.Actions)
	}
	p.dist.LogProb(out.DistInputs, out.Actions, out.Logp)
	return nil
}

// Values implements rollout.Policy.
func (p *policy) Values(obs []float64, n int, vals []float64) error {
	o := p.forward(obs, n)
	if err := p.tape.Err(); err != nil {
		return err
	}
	copy(vals[:n], o.Value.Data)
	return nil
}

func grow(xs []float64, n int) []float64 {
	if cap(xs) >= n {
		return xs[:n]
	}
	return make([]float64, n)
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
	if p.filter != nil {
		return p.filter.Apply(dst[:p.pre.Size()], update)
	}
	return nil
}

// ProcessStream implements rollout.StreamProcessor: a preprocessor that
// stacks or differences frames keeps one history per sub-environment.
func (p *obsProcessor) ProcessStream(stream int, start bool, dst, raw []float64, update bool) error {
	sp, ok := p.pre.(models.StreamPreprocessor)
	if !ok || !sp.Stateful() {
		return p.Process(dst, raw, update)
	}
	if err := sp.TransformStream(stream, start, raw, dst); err != nil {
		return err
	}
	if p.filter != nil {
		return p.filter.Apply(dst[:p.pre.Size()], update)
	}
	return nil
}

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
