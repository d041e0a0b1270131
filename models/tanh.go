package models

import "math"

// tanhSlice writes tanh(src[i]) into dst[i]. Tanh is most of a small
// network's forward cost, so CPUs with AVX2 and FMA compute four at a time
// (accurate to a few ulps); the rest use math.Tanh.
func tanhSlice(dst, src []float64) {
	dst = dst[:len(src)]
	done := 0
	if haveFMA {
		tanh4(dst, src)
		done = len(src) &^ 3
	}
	for i := done; i < len(src); i++ {
		dst[i] = math.Tanh(src[i])
	}
}
