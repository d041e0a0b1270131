//go:build amd64 && !purego

#include "textflag.h"

// The AVX-512 matrix kernels. Each adds an 8-row (or 1-row) by up-to-16-
// column block of op(A)·B to C. The columns are selected by two 8-bit lane
// masks (mask & 0xff for columns 0–7, mask >> 8 for 8–15), so one kernel
// serves every column count: masked-off lanes are neither loaded (AVX-512
// suppresses faults there) nor stored. Bit 32 of mask (setC) makes a
// kernel write its block instead of adding to it: C = 0 + Σ, the bits that
// adding to a cleared C gives, without reading C or clearing it first (a
// gradient's first write in a backward pass, a product with beta 0).

// ACC2 adds the accumulators lo (columns 0–7) and hi (8–15) to the row of
// C at DX and moves DX to the next row; SET2 writes them there (adding the
// zero in Z18, as to a cleared row).
#define ACC2(lo, hi) VMOVUPD.Z (DX), K1, Z16; VADDPD Z16, lo, lo; VMOVUPD lo, K1, (DX); VMOVUPD.Z 64(DX), K2, Z17; VADDPD Z17, hi, hi; VMOVUPD hi, K2, 64(DX); ADDQ R11, DX
#define SET2(lo, hi) VADDPD Z18, lo, lo; VMOVUPD lo, K1, (DX); VADDPD Z18, hi, hi; VMOVUPD hi, K2, 64(DX); ADDQ R11, DX

// func kern8x16(k int, a *float64, ars, aks int, b *float64, ldb int, c *float64, ldc int, mask uint64)
//
// c[r*ldc+j] += Σ_l a[r*ars+l*aks] · b[l*ldb+j] for r < 8 and the columns
// j < 16 selected by mask, with sixteen ZMM accumulators and multiply-adds
// that broadcast A's element from memory. It prefetches B's row eight steps
// ahead: when B is a large weight matrix streamed from memory (a layer on
// few observations), the hardware prefetcher alone leaves it waiting.
TEXT ·kern8x16(SB), NOSPLIT, $0-72
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
	MOVQ mask+64(FP), AX
	KMOVW AX, K1
	SHRQ $8, AX
	KMOVW AX, K2

	LEAQ (R8)(R8*2), R15 // 3 rows
	LEAQ (SI)(R8*4), R12 // row 4
	LEAQ (R10*8), R14    // 8 rows of B: how far ahead to prefetch

	VPXORQ Z0, Z0, Z0
	VPXORQ Z1, Z1, Z1
	VPXORQ Z2, Z2, Z2
	VPXORQ Z3, Z3, Z3
	VPXORQ Z4, Z4, Z4
	VPXORQ Z5, Z5, Z5
	VPXORQ Z6, Z6, Z6
	VPXORQ Z7, Z7, Z7
	VPXORQ Z8, Z8, Z8
	VPXORQ Z9, Z9, Z9
	VPXORQ Z10, Z10, Z10
	VPXORQ Z11, Z11, Z11
	VPXORQ Z12, Z12, Z12
	VPXORQ Z13, Z13, Z13
	VPXORQ Z14, Z14, Z14
	VPXORQ Z15, Z15, Z15

	TESTQ CX, CX
	JE    store8

loop8:
	PREFETCHT0       (DI)(R14*1)
	PREFETCHT0       64(DI)(R14*1)
	VMOVUPD.Z        (DI), K1, Z16
	VMOVUPD.Z        64(DI), K2, Z17
	VFMADD231PD.BCST (SI), Z16, Z0
	VFMADD231PD.BCST (SI), Z17, Z1
	VFMADD231PD.BCST (SI)(R8*1), Z16, Z2
	VFMADD231PD.BCST (SI)(R8*1), Z17, Z3
	VFMADD231PD.BCST (SI)(R8*2), Z16, Z4
	VFMADD231PD.BCST (SI)(R8*2), Z17, Z5
	VFMADD231PD.BCST (SI)(R15*1), Z16, Z6
	VFMADD231PD.BCST (SI)(R15*1), Z17, Z7
	VFMADD231PD.BCST (R12), Z16, Z8
	VFMADD231PD.BCST (R12), Z17, Z9
	VFMADD231PD.BCST (R12)(R8*1), Z16, Z10
	VFMADD231PD.BCST (R12)(R8*1), Z17, Z11
	VFMADD231PD.BCST (R12)(R8*2), Z16, Z12
	VFMADD231PD.BCST (R12)(R8*2), Z17, Z13
	VFMADD231PD.BCST (R12)(R15*1), Z16, Z14
	VFMADD231PD.BCST (R12)(R15*1), Z17, Z15
	ADDQ             R9, SI
	ADDQ             R9, R12
	ADDQ             R10, DI
	DECQ             CX
	JNZ              loop8

