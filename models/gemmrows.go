package models

// gemmFewRows is gemm's path for C += A·Bᵀ (A [m×k], B stored [n×k]) when
// A has few rows: it computes Cᵀ = B·Aᵀ, transposing A and the product
// (m·k + m·n values) instead of B (n·k values). A data-parallel shard's
// backward pass through a dense layer is such a product (dX = dY·Wᵀ with
// the shard's rows against the whole weight): transposing the weight is a
// cost that does not shrink with the shard, and at 16 shards of PixelPong's
// minibatch it would outweigh the product itself.
func fewRowsCheaper(m, n, k int) bool { return m*(k+n) < n*k }

// gemmFewRows adds A·Bᵀ to C as described above; the kernels' arithmetic
// for each value of C is a sum over k in order, as on gemm's other path.
func gemmFewRows(m, n, k int, a []float64, lda int, b []float64, ldb int, c []float64, ldc int, scratch *[]float64) {
	need := k*m + n*m + max(k, n)
	if cap(*scratch) < need {
		*scratch = make([]float64, need)
	}
	buf := (*scratch)[:need]
	at, ct, tmp := buf[:k*m], buf[k*m:k*m+n*m], buf[k*m+n*m:]
	transpose(a, m, k, lda, at) // Aᵀ [k×m]
	if haveAVX512 {
		gemmAcc512(false, n, m, k, b, ldb, at, m, ct, m, true)
	} else {
		clear(ct)
		gemmAcc(false, n, m, k, b, ldb, at, m, ct, m, tmp)
	}
	for i := range m {
		row := c[i*ldc : i*ldc+n]
		for j := range row {
			row[j] += ct[j*m+i]
		}
	}
}
