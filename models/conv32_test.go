package models

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// TestGemm32MatchesFloat64 checks the float32 product, with and without the
// fused ReLU, against float64 arithmetic on the same (float32) values, for
// the AVX-512 kernels where the CPU has them and for the portable loop:
// full 8×32 blocks, leftover rows, masked columns, both loop orders (at
// most smallM rows and more) and depths beyond one slice of kc32, with B
// in float32 and in float64 (gemm32d). Each
// value may differ by float32 rounding relative to Σ|a·b|.
func TestGemm32MatchesFloat64(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 2))
	fill := func(n int) []float32 {
		x := make([]float32, n)
		for i := range x {
			x[i] = float32(rng.NormFloat64())
		}
		return x
	}
	type kernel func(m, n, k int, a []float32, lda int, b []float32, ldb int, c []float32, ldc int, relu bool)
	// withFloat64B runs a kernel for float64 B on B's values widened
	// (exactly): the result must be the same.
	withFloat64B := func(f func(m, n, k int, a []float32, lda int, b []float64, ldb int, c []float32, ldc int, relu bool)) kernel {
		return func(m, n, k int, a []float32, lda int, b []float32, ldb int, c []float32, ldc int, relu bool) {
			b64 := make([]float64, len(b))
			widen(b64, b)
			f(m, n, k, a, lda, b64, ldb, c, ldc, relu)
		}
	}
	kernels := map[string]kernel{
		"portable":          gemm32Go[float32],
		"portable/float64B": withFloat64B(gemm32Go[float64]),
	}
	if haveAVX512 {
		kernels["avx512"] = gemm32Asm
		kernels["avx512/float64B"] = withFloat64B(gemm32AsmD)
	}
	for name, kern := range kernels {
		for _, sh := range [][3]int{{1, 1, 1}, {8, 32, 3}, {7, 19, 5}, {13, 64, 64}, {65, 16, 16}, {3, 33, 600}, {200, 70, 1}, {9, 256, 1100}, {130, 32, 257}, {97, 13, 600}, {80, 16, 20}} {
			for _, relu := range []bool{false, true} {
				m, n, k := sh[0], sh[1], sh[2]
				t.Run(fmt.Sprintf("%s/%dx%dx%d/relu=%v", name, m, n, k, relu), func(t *testing.T) {
					// A wider C than n columns: the kernels must leave the rest alone.
					ldc := n + 3
					a, b, c := fill(m*k), fill(k*n), fill(m*ldc)
					c0 := append([]float32(nil), c...)
					kern(m, n, k, a, k, b, n, c, ldc, relu)
					for i := 0; i < m; i++ {
						for j := 0; j < ldc; j++ {
							got := c[i*ldc+j]
							if j >= n {
								if got != c0[i*ldc+j] {
									t.Fatalf("c[%d][%d] beyond the %d columns changed: %v, was %v", i, j, n, got, c0[i*ldc+j])
								}
								continue
							}
							want, mag := float64(c0[i*ldc+j]), math.Abs(float64(c0[i*ldc+j]))
							for l := 0; l < k; l++ {
								p := float64(a[i*k+l]) * float64(b[l*n+j])
								want += p
								mag += math.Abs(p)
							}
							if relu {
								want = max(want, 0)
							}
							if math.Abs(float64(got)-want) > 1e-5*mag+1e-30 {
								t.Fatalf("c[%d][%d] = %v, float64 %v (Σ|a·b| %v)", i, j, got, want, mag)
							}
						}
					}
				})
			}
		}
	}
}

// TestGemm32RejectsShortOperands checks that a product whose operands are
// too short for its sizes panics with a message instead of reading past
// them (the kernels do not check bounds).
func TestGemm32RejectsShortOperands(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Fatal("gemm32 with a short B did not panic")
		}
	}()
	gemm32(8, 32, 4, make([]float32, 32), 4, make([]float32, 4*32-1), 32, make([]float32, 8*32), 32, false)
}