store8:
	MOVQ mask+64(FP), AX
	BTQ  $32, AX
	JCS  set8
	ACC2(Z0, Z1)
	ACC2(Z2, Z3)
	ACC2(Z4, Z5)
	ACC2(Z6, Z7)
	ACC2(Z8, Z9)
	ACC2(Z10, Z11)
	ACC2(Z12, Z13)
	ACC2(Z14, Z15)
	VZEROUPPER
	RET

set8:
	VPXORQ Z18, Z18, Z18
	SET2(Z0, Z1)
	SET2(Z2, Z3)
	SET2(Z4, Z5)
	SET2(Z6, Z7)
	SET2(Z8, Z9)
	SET2(Z10, Z11)
	SET2(Z12, Z13)
	SET2(Z14, Z15)
	VZEROUPPER
	RET

// func kern1x16(k int, a *float64, aks int, b *float64, ldb int, c *float64, mask uint64)
//
// c[j] += Σ_l a[l*aks] · b[l*ldb+j] for the columns j < 16 selected by
// mask. One row has no other rows to hide the multiply-add latency behind,
// so even and odd steps of l go to separate accumulators.
TEXT ·kern1x16(SB), NOSPLIT, $0-56
	MOVQ k+0(FP), CX
	MOVQ a+8(FP), SI
	MOVQ aks+16(FP), R9
	SHLQ $3, R9
	MOVQ b+24(FP), DI
	MOVQ ldb+32(FP), R10
	SHLQ $3, R10
	MOVQ c+40(FP), DX
	MOVQ mask+48(FP), AX
	KMOVW AX, K1
	SHRQ $8, AX
	KMOVW AX, K2

	VPXORQ Z0, Z0, Z0
	VPXORQ Z1, Z1, Z1
	VPXORQ Z2, Z2, Z2
	VPXORQ Z3, Z3, Z3

	MOVQ CX, BX
	SHRQ $1, BX
	JE   tail1

loop1:
	VMOVUPD.Z        (DI), K1, Z16
	VMOVUPD.Z        64(DI), K2, Z17
	VFMADD231PD.BCST (SI), Z16, Z0
	VFMADD231PD.BCST (SI), Z17, Z1
	ADDQ             R9, SI
	ADDQ             R10, DI
	VMOVUPD.Z        (DI), K1, Z18
	VMOVUPD.Z        64(DI), K2, Z19
	VFMADD231PD.BCST (SI), Z18, Z2
	VFMADD231PD.BCST (SI), Z19, Z3
	ADDQ             R9, SI
	ADDQ             R10, DI
	DECQ             BX
	JNZ              loop1

tail1:
	ANDQ $1, CX
	JE   store1
	VMOVUPD.Z        (DI), K1, Z16
	VMOVUPD.Z        64(DI), K2, Z17
	VFMADD231PD.BCST (SI), Z16, Z0
	VFMADD231PD.BCST (SI), Z17, Z1

store1:
	VADDPD Z2, Z0, Z0
	VADDPD Z3, Z1, Z1
	MOVQ   mask+48(FP), AX
	BTQ    $32, AX
	JCS    set1
	ACC2(Z0, Z1)
	VZEROUPPER
	RET

set1:
	VPXORQ Z18, Z18, Z18
	SET2(Z0, Z1)
	VZEROUPPER
	RET

// STORE8M adds the accumulator acc to the masked row of C at DX and moves
// DX to the next row.
#define STORE8M(acc) VMOVUPD.Z (DX), K1, Z16; VADDPD Z16, acc, acc; VMOVUPD acc, K1, (DX); ADDQ R11, DX

// SET8M writes acc there instead (adding the zero in Z18).
#define SET8M(acc) VADDPD Z18, acc, acc; VMOVUPD acc, K1, (DX); ADDQ R11, DX

