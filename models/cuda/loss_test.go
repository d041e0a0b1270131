package cuda

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/gray-ml/gray/models"
)

// ppoCPU is PPO's loss as rllib/ppo's learner computes it on the CPU
// (one shard), leaving the gradient in m's parameters.
func ppoCPU(m models.Model, b *PPOBatch, idx []int, c PPOConfig, klCoeff float64) (total, surr, vf, ent, kl float64) {
	n, in, a := len(idx), m.NumInputs(), m.NumOutputs()
	rows := func(src []float64, w int) []float64 {
		out := make([]float64, 0, n*w)
		for _, r := range idx {
			out = append(out, src[r*w:(r+1)*w]...)
		}
		return out
	}
	t := models.NewTape()
	dist := models.Categorical{N: a}
	o := m.Forward(t, t.Const(n, in, rows(b.Obs, in)))
	logp := dist.LogLikelihood(t, o.Out, t.Const(n, 1, rows(b.Act, 1)))
	ratio := t.Exp(t.Sub(logp, t.Const(n, 1, rows(b.Logp, 1))))
	adv := t.Const(n, 1, rows(b.Adv, 1))
	s := t.Minimum(t.Mul(ratio, adv), t.Mul(t.Clip(ratio, 1-c.ClipParam, 1+c.ClipParam), adv))
	pl := t.Neg(t.Mean(s))
	k := t.Mean(dist.KL(t, t.Const(n, a, rows(b.Dist, a)), o.Out))
	e := t.Mean(dist.Entropy(t, o.Out))
	vt := t.Const(n, 1, rows(b.VTarg, 1))
	verr := t.Square(t.Sub(o.Value, vt))
	if c.VFClipParam > 0 {
		vo := t.Const(n, 1, rows(b.VPred, 1))
		vc := t.Add(vo, t.Clip(t.Sub(o.Value, vo), -c.VFClipParam, c.VFClipParam))
		verr = t.Maximum(verr, t.Square(t.Sub(vc, vt)))
	}
	v := t.Mean(verr)
	tot := t.Add(t.Add(pl, t.Scale(v, c.VFLossCoeff)), t.Sub(t.Scale(k, klCoeff), t.Scale(e, c.EntropyCoeff)))
	m.Params().ZeroGrad()
	t.Backward(tot)
	return tot.Item(), pl.Item(), v.Item(), e.Item(), k.Item()
}

// randomPPOBatch draws a batch whose old policy differs from m's, so
// ratios leave the clip range in both directions.
func randomPPOBatch(rng *rand.Rand, m models.Model, n int) *PPOBatch {
	in, a := m.NumInputs(), m.NumOutputs()
	b := &PPOBatch{N: n, Obs: randVec(rng, n*in, 1), Dist: randVec(rng, n*a, 0.5), Adv: randVec(rng, n, 1),
		VTarg: randVec(rng, n, 1), VPred: randVec(rng, n, 1)}
	for r := 0; r < n; r++ {
		act := rng.IntN(a)
		b.Act = append(b.Act, float64(act))
		row := b.Dist[r*a : (r+1)*a]
		mx := math.Inf(-1)
		for _, v := range row {
			mx = math.Max(mx, v)
		}
		s := 0.0
		for _, v := range row {
			s += math.Exp(v - mx)
		}
		b.Logp = append(b.Logp, row[act]-mx-math.Log(s)+0.3*rng.NormFloat64())
	}
	return b
}

func TestPPOLossMatchesCPU(t *testing.T) {
	d := openOrSkip(t)
	for _, tc := range netCases {
		for _, vfClip := range []float64{0, 0.3} {
			t.Run(tc.name, func(t *testing.T) {
				m := newModel(t, tc.shape, tc.outs, tc.opts)
				rng := rand.New(rand.NewPCG(5, 6))
				const n, mb = 40, 24
				b := randomPPOBatch(rng, m, n)
				cfg := PPOConfig{ClipParam: 0.2, VFClipParam: vfClip, VFLossCoeff: 0.7, EntropyCoeff: 0.01}
				l, err := NewPPOLearner(d, m, mb, cfg)
				if err != nil {
					t.Fatal(err)
				}
				defer l.Close()
				if err := l.upload(b); err != nil {
					t.Fatal(err)
				}
				idx := rng.Perm(n)
				perm32 := make([]float32, n)
				for i, p := range idx {
					perm32[i] = math.Float32frombits(uint32(int32(p)))
				}
				if err := l.idx.Upload32(0, perm32); err != nil {
					t.Fatal(err)
				}
				if err := d.zeroBuf(l.stats); err != nil {
					t.Fatal(err)
				}
				const klc = 0.3
				if err := l.lossGrad(0, mb, klc); err != nil {
					t.Fatal(err)
				}
				tot, pl, vf, ent, kl := ppoCPU(m, b, idx[:mb], cfg, klc)
				sums := download(t, l.stats, 5)
				got := []float64{-sums[0] / mb, sums[1] / mb, sums[2] / mb, sums[3] / mb, sums[4] / mb}
				near(t, "policy loss, vf loss, entropy, KL, total", got, []float64{pl, vf, ent, kl, tot}, 1e-5)
				g, err := l.net.Grads(nil)
				if err != nil {
					t.Fatal(err)
				}
				near(t, "gradient", g, m.Params().Grads(), 1e-4)
			})
		}
	}
}

