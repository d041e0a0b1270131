package cuda

import (
	"errors"
	"fmt"
	"math"

	"github.com/gray-ml/gray/models"
)

// PPOConfig are the loss's constants (PPO's config keys of the same
// meaning).
type PPOConfig struct {
	ClipParam, VFClipParam, VFLossCoeff, EntropyCoeff, GradClip float64
}

// PPOBatch is one iteration's training data, rows of the learner's batch
// (advantages already computed and, when wanted, standardised). Act holds
// categorical action indices; Dist the old logits [N×NumOutputs].
type PPOBatch struct {
	N                                       int
	Obs, Act, Logp, Adv, VTarg, VPred, Dist []float64
}

// PPOStats are the last epoch's mean losses and gradient norm.
type PPOStats struct {
	PolicyLoss, VFLoss, TotalLoss, Entropy, KL, GradNorm float64
}

// PPOLearner runs PPO's minibatch SGD for a categorical policy on the
// device. The batch goes up once per Learn; the new weights come down
// once, when asked (Weights).
type PPOLearner struct {
	d   *Device
	net *Net
	cfg PPOConfig
	// the batch's columns on the device, and one minibatch gathered from
	// them
	cap                                          int
	obs, act, logp, adv, vtarg, vpred, dist, idx *Buffer
	mAct, mLogp, mAdv, mVTarg, mVPred, mDist     *Buffer
	dOut, dValue, rowStats, stats                *Buffer
	// snapshots restore the state of before a failed Learn
	snapW, snapM, snapV *Buffer
	bufs                []*Buffer
}

// NewPPOLearner puts model m (a catalog network with a value function and
// categorical outputs) on d for minibatches of mbRows rows.
func NewPPOLearner(d *Device, m models.Model, mbRows int, cfg PPOConfig) (*PPOLearner, error) {
	if m.NumOutputs() > maxCategorical {
		return nil, &models.NoDeviceKernelError{Layer: fmt.Sprintf("a categorical policy over %d actions (the GPU loss handles at most %d)", m.NumOutputs(), maxCategorical)}
	}
	net, err := NewNet(d, m, mbRows)
	if err != nil {
		return nil, err
	}
	l := &PPOLearner{d: d, net: net, cfg: cfg}
	if net.vf == nil {
		_ = net.Close()
		return nil, errors.New("cuda: PPO needs a model with a value function")
	}
	a := net.NumOutputs()
	for _, b := range []struct {
		dst  **Buffer
		what string
		n    int
	}{
		{&l.mAct, "the minibatch actions", mbRows}, {&l.mLogp, "the minibatch log-probabilities", mbRows},
		{&l.mAdv, "the minibatch advantages", mbRows}, {&l.mVTarg, "the minibatch value targets", mbRows},
		{&l.mVPred, "the minibatch value predictions", mbRows}, {&l.mDist, "the minibatch logits", mbRows * a},
		{&l.dOut, "the logits' gradient", mbRows * a}, {&l.dValue, "the value's gradient", mbRows},
		{&l.rowStats, "the per-row losses", mbRows * 5}, {&l.stats, "the loss sums", 8},
		{&l.snapW, "a copy of the weights", net.NumParams()}, {&l.snapM, "a copy of Adam's moments", net.NumParams()},
		{&l.snapV, "a copy of Adam's moments", net.NumParams()},
	} {
		if *b.dst, err = d.Alloc(b.what, b.n); err != nil {
			_ = l.Close()
			return nil, err
		}
		l.bufs = append(l.bufs, *b.dst)
	}
	return l, nil
}

// Net is the learner's network.
func (l *PPOLearner) Net() *Net { return l.net }

// Close frees the learner's device memory.
func (l *PPOLearner) Close() error {
	errs := []error{l.freeBatch(), l.net.Close()}
	for _, b := range l.bufs {
		errs = append(errs, b.Free())
	}
	l.bufs = nil
	return errors.Join(errs...)
}

