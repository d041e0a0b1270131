package models

import (
	"fmt"
	"math"
	"testing"
)

// TestWidenAndMaskIntoMatchScalar checks widen and maskInto (the AVX-512
// kernels for whole groups of 16 where the CPU has them, scalar tails) bit
// for bit against their scalar rules, for lengths around the group size
// and values that include ±0, subnormals, infinities and NaN; maskInto
// also in place (dst = g), as reluMask32 calls it.
func TestWidenAndMaskIntoMatchScalar(t *testing.T) {
	special := []float32{0, float32(math.Copysign(0, -1)), 1.5, -2.25, math.SmallestNonzeroFloat32,
		float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.NaN()), 3e38, -1e-30}
	for _, n := range []int{0, 1, 15, 16, 17, 31, 32, 33, 100, 1600} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			y, g := make([]float32, n), make([]float32, n)
			for i := range n {
				y[i] = special[(i*7)%len(special)]
				g[i] = special[(i*3+1)%len(special)]
			}
			w := make([]float64, n+1)
			w[n] = 42
			widen(w, y)
			for i := range n {
				if math.Float64bits(w[i]) != math.Float64bits(float64(y[i])) {
					t.Fatalf("widen [%d] = %v, want %v", i, w[i], float64(y[i]))
				}
			}
			if w[n] != 42 {
				t.Fatalf("widen wrote past the source's length")
			}
			want := make([]float32, n)
			for i := range n {
				if math.Float32bits(y[i]) != 0 {
					want[i] = g[i]
				}
			}
			dst := make([]float32, n)
			maskInto(dst, g, y)
			inPlace := append([]float32(nil), g...)
			maskInto(inPlace, inPlace, y)
			for i := range n {
				if math.Float32bits(dst[i]) != math.Float32bits(want[i]) || math.Float32bits(inPlace[i]) != math.Float32bits(want[i]) {
					t.Fatalf("maskInto [%d] (y %v, g %v) = %v (in place %v), want %v", i, y[i], g[i], dst[i], inPlace[i], want[i])
				}
			}
		})
	}
}

// BenchmarkWidenAndMask measures widen and maskInto on PixelPong's conv
// output for a 256-row minibatch (256 × 1,600 values): the forward pass
// widens it for the dense layer, the backward pass masks its gradient.
func BenchmarkWidenAndMask(b *testing.B) {
	const n = 256 * 1600
	y, g, w := make([]float32, n), make([]float32, n), make([]float64, n)
	for i := range y {
		y[i] = float32(max(0, i%7-3))
		g[i] = float32(i%5) - 2
	}
	b.Run("widen", func(b *testing.B) { measure(b, func() { widen(w, y) }) })
	b.Run("maskInto", func(b *testing.B) { measure(b, func() { maskInto(g, g, y) }) })
}
