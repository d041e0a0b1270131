package models

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

func mustPool(t *testing.T, h, w, c, k, s int) PoolGeom {
	t.Helper()
	g, err := NewPoolGeom(h, w, c, k, s)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

func testBN(affine *Tensor) *BatchNorm {
	c := affine.Cols
	return &BatchNorm{C: c, Affine: affine, Momentum: 0.9, Eps: 1e-5, RunMean: make([]float64, c), RunVar: make([]float64, c)}
}

func TestSupervisedGradientsMatchFiniteDifferences(t *testing.T) {
	labels := []float64{2, 0, 3}
	pool2 := mustPool(t, 4, 4, 2, 2, 2)
	pool3 := mustPool(t, 5, 5, 1, 3, 1)
	cases := []gradCase{
		{name: "SoftmaxCrossEntropy", shapes: [][2]int{{3, 4}}, f: func(tp *Tape, x []*Tensor) *Tensor {
			return tp.SoftmaxCrossEntropy(x[0], tp.Const(3, 1, labels))
		}},
		{name: "MaxPool2D/2x2", shapes: [][2]int{{2, 32}}, f: func(tp *Tape, x []*Tensor) *Tensor { return tp.MaxPool2D(x[0], pool2) }},
		{name: "MaxPool2D/overlapping", shapes: [][2]int{{2, 25}}, f: func(tp *Tape, x []*Tensor) *Tensor { return tp.MaxPool2D(x[0], pool3) }},
		{name: "GlobalAvgPool", shapes: [][2]int{{2, 27}}, f: func(tp *Tape, x []*Tensor) *Tensor { return tp.GlobalAvgPool(x[0], 3) }},
		{name: "BatchNorm/train", shapes: [][2]int{{4, 6}, {2, 3}}, f: func(tp *Tape, x []*Tensor) *Tensor {
			return testBN(x[1]).Forward(tp, x[0], true)
		}},
		{name: "BatchNorm/dense", shapes: [][2]int{{5, 2}, {2, 2}}, f: func(tp *Tape, x []*Tensor) *Tensor {
			return testBN(x[1]).Forward(tp, x[0], true)
		}},
		{name: "BatchNorm/eval", shapes: [][2]int{{4, 6}, {2, 3}}, f: func(tp *Tape, x []*Tensor) *Tensor {
			bn := testBN(x[1])
			copy(bn.RunMean, []float64{0.5, -1, 2})
			copy(bn.RunVar, []float64{0.3, 2, 1})
			return bn.Forward(tp, x[0], false)
		}},
		{name: "Dropout", shapes: [][2]int{{3, 5}}, f: func(tp *Tape, x []*Tensor) *Tensor {
			d, _ := NewDropout(0.4, 9) // the same mask on every call
			return d.Forward(tp, x[0], true)
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { checkGrad(t, c, 42) })
	}
}

// checkParamGrads compares Backward's gradients of loss with respect to
// every weight of p with central differences.
func checkParamGrads(t *testing.T, p *Params, loss func(tp *Tape) *Tensor) {
	t.Helper()
	tp := NewTape()
	p.ZeroGrad()
	tp.Backward(loss(tp))
	analytic := p.GetFlatGrad(nil)
	w := p.Flat()
	for i := range w {
		orig := w[i]
		w[i] = orig + 1e-6
		tp.Reset()
		up := loss(tp).Item()
		w[i] = orig - 1e-6
		tp.Reset()
		down := loss(tp).Item()
		w[i] = orig
		num := (up - down) / 2e-6
		if math.Abs(num-analytic[i]) > 1e-5*(1+math.Abs(num)) {
			name, at := p.locate(i)
			t.Fatalf("%s[%d]: analytic %.9g, numeric %.9g", name, at, analytic[i], num)
		}
	}
}

func TestResidualBlockGradients(t *testing.T) {
	for _, tc := range []struct {
		name           string
		cin, cout, str int
	}{{"identity", 2, 2, 1}, {"projection", 2, 3, 2}} {
		t.Run(tc.name, func(t *testing.T) {
			p, rng := NewParams(), rand.New(rand.NewPCG(1, 2))
			blk, err := NewResidualBlock(p, "b", 4, 4, tc.cin, tc.cout, tc.str, rng)
			if err != nil {
				t.Fatal(err)
			}
			if (blk.Shortcut != nil) != (tc.name == "projection") {
				t.Fatalf("shortcut %v for %+v", blk.Shortcut, tc)
			}
			x := p.New("x", 3, 16*tc.cin)
			for i := range x.Data {
				x.Data[i] = rng.NormFloat64()
			}
			out := blk.OutShape()
			wts := make([]float64, 3*out[0]*out[1]*out[2])
			for i := range wts {
				wts[i] = rng.NormFloat64()
			}
			checkParamGrads(t, p, func(tp *Tape) *Tensor {
				y := blk.Forward(tp, x, true)
				return tp.Sum(tp.Mul(y, tp.Const(y.Rows, y.Cols, wts)))
			})
		})
	}
}

func TestResNetGradientsAndShapes(t *testing.T) {
	n, err := NewResNet(ResNetConfig{H: 6, W: 6, C: 1, Classes: 4, Widths: []int{2, 3}, Blocks: 1}, 5)
	if err != nil {
		t.Fatal(err)
	}
	if len(n.BatchNorms()) != 6 || len(n.Stats()) != 2*(2+2+2+3+3+3) {
		t.Fatalf("%d BatchNorms, %d statistics", len(n.BatchNorms()), len(n.Stats()))
	}
	rng := rand.New(rand.NewPCG(3, 4))
	x := make([]float64, 4*36)
	for i := range x {
		x[i] = rng.Float64()
	}
	y := []float64{0, 3, 1, 2}
	checkParamGrads(t, n.Params(), func(tp *Tape) *Tensor {
		return tp.SoftmaxCrossEntropy(n.Forward(tp, tp.Const(4, 36, x), true), tp.Const(4, 1, y))
	})
	if err := n.SetStats(n.Stats()[1:]); err == nil {
		t.Fatal("SetStats accepted too few statistics")
	}
	if _, err := NewResNet(ResNetConfig{H: 6, W: 6, C: 1, Classes: 4}, 1); err == nil {
		t.Fatal("NewResNet accepted no widths")
	}
}

func TestMaxPoolValues(t *testing.T) {
	g := mustPool(t, 2, 4, 1, 2, 2)
	tp := NewTape()
	out := tp.MaxPool2D(tp.Const(1, 8, []float64{1, 5, 2, 0, 3, -1, 7, 4}), g)
	if out.Cols != 2 || out.Data[0] != 5 || out.Data[1] != 7 {
		t.Fatalf("MaxPool2D = %v, want [5 7]", out.Data)
	}
	for _, bad := range [][5]int{{0, 4, 1, 2, 2}, {2, 4, 1, 3, 1}, {4, 4, 1, 2, 0}} {
		if _, err := NewPoolGeom(bad[0], bad[1], bad[2], bad[3], bad[4]); err == nil {
			t.Errorf("NewPoolGeom%v accepted", bad)
		}
	}
}

func TestBatchNormNormalisesAndTracksStatistics(t *testing.T) {
	p := NewParams()
	bn := NewBatchNorm(p, "bn", 2)
	tp := NewTape()
	x := []float64{1, 10, 3, 20, 5, 30, 7, 40} // channel 0: 1,3,5,7; channel 1: 10..40
	for i := 0; i < 200; i++ {
		tp.Reset()
		bn.Forward(tp, tp.Const(4, 2, x), true)
	}
	tp.Reset()
	y := bn.Forward(tp, tp.Const(4, 2, x), true)
	for c := 0; c < 2; c++ {
		m, v := 0.0, 0.0
		for r := 0; r < 4; r++ {
			m += y.At(r, c) / 4
		}
		for r := 0; r < 4; r++ {
			v += (y.At(r, c) - m) * (y.At(r, c) - m) / 4
		}
		if math.Abs(m) > 1e-9 || math.Abs(v-1) > 1e-4 {
			t.Fatalf("channel %d normalised to mean %g variance %g", c, m, v)
		}
	}
	// Running statistics converge to the batch mean and unbiased variance.
	if math.Abs(bn.RunMean[0]-4) > 1e-3 || math.Abs(bn.RunVar[0]-20.0/3) > 1e-2 || math.Abs(bn.RunMean[1]-25) > 1e-2 {
		t.Fatalf("running mean %v var %v", bn.RunMean, bn.RunVar)
	}
	tp.Reset()
	e := bn.Forward(tp, tp.Const(4, 2, x), false)
	if math.Abs(e.At(0, 0)-(1-4)/math.Sqrt(20.0/3+1e-5)) > 1e-2 {
		t.Fatalf("eval output %v", e.Data)
	}
}

func TestDropout(t *testing.T) {
	if _, err := NewDropout(1, 1); err == nil || !strings.Contains(err.Error(), "[0, 1)") {
		t.Fatalf("NewDropout(1): %v", err)
	}
	d, _ := NewDropout(0.25, 3)
	tp := NewTape()
	ones := make([]float64, 4000)
	for i := range ones {
		ones[i] = 1
	}
	x := tp.Const(1, 4000, ones)
	if d.Forward(tp, x, false) != x {
		t.Fatal("evaluation changed the input")
	}
	y := d.Forward(tp, x, true)
	zeros, sum := 0, 0.0
	for _, v := range y.Data {
		if v == 0 {
			zeros++
		} else if math.Abs(v-4.0/3) > 1e-12 {
			t.Fatalf("kept value %v, want 4/3", v)
		}
		sum += v
	}
	if zeros < 900 || zeros > 1100 || math.Abs(sum/4000-1) > 0.05 {
		t.Fatalf("%d of 4000 dropped, mean %g", zeros, sum/4000)
	}
}

func TestSGDWeightDecay(t *testing.T) {
	w := []float64{1}
	o := &SGD{LR: 0.1, WeightDecay: 0.5}
	o.Step(w, []float64{0})
	if math.Abs(w[0]-0.95) > 1e-12 {
		t.Fatalf("plain: w = %v, want 0.95", w[0])
	}
	w = []float64{1}
	o = &SGD{LR: 0.1, Momentum: 0.9, WeightDecay: 0.5}
	o.Step(w, []float64{0}) // v = 0.5, w = 0.95
	o.Step(w, []float64{0}) // v = 0.45 + 0.475, w = 0.95 - 0.0925
	if math.Abs(w[0]-0.8575) > 1e-12 {
		t.Fatalf("momentum: w = %v, want 0.8575", w[0])
	}
}

func TestAccuracy(t *testing.T) {
	tp := NewTape()
	logits := tp.Const(3, 3, []float64{0.1, 2, 0.3, 5, 1, 0, 0, 0, -1})
	if got := Correct(logits, []float64{1, 0, 2}); got != 2 {
		t.Fatalf("Correct = %d, want 2", got)
	}
	if got := Accuracy(logits, []float64{1, 1, 1}); math.Abs(got-1.0/3) > 1e-12 {
		t.Fatalf("Accuracy = %v", got)
	}
	if got := Argmax(logits, nil); got[0] != 1 || got[1] != 0 || got[2] != 0 {
		t.Fatalf("Argmax = %v", got)
	}
}