func (l *PPOLearner) freeBatch() error {
	var errs []error
	for _, b := range []*Buffer{l.obs, l.act, l.logp, l.adv, l.vtarg, l.vpred, l.dist, l.idx} {
		errs = append(errs, b.Free())
	}
	l.cap = 0
	return errors.Join(errs...)
}

// upload puts the batch on the device, growing the buffers when needed.
func (l *PPOLearner) upload(b *PPOBatch) error {
	in, a := l.net.g.In, l.net.NumOutputs()
	if len(b.Obs) != b.N*in || len(b.Act) != b.N || len(b.Logp) != b.N || len(b.Adv) != b.N ||
		len(b.VTarg) != b.N || len(b.VPred) != b.N || len(b.Dist) != b.N*a {
		return fmt.Errorf("cuda: PPO batch of %d rows with columns of %d, %d, %d, %d, %d, %d, %d values (want %d observations and %d logits per row)",
			b.N, len(b.Obs), len(b.Act), len(b.Logp), len(b.Adv), len(b.VTarg), len(b.VPred), len(b.Dist), in, a)
	}
	if b.N > l.cap {
		if err := l.freeBatch(); err != nil {
			return err
		}
		var err error
		for _, c := range []struct {
			dst  **Buffer
			what string
			n    int
		}{
			{&l.obs, "the batch's observations", b.N * in}, {&l.act, "the batch's actions", b.N},
			{&l.logp, "the batch's log-probabilities", b.N}, {&l.adv, "the batch's advantages", b.N},
			{&l.vtarg, "the batch's value targets", b.N}, {&l.vpred, "the batch's value predictions", b.N},
			{&l.dist, "the batch's logits", b.N * a}, {&l.idx, "the shuffle", b.N},
		} {
			if *c.dst, err = l.d.Alloc(c.what, c.n); err != nil {
				return err
			}
		}
		l.cap = b.N
	}
	for _, c := range []struct {
		dst *Buffer
		src []float64
	}{{l.obs, b.Obs}, {l.act, b.Act}, {l.logp, b.Logp}, {l.adv, b.Adv}, {l.vtarg, b.VTarg}, {l.vpred, b.VPred}, {l.dist, b.Dist}} {
		if err := c.dst.Upload(0, c.src); err != nil {
			return err
		}
	}
	return nil
}

// Learn runs epochs epochs of minibatch SGD over b in minibatches of mb
// rows (the last partial one dropped, as the CPU learner does), drawing
// each epoch's order from shuffle (which permutes its argument in place).
// It returns the last epoch's mean statistics. On a non-finite loss,
// gradient or weight it restores the weights and Adam's state of before
// the call and returns an error saying so.
func (l *PPOLearner) Learn(b *PPOBatch, epochs, mb int, shuffle func([]int), lr, klCoeff float64) (PPOStats, error) {
	if mb < 1 || mb > l.net.maxRows {
		return PPOStats{}, fmt.Errorf("cuda: minibatches of %d rows on a learner sized for 1 to %d", mb, l.net.maxRows)
	}
	if err := l.upload(b); err != nil {
		return PPOStats{}, err
	}
	if err := l.snapshot(false); err != nil {
		return PPOStats{}, err
	}
	step := l.net.adamStep
	mb = min(mb, b.N)
	numMB := b.N / mb
	perm := make([]int, b.N)
	perm32 := make([]float32, b.N)
	for i := range perm {
		perm[i] = i
	}
	var st PPOStats
	for e := 0; e < epochs; e++ {
		shuffle(perm)
		for i, p := range perm {
			perm32[i] = math.Float32frombits(uint32(int32(p)))
		}
		if err := l.idx.Upload32(0, perm32); err != nil {
			return st, err
		}
		if err := l.d.zeroBuf(l.stats); err != nil {
			return st, err
		}
		for k := 0; k < numMB; k++ {
			if err := l.step(k*mb, mb, lr, klCoeff); err != nil {
				return st, err
			}
		}
		if e == epochs-1 {
			sums := make([]float64, 6)
			if err := l.stats.Download(0, sums); err != nil {
				return st, err
			}
			inv := 1 / float64(numMB)
			st = PPOStats{PolicyLoss: -sums[0] * inv, VFLoss: sums[1] * inv, Entropy: sums[2] * inv, KL: sums[3] * inv,
				TotalLoss: sums[4] * inv, GradNorm: sums[5] * inv}
		}
	}
	bad := ""
	for _, v := range []float64{st.TotalLoss, st.PolicyLoss, st.VFLoss, st.KL, st.Entropy} {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			bad = "the loss"
		}
	}
	if math.IsNaN(st.GradNorm) || math.IsInf(st.GradNorm, 0) {
		bad = "the gradient"
	}
	if bad == "" {
		return st, nil
	}
	if err := l.snapshot(true); err != nil {
		return st, err
	}
	l.net.adamStep = step
	return st, fmt.Errorf("%s is NaN or Inf in the last SGD epoch on the GPU", bad)
}

