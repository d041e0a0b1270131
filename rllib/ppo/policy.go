package ppo

import (
	"errors"
	"fmt"
	"math/rand/v2"

	"github.com/gray-ml/gray/envs"
	"github.com/gray-ml/gray/models"
	"github.com/gray-ml/gray/rllib/rollout"
	"github.com/gray-ml/gray/rllib/sample"
)

// policy is PPO's actor-critic: the catalog's model (with a value output)
// and action distribution. It implements rollout.Recurrent, and is
// recurrent when the model is (use_lstm).
type policy struct {
	model models.Model
	// rnn is the model when it is recurrent, else nil.
	rnn    models.Recurrent
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
	dist, err := models.NewActionDist(act, opts)
	if err != nil {
		return nil, err
	}
	opts.Value = true
	if dist.Name() != "DiagGaussian" {
		opts.FreeLogStd = false
	}
	model, err := models.NewModel(pre.Shape(), dist.InputSize(), opts, uint64(seed))
	if err != nil {
		return nil, errors.Join(err, models.CloseActionDist(dist))
	}
	tape := models.NewTape()
	tape.SetNoGrad(true)
	p := &policy{
		model: model, dist: dist, params: model.Params(), tape: tape,
		obsDim: pre.Size(), actDim: dist.ActionSize(), distDim: dist.InputSize(),
	}
	if opts.UseLSTM {
		rnn, ok := model.(models.Recurrent)
		if !ok {
			_ = models.CloseModel(model)
			return nil, fmt.Errorf("model: use_lstm built a %T, which is not recurrent", model)
		}
		p.rnn = rnn
	}
	return p, nil
}

// StateSize implements rollout.Recurrent: 0 for a feed-forward model.
func (p *policy) StateSize() int {
	if p.rnn == nil {
		return 0
	}
	return p.rnn.StateSize()
}

// close releases the outside resources of the model and the distribution
// (plugin processes).
func (p *policy) close() error {
	return errors.Join(models.CloseModel(p.model), models.CloseActionDist(p.dist))
}

// DistDim implements rollout.Policy.
func (p *policy) DistDim() int { return p.distDim }

// forward runs the model without gradients on n observations.
func (p *policy) forward(obs []float64, n int) models.Output {
	p.tape.Reset()
	return p.model.Forward(p.tape, p.tape.Const(n, p.obsDim, obs))
}

// forwardSeq runs the recurrent model without gradients one step from
// state on n observations, writing the next state into next when non-nil.
func (p *policy) forwardSeq(obs, state []float64, n int, next []float64) models.Output {
	p.tape.Reset()
	t := p.tape
	return p.rnn.ForwardSeq(t, t.Const(n, p.obsDim, obs), t.Const(n, p.rnn.StateSize(), state), next)
}

// Act implements rollout.Policy: it samples actions (rng nil: takes the
// distribution's mode) and reports their log-likelihoods, the value
// estimates and the distribution inputs. A recurrent policy acts from the
// zero state.
func (p *policy) Act(obs []float64, n int, rng *rand.Rand, out *rollout.Actions) error {
	if p.rnn != nil {
		return p.ActRecurrent(obs, make([]float64, n*p.rnn.StateSize()), n, rng, out)
	}
	return p.fill(p.forward(obs, n), n, rng, out)
}

// ActRecurrent implements rollout.Recurrent.
func (p *policy) ActRecurrent(obs, state []float64, n int, rng *rand.Rand, out *rollout.Actions) error {
	out.State = sample.Resize(out.State, n*p.rnn.StateSize())
	return p.fill(p.forwardSeq(obs, state, n, out.State), n, rng, out)
}

// fill turns the model's outputs into actions, log-likelihoods, values
// and distribution inputs.
func (p *policy) fill(o models.Output, n int, rng *rand.Rand, out *rollout.Actions) error {
	err := p.tape.Err()
	if err != nil { // a custom model's failure
		return err
	}
	out.Actions = sample.Resize(out.Actions, n*p.actDim)
	out.Logp = sample.Resize(out.Logp, n)
	out.VPreds = sample.Resize(out.VPreds, n)
	out.DistInputs = sample.Resize(out.DistInputs, n*p.distDim)
	copy(out.DistInputs, o.Out.Data)
	copy(out.VPreds, o.Value.Data)
	if rng == nil {
		err = p.dist.Mode(out.DistInputs, out.Actions)
	} else {
		err = p.dist.Sample(rng, out.DistInputs, out.Actions)
	}
	if err != nil {
		return err
	}
	return p.dist.LogProb(out.DistInputs, out.Actions, out.Logp)
}

// Values implements rollout.Policy.
func (p *policy) Values(obs []float64, n int, vals []float64) error {
	if p.rnn != nil {
		return p.ValuesRecurrent(obs, make([]float64, n*p.rnn.StateSize()), n, vals)
	}
	o := p.forward(obs, n)
	if err := p.tape.Err(); err != nil {
		return err
	}
	copy(vals[:n], o.Value.Data)
	return nil
}

// ValuesRecurrent implements rollout.Recurrent.
func (p *policy) ValuesRecurrent(obs, state []float64, n int, vals []float64) error {
	o := p.forwardSeq(obs, state, n, nil)
	copy(vals[:n], o.Value.Data)
	return nil
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
