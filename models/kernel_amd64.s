//go:build amd64 && !purego

#include "textflag.h"
#include "adam_amd64.h"

// func kern4x8(k int, a *float64, ars, aks int, b *float64, ldb int, c *float64, ldc int)
//
// c[r*ldc+j] += Σ_l a[r*ars+l*aks] · b[l*ldb+j] for r < 4, j < 8, with
// eight YMM accumulators and fused multiply-adds (AVX2 + FMA3).
TEXT ·kern4x8(SB), NOSPLIT, $0-64
	MOVQ k+0(FP), CX
	MOVQ a+8(FP), SI
	MOVQ ars+16(FP), R8
	SHLQ $3, R8
	MOVQ aks+24(FP), R9
	SHLQ $3, R9
	MOVQ b+32(FP), DI
	MOVQ ldb+40(FP), R10
	SHLQ $3, R10
	MOVQ c+48(FP), DX
	MOVQ ldc+56(FP), R11
	SHLQ $3, R11

	LEAQ (SI)(R8*1), R12
	LEAQ (R12)(R8*1), R13
	LEAQ (R13)(R8*1), BX

	VXORPD Y0, Y0, Y0
	VXORPD Y1, Y1, Y1
	VXORPD Y2, Y2, Y2
	VXORPD Y3, Y3, Y3
	VXORPD Y4, Y4, Y4
	VXORPD Y5, Y5, Y5
	VXORPD Y6, Y6, Y6
	VXORPD Y7, Y7, Y7

	TESTQ CX, CX
	JE    store

loop:
	VMOVUPD      (DI), Y8
	VMOVUPD      32(DI), Y9
	VBROADCASTSD (SI), Y10
	VFMADD231PD  Y8, Y10, Y0
	VFMADD231PD  Y9, Y10, Y1
	VBROADCASTSD (R12), Y11
	VFMADD231PD  Y8, Y11, Y2
	VFMADD231PD  Y9, Y11, Y3
	VBROADCASTSD (R13), Y12
	VFMADD231PD  Y8, Y12, Y4
	VFMADD231PD  Y9, Y12, Y5
	VBROADCASTSD (BX), Y13
	VFMADD231PD  Y8, Y13, Y6
	VFMADD231PD  Y9, Y13, Y7
	ADDQ         R9, SI
	ADDQ         R9, R12
	ADDQ         R9, R13
	ADDQ         R9, BX
	ADDQ         R10, DI
	DECQ         CX
	JNZ          loop

store:
	VADDPD  (DX), Y0, Y0
	VMOVUPD Y0, (DX)
	VADDPD  32(DX), Y1, Y1
	VMOVUPD Y1, 32(DX)
	ADDQ    R11, DX
	VADDPD  (DX), Y2, Y2
	VMOVUPD Y2, (DX)
	VADDPD  32(DX), Y3, Y3
	VMOVUPD Y3, 32(DX)
	ADDQ    R11, DX
	VADDPD  (DX), Y4, Y4
	VMOVUPD Y4, (DX)
	VADDPD  32(DX), Y5, Y5
	VMOVUPD Y5, 32(DX)
	ADDQ    R11, DX
	VADDPD  (DX), Y6, Y6
	VMOVUPD Y6, (DX)
	VADDPD  32(DX), Y7, Y7
	VMOVUPD Y7, 32(DX)
	VZEROUPPER
	RET

// func kern1x8(k int, a *float64, aks int, b *float64, ldb int, c *float64)
//
// c[j] += Σ_l a[l*aks] · b[l*ldb+j] for j < 8. A single row has no
// independent rows to hide the multiply-add latency behind, so the loop
// runs four steps of l at a time into separate accumulators.
TEXT ·kern1x8(SB), NOSPLIT, $0-48
	MOVQ k+0(FP), CX
	MOVQ a+8(FP), SI
	MOVQ aks+16(FP), R9
	SHLQ $3, R9
	MOVQ b+24(FP), DI
	MOVQ ldb+32(FP), R10
	SHLQ $3, R10
	MOVQ c+40(FP), DX

	VXORPD Y0, Y0, Y0
	VXORPD Y1, Y1, Y1
	VXORPD Y2, Y2, Y2
	VXORPD Y3, Y3, Y3
	VXORPD Y4, Y4, Y4
	VXORPD Y5, Y5, Y5
	VXORPD Y6, Y6, Y6
	VXORPD Y7, Y7, Y7

	CMPQ CX, $4
	JL   tail1

loop4:
	VBROADCASTSD (SI), Y10
	VFMADD231PD  (DI), Y10, Y0
	VFMADD231PD  32(DI), Y10, Y1
	ADDQ         R9, SI
	ADDQ         R10, DI
	VBROADCASTSD (SI), Y11
	VFMADD231PD  (DI), Y11, Y2
	VFMADD231PD  32(DI), Y11, Y3
	ADDQ         R9, SI
	ADDQ         R10, DI
	VBROADCASTSD (SI), Y12
	VFMADD231PD  (DI), Y12, Y4
	VFMADD231PD  32(DI), Y12, Y5
	ADDQ         R9, SI
	ADDQ         R10, DI
	VBROADCASTSD (SI), Y13
	VFMADD231PD  (DI), Y13, Y6
	VFMADD231PD  32(DI), Y13, Y7
	ADDQ         R9, SI
	ADDQ         R10, DI
	SUBQ         $4, CX
	CMPQ         CX, $4
	JGE          loop4

tail1:
	TESTQ CX, CX
	JE    store1

loop1:
	VBROADCASTSD (SI), Y10
	VFMADD231PD  (DI), Y10, Y0
	VFMADD231PD  32(DI), Y10, Y1
	ADDQ         R9, SI
	ADDQ         R10, DI
	DECQ         CX
	JNZ          loop1

store1:
	VADDPD  Y2, Y0, Y0
	VADDPD  Y3, Y1, Y1
	VADDPD  Y6, Y4, Y4
	VADDPD  Y7, Y5, Y5
	VADDPD  Y4, Y0, Y0
	VADDPD  Y5, Y1, Y1
	VADDPD  (DX), Y0, Y0
	VMOVUPD Y0, (DX)
	VADDPD  32(DX), Y1, Y1
	VMOVUPD Y1, 32(DX)
	VZEROUPPER
	RET

// func adam4(w, g, m, v []float64, b1, b2, step, sc2, eps, scale float64, clear bool) bool
//
// Adam (ADAMLOOP) four weights at a time for i < len(w)&^3, g = 0 when
// clear is set; it reports whether every new w is finite.
TEXT ·adam4(SB), NOSPLIT, $0-153
	ADAMARGS(2, adamsdone)
	ADAMCONSTS(Y8, Y9, Y10, Y11, Y12, Y13, Y14, Y15, X13)
	VXORPD Y7, Y7, Y7 // the finite check's sum
	VXORPD Y3, Y3, Y3 // the cleared gradient
	ADAMLOOP(Y0, Y1, Y2, Y3, Y4, Y5, Y6, Y7, Y8, Y9, Y10, Y11, Y12, Y13, Y14, Y15, 32, adamsloop, adamskeep)

	VCMPPD    $3, Y7, Y7, Y7 // unordered: a lane that met a NaN
	VMOVMSKPD Y7, AX
	VZEROUPPER
	TESTQ     AX, AX
	JZ        adamsdone
	MOVB      $0, ret+152(FP)

adamsdone:
	RET
