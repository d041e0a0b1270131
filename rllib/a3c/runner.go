package a3c

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"

	"github.com/gray-ml/gray"
	"github.com/gray-ml/gray/envs"
	"github.com/gray-ml/gray/models"
	"github.com/gray-ml/gray/rllib"
	"github.com/gray-ml/gray/rllib/rollout"
	"github.com/gray-ml/gray/rllib/sample"
)

// RunnerSpec is what a runner is built from; it travels to the runner's
// process as the actor's constructor argument.
type RunnerSpec struct {
	// WorkerSpec's Index is the runner's number (1..num_workers).
	rllib.WorkerSpec[Config]
	// Restart is how many times this runner has been replaced, so a
	// replacement explores differently from the runner it replaces.
	Restart int
}

// Gradient is a runner's answer: the gradient of the A3C loss on one
// rollout, with what the driver reports.
type Gradient struct {
	// Index is the runner's number.
	Index int
	// Grad is the (clipped) gradient, one value per weight.
	Grad []float64
	// Steps is the number of environment steps in the rollout.
	Steps int
	// Episodes lists the episodes that ended during the rollout.
	Episodes []sample.Episode
	// PolicyLoss, VFLoss and Entropy are the loss terms (batch means);
	// GradNorm is the gradient's global norm before clipping.
	PolicyLoss, VFLoss, Entropy, GradNorm float64
}

// Runner simulates its environments and computes gradients: the state of
// the "a3c.Runner" actor (Ray 0.2's Runner).
type Runner struct {
	rllib.Stateless // its checkpoint is empty

	spec   RunnerSpec
	pol    *policy
	worker *rollout.Worker
	rng    *rand.Rand
	// seq and the buffers after it lay a recurrent policy's sequences out
	// for the loss.
	seq                  sample.Padded
	seqIdx, starts       []int
	obs, act, adv, vtarg []float64
}

// NewRunner builds the runner's environments (envs.MakeVector) and its copy
// of the policy.
func NewRunner(ctx context.Context, spec RunnerSpec) (*Runner, error) {
	cfg := spec.Config
	return rllib.BuildWorker("A3C runner", spec.WorkerSpec, cfg.NumEnvsPerWorker, func(vec envs.Vector) (*Runner, error) {
		pol, err := newPolicy(spec.Env, vec.ObservationSpace(), vec.ActionSpace(), cfg.Model, spec.Seed)
		if err != nil {
			return nil, err
		}
		// Replacements get their own environment seeds as well.
		envSeed := spec.Seed + int64(spec.Restart)*104729
		w, err := rollout.NewWithVector(rollout.Config{
			Env: spec.Env, FragmentLength: cfg.RolloutFragmentLength, Seed: envSeed, Index: spec.Index,
			MaxSeqLen: cfg.Model.MaxSeqLen,
		}, vec, pol, pol)
		if err != nil {
			return nil, err
		}
		rng := rand.New(rand.NewPCG(uint64(spec.Seed), uint64(spec.Index)<<32|uint64(spec.Restart)))
		return &Runner{spec: spec, pol: pol, worker: w, rng: rng}, nil
	})
}

// ComputeGradient sets the weights it was sent, runs every environment
// rollout_fragment_length steps (episodes continue across calls), computes
// advantages and returns the gradient of
//
//	-mean(logπ(a|s)·A) + vf_loss_coeff·½·mean((V(s) - R)²) - entropy_coeff·mean(H(π(·|s)))
//
// clipped to grad_clip.
func (r *Runner) ComputeGradient(ctx context.Context, weights []float64) (Gradient, error) {
	fail := func(err error) (Gradient, error) {
		return Gradient{}, fmt.Errorf("A3C runner %d: %w", r.spec.Index, err)
	}
	if err := r.pol.Params.SetFlat(weights); err != nil {
		return fail(err)
	}
	b, err := r.worker.Sample(ctx, r.rng)
	if err != nil {
		return fail(err)
	}
	cfg := &r.spec.Config
	if cfg.UseGAE {
		err = sample.ComputeGAE(&b, cfg.Gamma, cfg.Lambda)
	} else {
		err = sample.DiscountedReturns(&b, cfg.Gamma)
	}
	if err != nil {
		return fail(err)
	}
	g := Gradient{Index: r.spec.Index, Steps: b.Len(), Episodes: b.Episodes}
	if err := r.loss(&b, &g); err != nil {
		return fail(err)
	}
	return g, nil
}