func TestClipAndAdamMatchCPU(t *testing.T) {
	d := openOrSkip(t)
	m := newModel(t, []int{5}, 3, func(o *models.ModelOptions) { o.Hiddens = []int{16} })
	net, err := NewNet(d, m, 4)
	if err != nil {
		t.Fatal(err)
	}
	defer net.Close()
	rng := rand.New(rand.NewPCG(7, 8))
	p := m.Params()
	opt := models.NewAdam(0.01)
	stat := upload(t, d, []float64{0})
	for step := 0; step < 3; step++ {
		g := randVec(rng, p.Len(), 0.5)
		if err := net.G.Upload(0, g); err != nil {
			t.Fatal(err)
		}
		wantNorm := models.ClipByGlobalNorm(g, 1.5)
		_ = opt.Step(p.Flat(), g)
		if err := net.ClipAndAdam(0.01, 1.5, ptr(stat.ptr)); err != nil {
			t.Fatal(err)
		}
		w, err := net.Weights(nil)
		if err != nil {
			t.Fatal(err)
		}
		near(t, "weights after Adam", w, p.Flat(), 1e-6)
		if got := download(t, stat, 1)[0]; math.Abs(got-float64(step+1)*wantNorm) > 1e-4*wantNorm*float64(step+1) {
			t.Fatalf("step %d: summed norms %g, want %g", step, got, float64(step+1)*wantNorm)
		}
	}
	s, err := net.AdamState()
	if err != nil {
		t.Fatal(err)
	}
	want := opt.State()
	if s.Step != want.Step {
		t.Fatalf("Adam step %d, want %d", s.Step, want.Step)
	}
	near(t, "Adam m", s.M, want.M, 1e-5)
	near(t, "Adam v", s.V, want.V, 1e-5)
}

