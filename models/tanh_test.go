package models

import (
	"math"
	"testing"
)

func TestTanhSliceMatchesMathTanh(t *testing.T) {
	var src []float64
	for i := -400000; i <= 400000; i++ {
		src = append(src, float64(i)/16000) // [-25, 25]
	}
	src = append(src, 0, math.Copysign(0, -1), 1e-300, -1e-10, 1e-5, 0.3466, 19.99, 20, 21, 700, -700,
		math.Inf(1), math.Inf(-1), math.MaxFloat64, math.SmallestNonzeroFloat64)
	dst := make([]float64, len(src))
	tanhSlice(dst, src)
	worst := 0.0
	for i, x := range src {
		want := math.Tanh(x)
		err := math.Abs(dst[i] - want)
		if want != 0 {
			err /= math.Abs(want)
		}
		if err > worst {
			worst = err
		}
		if err > 1e-15 || math.Signbit(dst[i]) != math.Signbit(want) {
			t.Fatalf("tanh(%v) = %v, want %v (relative error %g)", x, dst[i], want, err)
		}
	}
	t.Logf("worst relative error %g", worst)
	nan := []float64{1, math.NaN(), 2, 3}
	tanhSlice(nan, nan)
	if !math.IsNaN(nan[1]) || math.IsNaN(nan[0]) {
		t.Fatalf("NaN handling: %v", nan)
	}
}

// expSlice agrees with math.Exp to a few ulps over the whole range, and
// exactly (math.Exp's) beyond the kernel's range and for NaN.
func TestExpSliceMatchesMathExp(t *testing.T) {
	var src []float64
	for i := -720000; i <= 720000; i++ {
		src = append(src, float64(i)/1000) // [-720, 720]
	}
	src = append(src, 0, math.Copysign(0, -1), 1e-300, -1e-10, 1e-5, 0.3466, -0.3466, 708, -708, 709, -709,
		709.78, 709.79, -745.1, -745.2, math.Inf(1), math.Inf(-1), math.MaxFloat64, -math.MaxFloat64,
		math.SmallestNonzeroFloat64, math.NaN())
	dst := make([]float64, len(src))
	expSlice(dst, src)
	worst := 0.0
	for i, x := range src {
		want := math.Exp(x)
		if !(x >= -708 && x <= 709) { // math.Exp's own, NaN included
			if dst[i] != want && !(math.IsNaN(dst[i]) && math.IsNaN(want)) {
				t.Fatalf("exp(%v) = %v, want %v", x, dst[i], want)
			}
			continue
		}
		err := math.Abs(dst[i]-want) / want
		worst = max(worst, err)
		if err > 1e-15 {
			t.Fatalf("exp(%v) = %v, want %v (relative error %g)", x, dst[i], want, err)
		}
	}
	t.Logf("worst relative error %g", worst)
}

// Tanh's backward pass (four at a time with AVX2) gives the scalar
// loop's bits, dx = dy·(1 - y²), on a length that leaves a tail.
func TestTanhGradSameAsScalar(t *testing.T) {
	const n = 1027
	p := NewParams()
	x := p.New("x", 1, n)
	copy(x.Data, randVec(1, n))
	g := randVec(2, n)
	tp := NewTape()
	y := tp.Tanh(x)
	tp.Backward(tp.Sum(tp.Mul(y, tp.Const(1, n, g)))) // dy = g exactly
	for k, yk := range y.Data {
		want := 0 + g[k]*(1-yk*yk)
		if math.Float64bits(x.Grad[k]) != math.Float64bits(want) {
			t.Fatalf("value %d: %v, want %v", k, x.Grad[k], want)
		}
	}
}
