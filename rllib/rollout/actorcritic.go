package rollout

import (
	"errors"
	"fmt"
	"math/rand/v2"

	"github.com/gray-ml/gray/envs"
	"github.com/gray-ml/gray/models"
	"github.com/gray-ml/gray/rllib/sample"
)

// ActorCritic is the policy of the actor-critic algorithms (PPO, A3C): the
// catalog's model, with a value output, and its action distribution. It
// implements Recurrent, and is recurrent when the model is (use_lstm).
// An algorithm keeps its own loss beside it; this is how it acts.
type ActorCritic struct {
	Model models.Model
	// RNN is the model when it is recurrent, else nil.
	RNN    models.Recurrent
	Dist   models.ActionDist
	Params *models.Params
	// tape is a no-grad tape for acting; a learner records on its own.
	tape                    *models.Tape
	obsDim, actDim, distDim int
}

// NewActorCritic builds the networks for observations that pre turns
// into the model's input and for the action space act; the same seed
// gives the same initial weights in every process. A free log-std applies
// to Gaussian policies only: for a Categorical it would turn half the
// logits into constants.
func NewActorCritic(pre models.Preprocessor, act envs.Space, opts models.ModelOptions, seed int64) (*ActorCritic, error) {
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
	p := &ActorCritic{
		Model: model, Dist: dist, Params: model.Params(), tape: tape,
		obsDim: pre.Size(), actDim: dist.ActionSize(), distDim: dist.InputSize(),
	}
	if opts.UseLSTM {
		rnn, ok := model.(models.Recurrent)
		if !ok {
			return nil, errors.Join(fmt.Errorf("model: use_lstm built a %T, which is not recurrent", model), p.Close())
		}
		p.RNN = rnn
	}
	return p, nil
}

// Close releases the outside resources of the model and the distribution
// (plugin processes).
func (p *ActorCritic) Close() error {
	return errors.Join(models.CloseModel(p.Model), models.CloseActionDist(p.Dist))
}

// ObsDim is the width of a processed observation, the model's input.
func (p *ActorCritic) ObsDim() int { return p.obsDim }

// ActDim is the width of an action.
func (p *ActorCritic) ActDim() int { return p.actDim }

// DistDim implements Policy.
func (p *ActorCritic) DistDim() int { return p.distDim }

// StateSize implements Recurrent: 0 for a feed-forward model.
func (p *ActorCritic) StateSize() int {
	if p.RNN == nil {
		return 0
	}
	return p.RNN.StateSize()
}

// forward runs the model without gradients on n observations.
func (p *ActorCritic) forward(obs []float64, n int) models.Output {
	p.tape.Reset()
	return p.Model.Forward(p.tape, p.tape.Const(n, p.obsDim, obs))
}

// forwardSeq runs the recurrent model without gradients one step from
// state on n observations, writing the next state into next when non-nil.
func (p *ActorCritic) forwardSeq(obs, state []float64, n int, next []float64) models.Output {
	p.tape.Reset()
	t := p.tape
	return p.RNN.ForwardSeq(t, t.Const(n, p.obsDim, obs), t.Const(n, p.RNN.StateSize(), state), next)
}

// Act implements Policy: it samples actions (rng nil: takes the
// distribution's mode) and reports their log-likelihoods, the value
// estimates and the distribution inputs. A recurrent policy acts from the
// zero state.
func (p *ActorCritic) Act(obs []float64, n int, rng *rand.Rand, out *Actions) error {
	if p.RNN != nil {
		return p.ActRecurrent(obs, make([]float64, n*p.RNN.StateSize()), n, rng, out)
	}
	return p.fill(p.forward(obs, n), n, rng, out)
}

// ActRecurrent implements Recurrent.
func (p *ActorCritic) ActRecurrent(obs, state []float64, n int, rng *rand.Rand, out *Actions) error {
	out.State = sample.Resize(out.State, n*p.RNN.StateSize())
	return p.fill(p.forwardSeq(obs, state, n, out.State), n, rng, out)
}

// fill turns the model's outputs into actions, log-likelihoods, values
// and distribution inputs.
func (p *ActorCritic) fill(o models.Output, n int, rng *rand.Rand, out *Actions) error {
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
		err = p.Dist.Mode(out.DistInputs, out.Actions)
	} else {
		err = p.Dist.Sample(rng, out.DistInputs, out.Actions)
	}
	if err != nil {
		return err
	}
	return p.Dist.LogProb(out.DistInputs, out.Actions, out.Logp)
}

// Values implements Policy.
func (p *ActorCritic) Values(obs []float64, n int, vals []float64) error {
	if p.RNN != nil {
		return p.ValuesRecurrent(obs, make([]float64, n*p.RNN.StateSize()), n, vals)
	}
	o := p.forward(obs, n)
	if err := p.tape.Err(); err != nil {
		return err
	}
	copy(vals[:n], o.Value.Data)
	return nil
}

// ValuesRecurrent implements Recurrent.
func (p *ActorCritic) ValuesRecurrent(obs, state []float64, n int, vals []float64) error {
	o := p.forwardSeq(obs, state, n, nil)
	if err := p.tape.Err(); err != nil {
		return err
	}
	copy(vals[:n], o.Value.Data)
	return nil
}
