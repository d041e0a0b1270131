package a3c

import (
	"fmt"
	"math/rand/v2"

	"github.com/gray-ml/gray/envs"
	"github.com/gray-ml/gray/models"
	"github.com/gray-ml/gray/rllib/rollout"
)

// policy is A3C's actor-critic: the catalog's policy (preprocessor, model
// with a value output, action distribution) seen through the interfaces
// the shared rollout worker needs. Runners and the driver each hold one.
type policy struct {
	*models.Policy
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
	return &policy{Policy: p, params: p.Model.Params(), act: t, grad: models.NewTape()}, nil
}

// DistDim implements rollout.Policy.
func (p *policy) DistDim() int { return p.Dist.InputSize() }

// Act implements rollout.Policy on processed observations: it samples
// actions (rng nil: takes the mode) and reports log-likelihoods, values and
// distribution inputs.
func (p *policy) Act(obs []float64, n int, rng *rand.Rand, out *rollout.Actions) error {
	p.act.Reset()
	o := p.Model.Forward(p.act, p.act.Const(n, p.Preprocessor.Size(), obs))
	out.DistInputs = append(out.DistInputs[:0], o.Out.Data...)
	out.VPreds = append(out.VPreds[:0], o.Value.Data...)
	out.Actions = resize(out.Actions, n*p.Dist.ActionSize())
	var err error
	if rng == nil {
		err = p.Dist.Mode(out.DistInputs, out.Actions)
	} else {
		err = p.Dist.Sample(rng, out.DistInputs, out.Actions)
	}
	if err != nil {
		return err
	}
	out.Logp = resize(out.Logp, n)
	return p.Dist.LogProb(out.DistInputs, out.Actions, out.Logp)
}

// Values implements rollout.Policy.
func (p *policy) Values(obs []float64, n int, vals []float64) error {
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

func resize(xs []float64, n int) []float64 {
	if cap(xs) >= n {
		return xs[:n]
	}
	return make([]float64, n)
}
