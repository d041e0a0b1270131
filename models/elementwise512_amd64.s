//go:build amd64 && !purego

#include "textflag.h"

// func widen16(dst []float64, src []float32)
//
// dst[i] = float64(src[i]) for i < len(src)&^15, sixteen at a time.
TEXT ·widen16(SB), NOSPLIT, $0-48
	MOVQ dst_base+0(FP), DI
	MOVQ src_base+24(FP), SI
	MOVQ src_len+32(FP), CX
	SHRQ $4, CX
	JE   widendone

widenloop:
	VCVTPS2PD (SI), Z0
	VCVTPS2PD 32(SI), Z1
	VMOVUPD   Z0, (DI)
	VMOVUPD   Z1, 64(DI)
	ADDQ      $64, SI
	ADDQ      $128, DI
	DECQ      CX
	JNZ       widenloop

widendone:
	VZEROUPPER
	RET

// func maskInto16(dst, g, y []float32)
//
// dst[i] = g[i] where y[i]'s bits are not all zero, else +0, for
// i < len(dst)&^15: maskInto's rule, sixteen lanes at a time (a lane test
// of y against itself selects the lanes to keep; the others are zeroed).
TEXT ·maskInto16(SB), NOSPLIT, $0-72
	MOVQ dst_base+0(FP), DI
	MOVQ dst_len+8(FP), CX
	MOVQ g_base+24(FP), SI
	MOVQ y_base+48(FP), DX
	SHRQ $4, CX
	JE   maskdone

maskloop:
	VMOVDQU32 (DX), Z0
	VPTESTMD  Z0, Z0, K1
	VMOVUPS.Z (SI), K1, Z1
	VMOVUPS   Z1, (DI)
	ADDQ      $64, DX
	ADDQ      $64, SI
	ADDQ      $64, DI
	DECQ      CX
	JNZ       maskloop

maskdone:
	VZEROUPPER
	RET
