//go:build !amd64 || purego

package models

func kern8x32f(k int, a *float32, lda int, b *float32, ldb int, c *float32, ldc int, mask uint64, lo float32) {
	panic("models: kern8x32f without assembly")
}

func kern16x16f(k int, a *float32, lda int, b *float32, ldb int, c *float32, ldc int, mask uint64, lo float32) {
	panic("models: kern16x16f without assembly")
}

func kern1x32f(k int, a *float32, b *float32, ldb int, c *float32, mask uint64, lo float32) {
	panic("models: kern1x32f without assembly")
}

func kern8x32fd(k int, a *float32, lda int, b *float64, ldb int, c *float32, ldc int, mask uint64, lo float32) {
	panic("models: kern8x32fd without assembly")
}

func kern1x32fd(k int, a *float32, b *float64, ldb int, c *float32, mask uint64, lo float32) {
	panic("models: kern1x32fd without assembly")
}

func narrow8(dst []float32, src []float64) { panic("models: narrow8 without assembly") }

func widen16(dst []float64, src []float32) { panic("models: widen16 without assembly") }

func maskInto16(dst, g, y []float32) { panic("models: maskInto16 without assembly") }

func kern8x32ft(k int, a *float32, lda int, b *float32, ldb int, c *float32, ldc int, mask uint64, lo float32) {
	panic("models: kern8x32ft without assembly")
}

func kern1x32ft(k int, a *float32, lda int, b *float32, ldb int, c *float32, mask uint64, lo float32) {
	panic("models: kern1x32ft without assembly")
}
