package models

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// gradCase is one differentiable function of some parameter tensors.
type gradCase struct {
	name   string
	shapes [][2]int
	// positive draws inputs in [0.5, 2) instead of N(0, 1) (Log, Sqrt, Div).
	positive bool
	f        func(t *Tape, x []*Tensor) *Tensor
}

func gradCases() []gradCase {
	un := func(name string, op func(t *Tape, x *Tensor) *Tensor) gradCase {
		return gradCase{name: name, shapes: [][2]int{{3, 4}}, f: func(t *Tape, x []*Tensor) *Tensor { return op(t, x[0]) }}
	}
	bin := func(name string, a, b [2]int, op func(t *Tape, a, b *Tensor) *Tensor) gradCase {
		return gradCase{name: name, shapes: [][2]int{a, b}, f: func(t *Tape, x []*Tensor) *Tensor { return op(t, x[0], x[1]) }}
	}
	idx := []float64{2, 0, 3}
	cases := []gradCase{
		bin("MatMul", [2]int{3, 4}, [2]int{4, 5}, (*Tape).MatMul),
		bin("MatMul/edges", [2]int{7, 5}, [2]int{5, 19}, (*Tape).MatMul),
		bin("MatMul/tiled", [2]int{200, 3}, [2]int{3, 70}, (*Tape).MatMul),
		{name: "Linear", shapes: [][2]int{{3, 4}, {4, 5}, {1, 5}}, f: func(t *Tape, x []*Tensor) *Tensor { return t.Linear(x[0], x[1], x[2]) }},
		{name: "Linear/tiled", shapes: [][2]int{{200, 5}, {5, 70}, {1, 70}}, f: func(t *Tape, x []*Tensor) *Tensor { return t.Linear(x[0], x[1], x[2]) }},
		{name: "Linear/nobias", shapes: [][2]int{{3, 4}, {4, 5}}, f: func(t *Tape, x []*Tensor) *Tensor { return t.Linear(x[0], x[1], nil) }},
		un("AddScalar", func(t *Tape, x *Tensor) *Tensor { return t.AddScalar(x, 1.5) }),
		un("Scale", func(t *Tape, x *Tensor) *Tensor { return t.Scale(x, -2.5) }),
		un("Neg", (*Tape).Neg),
		un("Tanh", (*Tape).Tanh),
		un("Relu", (*Tape).Relu),
		un("Sigmoid", (*Tape).Sigmoid),
		un("Exp", (*Tape).Exp),
		un("Square", (*Tape).Square),
		un("Abs", (*Tape).Abs),
		un("Clip", func(t *Tape, x *Tensor) *Tensor { return t.Clip(x, -0.5, 0.5) }),
		un("Huber", func(t *Tape, x *Tensor) *Tensor { return t.Huber(x, 0.7) }),
		un("Sum", (*Tape).Sum),
		un("Mean", (*Tape).Mean),
		un("RowSum", (*Tape).RowSum),
		un("RowMean", (*Tape).RowMean),
		un("RowMax", (*Tape).RowMax),
		un("LogSoftmax", (*Tape).LogSoftmax),
		un("Softmax", (*Tape).Softmax),
		un("Cols", func(t *Tape, x *Tensor) *Tensor { return t.Cols(x, 1, 3) }),
		un("Gather", func(t *Tape, x *Tensor) *Tensor { return t.Gather(x, t.Const(3, 1, idx)) }),
		{name: "Log", shapes: [][2]int{{3, 4}}, positive: true, f: func(t *Tape, x []*Tensor) *Tensor { return t.Log(x[0]) }},
		{name: "Sqrt", shapes: [][2]int{{3, 4}}, positive: true, f: func(t *Tape, x []*Tensor) *Tensor { return t.Sqrt(x[0]) }},
		{name: "RepeatRows", shapes: [][2]int{{1, 4}}, f: func(t *Tape, x []*Tensor) *Tensor { return t.RepeatRows(x[0], 5) }},
		bin("Concat", [2]int{3, 2}, [2]int{3, 4}, (*Tape).Concat),
	}
	type binop struct {
		name string
		op   func(t *Tape, a, b *Tensor) *Tensor
	}
	for _, b := range []binop{{"Add", (*Tape).Add}, {"Sub", (*Tape).Sub}, {"Mul", (*Tape).Mul}, {"Minimum", (*Tape).Minimum}, {"Maximum", (*Tape).Maximum}} {
		for _, sh := range [][2][2]int{
			{{3, 4}, {3, 4}}, {{3, 4}, {1, 4}}, {{3, 4}, {3, 1}}, {{3, 4}, {1, 1}}, {{1, 4}, {3, 4}}, {{3, 1}, {1, 4}},
		} {
			cases = append(cases, bin(fmt.Sprintf("%s/%dx%d,%dx%d", b.name, sh[0][0], sh[0][1], sh[1][0], sh[1][1]), sh[0], sh[1], b.op))
		}
	}
	for _, sh := range [][2][2]int{{{3, 4}, {3, 4}}, {{3, 4}, {1, 4}}, {{3, 4}, {3, 1}}, {{1, 1}, {3, 4}}} {
		c := bin(fmt.Sprintf("Div/%dx%d,%dx%d", sh[0][0], sh[0][1], sh[1][0], sh[1][1]), sh[0], sh[1], (*Tape).Div)
		c.positive = true
		cases = append(cases, c)
	}
	actions := []float64{1, 0, 2}
	cont := []float64{0.3, -1.2, 0.8, 0.1, -0.4, 1.5}
	cases = append(cases,
		gradCase{name: "Categorical.LogLikelihood", shapes: [][2]int{{3, 4}}, f: func(t *Tape, x []*Tensor) *Tensor {
			return Categorical{N: 4}.LogLikelihood(t, x[0], t.Const(3, 1, actions))
		}},
		// PPO's three terms of one policy's logits share one log-softmax
		// and one exponential of it (Tape.again).
		gradCase{name: "Categorical.AllTerms", shapes: [][2]int{{3, 4}, {3, 4}}, f: func(t *Tape, x []*Tensor) *Tensor {
			d := Categorical{N: 4}
			lp := d.LogLikelihood(t, x[0], t.Const(3, 1, actions))
			return t.Add(t.Add(lp, d.KL(t, x[1], x[0])), d.Entropy(t, x[0]))
		}},
		gradCase{name: "Categorical.Entropy", shapes: [][2]int{{3, 4}}, f: func(t *Tape, x []*Tensor) *Tensor { return Categorical{N: 4}.Entropy(t, x[0]) }},
		gradCase{name: "Categorical.KL", shapes: [][2]int{{3, 4}, {3, 4}}, f: func(t *Tape, x []*Tensor) *Tensor { return Categorical{N: 4}.KL(t, x[0], x[1]) }},
		gradCase{name: "DiagGaussian.LogLikelihood", shapes: [][2]int{{3, 4}}, f: func(t *Tape, x []*Tensor) *Tensor {
			return DiagGaussian{K: 2}.LogLikelihood(t, x[0], t.Const(3, 2, cont))
		}},
		gradCase{name: "DiagGaussian.Entropy", shapes: [][2]int{{3, 4}}, f: func(t *Tape, x []*Tensor) *Tensor { return DiagGaussian{K: 2}.Entropy(t, x[0]) }},
		gradCase{name: "DiagGaussian.KL", shapes: [][2]int{{3, 4}, {3, 4}}, f: func(t *Tape, x []*Tensor) *Tensor { return DiagGaussian{K: 2}.KL(t, x[0], x[1]) }},
		gradCase{name: "PPOClippedObjective", shapes: [][2]int{{5, 1}, {5, 1}}, f: func(t *Tape, x []*Tensor) *Tensor {
			// ratio = exp(logp - oldlogp); min(ratio·A, clip(ratio)·A)
			ratio := t.Exp(t.Sub(x[0], x[1]))
			adv := t.Const(5, 1, []float64{1, -2, 0.5, 3, -1})
			return t.Minimum(t.Mul(ratio, adv), t.Mul(t.Clip(ratio, 0.8, 1.2), adv))
		}},
	)
	return cases
}