// lossKernel runs a3c_loss or dqn_loss on random logits and checks the
// logits' (and value's) gradient against the CPU tape's.
func TestA3CAndDQNLossMatchCPU(t *testing.T) {
	d := openOrSkip(t)
	rng := rand.New(rand.NewPCG(9, 10))
	const n, a = 33, 6
	logits, value, adv, ret := randVec(rng, n*a, 1), randVec(rng, n, 1), randVec(rng, n, 1), randVec(rng, n, 1)
	act := make([]float64, n)
	for i := range act {
		act[i] = float64(rng.IntN(a))
	}
	const vfc, entc = 0.5, 0.01

	// A3C: summed over the batch (scale 1).
	tp := models.NewTape()
	dist := models.Categorical{N: a}
	lg, v := tp.Variable(n, a, logits), tp.Variable(n, 1, value)
	pi := tp.Neg(tp.Sum(tp.Mul(dist.LogLikelihood(tp, lg, tp.Const(n, 1, act)), tp.Const(n, 1, adv))))
	vf := tp.Scale(tp.Sum(tp.Square(tp.Sub(v, tp.Const(n, 1, ret)))), 0.5)
	en := tp.Sum(dist.Entropy(tp, lg))
	tot := tp.Sub(tp.Add(pi, tp.Scale(vf, vfc)), tp.Scale(en, entc))
	tp.Backward(tot)

	bl, bv, bact, badv, bret := upload(t, d, logits), upload(t, d, value), upload(t, d, act), upload(t, d, adv), upload(t, d, ret)
	dl, dv, st := upload(t, d, make([]float64, n*a)), upload(t, d, make([]float64, n)), upload(t, d, make([]float64, n*4))
	sums := upload(t, d, make([]float64, 4))
	run := func(name string, args ...any) {
		t.Helper()
		if err := d.enter(); err != nil {
			t.Fatal(err)
		}
		defer d.leave()
		if err := d.launch(name, n, 0, args...); err != nil {
			t.Fatal(err)
		}
	}
	run("a3c_loss", bl, bv, bact, badv, bret, n, a, float32(vfc), float32(entc), float32(1), dl, dv, st)
	if err := d.enter(); err != nil {
		t.Fatal(err)
	}
	err := d.launch("col_sum", 4*256, 4, st, n, 4, sums)
	d.leave()
	if err != nil {
		t.Fatal(err)
	}
	near(t, "A3C losses", download(t, sums, 4), []float64{pi.Item(), vf.Item(), en.Item(), tot.Item()}, 1e-5)
	near(t, "A3C logits gradient", download(t, dl, n*a), lg.Grad, 1e-5)
	near(t, "A3C value gradient", download(t, dv, n), v.Grad, 1e-5)

	// DQN: the mean Huber loss of Q(s, a) - target, weighted.
	target, weight := randVec(rng, n, 2), make([]float64, n)
	for i := range weight {
		weight[i] = 0.5 + rng.Float64()
	}
	tp = models.NewTape()
	q := tp.Variable(n, a, logits)
	td := tp.Sub(tp.Gather(q, tp.Const(n, 1, act)), tp.Const(n, 1, target))
	loss := tp.Mean(tp.Mul(tp.Huber(td, 1), tp.Const(n, 1, weight)))
	tp.Backward(loss)
	btd, bst := upload(t, d, make([]float64, n)), upload(t, d, make([]float64, n))
	run("dqn_loss", bl, bact, upload(t, d, target), upload(t, d, weight), n, a, float32(1), float32(1.0/n), dl, btd, bst)
	perRow := download(t, bst, n)
	mean := 0.0
	for _, x := range perRow {
		mean += x / n
	}
	near(t, "DQN loss", []float64{mean}, []float64{loss.Item()}, 1e-5)
	near(t, "DQN TD errors", download(t, btd, n), td.Data, 1e-5)
	near(t, "DQN Q gradient", download(t, dl, n*a), q.Grad, 1e-5)
}

func TestSoftmaxMatchesCPU(t *testing.T) {
	d := openOrSkip(t)
	rng := rand.New(rand.NewPCG(11, 12))
	const n, a = 17, 9
	x := randVec(rng, n*a, 3)
	tp := models.NewTape()
	xs := tp.Const(n, a, x)
	lsm, sm := tp.LogSoftmax(xs), tp.Softmax(xs)
	bx, by := upload(t, d, x), upload(t, d, make([]float64, n*a))
	for _, tc := range []struct {
		exp  int
		want []float64
	}{{0, lsm.Data}, {1, sm.Data}} {
		if err := d.enter(); err != nil {
			t.Fatal(err)
		}
		err := d.launch("log_softmax_rows", n, 0, bx, by, n, a, tc.exp)
		d.leave()
		if err != nil {
			t.Fatal(err)
		}
		near(t, "log-softmax / softmax", download(t, by, n*a), tc.want, 1e-6)
	}
}

// TestPPOLearnLearns runs whole Learn calls: the loss must fall on a
// fixed batch, and a NaN advantage must leave the weights as they were.
func TestPPOLearnLearns(t *testing.T) {
	d := openOrSkip(t)
	tc := netCases[3] // the PixelPong network
	m := newModel(t, tc.shape, tc.outs, tc.opts)
	rng := rand.New(rand.NewPCG(13, 14))
	b := randomPPOBatch(rng, m, 512)
	l, err := NewPPOLearner(d, m, 128, PPOConfig{ClipParam: 0.2, VFLossCoeff: 0.5, GradClip: 0.5})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	shuffle := func(p []int) { rng.Shuffle(len(p), func(i, j int) { p[i], p[j] = p[j], p[i] }) }
	first, err := l.Learn(b, 1, 128, shuffle, 1e-3, 0)
	if err != nil {
		t.Fatal(err)
	}
	last, err := l.Learn(b, 8, 128, shuffle, 1e-3, 0)
	if err != nil {
		t.Fatal(err)
	}
	if !(last.VFLoss < first.VFLoss) {
		t.Fatalf("value loss %g after 9 epochs, %g after 1: not learning", last.VFLoss, first.VFLoss)
	}
	before, _ := l.net.Weights(nil)
	b.Adv[3] = math.NaN()
	if _, err := l.Learn(b, 1, 128, shuffle, 1e-3, 0); err == nil {
		t.Fatal("Learn with a NaN advantage succeeded")
	}
	after, _ := l.net.Weights(nil)
	near(t, "weights after a failed Learn", after, before, 0)
}
