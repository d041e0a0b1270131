package models

import (
	"math"
	"testing"
)

// quadratic is f(w) = ½ Σ a_i (w_i - c_i)², minimised at c.
func quadraticGrad(w, g []float64) float64 {
	a := []float64{1, 4, 0.25}
	c := []float64{3, -2, 0.5}
	f := 0.0
	for i := range w {
		d := w[i] - c[i]
		f += 0.5 * a[i] * d * d
		g[i] = a[i] * d
	}
	return f
}

func TestOptimizersMinimiseQuadratic(t *testing.T) {
	for _, tc := range []struct {
		name  string
		opt   Optimizer
		steps int
	}{
		{"SGD", NewSGD(0.2, 0), 300},
		{"SGD+momentum", NewSGD(0.05, 0.9), 300},
		{"Adam", NewAdam(0.05), 2000},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := []float64{0, 0, 0}
			g := make([]float64, 3)
			var f float64
			for i := 0; i < tc.steps; i++ {
				f = quadraticGrad(w, g)
				if err := tc.opt.Step(w, g); err != nil {
					t.Fatal(err)
				}
			}
			if f > 1e-6 {
				t.Fatalf("loss %g after %d steps, w = %v", f, tc.steps, w)
			}
		})
	}
}

func TestAdamFirstStepIsLearningRate(t *testing.T) {
	// With bias correction the first step moves each weight by LR·sign(g)
	// (up to ε), whatever the gradient's scale.
	a := NewAdam(0.1)
	w := []float64{1, 1}
	if err := a.Step(w, []float64{1000, -0.001}); err != nil {
		t.Fatal(err)
	}
	if !near(w[0], 0.9, 1e-6) || !near(w[1], 1.1, 1e-4) {
		t.Fatalf("after one step w = %v, want [0.9 1.1]", w)
	}
	// State round trip continues identically.
	b := NewAdam(0.1)
	if err := b.SetState(a.State()); err != nil {
		t.Fatal(err)
	}
	w2 := append([]float64(nil), w...)
	g := []float64{0.3, 0.7}
	_ = a.Step(w, g)
	_ = b.Step(w2, g)
	if w[0] != w2[0] || w[1] != w2[1] {
		t.Fatalf("restored Adam diverged: %v vs %v", w, w2)
	}
	if err := a.Step(w, []float64{1}); err == nil {
		t.Fatal("Adam accepted mismatched lengths")
	}
	if err := a.Step([]float64{1, 2, 3}, []float64{1, 2, 3}); err == nil {
		t.Fatal("Adam accepted a different model's weights mid-run")
	}
}

func TestClipByGlobalNorm(t *testing.T) {
	g := []float64{3, 4}
	if n := ClipByGlobalNorm(g, 10); n != 5 || g[0] != 3 || g[1] != 4 {
		t.Fatalf("below the limit: norm %v, g %v", n, g)
	}
	if n := ClipByGlobalNorm(g, 1); n != 5 || !near(g[0], 0.6, 1e-15) || !near(g[1], 0.8, 1e-15) {
		t.Fatalf("above the limit: norm %v, g %v", n, g)
	}
	if n := GlobalNorm(g); !near(n, 1, 1e-15) {
		t.Fatalf("clipped norm %v, want 1", n)
	}
	nan := []float64{math.NaN(), 1}
	if n := ClipByGlobalNorm(nan, 1); !math.IsNaN(n) {
		t.Fatalf("NaN gradient reported norm %v", n)
	}
}

func TestClipScale(t *testing.T) {
	for _, c := range []struct{ norm, limit, want float64 }{
		{norm: 10, limit: 5, want: 0.5}, // over the limit: scaled down to it
		{norm: 5, limit: 5, want: 1},    // at the limit: untouched
		{norm: 2, limit: 5, want: 1},    // under it
		{norm: 10, limit: 0, want: 1},   // 0 turns clipping off
		{norm: 0, limit: 5, want: 1},    // a zero gradient
	} {
		if got := ClipScale(c.norm, c.limit); got != c.want {
			t.Errorf("ClipScale(%v, %v) = %v, want %v", c.norm, c.limit, got, c.want)
		}
	}
}

