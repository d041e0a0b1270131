package models

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// TestGemmMatchesGonum checks the assembly kernel paths (AVX2, and AVX-512
// where the CPU has it) against gonum's BLAS for every transpose
// combination and for shapes that exercise full 4×8 and 8×16 blocks,
// leftover rows, leftover (masked) columns and depths beyond one k slice.
func TestGemmMatchesGonum(t *testing.T) {
	rng := rand.New(rand.NewPCG(8, 8))
	fill := func(n int) []float64 { return normals(rng, n) }
	for _, sh := range [][3]int{{1, 1, 1}, {4, 8, 3}, {7, 19, 5}, {13, 64, 64}, {128, 2, 64}, {3, 9, 200}, {200, 70, 1}, {9, 33, 600}, {17, 16, 257}, {70, 20, 300}} {
		for _, tr := range [][2]bool{{false, false}, {true, false}, {false, true}, {true, true}} {
			for _, beta := range []float64{0, 1} {
				m, n, k := sh[0], sh[1], sh[2]
				name := fmt.Sprintf("%dx%dx%d/tA=%v,tB=%v,beta=%v", m, n, k, tr[0], tr[1], beta)
				lda, ldb := k, n
				if tr[0] {
					lda = m
				}
				if tr[1] {
					ldb = k
				}
				a, b, c := fill(m*k), fill(k*n), fill(m*n)
				want := append([]float64(nil), c...)
				gemmGonum(tr[0], tr[1], m, n, k, a, lda, b, ldb, beta, want, n)
				c0 := append([]float64(nil), c...)
				var scratch []float64
				gemm(tr[0], tr[1], m, n, k, a, lda, b, ldb, beta, c, n, &scratch)
				for i := range c {
					if math.Abs(c[i]-want[i]) > 1e-12*(1+math.Abs(want[i])) {
						t.Fatalf("%s: c[%d] = %v, gonum %v", name, i, c[i], want[i])
					}
				}
				if !haveAVX512 || tr[1] || beta == 0 {
					continue
				}
				// gemm took the AVX-512 kernels; check the AVX2 ones too.
				gemmAcc(tr[0], m, n, k, a, lda, b, ldb, c0, n, make([]float64, max(m, k)))
				for i := range c0 {
					if math.Abs(c0[i]-want[i]) > 1e-12*(1+math.Abs(want[i])) {
						t.Fatalf("%s (AVX2 kernels): c[%d] = %v, gonum %v", name, i, c0[i], want[i])
					}
				}
			}
		}
	}
}

// normals returns n draws of rng's standard normal: the operands of the
// kernel tests.
func normals(rng *rand.Rand, n int) []float64 {
	x := make([]float64, n)
	for i := range x {
		x[i] = rng.NormFloat64()
	}
	return x
}
