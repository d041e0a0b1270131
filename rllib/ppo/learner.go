package ppo

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/gray-ml/gray/models"
	"github.com/gray-ml/gray/rllib/sample"
)

// learner runs PPO's minibatch SGD on the policy's parameters.
type learner struct {
	cfg  *Config
	pol  *policy
	tape *models.Tape
	opt  *models.Adam
	perm []int
	// Minibatch buffers, gathered from shuffled rows.
	obs, act, logp, adv, vtarg, vpred, dist []float64
}

func newLearner(cfg *Config, pol *policy) *learner {
	return &learner{cfg: cfg, pol: pol, tape: models.NewTape(), opt: models.NewAdam(cfg.LR)}
}

// learnStats are the means of the losses over the last epoch.
type learnStats struct {
	policyLoss, vfLoss, totalLoss, entropy, kl, gradNorm float64
	minibatches                                          int
}

func (s *learnStats) add(o learnStats) {
	s.policyLoss += o.policyLoss
	s.vfLoss += o.vfLoss
	s.totalLoss += o.totalLoss
	s.entropy += o.entropy
	s.kl += o.kl
	s.gradNorm += o.gradNorm
	s.minibatches++
}

func (s learnStats) mean() learnStats {
	n := float64(max(1, s.minibatches))
	return learnStats{s.policyLoss / n, s.vfLoss / n, s.totalLoss / n, s.entropy / n, s.kl / n, s.gradNorm / n, s.minibatches}
}

// nanError reports a non-finite loss, gradient or weight and where it
// appeared.
type nanError struct {
	what             string
	epoch, minibatch int
}

func (e *nanError) Error() string {
	return fmt.Sprintf("%s is NaN or Inf at SGD epoch %d, minibatch %d", e.what, e.epoch, e.minibatch)
}

// learn runs NumSGDIter epochs of minibatch SGD over b (advantages and
// value targets filled) and returns the last epoch's mean statistics. The
// shuffle draws from rng. On a non-finite value it stops with a *nanError;
// the caller restores the weights.
func (l *learner) learn(b *sample.Batch, lr, klCoeff float64, rng *rand.Rand) (learnStats, error) {
	n := b.Len()
	mb := min(l.cfg.SGDMinibatchSize, n)
	numMB := n / mb
	if cap(l.perm) < n {
		l.perm = make([]int, n)
	}
	l.perm = l.perm[:n]
	for i := range l.perm {
		l.perm[i] = i
	}
	l.opt.LR = lr
	var last learnStats
	for epoch := 0; epoch < l.cfg.NumSGDIter; epoch++ {
		rng.Shuffle(n, func(i, j int) { l.perm[i], l.perm[j] = l.perm[j], l.perm[i] })
		var acc learnStats
		for k := 0; k < numMB; k++ {
			s, err := l.step(b, l.perm[k*mb:(k+1)*mb], klCoeff)
			if err != nil {
				if ne, ok := err.(*nanError); ok {
					ne.epoch, ne.minibatch = epoch+1, k+1
				}
				return learnStats{}, err
			}
			acc.add(s)
		}
		last = acc.mean()
	}
	return last, nil
}

// gather copies the rows idx of b's columns into the minibatch buffers.
func (l *learner) gather(b *sample.Batch, idx []int) {
	od, ad, dd := b.ObsDim, b.ActDim, b.DistDim
	m := len(idx)
	l.obs = grow(l.obs, m*od)
	l.act = grow(l.act, m*ad)
	l.dist = grow(l.dist, m*dd)
	l.logp = grow(l.logp, m)
	l.adv = grow(l.adv, m)
	l.vtarg = grow(l.vtarg, m)
	l.vpred = grow(l.vpred, m)
	for k, r := range idx {
		copy(l.obs[k*od:(k+1)*od], b.Obs[r*od:(r+1)*od])
		copy(l.act[k*ad:(k+1)*ad], b.Actions[r*ad:(r+1)*ad])
		copy(l.dist[k*dd:(k+1)*dd], b.DistInputs[r*dd:(r+1)*dd])
		l.logp[k] = b.Logp[r]
		l.adv[k] = b.Advantages[r]
		l.vtarg[k] = b.ValueTargets[r]
		l.vpred[k] = b.VPreds[r]
	}
}

// step is one gradient step on the minibatch rows idx:
//
//	loss = -mean(min(r·A, clip(r, 1-ε, 1+ε)·A)) + kl_coeff·KL(old‖new)
//	       + vf_loss_coeff·mean(vf_err) - entropy_coeff·entropy
//
// with r = π(a|s)/π_old(a|s) and vf_err the squared error of the value
// prediction (the larger of the clipped and unclipped one with
// vf_clip_param).
func (l *learner) step(b *sample.Batch, idx []int, klCoeff float64) (learnStats, error) {
	cfg, t, pol := l.cfg, l.tape, l.pol
	l.gather(b, idx)
	m := len(idx)
	t.Reset()
	o := pol.model.Forward(t, t.Const(m, b.ObsDim, l.obs))
	logp := pol.dist.LogLikelihood(t, o.Out, t.Const(m, b.ActDim, l.act))
	ratio := t.Exp(t.Sub(logp, t.Const(m, 1, l.logp)))
	adv := t.Const(m, 1, l.adv)
	surr := t.Minimum(t.Mul(ratio, adv), t.Mul(t.Clip(ratio, 1-cfg.ClipParam, 1+cfg.ClipParam), adv))
	policyLoss := t.Neg(t.Mean(surr))
	kl := t.Mean(pol.dist.KL(t, t.Const(m, b.DistDim, l.dist), o.Out))
	entropy := t.Mean(pol.dist.Entropy(t, o.Out))
	vtarg := t.Const(m, 1, l.vtarg)
	vfErr := t.Square(t.Sub(o.Value, vtarg))
	if cfg.VFClipParam > 0 {
		vOld := t.Const(m, 1, l.vpred)
		vClipped := t.Add(vOld, t.Clip(t.Sub(o.Value, vOld), -cfg.VFClipParam, cfg.VFClipParam))
		vfErr = t.Maximum(vfErr, t.Square(t.Sub(vClipped, vtarg)))
	}
	vfLoss := t.Mean(vfErr)
	total := t.Add(policyLoss, t.Scale(vfLoss, cfg.VFLossCoeff))
	if klCoeff != 0 {
		total = t.Add(total, t.Scale(kl, klCoeff))
	}
	if cfg.EntropyCoeff != 0 {
		total = t.Sub(total, t.Scale(entropy, cfg.EntropyCoeff))
	}
	s := learnStats{
		policyLoss: policyLoss.Item(), vfLoss: vfLoss.Item(), totalLoss: total.Item(),
		entropy: entropy.Item(), kl: kl.Item(),
	}
	if !finite(s.totalLoss) {
		return s, &nanError{what: "the total loss"}
	}
	params := pol.params
	params.ZeroGrad()
	t.Backward(total)
	s.gradNorm = models.ClipByGlobalNorm(params.Grads(), cfg.GradClip)
	if !finite(s.gradNorm) {
		return s, &nanError{what: "the gradient"}
	}
	if err := l.opt.Step(params.Flat(), params.Grads()); err != nil {
		return s, err
	}
	for _, w := range params.Flat() {
		if !finite(w) {
			return s, &nanError{what: "a weight"}
		}
	}
	return s, nil
}

func finite(x float64) bool { return !math.IsNaN(x) && !math.IsInf(x, 0) }