// checkGrad compares Backward's gradients of sum(w ⊙ f(x)) (w random, so
// every output element matters differently) with central differences.
func checkGrad(t *testing.T, c gradCase, seed uint64) {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, 1))
	p := NewParams()
	xs := make([]*Tensor, len(c.shapes))
	for i, sh := range c.shapes {
		xs[i] = p.New(fmt.Sprint("x", i), sh[0], sh[1])
	}
	for i := range p.Flat() {
		if c.positive {
			p.Flat()[i] = 0.5 + 1.5*rng.Float64()
		} else {
			p.Flat()[i] = rng.NormFloat64()
		}
	}
	tape := NewTape()
	var weights []float64
	loss := func() float64 {
		tape.Reset()
		out := c.f(tape, xs)
		if weights == nil {
			weights = make([]float64, out.Len())
			for i := range weights {
				weights[i] = rng.NormFloat64()
			}
		}
		l := tape.Sum(tape.Mul(out, tape.Const(out.Rows, out.Cols, weights)))
		return l.Item()
	}
	// Analytic.
	loss()
	tape.Reset()
	out := c.f(tape, xs)
	l := tape.Sum(tape.Mul(out, tape.Const(out.Rows, out.Cols, weights)))
	p.ZeroGrad()
	tape.Backward(l)
	analytic := p.GetFlatGrad(nil)
	// Numeric.
	w := p.Flat()
	const h = 1e-6
	for i := range w {
		orig := w[i]
		w[i] = orig + h
		up := loss()
		w[i] = orig - h
		down := loss()
		w[i] = orig
		num := (up - down) / (2 * h)
		if d := math.Abs(num - analytic[i]); d > 1e-5*(1+math.Abs(num)) {
			t.Fatalf("%s: d/dx[%d] analytic %.9g, numeric %.9g", c.name, i, analytic[i], num)
		}
	}
}

