package models

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// gemm512Model is a scalar model of gemmAcc512's sums, value for value:
// for each slice of kc steps of k, a block row's element is one fused
// multiply-add chain from zero added to C, and a leftover row's element
// (past the last full block of 8 rows) is two chains, over the even and
// the odd steps, added together and then to C.
func gemm512Model(tA bool, m, n, k int, a []float64, lda int, b []float64, ldb int, c []float64, ldc int) {
	at := func(i, l int) float64 {
		if tA {
			return a[l*lda+i]
		}
		return a[i*lda+l]
	}
	m8 := m &^ 7
	for k0 := 0; k0 < k; k0 += kc {
		k1 := min(k0+kc, k)
		for i := range m {
			for j := range n {
				if i < m8 {
					s := 0.0
					for l := k0; l < k1; l++ {
						s = math.FMA(at(i, l), b[l*ldb+j], s)
					}
					c[i*ldc+j] += s
					continue
				}
				var even, odd float64
				for l := k0; l < k1; l++ {
					if (l-k0)%2 == 0 {
						even = math.FMA(at(i, l), b[l*ldb+j], even)
					} else {
						odd = math.FMA(at(i, l), b[l*ldb+j], odd)
					}
				}
				c[i*ldc+j] += even + odd
			}
		}
	}
}

// TestGemm512SameSumsAsModel checks gemmAcc512 bit for bit against the
// scalar model for widths whose last panel takes the 8-wide kernels (n%16
// in 1..8) or the 16-wide ones, row counts with and without leftover rows
// on both of its loop orders (up to smallM rows and more), A plain and
// transposed, depths within and across a k slice, and strides wider than
// the matrices. Each case runs adding to C and writing it (set): the
// written C must be the model's sum added to a cleared C, bit for bit,
// whatever C held before, with the padding between rows left as it was.
func TestGemm512SameSumsAsModel(t *testing.T) {
	if !haveAVX512 {
		t.Skip("no AVX-512 on this CPU")
	}
	rng := rand.New(rand.NewPCG(5, 12))
	fill := func(n int) []float64 { return normals(rng, n) }
	for _, tc := range []struct{ m, n, k int }{
		{1, 1, 1}, {8, 7, 3}, {9, 2, 5}, {7, 8, 17}, {64, 7, 128}, {65, 1, 300},
		{130, 7, 256}, {256, 2, 129}, {16, 9, 40}, {24, 16, 64}, {33, 17, 7},
		{72, 24, 300}, {129, 25, 33}, {8, 40, 513}, {200, 130, 64},
	} {
		for _, tA := range []bool{false, true} {
			for _, pad := range []int{0, 3} {
				for _, set := range []bool{false, true} {
					m, n, k := tc.m, tc.n, tc.k
					t.Run(fmt.Sprintf("%dx%dx%d/tA=%v/pad=%d/set=%v", m, n, k, tA, pad, set), func(t *testing.T) {
						lda := k + pad
						if tA {
							lda = m + pad
						}
						ldb, ldc := n+pad, n+pad
						rowsA := m
						if tA {
							rowsA = k
						}
						a, b, c := fill(rowsA*lda), fill(k*ldb), fill(m*ldc)
						want := append([]float64(nil), c...)
						if set {
							for i := 0; i < m; i++ {
								clear(want[i*ldc : i*ldc+n])
							}
						}
						gemm512Model(tA, m, n, k, a, lda, b, ldb, want, ldc)
						gemmAcc512(tA, m, n, k, a, lda, b, ldb, c, ldc, set)
						for i := range c {
							if math.Float64bits(c[i]) != math.Float64bits(want[i]) {
								t.Fatalf("c[%d] (row %d, column %d) = %v, model %v", i, i/ldc, i%ldc, c[i], want[i])
							}
						}
					})
				}
			}
		}
	}
}
