package ppo

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/gray-ml/gray/models"
	"github.com/gray-ml/gray/rllib/sample"
)

// learner runs PPO's minibatch SGD on the policy's parameters.
//
// Each minibatch is split into fixed parts (shards) whose gradients are
// computed concurrently by a team of num_learner_threads goroutines
// (models.Team) on copies of the model that share the policy's weights
// (each has gradients of its own), then summed in a fixed order; the
// gradient clipping and the Adam step are split over the team too. The
// arithmetic depends on the thread count but not on how many cores run
// the shards, so a seed and a thread count give the same run on any
// machine, and n cores compute a step in up to 1/n of the time.
//
// A model whose policy and value networks share no weight (a fully
// connected network with a value network of its own, the default) is
// split by network before it is split by rows: each shard's policy and
// value losses are two parts, each on a tape of its own, writing their
// networks' slices of the shard's gradient. The two networks are about
// the same size, so two threads each compute half of the step with the
// whole minibatch's products, and nothing is summed: for a small network,
// whose step is a fraction of a millisecond, row shards would cost their
// sum and their smaller products more than a thread saves. A shard's
// parts compute the values the whole model's loss would, bit for bit, so
// one shard split by network gives one thread's run.
//
// With a recurrent model the units of shuffling are the batch's sequences
// rather than its rows: each minibatch holds sgd_minibatch_size /
// max_seq_len sequences, replayed from their stored initial states with
// the padding masked out of every mean (truncated backpropagation through
// time).
type learner struct {
	cfg    *Config
	pol    *policy
	shards []*shard
	opt    *models.Adam
	team   *models.Team
	// tr shares the weights' transposes between the shards' backward
	// passes (nil with one shard).
	tr *models.Transposes
	// grads holds each shard's gradient vector, shard 0's (the master's)
	// first, for models.SumGrads.
	grads [][]float64
	perm  []int
	// starts are the first rows of the batch's sequences (recurrent only).
	starts []int
	// spans are the ranges of the weights of a split shard's networks in
	// the order the weights come (nets), when the two cover all the
	// weights: a step of one split shard is then a models.SplitStep.
	spans [2][2]int
	nets  [2]int
	whole bool
}

// shard computes the loss and gradients of part of a minibatch.
type shard struct {
	model  models.Model
	rnn    models.Recurrent // model when recurrent, else nil
	params *models.Params
	tape   *models.Tape
	mb     minibatch
	stats  learnStats
	// towers are the model's policy and value networks when the learner
	// splits its shards by network (towers[0].Forward nil: it does not);
	// the value network's part records on vtape from its own copy of the
	// rows, vmb. The parts leave their unweighted terms in stats and
	// vstats, and the shard's share of the rows in weight.
	towers [2]models.Tower
	vtape  *models.Tape
	vmb    minibatch
	vstats learnStats
	weight float64
	// copied is set when the shard's model keeps weights of its own (a
	// custom model, which may mirror them elsewhere): they are copied from
	// the policy's before each step.
	copied bool
}

// minibatch is one shard's rows, gathered from the batch: plain rows, or
// padded time-major sequences (seq) for a recurrent model.
type minibatch struct {
	rows, valid                             int
	obs, act, logp, adv, vtarg, vpred, dist []float64
	seq                                     sample.Padded
}

// minShardRows is the fewest rows a shard gets: a minibatch of fewer than
// 2·minShardRows rows runs as one shard, and in general as at most
// rows/minShardRows shards (goroutine hand-offs would cost more than they
// save). The rule depends on the config alone, so the shard count, and
// with it the arithmetic, is fixed for a config and a thread count.
const minShardRows = 32

// towered is a model whose policy and value networks share no weight
// (models.FullyConnected).
type towered interface {
	Towers() (policy, value models.Tower, ok bool)
}

// splitsByNetwork reports whether a learner of threads threads splits
// m's shards by network.
func splitsByNetwork(m models.Model, threads int) bool {
	if tm, ok := m.(towered); ok && threads > 1 {
		_, _, ok := tm.Towers()
		return ok
	}
	return false
}

