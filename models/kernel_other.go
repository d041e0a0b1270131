//go:build !amd64 || purego

package models

// haveFMA is false where there is no assembly kernel; gemm then uses
// gonum's BLAS.
const haveFMA = false

// haveAVX512 is false where there is no assembly kernel. A variable, as on
// amd64, so that tests can pin the portable path on every architecture.
var haveAVX512 = false

func kern8x16(k int, a *float64, ars, aks int, b *float64, ldb int, c *float64, ldc int, mask uint64) {
	panic("models: kern8x16 without assembly")
}

func kern1x16(k int, a *float64, aks int, b *float64, ldb int, c *float64, mask uint64) {
	panic("models: kern1x16 without assembly")
}

func kern8x8m(k int, a *float64, ars, aks int, b *float64, ldb int, c *float64, ldc int, mask uint64) {
	panic("models: kern8x8m without assembly")
}

func kern1x8m(k int, a *float64, aks int, b *float64, ldb int, c *float64, mask uint64) {
	panic("models: kern1x8m without assembly")
}

func transpose8xN(n int, src *float64, lds int, dst *float64, ldd int) {
	panic("models: transpose8xN without assembly")
}

func kern4x8(k int, a *float64, ars, aks int, b *float64, ldb int, c *float64, ldc int) {
	panic("models: kern4x8 without assembly")
}

func kern1x8(k int, a *float64, aks int, b *float64, ldb int, c *float64) {
	panic("models: kern1x8 without assembly")
}

func tanh4(dst, src []float64) { panic("models: tanh4 without assembly") }

func exp4(dst, src []float64) { panic("models: exp4 without assembly") }

func log4(dst, src []float64) { panic("models: log4 without assembly") }

func tanhGrad4(xg, g, y []float64) { panic("models: tanhGrad4 without assembly") }

func adam4(w, g, m, v []float64, b1, b2, step, sc2, eps, scale float64, clear bool) bool {
	panic("models: adam4 without assembly")
}

func adam8(w, g, m, v []float64, b1, b2, step, sc2, eps, scale float64, clear bool) bool {
	panic("models: adam8 without assembly")
}
