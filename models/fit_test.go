package models

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestMLPFitsRegression trains a 32-32 tanh network with Adam to fit
// y = sin(x0) + x1² on 256 points; the mean squared error must drop from
// about 1 to well under 0.02.
func TestMLPFitsRegression(t *testing.T) {
	const n = 256
	rng := rand.New(rand.NewPCG(21, 21))
	x := make([]float64, n*2)
	y := make([]float64, n)
	for i := 0; i < n; i++ {
		a, b := 4*rng.Float64()-2, 2*rng.Float64()-1
		x[2*i], x[2*i+1] = a, b
		y[i] = math.Sin(a) + b*b
	}
	m, err := NewFullyConnected(2, 1, ModelOptions{Hiddens: []int{32, 32}, Activation: "tanh", Init: InitNameXavier}, 3)
	if err != nil {
		t.Fatal(err)
	}
	opt := NewAdam(0.01)
	tape := NewTape()
	p := m.Params()
	var first, last float64
	for step := 0; step < 1500; step++ {
		tape.Reset()
		o := m.Forward(tape, tape.Const(n, 2, x))
		loss := tape.Mean(tape.Square(tape.Sub(o.Out, tape.Const(n, 1, y))))
		p.ZeroGrad()
		tape.Backward(loss)
		if err := opt.Step(p.Flat(), p.Grads()); err != nil {
			t.Fatal(err)
		}
		if step == 0 {
			first = loss.Item()
		}
		last = loss.Item()
	}
	if last > 0.02 || last > first/10 {
		t.Fatalf("MSE %.4f after training (started at %.4f)", last, first)
	}
}

// TestTrainingStepAllocatesNothing checks the promise the benchmarks
// measure: after the first step, a full PPO step allocates nothing.
func TestTrainingStepAllocatesNothing(t *testing.T) {
	s := newPPOStep(t, 64)
	s.step()
	if a := testing.AllocsPerRun(5, func() { s.step() }); a != 0 {
		t.Fatalf("%v allocations per training step", a)
	}
}

// TestTapeReuseAcrossBatchSizes checks that recycled buffers give the same
// gradients as a fresh tape when the batch size changes between steps (the
// last minibatch of an epoch is often smaller).
func TestTapeReuseAcrossBatchSizes(t *testing.T) {
	small, big := newPPOStep(t, 37), newPPOStep(t, 130)
	reused := NewTape()
	for _, s := range []*ppoStep{big, small, big, small} {
		fresh := s.tape
		s.tape = reused
		s.opt = NewAdam(0) // keep weights fixed so the runs compare
		s.step()
		got := s.pol.Model.Params().GetFlatGrad(nil)
		s.tape = NewTape()
		s.step()
		want := s.pol.Model.Params().GetFlatGrad(nil)
		s.tape = fresh
		for i := range want {
			if got[i] != want[i] {
				t.Fatalf("batch %d: gradient %d is %v on a reused tape, %v on a fresh one", s.n, i, got[i], want[i])
			}
		}
	}
}
