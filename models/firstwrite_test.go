package models

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// checkBackwardSet checks that BackwardSet leaves in p the bits ZeroGrad
// and Backward leave, starting from gradients full of NaN (any value the
// pass adds to instead of writing, or fails to write, shows), twice on
// one tape (the second pass reuses the marks' buffers, and its forward
// pass leaves the results' gradients stale: poisoned with NaN here), and
// that a plain Backward on that tape afterwards clears them and
// accumulates again.
func checkBackwardSet(t *testing.T, p *Params, loss func(tape *Tape) *Tensor) {
	t.Helper()
	ref := NewTape()
	p.ZeroGrad()
	ref.Backward(loss(ref))
	want := p.GetFlatGrad(nil)
	ref.Reset()
	ref.Backward(loss(ref)) // a second pass added
	want2 := p.GetFlatGrad(nil)
	tape := NewTape()
	for pass := range 2 {
		for i := range p.Grads() {
			p.Grads()[i] = math.NaN()
		}
		tape.Reset()
		l := loss(tape)
		poisonStale(tape)
		tape.BackwardSet(l, p)
		for i, g := range p.Grads() {
			if math.Float64bits(g) != math.Float64bits(want[i]) {
				name, at := p.locate(i)
				t.Fatalf("pass %d: BackwardSet's gradient of %s[%d] = %v, ZeroGrad and Backward give %v", pass, name, at, g, want[i])
			}
		}
	}
	p.ZeroGrad()
	for range 2 {
		tape.Reset()
		l := loss(tape)
		poisonStale(tape)
		tape.Backward(l)
	}
	for i, g := range p.Grads() {
		if math.Float64bits(g) != math.Float64bits(want2[i]) {
			t.Fatalf("Backward after BackwardSet: gradient [%d] = %v after two passes, want %v", i, g, want2[i])
		}
	}
}

// poisonStale fills the results' gradients a lazy tape left stale with
// NaN, so that a backward pass that adds to one it should have cleared or
// written shows.
func poisonStale(tape *Tape) {
	for _, nd := range tape.nodes[:tape.n] {
		if nd.stale {
			for i := range nd.out.Grad {
				nd.out.Grad[i] = math.NaN()
			}
		}
	}
}

// TestBackwardSetSameAsZeroAndBackward runs every operation of the
// gradient checks, parameters used more than once or not at all, a
// product whose result feeds another, and the catalog's networks (the
// float32 and float64 convolutions, a recurrent net) through
// checkBackwardSet.
func TestBackwardSetSameAsZeroAndBackward(t *testing.T) {
	for _, c := range gradCases() {
		t.Run(c.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(3, 4))
			p := NewParams()
			xs := make([]*Tensor, len(c.shapes))
			for i, sh := range c.shapes {
				xs[i] = p.New(fmt.Sprint("x", i), sh[0], sh[1])
			}
			p.New("unused", 2, 3) // BackwardSet zeroes it
			for i := range p.Flat() {
				p.Flat()[i] = 0.5 + 1.5*rng.Float64()
			}
			var wts []float64
			checkBackwardSet(t, p, func(tape *Tape) *Tensor {
				out := c.f(tape, xs)
				if wts == nil {
					wts = normals(rng, out.Len())
				}
				return tape.Sum(tape.Mul(out, tape.Const(out.Rows, out.Cols, wts)))
			})
		})
	}
	t.Run("shared", func(t *testing.T) {
		// One weight and bias in two layers and a product of a weight
		// with itself: the first use in backward order writes, the
		// others add.
		rng := rand.New(rand.NewPCG(5, 6))
		p := NewParams()
		w, b, x := p.New("w", 6, 6), p.New("b", 1, 6), p.New("x", 9, 6)
		copy(p.Flat(), normals(rng, p.Len()))
		checkBackwardSet(t, p, func(tape *Tape) *Tensor {
			h := tape.Tanh(tape.Linear(x, w, b))
			y := tape.Linear(tape.MatMul(h, w), w, b)
			return tape.Add(tape.Sum(tape.Mul(y, y)), tape.Sum(tape.MatMul(w, w)))
		})
	})
	t.Run("FullyConnected", func(t *testing.T) {
		m, err := NewFullyConnected(5, 4, ModelOptions{Hiddens: []int{40, 24}, Value: true}, 7)
		if err != nil {
			t.Fatal(err)
		}
		rng := rand.New(rand.NewPCG(7, 8))
		obs, wts := normals(rng, 70*5), normals(rng, 70*5)
		checkBackwardSet(t, m.Params(), func(tape *Tape) *Tensor { return linearLoss(tape, m, 70, obs, wts) })
	})
	for _, tc := range convTrainCases {
		for mode, prec := range precModes() {
			t.Run(fmt.Sprintf("conv/%s/%s", tc.name, mode), func(t *testing.T) {
				ref, m := newConvPair(t, tc.shape, tc.filters, prec)
				batch := tc.batches[len(tc.batches)-1]
				rng := rand.New(rand.NewPCG(9, 10))
				obs, wts := make([]float64, batch*m.NumInputs()), normals(rng, batch*7)
				for i := range obs {
					obs[i] = rng.Float64()
				}
				checkBackwardSet(t, m.Params(), func(tape *Tape) *Tensor { return linearLoss(tape, m, batch, obs, wts) })
				checkBackwardSet(t, ref.Params(), func(tape *Tape) *Tensor { return linearLoss(tape, ref, batch, obs, wts) })
			})
		}
	}
	t.Run("LSTMNet", func(t *testing.T) {
		m, err := NewLSTMNet(2, 4, lstmOpts(), 5)
		if err != nil {
			t.Fatal(err)
		}
		const steps, b = 3, 2
		rng := rand.New(rand.NewPCG(5, 6))
		obs, state, wts := normals(rng, steps*b*2), normals(rng, b*m.StateSize()), normals(rng, steps*b*5)
		checkBackwardSet(t, m.Params(), func(tape *Tape) *Tensor {
			o := m.ForwardSeq(tape, tape.Const(steps*b, 2, obs), tape.Const(b, m.StateSize(), state), nil)
			out := tape.Concat(o.Out, o.Value)
			return tape.Sum(tape.Mul(out, tape.Const(out.Rows, out.Cols, wts)))
		})
	})
}

// TestBackwardSetWithoutTrainableLoss zeroes the gradients when nothing
// trainable reaches the loss.
func TestBackwardSetWithoutTrainableLoss(t *testing.T) {
	p := NewParams()
	p.New("w", 2, 2)
	for i := range p.Grads() {
		p.Grads()[i] = 3
	}
	tape := NewTape()
	tape.BackwardSet(tape.Sum(tape.Const(2, 2, []float64{1, 2, 3, 4})), p)
	for i, g := range p.Grads() {
		if g != 0 {
			t.Fatalf("gradient [%d] = %v, want 0", i, g)
		}
	}
}