// loss records the A3C loss on the batch, backpropagates and fills g. A
// recurrent policy replays the batch's sequences from their initial
// states, padded, with the padding masked out of every mean.
func (r *Runner) loss(b *sample.Batch, g *Gradient) error {
	cfg := &r.spec.Config
	n, t := b.Len(), r.pol.grad
	t.Reset()
	obs, act, adv, vtarg := b.Obs, b.Actions, b.Advantages, b.ValueTargets
	var o models.Output
	mean := t.Mean
	if r.pol.RNN != nil {
		r.layout(b)
		p := &r.seq
		n = p.T * p.B
		obs, act = r.obs, r.act
		adv, vtarg = r.adv, r.vtarg
		o = r.pol.RNN.ForwardSeq(t, t.Const(n, b.ObsDim, obs), t.Const(p.B, r.pol.RNN.StateSize(), p.State), nil)
		mask, inv := t.Const(n, 1, p.Mask), 1/float64(p.Valid)
		mean = func(x *models.Tensor) *models.Tensor { return t.Scale(t.Sum(t.Mul(x, mask)), inv) }
	} else {
		o = r.pol.Model.Forward(t, t.Const(n, b.ObsDim, obs))
	}
	logp := r.pol.Dist.LogLikelihood(t, o.Out, t.Const(n, b.ActDim, act))
	policyLoss := t.Neg(mean(t.Mul(logp, t.Const(n, 1, adv))))
	vfLoss := t.Scale(mean(t.Square(t.Sub(o.Value, t.Const(n, 1, vtarg)))), 0.5)
	entropy := mean(r.pol.Dist.Entropy(t, o.Out))
	total := t.Sub(t.Add(policyLoss, t.Scale(vfLoss, cfg.VFLossCoeff)), t.Scale(entropy, cfg.EntropyCoeff))
	if err := t.Err(); err != nil {
		return err
	}
	g.PolicyLoss, g.VFLoss, g.Entropy = policyLoss.Item(), vfLoss.Item(), entropy.Item()
	if !rllib.Finite(total.Item()) {
		return fmt.Errorf("loss is %v (policy %v, value %v, entropy %v); lower lr or set grad_clip", total.Item(), g.PolicyLoss, g.VFLoss, g.Entropy)
	}
	r.pol.Params.ZeroGrad()
	t.Backward(total)
	if err := r.pol.Params.CheckFinite(true); err != nil {
		return fmt.Errorf("gradient: %w", err)
	}
	grads := r.pol.Params.Grads()
	if cfg.GradClip > 0 {
		g.GradNorm = models.ClipByGlobalNorm(grads, cfg.GradClip)
	} else {
		g.GradNorm = models.GlobalNorm(grads)
	}
	g.Grad = r.pol.Params.GetFlatGrad(nil)
	return nil
}

// layout pads all of b's sequences, in order, for the recurrent loss.
func (r *Runner) layout(b *sample.Batch) {
	r.seqIdx = r.seqIdx[:0]
	for i := range b.SeqLens {
		r.seqIdx = append(r.seqIdx, i)
	}
	r.starts = b.SeqStarts(r.starts)
	p := &r.seq
	p.Layout(b, r.starts, r.seqIdx)
	r.obs = p.Pad(r.obs, b.Obs, b.ObsDim)
	r.act = p.Pad(r.act, b.Actions, b.ActDim)
	r.adv = p.Pad(r.adv, b.Advantages, 1)
	r.vtarg = p.Pad(r.vtarg, b.ValueTargets, 1)
}

// Pid returns the runner's process id (tests use it to kill the process).
func (r *Runner) Pid(ctx context.Context) (int, error) { return os.Getpid(), nil }

// Close releases the runner's environments and its distribution's outside
// resources (a distribution plugin's process).
func (r *Runner) Close() error {
	err := r.worker.Close()
	if cerr := models.CloseActionDist(r.pol.Dist); err == nil {
		err = cerr
	}
	return err
}

// The runner actor (rllib.WorkerActor).
var (
	runnerActor    = rllib.WorkerActor("a3c.Runner", NewRunner)
	gradientMethod = gray.Method1(runnerActor, "ComputeGradient", (*Runner).ComputeGradient)
	pidMethod      = gray.Method0(runnerActor, "Pid", (*Runner).Pid)
)