// TestNarrow checks float64 → float32 conversion (the AVX-512 body and the
// scalar tail) against Go's rounding, including values float32 cannot
// hold.
func TestNarrow(t *testing.T) {
	for _, n := range []int{0, 1, 15, 16, 17, 100} {
		src := make([]float64, n)
		for i := range src {
			src[i] = math.Pi * float64(i-n/2) * 1e-3
		}
		if n > 3 {
			src[0], src[1], src[2] = 1e300, math.NaN(), math.Inf(-1)
		}
		dst := make([]float32, n+1)
		dst[n] = 7
		narrow(dst, src)
		for i, v := range src {
			want := float32(v)
			if dst[i] != want && !(math.IsNaN(v) && dst[i] != dst[i]) {
				t.Fatalf("n=%d: dst[%d] = %v, want %v", n, i, dst[i], want)
			}
		}
		if dst[n] != 7 {
			t.Fatalf("n=%d: narrow wrote past the source's length", n)
		}
	}
}

// TestConvNetFloat32ActingMatchesFloat64 checks the float32 inference
// path (a forward pass with gradients off) against the float64 path that
// training uses, on the default stacks for 42×42 and 84×84 images and a
// custom stack with several channels, strides 1 and 2, "valid" and "same"
// padding and a depth beyond one kc32 slice, and a single layer whose
// kernel covers the image; at batch sizes below, at and above the kernels'
// blocks, and (for the small networks) above smallM, where the last layer
// narrows its weights first. Policy outputs and values may differ by
// float32 rounding only.
func TestConvNetFloat32ActingMatchesFloat64(t *testing.T) {
	cases := []struct {
		name    string
		shape   []int
		filters []ConvFilter
		batches []int
	}{
		{"default42", []int{42, 42, 1}, nil, []int{1, 2, 7, 9, 33}},
		{"default84x4", []int{84, 84, 4}, nil, []int{1, 9}},
		{"custom", []int{20, 17, 3}, []ConvFilter{{8, 3, 3, 1, false}, {40, 5, 4, 2, true}, {33, 3, 3, 2, false}, {5, 3, 2, 1, true}}, []int{1, 8, 70}},
		{"whole", []int{6, 5, 2}, []ConvFilter{{7, 6, 5, 1, true}}, []int{1, 3, 70}},
	}
	for _, tc := range cases {
		opts := DefaultModelOptions()
		opts.Value = true
		opts.ConvFilters = tc.filters
		m, err := NewConvNet(tc.shape, 6, opts, 5)
		if err != nil {
			t.Fatal(err)
		}
		// Non-zero biases, so that adding them is checked too.
		rng := rand.New(rand.NewPCG(5, 5))
		for _, l := range m.convs {
			for i := range l.bias.Data {
				l.bias.Data[i] = 0.1 * rng.NormFloat64()
			}
		}
		in := m.NumInputs()
		for _, batch := range tc.batches {
			t.Run(fmt.Sprintf("%s/batch=%d", tc.name, batch), func(t *testing.T) {
				obs := make([]float64, batch*in)
				for i := range obs {
					obs[i] = rng.Float64()
				}
				train := NewTape()
				want := m.Forward(train, train.Const(batch, in, obs))
				act := NewTape()
				act.SetNoGrad(true)
				for range 2 { // the second call reuses the scratch buffers
					act.Reset()
					got := m.Forward(act, act.Const(batch, in, obs))
					compareClose(t, "policy outputs", got.Out.Data, want.Out.Data, 1e-4)
					compareClose(t, "values", got.Value.Data, want.Value.Data, 1e-4)
				}
				if use32(act) != haveAVX512 || use32(train) {
					t.Fatalf("use32 is %v acting and %v training; AVX-512: %v", use32(act), use32(train), haveAVX512)
				}
			})
		}
	}
}

// TestConvNetActingAllocatesNothing checks that after its first call the
// float32 acting path reuses the tape's buffers.
func TestConvNetActingAllocatesNothing(t *testing.T) {
	m := newDefaultConvNet42(t)
	obs := randImages(8)
	tape := NewTape()
	tape.SetNoGrad(true)
	act := func() {
		tape.Reset()
		m.Forward(tape, tape.Const(8, 42*42, obs))
	}
	act()
	if n := testing.AllocsPerRun(5, act); n != 0 {
		t.Fatalf("acting allocates %v times per call after the first", n)
	}
}

func compareClose(t *testing.T, what string, got, want []float64, tol float64) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d values, want %d", what, len(got), len(want))
	}
	for i := range got {
		if math.Abs(got[i]-want[i]) > tol*(1+math.Abs(want[i])) {
			t.Fatalf("%s[%d] = %v, float64 path %v", what, i, got[i], want[i])
		}
	}
}
