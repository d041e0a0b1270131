package models

import (
	"fmt"
	"math"
)

// kc32 is the depth of the slices of A and B that gemm32 multiplies at a
// time: an 8-row block of A's slice (16 KiB of float32) stays in L1.
const kc32 = 512

// gemm32 sets C to C + A·B for row-major float32 matrices (A m×k, B k×n,
// C m×n with row strides lda, ldb, ldc) and, with relu, then to max(0, ·):
// the activation is applied as the last slice of k is stored, while C's
// block is still in registers. It runs the AVX-512 kernels where the CPU
// has them and a portable loop elsewhere.
func gemm32(m, n, k int, a []float32, lda int, b []float32, ldb int, c []float32, ldc int, relu bool) {
	gemm32k(haveAVX512, m, n, k, a, lda, b, ldb, c, ldc, relu)
}

// gemm32k is gemm32 with the kernels chosen by the caller: the AVX-512
// ones with asm (which needs haveAVX512), else the portable loop.
func gemm32k(asm bool, m, n, k int, a []float32, lda int, b []float32, ldb int, c []float32, ldc int, relu bool) {
	if !checkGemm32(m, n, k, len(a), lda, len(b), ldb, len(c), ldc) {
		return
	}
	if asm && k > 0 {
		gemm32Asm(m, n, k, a, lda, b, ldb, c, ldc, relu)
		return
	}
	gemm32Go(m, n, k, a, lda, b, ldb, c, ldc, relu)
}

// gemm32d is gemm32 with B in float64 (a layer's weights as training keeps
// them), narrowed to float32 as the kernels load it: for a weight matrix
// used once per call this reads it once, where narrowing it first would
// write a float32 copy and read that back.
func gemm32d(m, n, k int, a []float32, lda int, b []float64, ldb int, c []float32, ldc int, relu bool) {
	if !checkGemm32(m, n, k, len(a), lda, len(b), ldb, len(c), ldc) {
		return
	}
	if haveAVX512 && k > 0 {
		gemm32AsmD(m, n, k, a, lda, b, ldb, c, ldc, relu)
		return
	}
	gemm32Go(m, n, k, a, lda, b, ldb, c, ldc, relu)
}

// checkGemm32 reports whether there is anything to compute, and panics
// when an operand is too short for the sizes: the kernels do not check
// bounds, so the farthest reads are checked here.
func checkGemm32(m, n, k, la, lda, lb, ldb, lc, ldc int) bool {
	if m == 0 || n == 0 {
		return false
	}
	if k > 0 && ((m-1)*lda+k > la || (k-1)*ldb+n > lb) || (m-1)*ldc+n > lc {
		panic(fmt.Sprintf("models: gemm32 %dx%dx%d: operands too short (%d, %d, %d)", m, n, k, la, lb, lc))
	}
	return true
}

// gemm32AsmD is gemm32Asm's few-rows order for float64 B: each 32-column
// panel of B's slice passes under every row block of A (it stays in L2
// between them, and is narrowed once per block of 8 rows).
func gemm32AsmD(m, n, k int, a []float32, lda int, b []float64, ldb int, c []float32, ldc int, relu bool) {
	m8 := m &^ 7
	for k0 := 0; k0 < k; k0 += kc32 {
		kb := min(kc32, k-k0)
		lo := float32(math.Inf(-1))
		if relu && k0+kb == k {
			lo = 0
		}
		for j := 0; j < n; j += 32 {
			mask := uint64(1)<<min(32, n-j) - 1
			bj := &b[k0*ldb+j]
			for i := 0; i < m8; i += 8 {
				kern8x32fd(kb, &a[i*lda+k0], lda, bj, ldb, &c[i*ldc+j], ldc, mask, lo)
			}
			for i := m8; i < m; i++ {
				kern1x32fd(kb, &a[i*lda+k0], bj, ldb, &c[i*ldc+j], mask, lo)
			}
		}
	}
}

// gemm32Asm is gemm32 with the AVX-512 kernels, blocked like gemmAcc512:
// k in slices of kc32; for at most smallM rows each 32-column panel of B's
// slice is read once while every row block of A passes over it, otherwise
// each 8-row block of A (in L1) passes over all of B's slice (in L2),
// or, for at most 16 columns, each 16-row block.
func gemm32Asm(m, n, k int, a []float32, lda int, b []float32, ldb int, c []float32, ldc int, relu bool) {
	m8 := m &^ 7
	noFloor := float32(math.Inf(-1))
	for k0 := 0; k0 < k; k0 += kc32 {
		kb := min(kc32, k-k0)
		lo := noFloor
		if relu && k0+kb == k {
			lo = 0
		}
		if m <= smallM {
			for j := 0; j < n; j += 32 {
				mask := uint64(1)<<min(32, n-j) - 1
				bj := &b[k0*ldb+j]
				for i := 0; i < m8; i += 8 {
					kern8x32f(kb, &a[i*lda+k0], lda, bj, ldb, &c[i*ldc+j], ldc, mask, lo)
				}
				for i := m8; i < m; i++ {
					kern1x32f(kb, &a[i*lda+k0], bj, ldb, &c[i*ldc+j], mask, lo)
				}
			}
			continue
		}
		i := 0
		if n <= 16 {
			// Narrow products: 16 rows at a time fill every lane.
			mask := uint64(1)<<n - 1
			for ; i+16 <= m; i += 16 {
				kern16x16f(kb, &a[i*lda+k0], lda, &b[k0*ldb], ldb, &c[i*ldc], ldc, mask, lo)
			}
		}
		for i < m {
			ai, ci := &a[i*lda+k0], i*ldc
			for j := 0; j < n; j += 32 {
				mask := uint64(1)<<min(32, n-j) - 1
				if i+8 <= m {
					kern8x32f(kb, ai, lda, &b[k0*ldb+j], ldb, &c[ci+j], ldc, mask, lo)
				} else {
					kern1x32f(kb, ai, &b[k0*ldb+j], ldb, &c[ci+j], mask, lo)
				}
			}
			if i+8 <= m {
				i += 8
			} else {
				i++
			}
		}
	}
}

