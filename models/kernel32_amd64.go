//go:build amd64 && !purego

package models

//go:noescape
func kern8x32f(k int, a *float32, lda int, b *float32, ldb int, c *float32, ldc int, mask uint64, lo float32)

//go:noescape
func kern16x16f(k int, a *float32, lda int, b *float32, ldb int, c *float32, ldc int, mask uint64, lo float32)

//go:noescape
func kern1x32f(k int, a *float32, b *float32, ldb int, c *float32, mask uint64, lo float32)

//go:noescape
func kern8x32fd(k int, a *float32, lda int, b *float64, ldb int, c *float32, ldc int, mask uint64, lo float32)

//go:noescape
func kern1x32fd(k int, a *float32, b *float64, ldb int, c *float32, mask uint64, lo float32)

// narrow8 writes float32(src[i]) into dst[i] for i < len(src)&^15
// (AVX-512); dst must be at least as long as src.
//
//go:noescape
func narrow8(dst []float32, src []float64)

// widen16 writes float64(src[i]) into dst[i] for i < len(src)&^15;
// dst must be at least as long as src.
//
//go:noescape
func widen16(dst []float64, src []float32)

// maskInto16 is maskInto for the first len(dst)&^15 values; g and y must
// be at least as long as dst.
//
//go:noescape
func maskInto16(dst, g, y []float32)

//go:noescape
func kern8x32ft(k int, a *float32, lda int, b *float32, ldb int, c *float32, ldc int, mask uint64, lo float32)

//go:noescape
func kern1x32ft(k int, a *float32, lda int, b *float32, ldb int, c *float32, mask uint64, lo float32)
