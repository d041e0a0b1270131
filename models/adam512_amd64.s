//go:build amd64 && !purego

#include "textflag.h"

// func adam8(w, g, m, v []float64, b1, b2, step, sc2, eps, scale float64, clear bool) bool
//
// adam4 eight at a time (AVX-512F), for i < len(w)&^7: each lane does
// adam4's operations in adam4's order, so a weight gets the same bits from
// either kernel.
TEXT ·adam8(SB), NOSPLIT, $0-153
	MOVQ    w_base+0(FP), DI
	MOVQ    w_len+8(FP), CX
	MOVQ    g_base+24(FP), SI
	MOVQ    m_base+48(FP), R8
	MOVQ    v_base+72(FP), R9
	MOVBQZX clear+144(FP), DX
	MOVB    $1, ret+152(FP)
	SHRQ    $3, CX
	JZ      adam8done

	VBROADCASTSD b1+96(FP), Z8
	VBROADCASTSD b2+104(FP), Z9
	VBROADCASTSD step+112(FP), Z10
	VBROADCASTSD sc2+120(FP), Z11
	VBROADCASTSD eps+128(FP), Z12
	VBROADCASTSD scale+136(FP), Z15
	MOVQ         $0x3ff0000000000000, AX
	MOVQ         AX, X13
	VBROADCASTSD X13, Z13
	VSUBPD       Z8, Z13, Z14 // 1 - b1
	VSUBPD       Z9, Z13, Z13 // 1 - b2
	VPXORQ       Z7, Z7, Z7   // the finite check's sum
	VPXORQ       Z3, Z3, Z3

adam8loop:
	VMULPD      (SI), Z15, Z0 // g·scale
	TESTQ       DX, DX
	JZ          adam8keep
	VMOVUPD     Z3, (SI)      // g = 0

adam8keep:
	VMULPD      (R8), Z8, Z1
	VFMADD231PD Z0, Z14, Z1   // m = b1·m + (1-b1)·g
	VMOVUPD     Z1, (R8)
	VMULPD      Z0, Z0, Z4
	VMULPD      (R9), Z9, Z2
	VFMADD231PD Z4, Z13, Z2   // v = b2·v + (1-b2)·g²
	VMOVUPD     Z2, (R9)
	VSQRTPD     Z2, Z4
	VFMADD213PD Z12, Z11, Z4  // √v·sc2 + eps
	VMULPD      Z10, Z1, Z5
	VDIVPD      Z4, Z5, Z5
	VMOVUPD     (DI), Z6
	VSUBPD      Z5, Z6, Z6
	VMOVUPD     Z6, (DI)
	VSUBPD      Z6, Z6, Z6    // 0 where w is finite, else NaN
	VADDPD      Z6, Z7, Z7
	ADDQ        $64, SI
	ADDQ        $64, DI
	ADDQ        $64, R8
	ADDQ        $64, R9
	DECQ        CX
	JNZ         adam8loop

	VCMPPD     $3, Z7, Z7, K1 // unordered: a lane that met a NaN
	KMOVW      K1, AX
	VZEROUPPER
	TESTQ      AX, AX
	JZ         adam8done
	MOVB       $0, ret+152(FP)

adam8done:
	RET
