package models

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// TestLSTMGradients checks backpropagation through time against central
// differences for the input projections, recurrent weights and initial
// state, over shapes that exercise the matrix kernel's edges.
func TestLSTMGradients(t *testing.T) {
	for _, sh := range []struct{ steps, batch, hid int }{{1, 1, 2}, {3, 2, 3}, {4, 5, 9}} {
		n := sh.steps * sh.batch
		c := gradCase{
			name:   fmt.Sprintf("LSTM/T%d,B%d,H%d", sh.steps, sh.batch, sh.hid),
			shapes: [][2]int{{n, 4 * sh.hid}, {sh.hid, 4 * sh.hid}, {sh.batch, sh.hid}, {sh.batch, sh.hid}},
			f:      func(t *Tape, x []*Tensor) *Tensor { return t.LSTM(x[0], x[1], x[2], x[3], nil) },
		}
		t.Run(c.name, func(t *testing.T) { checkGrad(t, c, 7) })
	}
	// The layer: input weights and bias through the fused projection.
	c := gradCase{
		name:   "LSTMLayer",
		shapes: [][2]int{{6, 3}, {3, 8}, {2, 8}, {1, 8}, {2, 2}, {2, 2}},
		f: func(t *Tape, x []*Tensor) *Tensor {
			l := &LSTMLayer{Wx: x[1], Wh: x[2], B: x[3], Hidden: 2}
			return l.Forward(t, x[0], x[4], x[5], nil)
		},
	}
	t.Run(c.name, func(t *testing.T) { checkGrad(t, c, 9) })
}

// lstmReference is one LSTM step written plainly from the equations.
func lstmReference(x, h, c []float64, wx, wh, bias *Tensor) ([]float64, []float64) {
	hid := len(h)
	pre := make([]float64, 4*hid)
	for k := range pre {
		s := bias.Data[k]
		for j, v := range x {
			s += v * wx.At(j, k)
		}
		for j, v := range h {
			s += v * wh.At(j, k)
		}
		pre[k] = s
	}
	sig := func(v float64) float64 { return 1 / (1 + math.Exp(-v)) }
	h2, c2 := make([]float64, hid), make([]float64, hid)
	for j := range hid {
		i, f, g, o := sig(pre[j]), sig(pre[hid+j]), math.Tanh(pre[2*hid+j]), sig(pre[3*hid+j])
		c2[j] = f*c[j] + i*g
		h2[j] = o * math.Tanh(c2[j])
	}
	return h2, c2
}

// TestLSTMMatchesStepwiseReference runs a layer over whole sequences and
// compares every hidden state, and the final cell state, with the
// equations applied one step at a time; it also checks that running the
// steps one call at a time, carrying the state, gives the same result.
func TestLSTMMatchesStepwiseReference(t *testing.T) {
	const steps, batch, in, hid = 5, 3, 4, 6
	rng := rand.New(rand.NewPCG(1, 2))
	p := NewParams()
	l := NewLSTMLayer(p, "lstm", in, hid, rng)
	for i := range l.B.Data {
		l.B.Data[i] += 0.1 * rng.NormFloat64()
	}
	x := make([]float64, steps*batch*in)
	for i := range x {
		x[i] = rng.NormFloat64()
	}
	h0, c0 := make([]float64, batch*hid), make([]float64, batch*hid)
	for i := range h0 {
		h0[i], c0[i] = 0.5*rng.NormFloat64(), 0.5*rng.NormFloat64()
	}
	tape := NewTape()
	cLast := make([]float64, batch*hid)
	out := l.Forward(tape, tape.Const(steps*batch, in, x), tape.Const(batch, hid, h0), tape.Const(batch, hid, c0), cLast)

	carryH, carryC := append([]float64(nil), h0...), append([]float64(nil), c0...)
	step := NewTape()
	for s := range steps {
		xs := x[s*batch*in : (s+1)*batch*in]
		next := make([]float64, batch*hid)
		o := l.Forward(step, step.Const(batch, in, xs), step.Const(batch, hid, carryH), step.Const(batch, hid, carryC), next)
		for r := range batch {
			hr, cr := carryH[r*hid:(r+1)*hid], carryC[r*hid:(r+1)*hid]
			wantH, wantC := lstmReference(xs[r*in:(r+1)*in], hr, cr, l.Wx, l.Wh, l.B)
			near := func(what string, got, want []float64) {
				for j := range want {
					if math.Abs(got[j]-want[j]) > 1e-12 {
						t.Fatalf("step %d row %d: %s %v, want %v", s, r, what, got, want)
					}
				}
			}
			near("whole-sequence h", out.Row(s*batch+r), wantH)
			near("one-step h", o.Row(r), wantH)
			near("one-step c", next[r*hid:(r+1)*hid], wantC)
			copy(cr, wantC)
		}
		copy(carryH, o.Data)
		step.Reset()
	}
	for i := range cLast {
		if math.Abs(cLast[i]-carryC[i]) > 1e-12 {
			t.Fatalf("final cell state %v, want %v", cLast, carryC)
		}
	}
}

