package models

import (
	"math/rand/v2"
	"testing"

	"github.com/gray-ml/gray/spaces"
)

// benchForward measures one forward pass of a 64-64 tanh MLP on 4 inputs
// (CartPole's policy) on a no-grad tape.
func benchForward(b *testing.B, batch int) {
	m, err := NewFullyConnected(4, 2, ModelOptions{Hiddens: []int{64, 64}, Activation: "tanh"}, 1)
	if err != nil {
		b.Fatal(err)
	}
	obs := make([]float64, batch*4)
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range obs {
		obs[i] = rng.NormFloat64()
	}
	tape := NewTape()
	tape.SetNoGrad(true)
	tape.Reset()
	m.Forward(tape, tape.Const(batch, 4, obs))
	measure(b, func() {
		tape.Reset()
		m.Forward(tape, tape.Const(batch, 4, obs))
	})
}

// measure runs f b.N times and reports, besides wall time, the CPU time
// per operation of the benchmark's thread (see threadCPUNanos).
func measure(b *testing.B, f func()) {
	lockThread()
	defer unlockThread()
	b.ReportAllocs()
	b.ResetTimer()
	start := threadCPUNanos()
	for i := 0; i < b.N; i++ {
		f()
	}
	b.StopTimer()
	if cpu := threadCPUNanos() - start; start > 0 {
		b.ReportMetric(float64(cpu)/float64(b.N), "cpu-ns/op")
	}
}

func BenchmarkForwardMLP64x64Batch1(b *testing.B)   { benchForward(b, 1) }
func BenchmarkForwardMLP64x64Batch128(b *testing.B) { benchForward(b, 128) }

// ppoStep is one PPO-sized training step: policy and separate value
// network (64-64 tanh), clipped surrogate, value loss, entropy bonus,
// backward, global-norm clipping and Adam.
type ppoStep struct {
	pol                          *Policy
	opt                          *Adam
	tape                         *Tape
	n                            int
	obs, act, oldLogp, adv, rets []float64
}

func newPPOStep(tb testing.TB, n int) *ppoStep {
	m, err := NewFullyConnected(4, 2, ModelOptions{Hiddens: []int{64, 64}, Activation: "tanh", Value: true}, 1)
	if err != nil {
		tb.Fatal(err)
	}
	s := &ppoStep{pol: &Policy{Model: m, Dist: Categorical{N: 2}}, opt: NewAdam(3e-4), tape: NewTape(), n: n}
	rng := rand.New(rand.NewPCG(5, 6))
	s.obs = make([]float64, n*4)
	for i := range s.obs {
		s.obs[i] = rng.NormFloat64()
	}
	s.act, s.oldLogp, s.adv, s.rets = make([]float64, n), make([]float64, n), make([]float64, n), make([]float64, n)
	for i := 0; i < n; i++ {
		s.act[i] = float64(rng.IntN(2))
		s.oldLogp[i] = -0.69 + 0.1*rng.NormFloat64()
		s.adv[i] = rng.NormFloat64()
		s.rets[i] = rng.NormFloat64()
	}
	return s
}

func (s *ppoStep) step() float64 {
	t, n := s.tape, s.n
	t.Reset()
	o := s.pol.Model.Forward(t, t.Const(n, 4, s.obs))
	logp := s.pol.Dist.LogLikelihood(t, o.Out, t.Const(n, 1, s.act))
	ratio := t.Exp(t.Sub(logp, t.Const(n, 1, s.oldLogp)))
	adv := t.Const(n, 1, s.adv)
	surr := t.Minimum(t.Mul(ratio, adv), t.Mul(t.Clip(ratio, 0.8, 1.2), adv))
	vf := t.Mean(t.Square(t.Sub(o.Value, t.Const(n, 1, s.rets))))
	ent := t.Mean(s.pol.Dist.Entropy(t, o.Out))
	loss := t.Add(t.Sub(t.Scale(vf, 0.5), t.Mean(surr)), t.Scale(ent, -0.01))
	p := s.pol.Model.Params()
	p.ZeroGrad()
	t.Backward(loss)
	ClipByGlobalNorm(p.Grads(), 0.5)
	if err := s.opt.Step(p.Flat(), p.Grads()); err != nil {
		panic(err)
	}
	return loss.Item()
}

func benchPPOStep(b *testing.B, n int) {
	s := newPPOStep(b, n)
	s.step()
	measure(b, func() { s.step() })
}

func BenchmarkPPOTrainStepBatch128(b *testing.B) { benchPPOStep(b, 128) }
func BenchmarkPPOTrainStepBatch512(b *testing.B) { benchPPOStep(b, 512) }

// BenchmarkPolicyAct8 measures the rollout path for 8 environments:
// preprocess, forward through policy and value networks, sample, log-prob.
func BenchmarkPolicyAct8(b *testing.B) {
	m, err := NewFullyConnected(4, 2, ModelOptions{Hiddens: []int{64, 64}, Activation: "tanh", Value: true}, 1)
	if err != nil {
		b.Fatal(err)
	}
	pol := &Policy{Preprocessor: Flatten{Space: spaces.NewBox(-10, 10, 4)}, Model: m, Dist: Categorical{N: 2}}
	obs := make([][]float64, 8)
	for i := range obs {
		obs[i] = []float64{0.01 * float64(i), 0.1, -0.02, 0.3}
	}
	tape := NewTape()
	rng := rand.New(rand.NewPCG(1, 1))
	var a Actions
	if err := pol.Act(tape, rng, obs, true, &a); err != nil {
		b.Fatal(err)
	}
	measure(b, func() { _ = pol.Act(tape, rng, obs, true, &a) })
}

// BenchmarkConvNetTrainStep42 measures forward, a squared loss, backward
// and Adam for a ConvNet on a batch of 32 42×42×1 images with filters 16
// 3×3/2 and 32 3×3/2 (the catalog's default before RLlib's stacks) and one
// 64-unit hidden layer ("train-small" in benchmarks/models/torch_conv.py).
func BenchmarkConvNetTrainStep42(b *testing.B) {
	filters := []ConvFilter{{Out: 16, KH: 3, KW: 3, Stride: 2}, {Out: 32, KH: 3, KW: 3, Stride: 2}}
	m, err := NewConvNet([]int{42, 42, 1}, 4, ModelOptions{Hiddens: []int{64}, Activation: "relu", ConvFilters: filters}, 1)
	if err != nil {
		b.Fatal(err)
	}
	const n = 32
	obs := make([]float64, n*42*42)
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range obs {
		obs[i] = rng.Float64()
	}
	tape, opt, p := NewTape(), NewAdam(1e-3), m.Params()
	step := func() {
		tape.Reset()
		o := m.Forward(tape, tape.Const(n, 42*42, obs))
		loss := tape.Mean(tape.Square(o.Out))
		p.ZeroGrad()
		tape.Backward(loss)
		_ = opt.Step(p.Flat(), p.Grads())
	}
	step()
	measure(b, step)
}

// BenchmarkAdam260k measures one Adam step over 260,000 weights (the
// ConvNet benchmark's size).
func BenchmarkAdam260k(b *testing.B) {
	w, g := make([]float64, 260000), make([]float64, 260000)
	for i := range g {
		g[i] = float64(i%13) - 6
	}
	a := NewAdam(1e-3)
	_ = a.Step(w, g) // allocates the moments
	measure(b, func() { _ = a.Step(w, g) })
}
