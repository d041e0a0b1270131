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

// logSlice agrees with math.Log to a few ulps on positive normal numbers
// (near 1, where log is near 0, to a few ulps of 1), and is math.Log's
// own where an argument is zero, negative, subnormal, infinite or NaN,
// also when it writes over its arguments.
func TestLogSliceMatchesMathLog(t *testing.T) {
	var src []float64
	for i := 1; i <= 400000; i++ {
		src = append(src, float64(i)/4000)                           // (0, 100]
		src = append(src, 1+float64(i-200000)/1e6)                   // around 1
		src = append(src, math.Ldexp(1+float64(i)/4e5, i%2000-1000)) // every exponent
	}
	src = append(src, 1, math.Sqrt2, math.Nextafter(math.Sqrt2, 2), 2, 0x1p-1022, 1e308, math.MaxFloat64)
	dst := make([]float64, len(src))
	logSlice(dst, src)
	worst := 0.0
	for i, x := range src {
		want := math.Log(x)
		err := math.Abs(dst[i]-want) / max(math.Abs(want), 1)
		worst = max(worst, err)
		if err > 1e-15 {
			t.Fatalf("log(%v) = %v, want %v (error %g)", x, dst[i], want, err)
		}
	}
	t.Logf("worst error %g", worst)
	for _, special := range []float64{0, math.Copysign(0, -1), -1, math.SmallestNonzeroFloat64, 0x1p-1030,
		math.Inf(1), math.Inf(-1), math.NaN()} {
		x := []float64{2, special, 3, 5, 7}
		logSlice(x, x)
		for i, v := range []float64{2, special, 3, 5, 7} {
			if want := math.Log(v); x[i] != want && !(math.IsNaN(x[i]) && math.IsNaN(want)) {
				t.Errorf("in place, beside %v: log(%v) = %v, want %v", special, v, x[i], want)
			}
		}
	}
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

// LogSoftmax gives each row's log-probabilities to a few ulps of the
// plain formula for rows of one, two (its own loop) and five values,
// large and small, and keeps the edge cases: a row of -Inf but one value
// (log-probability 0 there), a row with +Inf (NaN there, -Inf elsewhere)
// and one with NaN (NaN throughout).
func TestLogSoftmaxRows(t *testing.T) {
	inf, nan := math.Inf(1), math.NaN()
	for _, tc := range []struct {
		cols int
		data []float64
	}{
		{1, []float64{3, -700, 0}},
		{2, []float64{0, 0, 1, -1, 800, 799, -800, -801, 1e-9, 2e-9, -inf, 4, -inf, -inf, inf, 1, nan, 2}},
		{5, []float64{1, 2, 3, 4, 5, -30, 0, 30, 0.5, -0.5, -inf, -inf, 7, -inf, -inf, 2, nan, 0, 0, 0}},
	} {
		tp := NewTape()
		x := tp.Const(len(tc.data)/tc.cols, tc.cols, tc.data)
		got := tp.LogSoftmax(x).Data
		for i := 0; i < x.Rows; i++ {
			row := tc.data[i*tc.cols : (i+1)*tc.cols]
			m := math.Inf(-1)
			for _, v := range row {
				m = math.Max(m, v)
			}
			sum := 0.0
			for _, v := range row {
				sum += math.Exp(v - m)
			}
			for j, v := range row {
				want := v - m - math.Log(sum)
				if math.IsInf(m, 1) { // log Σ exp is +Inf: NaN there, -Inf elsewhere
					want = v - math.Inf(1)
				}
				g := got[i*tc.cols+j]
				switch {
				case math.IsNaN(want) || math.IsNaN(g):
					if !math.IsNaN(want) || !math.IsNaN(g) {
						t.Errorf("cols %d row %v: log-probability %d is %v, want %v", tc.cols, row, j, g, want)
					}
				case g != want && math.Abs(g-want) > 1e-15*max(1, math.Abs(want)):
					t.Errorf("cols %d row %v: log-probability %d is %v, want %v", tc.cols, row, j, g, want)
				}
			}
		}
	}
}