// TestLSTMStepAllocatesNothing checks that a training step through the
// layer (forward, backward) allocates nothing once the tape has run it.
func TestLSTMStepAllocatesNothing(t *testing.T) {
	const steps, batch, in, hid = 20, 16, 8, 64
	rng := rand.New(rand.NewPCG(3, 4))
	p := NewParams()
	l := NewLSTMLayer(p, "lstm", in, hid, rng)
	x := make([]float64, steps*batch*in)
	for i := range x {
		x[i] = rng.NormFloat64()
	}
	zeros := make([]float64, batch*hid)
	cLast := make([]float64, batch*hid)
	tape := NewTape()
	run := func() {
		tape.Reset()
		h := l.Forward(tape, tape.Const(steps*batch, in, x), tape.Const(batch, hid, zeros), tape.Const(batch, hid, zeros), cLast)
		p.ZeroGrad()
		tape.Backward(tape.Mean(h))
	}
	run()
	if n := testing.AllocsPerRun(5, run); n != 0 {
		t.Fatalf("a training step allocated %v times", n)
	}
}

func TestLSTMShapeErrorsPanicWithShapes(t *testing.T) {
	tape := NewTape()
	xw, wh := tape.Const(6, 12, nil), tape.Const(3, 12, nil)
	h, c := tape.Const(2, 3, nil), tape.Const(2, 3, nil)
	for name, f := range map[string]func(){
		"wh not Hx4H":     func() { tape.LSTM(xw, tape.Const(3, 10, nil), h, c, nil) },
		"xw width":        func() { tape.LSTM(tape.Const(6, 8, nil), wh, h, c, nil) },
		"rows not T·B":    func() { tape.LSTM(tape.Const(5, 12, nil), wh, h, c, nil) },
		"state width":     func() { tape.LSTM(xw, wh, tape.Const(2, 2, nil), c, nil) },
		"cLast too short": func() { tape.LSTM(xw, wh, h, c, make([]float64, 5)) },
	} {
		func() {
			defer func() {
				if r := recover(); r == nil || len(fmt.Sprint(r)) < 20 {
					t.Fatalf("%s: panic %v, want a message with the shapes", name, r)
				}
			}()
			f()
		}()
	}
}

// BenchmarkLSTMTrainStep is one training step of an LSTM layer as PPO's
// recurrent learner runs it: 32 sequences of 20 steps, 64 inputs, 64
// cells, forward, a mean loss and backpropagation through time (about
// 126 MFLOP in matrix products).
func BenchmarkLSTMTrainStep(b *testing.B) {
	const steps, batch, in, hid = 20, 32, 64, 64
	rng := rand.New(rand.NewPCG(3, 4))
	p := NewParams()
	l := NewLSTMLayer(p, "lstm", in, hid, rng)
	x := make([]float64, steps*batch*in)
	for i := range x {
		x[i] = rng.NormFloat64()
	}
	zeros := make([]float64, batch*hid)
	tape := NewTape()
	run := func() {
		tape.Reset()
		h := l.Forward(tape, tape.Const(steps*batch, in, x), tape.Const(batch, hid, zeros), tape.Const(batch, hid, zeros), nil)
		p.ZeroGrad()
		tape.Backward(tape.Mean(h))
	}
	run()
	measure(b, run)
}

// BenchmarkLSTMTrainStepPeer is the peer of BenchmarkLSTMTrainStep: the
// same matrix-product work (six [640x64]·[64x256]-sized products) as
// single large calls of the package's kernel, with no recurrence or
// activations. The ratio of the two is the LSTM's overhead over its
// arithmetic.
func BenchmarkLSTMTrainStepPeer(b *testing.B) {
	const m, k, n = 640, 64, 256
	rng := rand.New(rand.NewPCG(5, 6))
	a, w, c := make([]float64, m*k), make([]float64, k*n), make([]float64, m*n)
	for i := range a {
		a[i] = rng.NormFloat64()
	}
	for i := range w {
		w[i] = rng.NormFloat64()
	}
	var scratch []float64
	measure(b, func() {
		for range 6 {
			gemm(false, false, m, n, k, a, k, w, n, 0, c, n, &scratch)
		}
	})
}
