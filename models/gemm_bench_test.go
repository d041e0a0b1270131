package models

import (
	"fmt"
	"testing"
)

// BenchmarkGemm measures the matrix kernels on the ConvNet's products
// (M×N×K), AVX2 against AVX-512 where the CPU has both.
func BenchmarkGemm(b *testing.B) {
	for _, sh := range [][3]int{{3872, 32, 144}, {32, 64, 3872}, {144, 32, 3872}, {256, 256, 256}, {32, 256, 3872}} {
		m, n, k := sh[0], sh[1], sh[2]
		a, bb, c := make([]float64, m*k), make([]float64, k*n), make([]float64, m*n)
		for i := range a {
			a[i] = float64(i%7) - 3
		}
		for i := range bb {
			bb[i] = float64(i%5) - 2
		}
		tmp := make([]float64, max(m, k))
		b.Run(fmt.Sprintf("%dx%dx%d/avx2", m, n, k), func(b *testing.B) {
			measure(b, func() { gemmAcc(false, m, n, k, a, k, bb, n, c, n, tmp) })
			b.ReportMetric(float64(m*n*k)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GMAC/s")
		})
		if haveAVX512 {
			b.Run(fmt.Sprintf("%dx%dx%d/avx512", m, n, k), func(b *testing.B) {
				measure(b, func() { gemmAcc512(false, m, n, k, a, k, bb, n, c, n, false) })
				b.ReportMetric(float64(m*n*k)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GMAC/s")
			})
		}
	}
}

// BenchmarkGemmPixelPong measures gemm on the products of PixelPong's
// learner step (a 1600-wide conv output, a 128-unit dense layer) for a
// whole 256-row minibatch and for a 128-row shard: the forward X·W, the
// weight gradient Xᵀ·dY and the input gradient dY·Wᵀ (with Wᵀ at hand, as
// the shards share it). GMAC/s is against the machine's FMA peak.
func BenchmarkGemmPixelPong(b *testing.B) {
	const k, n = 1600, 128
	for _, rows := range []int{256, 128} {
		x, w, dy := benchFill(rows*k, 7), benchFill(k*n, 5), benchFill(rows*n, 3)
		wt, out, dw, dx := benchFill(n*k, 5), make([]float64, rows*n), make([]float64, k*n), make([]float64, rows*k)
		var scratch []float64
		for _, p := range []struct {
			name string
			f    func()
		}{
			{"XW", func() { gemm(false, false, rows, n, k, x, k, w, n, 0, out, n, &scratch) }},
			{"XtdY", func() { gemm(true, false, k, n, rows, x, k, dy, n, 1, dw, n, &scratch) }},
			{"dYWt", func() { gemm(false, false, rows, k, n, dy, n, wt, k, 1, dx, k, &scratch) }},
		} {
			b.Run(fmt.Sprintf("%s/rows=%d", p.name, rows), func(b *testing.B) {
				measure(b, p.f)
				b.ReportMetric(float64(rows*n*k)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GMAC/s")
			})
		}
	}
}

func benchFill(n, mod int) []float64 {
	s := make([]float64, n)
	for i := range s {
		s[i] = float64(i%mod) - float64(mod/2)
	}
	return s
}

// BenchmarkTranspose measures the transpose of PixelPong's dense weight
// (1600×128), which a 1-thread step's input gradient dY·Wᵀ writes once.
func BenchmarkTranspose(b *testing.B) {
	const rows, cols = 1600, 128
	a, t := benchFill(rows*cols, 7), make([]float64, rows*cols)
	measure(b, func() { transpose(a, rows, cols, cols, t) })
	b.ReportMetric(float64(rows*cols*8)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GB/s")
}
