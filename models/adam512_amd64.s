//go:build amd64 && !purego

#include "textflag.h"
#include "adam_amd64.h"

// func adam8(w, g, m, v []float64, b1, b2, step, sc2, eps, scale float64, clear bool) bool
//
// adam4 eight weights at a time (AVX-512F), for i < len(w)&^7, with its
// bits (ADAMLOOP on ZMM registers).
TEXT ·adam8(SB), NOSPLIT, $0-153
	ADAMARGS(3, adam8done)
	ADAMCONSTS(Z8, Z9, Z10, Z11, Z12, Z13, Z14, Z15, X13)
	VPXORQ Z7, Z7, Z7 // the finite check's sum
	VPXORQ Z3, Z3, Z3 // the cleared gradient
	ADAMLOOP(Z0, Z1, Z2, Z3, Z4, Z5, Z6, Z7, Z8, Z9, Z10, Z11, Z12, Z13, Z14, Z15, 64, adam8loop, adam8keep)

	VCMPPD  $3, Z7, Z7, K1 // unordered: a lane that met a NaN
	KMOVW   K1, AX
	VZEROUPPER
	TESTQ   AX, AX
	JZ      adam8done
	MOVB    $0, ret+152(FP)

adam8done:
	RET
