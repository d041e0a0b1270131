//go:build amd64 && !purego

package models

import "golang.org/x/sys/cpu"

// haveFMA reports whether the AVX2+FMA kernels can run on this CPU; it is
// fixed at start-up.
var haveFMA = cpu.X86.HasAVX2 && cpu.X86.HasFMA

// haveAVX512 reports whether the AVX-512 matrix kernels can run (the CPU
// has AVX-512F and the OS saves its registers); it is fixed at start-up.
var haveAVX512 = haveFMA && cpu.X86.HasAVX512F

//go:noescape
func kern8x16(k int, a *float64, ars, aks int, b *float64, ldb int, c *float64, ldc int, mask uint64)

//go:noescape
func kern1x16(k int, a *float64, aks int, b *float64, ldb int, c *float64, mask uint64)

//go:noescape
func kern8x8m(k int, a *float64, ars, aks int, b *float64, ldb int, c *float64, ldc int, mask uint64)

//go:noescape
func kern1x8m(k int, a *float64, aks int, b *float64, ldb int, c *float64, mask uint64)

// transpose8xN writes the transpose of the 8×8n block at src (row stride
// lds) to dst (row stride ldd) with AVX-512.
//
//go:noescape
func transpose8xN(n int, src *float64, lds int, dst *float64, ldd int)

//go:noescape
func kern4x8(k int, a *float64, ars, aks int, b *float64, ldb int, c *float64, ldc int)

//go:noescape
func kern1x8(k int, a *float64, aks int, b *float64, ldb int, c *float64)

// tanh4 writes tanh(src[i]) into dst[i] for i < len(src)&^3 (AVX2+FMA);
// dst must be at least as long as src.
//
//go:noescape
func tanh4(dst, src []float64)

// exp4 writes exp(src[i]) into dst[i] for i < len(src)&^3 (AVX2+FMA),
// right for src[i] in [-708, 709] only; dst must be at least as long as
// src.
//
//go:noescape
func exp4(dst, src []float64)

// log4 writes log(src[i]) into dst[i] for i < len(src)&^3 (AVX2+FMA),
// right for positive normal src[i] only; dst must be at least as long as
// src.
//
//go:noescape
func log4(dst, src []float64)

// tanhGrad4 adds g[i]·(1 - y[i]²) to xg[i] for i < len(g)&^3 (AVX2),
// with the scalar loop's rounding; xg and y must be at least as long as g.
//
//go:noescape
func tanhGrad4(xg, g, y []float64)

// adam4 applies Adam to the first len(w)&^3 weights (AVX2+FMA) with the
// gradient g·scale, sets those values of g to zero when clear is set, and
// reports whether every weight it updated is finite; g, m and v must be at
// least as long as w.
//
//go:noescape
func adam4(w, g, m, v []float64, b1, b2, step, sc2, eps, scale float64, clear bool) bool

// adam8 is adam4 eight weights at a time (AVX-512F), for the first
// len(w)&^7, with adam4's bits.
//
//go:noescape
func adam8(w, g, m, v []float64, b1, b2, step, sc2, eps, scale float64, clear bool) bool
