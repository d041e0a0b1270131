package a3c

import (
	"fmt"
	"math/rand/v2"

	"github.com/gray-ml/gray/envs"
	"github.com/gray-ml/gray/models"
	"github.com/gray-ml/gray/rllib/rollout"
	"github.com/gray-ml/gray/rllib/sample"
)

// policy is A3C's actor-critic: the catalog's policy (preprocessor, model
// with a value output, action distribution) seen through the interfaces
// the shared rollout worker needs (rollout.Recurrent: it carries state
// when the model is recurrent, use_lstm). Runners and the driver each hold
// one.
type policy struct {
	*models.Policy
	// rnn is the model when it is recurrent, else nil.
	rnn    models.Recurrent
	params *models.Params
	// act is a no-grad tape for acting; grad records the loss.
	act  *models.Tape
	grad *models.Tape
}

// newPolicy builds the networks for the environment's spaces; the same
// seed gives the same initial weights in every process.
func newPolicy(env string, obs, act envs.Space, opts models.ModelOptions, seed int64) (*policy, error) {
	opts.Value = true
	// A free log-std suits Gaussian policies only; for a Categorical it
	// would turn half the logits into constants.
	if _, ok := act.(envs.Box); !ok {
		opts.FreeLogStd = false
	}
	p, err := models.NewPolicy(env, obs, act, "", opts, uint64(seed))
	if err != nil {
		return nil, err
	}
	t := models.NewTape()
	t.SetNoGrad(true)
	pol := &policy{Policy: p, params: p.Model.Params(), act: t, grad: models.NewTape()}
	if opts.UseLSTM {
		rnn, ok := p.Model.(models.Recurrent)
		if !ok {
			return nil, fmt.Errorf("model: use_lstm built a %T, which is not recurrent", p.Model)
		}
		pol.rnn = rnn
	}
	return pol, nil
}

// StateSize implements rollout.Recurrent: 0 for a feed-forward model.
func (p *policy) StateSize() int {
	if p.rnn == nil {
		return 0
	}
	return p.rnn.StateSize()
}

// DistDim implements rollout.Policy.
func (p *policy) DistDim() int { return p.Dist.InputSize() }

// Act implements rollout.Policy on processed observations: it samples
// actions (rng nil: takes the mode) and reports log-likelihoods, values and
// distribution inputs.
func (p *policy) Act(obs []float64, n int, rng *rand.Rand, out *rollout.Actions) error {
	if p.rnn != nil {
		return p.ActRecurrent(obs, make([]float64, n*p.rnn.StateSize()), n, rng, out)
	}
	p.act.Reset()
	return p.fill(p.Model.Forward(p.act, p.act.Const(n, p.Preprocessor.Size(), obs)), n, rng, out)
}

// ActRecurrent implements rollout.Recurrent.
func (p *policy) ActRecurrent(obs, state []float64, n int, rng *rand.Rand, out *rollout.Actions) error {
	out.State = sample.Resize(out.State, n*p.rnn.StateSize())
	return p.fill(p.forwardSeq(obs, state, n, out.State), n, rng, out)
}

// forwardSeq runs the recurrent model one step from state without
// gradients, writing the next state into next when non-nil.
func (p *policy) forwardSeq(obs, state []float64, n int, next []float64) models.Output {
	t := p.act
	t.Reset()
	return p.rnn.ForwardSeq(t, t.Const(n, p.Preprocessor.Size(), obs), t.Const(n, p.rnn.StateSize(), state), next)
}

// fill turns the model's outputs into actions, log-likelihoods, values
// and distribution inputs.
func (p *policy) fill(o models.Output, n int, rng *rand.Rand, out *rollout.Actions) error {
	out.DistInputs = append(out.DistInputs[:0], o.Out.Data...)
	out.VPreds = append(out.VPreds[:0], o.Value.Data...)
	out.Actions = sample.Resize(out.Actions, n*p.Dist.ActionSize())
	var err error
	if rng == nil {
		err = p.Dist.Mode(out.DistInputs, out.Actions)
	} else {
		err = p.Dist.Sample(rng, out.DistInputs, out.Actions)
	}
	if err != nil {
		return err
	}
	out.Logp = sample.Resize(out.Logp, n)
	return p.Dist.LogProb(out.DistInputs, out.Actions, out.Logp)
}

// ValuesRecurrent implements rollout.Recurrent.
func (p *policy) ValuesRecurrent(obs, state []float64, n int, vals []float64) error {
	copy(vals[:n], p.forwardSeq(obs, state, n, nil).Value.Data)
	return nil
}

// Values implements rollout.Policy.
func (p *policy) Values(obs []float64, n int, vals []float64) error {
	if p.rnn != nil {
		return p.ValuesRecurrent(obs, make([]float64, n*p.rnn.StateSize()), n, vals)
	}
	p.act.Reset()
	o := p.Model.Forward(p.act, p.act.Const(n, p.Preprocessor.Size(), obs))
	copy(vals[:n], o.Value.Data)
	return nil
}

// Size implements rollout.ObsProcessor.
func (p *policy) Size() int { return p.Preprocessor.Size() }

// Process implements rollout.ObsProcessor: the catalog's preprocessor (A3C
// keeps no running observation filter).
func (p *policy) Process(dst, raw []float64, _ bool) error {
	if err := p.Preprocessor.Transform(raw, dst); err != nil {
		return fmt.Errorf("observation: %w", err)
	}
	return nil
}
