package models

import (
	"fmt"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

// BenchmarkGemmNarrow measures products whose B has at most 8 columns (a
// policy or value head) or ends in a panel of at most 8: each B sits at the
// end of a page whose next page is mapped but never touched, as a buffer at
// the end of fresh memory can. A 16-wide kernel's all-masked upper loads
// then reach into that page and each takes a microcode assist; the 8-wide
// kernels never load there.
func BenchmarkGemmNarrow(b *testing.B) {
	for _, sh := range []struct{ m, n, k int }{{64, 2, 128}, {256, 7, 128}, {256, 6, 128}, {256, 1, 128}, {256, 24, 128}} {
		m, n, k := sh.m, sh.n, sh.k
		page := unix.Getpagesize()
		size := (k*n*8/page + 2) * page
		mem, err := unix.Mmap(-1, 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANON)
		if err != nil {
			b.Skipf("mmap: %v", err)
		}
		all := unsafe.Slice((*float64)(unsafe.Pointer(&mem[0])), size/8)
		end := size/8 - page/8 // B ends where the last, untouched page begins
		bb := all[end-k*n : end]
		for i := range bb {
			bb[i] = float64(i%5) - 2
		}
		a, c := benchFill(m*k, 7), make([]float64, m*n)
		var scratch []float64
		b.Run(fmt.Sprintf("%dx%dx%d", m, n, k), func(b *testing.B) {
			measure(b, func() { gemm(false, false, m, n, k, a, k, bb, n, 1, c, n, &scratch) })
			b.ReportMetric(float64(m*n*k)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GMAC/s")
		})
		if err := unix.Munmap(mem); err != nil {
			b.Fatal(err)
		}
	}
}
