package models

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// gemm's few-rows path for C += A·Bᵀ matches gonum with each kernel set
// the CPU has (TestGemmMatchesGonum covers it through gemm with the best
// kernels only), and gemm takes it exactly when it is cheaper.
func TestGemmFewRows(t *testing.T) {
	if !haveFMA {
		t.Skip("no AVX2/FMA: gemm runs gonum's BLAS and never takes this path")
	}
	if fewRowsCheaper(256, 1600, 128) || fewRowsCheaper(128, 1600, 128) || !fewRowsCheaper(64, 1600, 128) {
		t.Error("PixelPong's dense backward: the few-rows path should start below 118 rows of 1,600×128")
	}
	rng := rand.New(rand.NewPCG(3, 3))
	fill := func(n int) []float64 { return normals(rng, n) }
	kernels := []bool{false}
	if haveAVX512 {
		kernels = append(kernels, true)
	}
	defer func(v bool) { haveAVX512 = v }(haveAVX512)
	for _, avx512 := range kernels {
		haveAVX512 = avx512
		for _, sh := range [][3]int{{1, 1, 1}, {3, 9, 200}, {16, 1600, 128}, {9, 33, 600}, {5, 17, 19}} {
			m, n, k := sh[0], sh[1], sh[2]
			lda, ldb, ldc := k+1, k+2, n+3 // leading dimensions wider than the rows
			a, b, c := fill(m*lda), fill(n*ldb), fill(m*ldc)
			want := append([]float64(nil), c...)
			gemmGonum(false, true, m, n, k, a, lda, b, ldb, 1, want, ldc)
			var scratch []float64
			gemmFewRows(m, n, k, a, lda, b, ldb, c, ldc, &scratch)
			for i := range m {
				for j := range n {
					got, w := c[i*ldc+j], want[i*ldc+j]
					if math.Abs(got-w) > 1e-12*(1+math.Abs(w)) {
						t.Fatalf("%s: c[%d,%d] = %v, gonum %v", fmt.Sprintf("%dx%dx%d avx512=%v", m, n, k, avx512), i, j, got, w)
					}
				}
			}
		}
	}
}
