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

// expSlice writes exp(src[i]) into dst[i]: four at a time on CPUs with
// AVX2 and FMA (accurate to a few ulps, like tanh4), math.Exp for the
// rest, for arguments beyond the kernel's range and for NaN.
func expSlice(dst, src []float64) {
	dst = dst[:len(src)]
	done := 0
	if haveFMA {
		exp4(dst, src)
		done = len(src) &^ 3
		for i, v := range src[:done] {
			if !(v >= -708 && v <= 709) {
				dst[i] = math.Exp(v)
			}
		}
	}
	for i := done; i < len(src); i++ {
		dst[i] = math.Exp(src[i])
	}
}

// logSlice writes log(src[i]) into dst[i] (dst may be src): four at a
// time on CPUs with AVX2 and FMA (accurate to a few ulps, like exp4), or
// math.Log's own when any argument is not a positive normal number (zero,
// a negative, a subnormal, an infinity or NaN: rare, and checked before
// the kernel overwrites an argument in place).
func logSlice(dst, src []float64) {
	dst = dst[:len(src)]
	done := 0
	if haveFMA {
		done = len(src) &^ 3
		for _, v := range src[:done] {
			if !(v >= 0x1p-1022 && v <= math.MaxFloat64) {
				done = 0
				break
			}
		}
		log4(dst[:done], src[:done])
	}
	for i := done; i < len(src); i++ {
		dst[i] = math.Log(src[i])
	}
}
