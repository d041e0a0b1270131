//go:build amd64 && !purego

#include "textflag.h"

// func transpose8xN(n int, src *float64, lds int, dst *float64, ldd int)
//
// Writes the transpose of the 8×8n block at src (row stride lds values) to
// dst (row stride ldd): for each 8×8 tile, eight row loads, a network of
// twelve lane interleaves and shuffles, and eight row stores.
TEXT ·transpose8xN(SB), NOSPLIT, $0-40
	MOVQ n+0(FP), CX
	MOVQ src+8(FP), SI
	MOVQ lds+16(FP), R8
	SHLQ $3, R8
	MOVQ dst+24(FP), DI
	MOVQ ldd+32(FP), R9
	SHLQ $3, R9
	LEAQ (R8)(R8*2), R10 // 3 source rows
	LEAQ (R9)(R9*2), R11 // 3 destination rows
	LEAQ (R9*8), R12     // 8 destination rows: the next tile's
	TESTQ CX, CX
	JE    done

tile:
	LEAQ    (SI)(R8*4), BX
	VMOVUPD (SI), Z0
	VMOVUPD (SI)(R8*1), Z1
	VMOVUPD (SI)(R8*2), Z2
	VMOVUPD (SI)(R10*1), Z3
	VMOVUPD (BX), Z4
	VMOVUPD (BX)(R8*1), Z5
	VMOVUPD (BX)(R8*2), Z6
	VMOVUPD (BX)(R10*1), Z7

	// Pairs of rows interleaved: t0 = (r0_0 r1_0 r0_2 r1_2 …), t1 the
	// odd columns.
	VUNPCKLPD Z1, Z0, Z8
	VUNPCKHPD Z1, Z0, Z9
	VUNPCKLPD Z3, Z2, Z10
	VUNPCKHPD Z3, Z2, Z11
	VUNPCKLPD Z5, Z4, Z12
	VUNPCKHPD Z5, Z4, Z13
	VUNPCKLPD Z7, Z6, Z14
	VUNPCKHPD Z7, Z6, Z15

	// Four rows per register: 128-bit lanes 0 and 2 (columns 0, 4 or
	// 1, 5) or 1 and 3 (columns 2, 6 or 3, 7) of two interleaved pairs.
	VSHUFF64X2 $0x88, Z10, Z8, Z16
	VSHUFF64X2 $0xdd, Z10, Z8, Z17
	VSHUFF64X2 $0x88, Z11, Z9, Z18
	VSHUFF64X2 $0xdd, Z11, Z9, Z19
	VSHUFF64X2 $0x88, Z14, Z12, Z20
	VSHUFF64X2 $0xdd, Z14, Z12, Z21
	VSHUFF64X2 $0x88, Z15, Z13, Z22
	VSHUFF64X2 $0xdd, Z15, Z13, Z23

	// Whole columns: the halves from rows 0–3 and rows 4–7.
	VSHUFF64X2 $0x88, Z20, Z16, Z0 // column 0
	VSHUFF64X2 $0xdd, Z20, Z16, Z4 // column 4
	VSHUFF64X2 $0x88, Z21, Z17, Z2 // column 2
	VSHUFF64X2 $0xdd, Z21, Z17, Z6 // column 6
	VSHUFF64X2 $0x88, Z22, Z18, Z1 // column 1
	VSHUFF64X2 $0xdd, Z22, Z18, Z5 // column 5
	VSHUFF64X2 $0x88, Z23, Z19, Z3 // column 3
	VSHUFF64X2 $0xdd, Z23, Z19, Z7 // column 7

	LEAQ    (DI)(R9*4), BX
	VMOVUPD Z0, (DI)
	VMOVUPD Z1, (DI)(R9*1)
	VMOVUPD Z2, (DI)(R9*2)
	VMOVUPD Z3, (DI)(R11*1)
	VMOVUPD Z4, (BX)
	VMOVUPD Z5, (BX)(R9*1)
	VMOVUPD Z6, (BX)(R9*2)
	VMOVUPD Z7, (BX)(R11*1)

	ADDQ $64, SI
	ADDQ R12, DI
	DECQ CX
	JNZ  tile

done:
	VZEROUPPER
	RET
