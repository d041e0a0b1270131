package models

import "fmt"

// kc is the depth of the slices of A and B that gemmAcc512 multiplies at a
// time: an 8-row block of A's slice (16 KiB) stays in the L1 cache.
const kc = 256

// smallM is the largest row count for which gemmAcc512 walks B's column
// panels in the outer loop: A's whole slice (at most 128 KiB) then stays in
// L2 and each panel of B is read from memory once, where the other order
// would read B once per block of 8 rows. Batches of a few observations
// times a large weight matrix (a rollout's forward pass) are such products.
const smallM = 64

// gemmAcc512 adds op(A)·B to C with the AVX-512 kernels: 8×16 blocks of C
// (the last block of a row masked to the columns left, and one of at most
// 8 columns by the 8-wide kernels), then leftover rows one at a time. It
// walks k in slices of kc and, within one, each block of 8 rows of A
// across all of B's columns, so that A's block stays in L1 and B's slice
// in L2 (or, for at most smallM rows, each panel of B across all of A's
// rows). With set, it writes op(A)·B into C instead: the first slice's
// kernels store their blocks (C = 0 + Σ, the bits of adding to a cleared
// C) without reading C, so C need not be cleared first.
func gemmAcc512(tA bool, m, n, k int, a []float64, lda int, b []float64, ldb int, c []float64, ldc int, set bool) {
	if m == 0 || n == 0 {
		return
	}
	if k == 0 {
		if set {
			for i := 0; i < m; i++ {
				clear(c[i*ldc : i*ldc+n])
			}
		}
		return
	}
	ars, aks := lda, 1
	if tA {
		ars, aks = 1, lda
	}
	// The kernels do not check bounds, so check the farthest reads here.
	if (m-1)*ars+(k-1)*aks >= len(a) || (k-1)*ldb+n > len(b) || (m-1)*ldc+n > len(c) {
		panic(fmt.Sprintf("models: gemm %dx%dx%d: operands too short (%d, %d, %d)", m, n, k, len(a), len(b), len(c)))
	}
	m8 := m &^ 7
	for k0 := 0; k0 < k; k0 += kc {
		kb := min(kc, k-k0)
		first := set && k0 == 0
		if m <= smallM {
			// Few rows: each 16-column panel of B's slice is loaded once
			// and stays in L1 while every row block of A passes over it.
			for j := 0; j < n; j += 16 {
				cols := min(16, n-j)
				bj := &b[k0*ldb+j]
				for i := 0; i < m8; i += 8 {
					kern8(kb, &a[i*ars+k0*aks], ars, aks, bj, ldb, &c[i*ldc+j], ldc, cols, first)
				}
				for i := m8; i < m; i++ {
					kern1(kb, &a[i*ars+k0*aks], aks, bj, ldb, &c[i*ldc+j], cols, first)
				}
			}
			continue
		}
		// B's slice in column chunks that fit in L2 beside A's rows: a
		// wide B (a layer's input gradient dY·Wᵀ through a large weight)
		// would otherwise be read from farther away once per 8 rows.
		nc := max(16, panelBytes/(8*kb)&^15)
		for j0 := 0; j0 < n; j0 += nc {
			j1 := min(j0+nc, n)
			for i := 0; i < m; {
				ai, ci := &a[i*ars+k0*aks], i*ldc
				for j := j0; j < j1; j += 16 {
					cols := min(16, n-j)
					if i < m8 {
						kern8(kb, ai, ars, aks, &b[k0*ldb+j], ldb, &c[ci+j], ldc, cols, first)
					} else {
						kern1(kb, ai, aks, &b[k0*ldb+j], ldb, &c[ci+j], cols, first)
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
}

// panelBytes is how much of B's slice gemmAcc512 multiplies by all of A's
// rows before it moves on: a quarter of a typical L2 cache, so that the
// chunk and the rows of A streaming past it stay there together.
const panelBytes = 256 << 10

// setC is the kernels' mask bit that makes them write their block of C
// instead of adding to it.
const setC = uint64(1) << 32

// kernMask is the kernels' mask for a panel of cols ≤ 16 columns, written
// (set) or added to.
func kernMask(cols int, set bool) uint64 {
	m := uint64(1)<<cols - 1
	if set {
		m |= setC
	}
	return m
}

// kern8 adds an 8-row block of op(A)·B to C (or, with set, writes it) over
// the panel of cols ≤ 16 columns at b and c: with the 8-wide kernel when
// the panel fits in one vector, so that its multiply-adds and loads are not
// doubled by a masked half. Both kernels give the same sums.
func kern8(k int, a *float64, ars, aks int, b *float64, ldb int, c *float64, ldc int, cols int, set bool) {
	if cols <= 8 {
		kern8x8m(k, a, ars, aks, b, ldb, c, ldc, kernMask(cols, set))
		return
	}
	kern8x16(k, a, ars, aks, b, ldb, c, ldc, kernMask(cols, set))
}

// kern1 is kern8 for one row of A.
func kern1(k int, a *float64, aks int, b *float64, ldb int, c *float64, cols int, set bool) {
	if cols <= 8 {
		kern1x8m(k, a, aks, b, ldb, c, kernMask(cols, set))
		return
	}
	kern1x16(k, a, aks, b, ldb, c, kernMask(cols, set))
}