func TestGradientsMatchFiniteDifferences(t *testing.T) {
	for _, c := range gradCases() {
		t.Run(c.name, func(t *testing.T) { checkGrad(t, c, 42) })
	}
}

func TestFullyConnectedGradients(t *testing.T) {
	for _, opts := range []ModelOptions{
		{Hiddens: []int{5, 4}, Activation: "tanh", Value: true},
		{Hiddens: []int{5}, Activation: "relu", FreeLogStd: true, Value: true, VFShareLayers: true},
		{Hiddens: nil, Init: InitNameNormc},
	} {
		m, err := NewFullyConnected(3, 4, opts, 7)
		if err != nil {
			t.Fatal(err)
		}
		rng := rand.New(rand.NewPCG(3, 3))
		obs := make([]float64, 6*3)
		for i := range obs {
			obs[i] = rng.NormFloat64()
		}
		wts := make([]float64, 6*5)
		for i := range wts {
			wts[i] = rng.NormFloat64()
		}
		tape := NewTape()
		loss := func() *Tensor {
			tape.Reset()
			o := m.Forward(tape, tape.Const(6, 3, obs))
			out := o.Out
			if o.Value != nil {
				out = tape.Concat(out, o.Value)
			}
			return tape.Sum(tape.Mul(out, tape.Const(out.Rows, out.Cols, wts[:out.Len()])))
		}
		p := m.Params()
		p.ZeroGrad()
		tape.Backward(loss())
		analytic := p.GetFlatGrad(nil)
		w := p.Flat()
		for i := range w {
			orig := w[i]
			w[i] = orig + 1e-6
			up := loss().Item()
			w[i] = orig - 1e-6
			down := loss().Item()
			w[i] = orig
			num := (up - down) / 2e-6
			if math.Abs(num-analytic[i]) > 1e-5*(1+math.Abs(num)) {
				t.Fatalf("%+v: param %d (%d total) analytic %g numeric %g", opts, i, len(w), analytic[i], num)
			}
		}
	}
}