// snapshot copies the weights and Adam's moments aside (restore false)
// or back (true).
func (l *PPOLearner) snapshot(restore bool) error {
	d, p := l.d, l.net.NumParams()
	if err := d.enter(); err != nil {
		return err
	}
	defer d.leave()
	pairs := [][2]*Buffer{{l.snapW, l.net.W}, {l.snapM, l.net.M}, {l.snapV, l.net.V}}
	for _, pr := range pairs {
		dst, src := pr[0], pr[1]
		if restore {
			dst, src = src, dst
		}
		if err := d.copyDtoD(dst.ptr, src.ptr, p); err != nil {
			return err
		}
	}
	return nil
}

// step is one minibatch: rows [from, from+n) of the shuffled batch.
func (l *PPOLearner) step(from, n int, lr, klCoeff float64) error {
	if err := l.lossGrad(from, n, klCoeff); err != nil {
		return err
	}
	return l.net.ClipAndAdam(lr, l.cfg.GradClip, ptr(l.stats.at(5)))
}

// lossGrad gathers the minibatch, runs the network and the loss, adds
// the loss terms into stats and leaves the gradient in the net's G.
func (l *PPOLearner) lossGrad(from, n int, klCoeff float64) error {
	d, net := l.d, l.net
	a := net.NumOutputs()
	if err := d.enter(); err != nil {
		return err
	}
	idx := ptr(l.idx.at(from))
	for _, g := range []struct {
		dst, src *Buffer
		cols     int
	}{
		{net.x.y, l.obs, net.g.In}, {l.mAct, l.act, 1}, {l.mLogp, l.logp, 1}, {l.mAdv, l.adv, 1},
		{l.mVTarg, l.vtarg, 1}, {l.mVPred, l.vpred, 1}, {l.mDist, l.dist, a},
	} {
		if err := d.launch("gather_rows", n*g.cols, 0, g.dst, g.src, idx, n, g.cols); err != nil {
			d.leave()
			return err
		}
	}
	d.leave()
	if err := net.Forward(n); err != nil {
		return err
	}
	c := l.cfg
	if err := d.enter(); err != nil {
		return err
	}
	err := d.launch("ppo_loss", n, 0, net.Out(), net.Value(), l.mAct, l.mLogp, l.mAdv, l.mVTarg, l.mVPred, l.mDist,
		n, a, float32(c.ClipParam), float32(c.VFClipParam), float32(c.VFLossCoeff), float32(klCoeff), float32(c.EntropyCoeff),
		float32(1/float64(n)), l.dOut, l.dValue, l.rowStats)
	if err == nil {
		err = d.launch("col_sum", 5*256, 5, l.rowStats, n, 5, l.stats)
	}
	if err == nil {
		err = d.zero(net.G.ptr, net.NumParams())
	}
	d.leave()
	if err != nil {
		return err
	}
	return net.Backward(n, l.dOut, l.dValue)
}

// zeroBuf clears a whole buffer.
func (d *Device) zeroBuf(b *Buffer) error {
	if err := d.enter(); err != nil {
		return err
	}
	defer d.leave()
	return d.zero(b.ptr, b.n)
}