// newLearner builds the learner for threads goroutines
// (num_learner_threads): a shard per thread, or per two threads when the
// model's shards are split by network; copyPolicy makes a model of the
// same shape for each shard after the first, which uses pol itself.
func newLearner(cfg *Config, pol *policy, threads int, copyPolicy func() (*policy, error)) (*learner, error) {
	l := &learner{cfg: cfg, pol: pol, opt: models.NewAdam(cfg.LR), team: models.NewTeam(threads)}
	split := splitsByNetwork(pol.Model, threads)
	shards := threads
	if split {
		shards = (threads + 1) / 2
	}
	l.shards = append(l.shards, &shard{model: pol.Model, rnn: pol.RNN, params: pol.Params, tape: models.NewTape()})
	for len(l.shards) < shards {
		p, err := copyPolicy()
		if err != nil {
			_ = l.close()
			return nil, err
		}
		// Every shard uses the first policy's distribution (l.pol.Dist):
		// release the copy's, a plugin process when it is one.
		if err := models.CloseActionDist(p.Dist); err != nil {
			_ = models.CloseModel(p.Model)
			_ = l.close()
			return nil, err
		}
		sh := &shard{model: p.Model, rnn: p.RNN, params: p.Params, tape: models.NewTape(), copied: cfg.Model.CustomModel != ""}
		if !sh.copied {
			if err := sh.params.ShareWeights(pol.Params); err != nil {
				_ = models.CloseModel(p.Model)
				_ = l.close()
				return nil, err
			}
		}
		l.shards = append(l.shards, sh)
	}
	l.grads = make([][]float64, len(l.shards))
	for k, sh := range l.shards {
		l.grads[k] = sh.params.Grads()
		if split { // after ShareWeights: the towers view the shared weights
			sh.towers[0], sh.towers[1], _ = sh.model.(towered).Towers()
			sh.vtape = models.NewTape()
		}
	}
	if split {
		l.nets = [2]int{0, 1}
		for k, net := range l.nets {
			l.spans[k][0], l.spans[k][1] = l.shards[0].towers[net].Params.Span()
		}
		if l.spans[1][0] < l.spans[0][0] {
			l.nets, l.spans = [2]int{1, 0}, [2][2]int{l.spans[1], l.spans[0]}
		}
		l.whole = l.spans[0][0] == 0 && l.spans[0][1] == l.spans[1][0] && l.spans[1][1] == len(l.grads[0])
	}
	if len(l.shards) > 1 {
		l.tr = models.NewTransposes(pol.Params)
		for _, sh := range l.shards {
			sh.tape.ShareTransposes(l.tr)
			if sh.vtape != nil {
				sh.vtape.ShareTransposes(l.tr)
			}
		}
	}
	return l, nil
}