// TestAdamKernelMatchesGo compares the vectorised update (where the CPU has
// it) with the plain loop over many steps and an odd length.
func TestAdamKernelMatchesGo(t *testing.T) {
	const n = 1003
	w1, w2 := make([]float64, n), make([]float64, n)
	m1, m2, v1, v2 := make([]float64, n), make([]float64, n), make([]float64, n), make([]float64, n)
	g := make([]float64, n)
	for step := 0; step < 50; step++ {
		for i := range g {
			g[i] = math.Sin(float64(i*7+step)) * float64(1+i%5)
		}
		adamUpdate(w1, g, m1, v1, 0.9, 0.999, 0.01, 0.7, 1e-8)
		adamGo(w2, g, m2, v2, 0.9, 0.999, 0.01, 0.7, 1e-8)
	}
	for i := range w1 {
		if !near(w1[i], w2[i], 1e-12) || !near(m1[i], m2[i], 1e-12) || !near(v1[i], v2[i], 1e-12) {
			t.Fatalf("weight %d: %v vs %v (m %v vs %v, v %v vs %v)", i, w1[i], w2[i], m1[i], m2[i], v1[i], v2[i])
		}
	}
}

// TestAdam8SameBitsAsAdam4 checks that the AVX-512 kernel gives every
// weight, moment, cleared gradient and finite check the bits of the AVX2
// one, for lengths around its eight-value step, scaled and cleared
// gradients, and non-finite weights in any lane.
func TestAdam8SameBitsAsAdam4(t *testing.T) {
	if !haveAVX512 {
		t.Skip("no AVX-512 on this CPU")
	}
	type state struct{ w, g, m, v []float64 }
	fill := func(n, seed int, bad int) state {
		s := state{make([]float64, n), make([]float64, n), make([]float64, n), make([]float64, n)}
		for i := range n {
			x := float64(i*31 + seed)
			s.w[i], s.g[i] = math.Sin(x), 3*math.Cos(1.7*x)
			s.m[i], s.v[i] = 0.1*math.Sin(2.3*x), math.Abs(math.Sin(0.7*x))
		}
		if bad >= 0 && bad < n {
			s.w[bad] = math.Inf(1 - 2*(bad%2))
		}
		return s
	}
	for _, c := range []struct {
		name  string
		n     int
		bad   int // a non-finite weight's index, -1 for none
		scale float64
		clear bool
	}{
		{"one step", 8, -1, 1, false},
		{"two steps and a tail of four", 20, -1, 1, false},
		{"odd tail", 23, -1, 0.37, true},
		{"cleared and scaled", 64, -1, 0.5, true},
		{"infinite weight in lane 0", 16, 8, 1, false},
		{"infinite weight in lane 7", 16, 15, 0.25, true},
		{"infinite weight past the kernel", 12, 9, 1, true},
		{"a network's size", 4610, -1, 0.81, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			a, b := fill(c.n, 5, c.bad), fill(c.n, 5, c.bad)
			n8 := c.n &^ 7
			fin8 := adam8(a.w, a.g, a.m, a.v, 0.9, 0.999, 0.003, 1.3, 1e-8, c.scale, c.clear)
			fin4 := adam4(b.w[:n8], b.g, b.m, b.v, 0.9, 0.999, 0.003, 1.3, 1e-8, c.scale, c.clear)
			wantFinite := c.bad < 0 || c.bad >= n8
			if fin8 != fin4 || fin8 != wantFinite {
				t.Errorf("finite: adam8 %v, adam4 %v, want %v", fin8, fin4, wantFinite)
			}
			for i := range c.n {
				same := func(x, y float64) bool { return math.Float64bits(x) == math.Float64bits(y) }
				if !same(a.w[i], b.w[i]) || !same(a.g[i], b.g[i]) || !same(a.m[i], b.m[i]) || !same(a.v[i], b.v[i]) {
					t.Fatalf("value %d: w %v/%v g %v/%v m %v/%v v %v/%v", i, a.w[i], b.w[i], a.g[i], b.g[i], a.m[i], b.m[i], a.v[i], b.v[i])
				}
			}
		})
	}
}