// func kern8x8m(k int, a *float64, ars, aks int, b *float64, ldb int, c *float64, ldc int, mask uint64)
//
// kern8x16 for a panel of at most 8 columns (mask & 0xff): one ZMM
// accumulator a row and one masked load of B a step, so a narrow panel (a
// policy or value head, the last columns of a product) does half the
// multiply-adds of the 16-wide kernel and never loads B's next 64 bytes,
// which an all-masked load would still touch: past the end of a buffer
// that costs a microcode assist per load when the next page is fresh.
// The sums are kern8x16's, step for step.
TEXT ·kern8x8m(SB), NOSPLIT, $0-72
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
	MOVQ mask+64(FP), AX
	KMOVW AX, K1

	LEAQ (R8)(R8*2), R15 // 3 rows
	LEAQ (SI)(R8*4), R12 // row 4

	VPXORQ Z0, Z0, Z0
	VPXORQ Z1, Z1, Z1
	VPXORQ Z2, Z2, Z2
	VPXORQ Z3, Z3, Z3
	VPXORQ Z4, Z4, Z4
	VPXORQ Z5, Z5, Z5
	VPXORQ Z6, Z6, Z6
	VPXORQ Z7, Z7, Z7

	TESTQ CX, CX
	JE    store8m

loop8m:
	VMOVUPD.Z        (DI), K1, Z16
	VFMADD231PD.BCST (SI), Z16, Z0
	VFMADD231PD.BCST (SI)(R8*1), Z16, Z1
	VFMADD231PD.BCST (SI)(R8*2), Z16, Z2
	VFMADD231PD.BCST (SI)(R15*1), Z16, Z3
	VFMADD231PD.BCST (R12), Z16, Z4
	VFMADD231PD.BCST (R12)(R8*1), Z16, Z5
	VFMADD231PD.BCST (R12)(R8*2), Z16, Z6
	VFMADD231PD.BCST (R12)(R15*1), Z16, Z7
	ADDQ             R9, SI
	ADDQ             R9, R12
	ADDQ             R10, DI
	DECQ             CX
	JNZ              loop8m

store8m:
	MOVQ mask+64(FP), AX
	BTQ  $32, AX
	JCS  set8m
	STORE8M(Z0)
	STORE8M(Z1)
	STORE8M(Z2)
	STORE8M(Z3)
	STORE8M(Z4)
	STORE8M(Z5)
	STORE8M(Z6)
	STORE8M(Z7)
	VZEROUPPER
	RET

set8m:
	VPXORQ Z18, Z18, Z18
	SET8M(Z0)
	SET8M(Z1)
	SET8M(Z2)
	SET8M(Z3)
	SET8M(Z4)
	SET8M(Z5)
	SET8M(Z6)
	SET8M(Z7)
	VZEROUPPER
	RET

// func kern1x8m(k int, a *float64, aks int, b *float64, ldb int, c *float64, mask uint64)
//
// kern1x16 for a panel of at most 8 columns (mask & 0xff), with the same
// even and odd accumulators, so the same sums.
TEXT ·kern1x8m(SB), NOSPLIT, $0-56
	MOVQ k+0(FP), CX
	MOVQ a+8(FP), SI
	MOVQ aks+16(FP), R9
	SHLQ $3, R9
	MOVQ b+24(FP), DI
	MOVQ ldb+32(FP), R10
	SHLQ $3, R10
	MOVQ c+40(FP), DX
	MOVQ mask+48(FP), AX
	KMOVW AX, K1

	VPXORQ Z0, Z0, Z0
	VPXORQ Z2, Z2, Z2

	MOVQ CX, BX
	SHRQ $1, BX
	JE   tail1m

loop1m:
	VMOVUPD.Z        (DI), K1, Z16
	VFMADD231PD.BCST (SI), Z16, Z0
	ADDQ             R9, SI
	ADDQ             R10, DI
	VMOVUPD.Z        (DI), K1, Z18
	VFMADD231PD.BCST (SI), Z18, Z2
	ADDQ             R9, SI
	ADDQ             R10, DI
	DECQ             BX
	JNZ              loop1m

tail1m:
	ANDQ $1, CX
	JE   store1m
	VMOVUPD.Z        (DI), K1, Z16
	VFMADD231PD.BCST (SI), Z16, Z0

store1m:
	VADDPD Z2, Z0, Z0
	MOVQ   mask+48(FP), AX
	BTQ    $32, AX
	JCS    set1m
	STORE8M(Z0)
	VZEROUPPER
	RET

set1m:
	VPXORQ Z18, Z18, Z18
	SET8M(Z0)
	VZEROUPPER
	RET