func TestStopGradientBlocksGradient(t *testing.T) {
	p := NewParams()
	x := p.New("x", 1, 3)
	copy(x.Data, []float64{1, -2, 3})
	tape := NewTape()
	// d/dx sum(x · stop(x)) = stop(x) = x, not 2x.
	tape.Backward(tape.Sum(tape.Mul(x, tape.StopGradient(x))))
	for i, g := range x.Grad {
		if g != x.Data[i] {
			t.Fatalf("grad %v, want %v", x.Grad, x.Data)
		}
	}
}

func TestBackwardFromOutputGradients(t *testing.T) {
	p := NewParams()
	w := p.New("w", 2, 2)
	copy(w.Data, []float64{1, 2, 3, 4})
	tape := NewTape()
	x := tape.Const(1, 2, []float64{5, 7})
	out := tape.MatMul(x, w)
	if err := tape.BackwardFrom(out, []float64{1, 10}); err != nil {
		t.Fatal(err)
	}
	// dW[i][j] = x[i]·g[j].
	want := []float64{5, 50, 7, 70}
	for i := range want {
		if w.Grad[i] != want[i] {
			t.Fatalf("grad %v, want %v", w.Grad, want)
		}
	}
	if err := tape.BackwardFrom(out, []float64{1}); err == nil {
		t.Fatal("BackwardFrom accepted 1 gradient for a 1x2 output")
	}
}

func TestShapeMismatchPanicsWithShapes(t *testing.T) {
	tape := NewTape()
	a, b := tape.Const(2, 3, nil), tape.Const(4, 5, nil)
	for name, f := range map[string]func(){
		"MatMul": func() { tape.MatMul(a, b) },
		"Add":    func() { tape.Add(a, b) },
		"Concat": func() { tape.Concat(a, b) },
		"Gather": func() { tape.Gather(a, tape.Const(2, 1, []float64{0, 3})) },
		"Item":   func() { a.Item() },
	} {
		func() {
			defer func() {
				r := recover()
				if r == nil {
					t.Fatalf("%s: no panic", name)
				}
				if s := fmt.Sprint(r); len(s) < 20 {
					t.Fatalf("%s: unhelpful panic %q", name, s)
				}
			}()
			f()
		}()
	}
}

// A log-softmax or exponential of a tensor already taken since the last
// Reset is the earlier result, not a second operation; another tensor's,
// or the same after a Reset, is recorded.
func TestRepeatedOpsRecordedOnce(t *testing.T) {
	tp := NewTape()
	x := tp.Const(2, 3, []float64{1, 2, 3, 4, 5, 6})
	y := tp.Const(2, 3, []float64{1, 2, 3, 4, 5, 6})
	for _, tc := range []struct {
		name string
		op   func(*Tensor) *Tensor
	}{{"LogSoftmax", tp.LogSoftmax}, {"Exp", tp.Exp}} {
		a := tc.op(x)
		n := tp.Len()
		if b := tc.op(x); b != a || tp.Len() != n {
			t.Errorf("%s of the same tensor recorded twice", tc.name)
		}
		if c := tc.op(y); c == a || tp.Len() != n+1 {
			t.Errorf("%s of another tensor not recorded", tc.name)
		}
	}
	tp.Reset()
	x = tp.Const(2, 3, []float64{1, 2, 3, 4, 5, 6})
	tp.LogSoftmax(x)
	if tp.Len() != 2 {
		t.Errorf("after Reset the tape has %d operations, want 2", tp.Len())
	}
}