// close stops the team and releases the models of the extra shards (shard
// 0's is the policy's own, which its owner closes).
func (l *learner) close() error {
	l.team.Close()
	var errs []error
	for _, sh := range l.shards[1:] {
		errs = append(errs, models.CloseModel(sh.model))
	}
	return errors.Join(errs...)
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
// shuffle draws from rng. On a non-finite value it stops with a *nanError,
// and on ctx's end with ctx's error; the caller restores the weights.
func (l *learner) learn(ctx context.Context, b *sample.Batch, lr, klCoeff float64, rng *rand.Rand) (learnStats, error) {
	// n units (rows, or sequences for a recurrent model), mb per minibatch.
	n := b.Len()
	mb := min(l.cfg.SGDMinibatchSize, n)
	if l.pol.RNN != nil {
		if len(b.SeqLens) == 0 {
			return learnStats{}, errors.New("the recurrent policy's batch has no sequences")
		}
		l.starts = b.SeqStarts(l.starts)
		n = len(b.SeqLens)
		mb = min(max(1, l.cfg.SGDMinibatchSize/l.cfg.Model.MaxSeqLen), n)
	}
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
		if err := ctx.Err(); err != nil {
			return learnStats{}, fmt.Errorf("SGD interrupted before epoch %d: %w", epoch+1, err)
		}
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

// lossFields are the columns of a minibatch beyond its observations, by
// the loss terms that read them (a network's part of a shard split by
// network gathers only its own).
type lossFields uint8

const (
	// policyFields: actions, the old distribution's inputs and
	// log-likelihoods, advantages.
	policyFields lossFields = 1 << iota
	// valueFields: value targets and the old value predictions.
	valueFields
	allFields = policyFields | valueFields
)

// gather copies the units idx of b (rows, or sequences when seq is
// true) into the minibatch buffers; sequences are padded time-major.
// Rows copy the observations and the columns of f (sequences, all).
func (m *minibatch) gather(b *sample.Batch, idx []int, seq bool, starts []int, f lossFields) {
	od, ad, dd := b.ObsDim, b.ActDim, b.DistDim
	if seq {
		p := &m.seq
		p.Layout(b, starts, idx)
		m.rows, m.valid = p.T*p.B, p.Valid
		m.obs = p.Pad(m.obs, b.Obs, od)
		m.act = p.Pad(m.act, b.Actions, ad)
		m.dist = p.Pad(m.dist, b.DistInputs, dd)
		m.logp = p.Pad(m.logp, b.Logp, 1)
		m.adv = p.Pad(m.adv, b.Advantages, 1)
		m.vtarg = p.Pad(m.vtarg, b.ValueTargets, 1)
		m.vpred = p.Pad(m.vpred, b.VPreds, 1)
		return
	}
	n := len(idx)
	m.rows, m.valid = n, n
	m.obs = sample.Resize(m.obs, n*od)
	for k, r := range idx {
		copy(m.obs[k*od:(k+1)*od], b.Obs[r*od:(r+1)*od])
	}
	if f&policyFields != 0 {
		m.act = sample.Resize(m.act, n*ad)
		m.dist = sample.Resize(m.dist, n*dd)
		m.logp = sample.Resize(m.logp, n)
		m.adv = sample.Resize(m.adv, n)
		for k, r := range idx {
			copy(m.act[k*ad:(k+1)*ad], b.Actions[r*ad:(r+1)*ad])
			copy(m.dist[k*dd:(k+1)*dd], b.DistInputs[r*dd:(r+1)*dd])
			m.logp[k] = b.Logp[r]
			m.adv[k] = b.Advantages[r]
		}
	}
	if f&valueFields != 0 {
		m.vtarg = sample.Resize(m.vtarg, n)
		m.vpred = sample.Resize(m.vpred, n)
		for k, r := range idx {
			m.vtarg[k] = b.ValueTargets[r]
			m.vpred[k] = b.VPreds[r]
		}
	}
}

// step is one gradient step on the minibatch units idx (rows, or
// sequences for a recurrent model):
//
//	loss = -mean(min(r·A, clip(r, 1-ε, 1+ε)·A)) + kl_coeff·KL(old‖new)
//	       + vf_loss_coeff·mean(vf_err) - entropy_coeff·entropy
//
// with r = π(a|s)/π_old(a|s) and vf_err the squared error of the value
// prediction (the larger of the clipped and unclipped one with
// vf_clip_param). With a recurrent model every mean is over the real
// steps only.
func (l *learner) step(b *sample.Batch, idx []int, klCoeff float64) (learnStats, error) {
	m := len(idx)
	seq := l.pol.RNN != nil
	rows := m
	if seq {
		rows = 0
		for _, s := range idx {
			rows += b.SeqLens[s]
		}
	}
	n := min(len(l.shards), m, max(1, rows/minShardRows))
	shards := l.shards[:n]
	split := shards[0].towers[0].Forward != nil
	parts := n
	if split {
		parts = 2 * n
	}
	master := l.pol.Params
	// Shard k takes units [k·m/n, (k+1)·m/n) and weighs its means by its
	// share of the real rows, so the summed gradient is the whole
	// minibatch's. The shards read the master's weights (a custom model's
	// shard starts from a copy of them), whose transposes the last step's
	// update made out of date.
	l.tr.Reset()
	var s learnStats
	var stepErr error
	var upd *models.AdamRanges
	// One meeting of the team: the parts (each writing its gradient), the
	// gradient sum with the norm of the sum (one split shard's networks
	// write one gradient: no sum, SplitStep), then, once the whole sum is
	// in, the checks, clipping by the global norm, the Adam step and the
	// check of the new weights.
	part := func(k int) {
		if split {
			l.towerPart(shards[k/2], k%2, k/2, n, b, idx, rows, klCoeff)
			return
		}
		sh := shards[k]
		if sh.copied {
			copy(sh.params.Flat(), master.Flat())
		}
		lo, hi := models.ShardBounds(k, n, m)
		sh.mb.gather(b, idx[lo:hi], seq, l.starts, allFields)
		sh.stats = l.shardLoss(sh, float64(sh.mb.valid)/float64(rows), klCoeff)
	}
	update := func(norm float64) func(lo, hi int) {
		for _, sh := range shards {
			if err := sh.tape.Err(); err != nil { // a custom model's failure
				stepErr = err
				return nil
			}
			if split {
				sh.stats = l.splitStats(sh.stats, sh.vstats, sh.weight, klCoeff)
			}
			s.policyLoss += sh.stats.policyLoss
			s.vfLoss += sh.stats.vfLoss
			s.totalLoss += sh.stats.totalLoss
			s.entropy += sh.stats.entropy
			s.kl += sh.stats.kl
		}
		switch {
		case !finite(s.totalLoss):
			stepErr = &nanError{what: "the total loss"}
		case !finite(norm):
			stepErr = &nanError{what: "the gradient"}
		}
		if stepErr != nil {
			return nil
		}
		upd, stepErr = l.opt.Ranges(master.Flat(), master.Grads(), models.ClipScale(norm, l.cfg.GradClip))
		if stepErr != nil {
			return nil
		}
		return upd.Apply
	}
	if split && n == 1 && l.whole {
		// The two networks write their own ranges of the one gradient:
		// nothing to sum, and each squares its own blocks for the norm.
		s.gradNorm = l.team.SplitStep(l.grads[0], 2, func(k int) (int, int) { return l.spans[k][0], l.spans[k][1] }, func(k int) {
			l.towerPart(shards[0], l.nets[k], 0, 1, b, idx, rows, klCoeff)
		}, update)
	} else {
		s.gradNorm = l.team.SumStep(l.grads[:n], parts, part, update)
	}
	if stepErr != nil {
		return s, stepErr
	}
	if !upd.Finite() {
		return s, &nanError{what: "a weight"}
	}
	return s, nil
}

// shardLoss computes the loss of the shard's minibatch scaled by weight
// on the shard's model and leaves its gradient in the shard's parameters.
// It returns the weighted statistics.
func (l *learner) shardLoss(sh *shard, weight, klCoeff float64) learnStats {
	t, mb := sh.tape, &sh.mb
	n := mb.rows
	t.Reset()
	var o models.Output
	// mean averages over the real rows: padding rows have mask 0.
	mean := t.Mean
	var mask *models.Tensor
	if sh.rnn != nil {
		p := &mb.seq
		o = sh.rnn.ForwardSeq(t, t.Const(n, l.pol.ObsDim(), mb.obs), t.Const(p.B, sh.rnn.StateSize(), p.State), nil)
		mask = t.Const(n, 1, p.Mask)
		inv := 1 / float64(p.Valid)
		mean = func(x *models.Tensor) *models.Tensor { return t.Scale(t.Sum(t.Mul(x, mask)), inv) }
	} else {
		o = sh.model.Forward(t, t.Const(n, l.pol.ObsDim(), mb.obs))
	}
	policyLoss, kl, entropy := l.policyTerms(t, o.Out, mb, mask, mean)
	vfLoss := l.valueLoss(t, o.Value, mb, mean)
	total := t.Add(policyLoss, t.Scale(vfLoss, l.cfg.VFLossCoeff))
	total = l.penalties(t, total, kl, entropy, klCoeff)
	// The pass writes the shard's gradient: no clear before it, and the
	// sum only reads it.
	t.BackwardSet(t.Scale(total, weight), sh.params)
	return learnStats{
		policyLoss: weight * policyLoss.Item(), vfLoss: weight * vfLoss.Item(), totalLoss: weight * total.Item(),
		entropy: weight * entropy.Item(), kl: weight * kl.Item(),
	}
}

// towerPart computes one network's part of the loss of shard j of n (a
// shard split by network) on the network's own tape and leaves its
// gradient in the network's slice of the shard's gradient: the policy's
// terms (net 0: the surrogate loss, the KL penalty and the entropy bonus)
// or the value function's (net 1). Its statistics, unweighted, go to
// sh.stats or sh.vstats, for splitStats.
func (l *learner) towerPart(sh *shard, net, j, n int, b *sample.Batch, idx []int, rows int, klCoeff float64) {
	t, mb, f := sh.tape, &sh.mb, policyFields
	if net == 1 {
		t, mb, f = sh.vtape, &sh.vmb, valueFields
	}
	lo, hi := models.ShardBounds(j, n, len(idx))
	mb.gather(b, idx[lo:hi], false, nil, f)
	weight := float64(mb.valid) / float64(rows)
	t.Reset()
	out := sh.towers[net].Forward(t, t.Const(mb.rows, l.pol.ObsDim(), mb.obs))
	if net == 1 {
		vfLoss := l.valueLoss(t, out, mb, t.Mean)
		t.BackwardSet(t.Scale(t.Scale(vfLoss, l.cfg.VFLossCoeff), weight), sh.towers[1].Params)
		sh.vstats = learnStats{vfLoss: vfLoss.Item()}
		return
	}
	policyLoss, kl, entropy := l.policyTerms(t, out, mb, nil, t.Mean)
	t.BackwardSet(t.Scale(l.penalties(t, policyLoss, kl, entropy, klCoeff), weight), sh.towers[0].Params)
	sh.stats = learnStats{policyLoss: policyLoss.Item(), kl: kl.Item(), entropy: entropy.Item()}
	sh.weight = weight
}

// splitStats joins the unweighted statistics of a shard's two networks
// (towerPart) into the shard's statistics weighted by its share of the
// rows, with the total loss shardLoss would give.
func (l *learner) splitStats(pol, vf learnStats, weight, klCoeff float64) learnStats {
	// float64(...) keeps each product rounded on its own, as the tape's.
	total := pol.policyLoss + float64(vf.vfLoss*l.cfg.VFLossCoeff)
	if klCoeff != 0 {
		total += float64(pol.kl * klCoeff)
	}
	if l.cfg.EntropyCoeff != 0 {
		total -= float64(pol.entropy * l.cfg.EntropyCoeff)
	}
	return learnStats{
		policyLoss: weight * pol.policyLoss, vfLoss: weight * vf.vfLoss, totalLoss: weight * total,
		entropy: weight * pol.entropy, kl: weight * pol.kl,
	}
}

// policyTerms records the policy's terms of the loss for the distribution
// inputs out, each a mean over the real rows: the clipped surrogate loss,
// the KL divergence from the old distribution and the entropy. mask (nil
// without padding) marks the real rows.
func (l *learner) policyTerms(t *models.Tape, out *models.Tensor, mb *minibatch, mask *models.Tensor, mean func(*models.Tensor) *models.Tensor) (policyLoss, kl, entropy *models.Tensor) {
	cfg, dist, n := l.cfg, l.pol.Dist, mb.rows
	logp := dist.LogLikelihood(t, out, t.Const(n, l.pol.ActDim(), mb.act))
	// The log-ratio is masked before exponentiating, so padding rows
	// (whose old log-likelihood is a placeholder 0) have ratio 1.
	logRatio := t.Sub(logp, t.Const(n, 1, mb.logp))
	if mask != nil {
		logRatio = t.Mul(logRatio, mask)
	}
	ratio := t.Exp(logRatio)
	adv := t.Const(n, 1, mb.adv)
	surr := t.Minimum(t.Mul(ratio, adv), t.Mul(t.Clip(ratio, 1-cfg.ClipParam, 1+cfg.ClipParam), adv))
	policyLoss = t.Neg(mean(surr))
	kl = mean(dist.KL(t, t.Const(n, l.pol.DistDim(), mb.dist), out))
	entropy = mean(dist.Entropy(t, out))
	return policyLoss, kl, entropy
}

// valueLoss records the value function's loss for the predictions v: the
// mean squared error against the value targets, or with vf_clip_param the
// larger of it and the clipped prediction's.
func (l *learner) valueLoss(t *models.Tape, v *models.Tensor, mb *minibatch, mean func(*models.Tensor) *models.Tensor) *models.Tensor {
	cfg, n := l.cfg, mb.rows
	vtarg := t.Const(n, 1, mb.vtarg)
	vfErr := t.Square(t.Sub(v, vtarg))
	if cfg.VFClipParam > 0 {
		vOld := t.Const(n, 1, mb.vpred)
		vClipped := t.Add(vOld, t.Clip(t.Sub(v, vOld), -cfg.VFClipParam, cfg.VFClipParam))
		vfErr = t.Maximum(vfErr, t.Square(t.Sub(vClipped, vtarg)))
	}
	return mean(vfErr)
}

// penalties adds the KL penalty and subtracts the entropy bonus from loss.
func (l *learner) penalties(t *models.Tape, loss, kl, entropy *models.Tensor, klCoeff float64) *models.Tensor {
	if klCoeff != 0 {
		loss = t.Add(loss, t.Scale(kl, klCoeff))
	}
	if l.cfg.EntropyCoeff != 0 {
		loss = t.Sub(loss, t.Scale(entropy, l.cfg.EntropyCoeff))
	}
	return loss
}

func finite(x float64) bool { return !math.IsNaN(x) && !math.IsInf(x, 0) }
