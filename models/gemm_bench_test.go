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
				measure(b, func() { gemmAcc512(false, m, n, k, a, k, bb, n, c, n) })
				b.ReportMetric(float64(m*n*k)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GMAC/s")
			})
		}
	}
}