// gemm32Go is the portable gemm32 and gemm32d: each row of C accumulates
// the rows of B scaled by that row of A.
func gemm32Go[B float32 | float64](m, n, k int, a []float32, lda int, b []B, ldb int, c []float32, ldc int, relu bool) {
	for i := 0; i < m; i++ {
		ci := c[i*ldc : i*ldc+n]
		for l, av := range a[i*lda : i*lda+k] {
			for j, bv := range b[l*ldb : l*ldb+n] {
				ci[j] += av * float32(bv)
			}
		}
		if relu {
			for j, v := range ci {
				if v < 0 {
					ci[j] = 0
				}
			}
		}
	}
}

// narrow writes float32(src[i]) into dst[i]; dst must be at least as long
// as src.
func narrow(dst []float32, src []float64) {
	dst = dst[:len(src)]
	i := 0
	if haveAVX512 {
		i = len(src) &^ 15
		narrow8(dst, src)
	}
	for ; i < len(src); i++ {
		dst[i] = float32(src[i])
	}
}

// widen writes float64(src[i]) into dst[i]; dst must be at least as long
// as src.
func widen(dst []float64, src []float32) {
	dst = dst[:len(src)]
	i := 0
	if haveAVX512 {
		i = len(src) &^ 15
		widen16(dst, src)
	}
	for ; i < len(src); i++ {
		dst[i] = float64(src[i])
	}
}

// gemm32T sets C to C + Aᵀ·B for row-major float32 matrices, A stored k×m
// (row stride lda), B k×n and C m×n: the weight gradients of the training
// path, whose A (a layer's inputs or output gradients) is stored with the
// product's depth as its rows. With asm it runs the AVX-512 kernels
// (which need haveAVX512), blocked like gemm32Asm; else a portable loop.
func gemm32T(asm bool, m, n, k int, a []float32, lda int, b []float32, ldb int, c []float32, ldc int) {
	if m == 0 || n == 0 || k == 0 {
		return
	}
	if (k-1)*lda+m > len(a) || (k-1)*ldb+n > len(b) || (m-1)*ldc+n > len(c) {
		panic(fmt.Sprintf("models: gemm32T %dx%dx%d: operands too short (%d, %d, %d)", m, n, k, len(a), len(b), len(c)))
	}
	if !asm {
		for l := 0; l < k; l++ {
			bl := b[l*ldb : l*ldb+n]
			for i, av := range a[l*lda : l*lda+m] {
				ci := c[i*ldc : i*ldc+n]
				for j, bv := range bl {
					ci[j] += av * bv
				}
			}
		}
		return
	}
	m8 := m &^ 7
	lo := float32(math.Inf(-1))
	for k0 := 0; k0 < k; k0 += kc32 {
		kb := min(kc32, k-k0)
		if m <= smallM {
			for j := 0; j < n; j += 32 {
				mask := uint64(1)<<min(32, n-j) - 1
				bj := &b[k0*ldb+j]
				for i := 0; i < m8; i += 8 {
					kern8x32ft(kb, &a[k0*lda+i], lda, bj, ldb, &c[i*ldc+j], ldc, mask, lo)
				}
				for i := m8; i < m; i++ {
					kern1x32ft(kb, &a[k0*lda+i], lda, bj, ldb, &c[i*ldc+j], mask, lo)
				}
			}
			continue
		}
		for i := 0; i < m; {
			ai, ci := &a[k0*lda+i], i*ldc
			for j := 0; j < n; j += 32 {
				mask := uint64(1)<<min(32, n-j) - 1
				if i < m8 {
					kern8x32ft(kb, ai, lda, &b[k0*ldb+j], ldb, &c[ci+j], ldc, mask, lo)
				} else {
					kern1x32ft(kb, ai, lda, &b[k0*ldb+j], ldb, &c[ci+j], mask, lo)
				}
			}
			if i < m8 {
				i += 8
			} else {
				i++
			}
		}
	}
}
