//go:build amd64 && !purego

#include "textflag.h"

// The float32 kernels with A transposed, for the training path's weight
// gradients (conv32train.go): the same blocks as kern8x32f and kern1x32f,
// with A's element for row r and step l at a[l*lda+r], so that the eight
// rows' values of one step are contiguous and each step moves A on by lda.

// func kern8x32ft(k int, a *float32, lda int, b *float32, ldb int, c *float32, ldc int, mask uint64, lo float32)
//
// c[r*ldc+j] = max(lo, c[r*ldc+j] + Σ_l a[l*lda+r] · b[l*ldb+j]) for r < 8
// and the columns j < 32 selected by mask.
TEXT ·kern8x32ft(SB), NOSPLIT, $0-68
	MOVQ k+0(FP), CX
	MOVQ a+8(FP), SI
	MOVQ lda+16(FP), R8
	SHLQ $2, R8
	MOVQ b+24(FP), DI
	MOVQ ldb+32(FP), R10
	SHLQ $2, R10
	MOVQ c+40(FP), DX
	MOVQ ldc+48(FP), R11
	SHLQ $2, R11
	MOVQ mask+56(FP), AX
	KMOVW AX, K1
	SHRQ $16, AX
	KMOVW AX, K2
	VBROADCASTSS lo+64(FP), Z18

	LEAQ (R10*8), R14    // 8 rows of B: how far ahead to prefetch

	VPXORD Z0, Z0, Z0
	VPXORD Z1, Z1, Z1
	VPXORD Z2, Z2, Z2
	VPXORD Z3, Z3, Z3
	VPXORD Z4, Z4, Z4
	VPXORD Z5, Z5, Z5
	VPXORD Z6, Z6, Z6
	VPXORD Z7, Z7, Z7
	VPXORD Z8, Z8, Z8
	VPXORD Z9, Z9, Z9
	VPXORD Z10, Z10, Z10
	VPXORD Z11, Z11, Z11
	VPXORD Z12, Z12, Z12
	VPXORD Z13, Z13, Z13
	VPXORD Z14, Z14, Z14
	VPXORD Z15, Z15, Z15

	TESTQ CX, CX
	JE    store8t

loop8t:
	PREFETCHT0       (DI)(R14*1)
	PREFETCHT0       64(DI)(R14*1)
	VMOVUPS.Z        (DI), K1, Z16
	VMOVUPS.Z        64(DI), K2, Z17
	VFMADD231PS.BCST (SI), Z16, Z0
	VFMADD231PS.BCST (SI), Z17, Z1
	VFMADD231PS.BCST 4(SI), Z16, Z2
	VFMADD231PS.BCST 4(SI), Z17, Z3
	VFMADD231PS.BCST 8(SI), Z16, Z4
	VFMADD231PS.BCST 8(SI), Z17, Z5
	VFMADD231PS.BCST 12(SI), Z16, Z6
	VFMADD231PS.BCST 12(SI), Z17, Z7
	VFMADD231PS.BCST 16(SI), Z16, Z8
	VFMADD231PS.BCST 16(SI), Z17, Z9
	VFMADD231PS.BCST 20(SI), Z16, Z10
	VFMADD231PS.BCST 20(SI), Z17, Z11
	VFMADD231PS.BCST 24(SI), Z16, Z12
	VFMADD231PS.BCST 24(SI), Z17, Z13
	VFMADD231PS.BCST 28(SI), Z16, Z14
	VFMADD231PS.BCST 28(SI), Z17, Z15
	ADDQ             R8, SI
	ADDQ             R10, DI
	DECQ             CX
	JNZ              loop8t

store8t:
	VMOVUPS.Z (DX), K1, Z16
	VADDPS    Z16, Z0, Z0
	VMAXPS    Z0, Z18, Z0
	VMOVUPS   Z0, K1, (DX)
	VMOVUPS.Z 64(DX), K2, Z17
	VADDPS    Z17, Z1, Z1
	VMAXPS    Z1, Z18, Z1
	VMOVUPS   Z1, K2, 64(DX)
	ADDQ      R11, DX
	VMOVUPS.Z (DX), K1, Z16
	VADDPS    Z16, Z2, Z2
	VMAXPS    Z2, Z18, Z2
	VMOVUPS   Z2, K1, (DX)
	VMOVUPS.Z 64(DX), K2, Z17
	VADDPS    Z17, Z3, Z3
	VMAXPS    Z3, Z18, Z3
	VMOVUPS   Z3, K2, 64(DX)
	ADDQ      R11, DX
	VMOVUPS.Z (DX), K1, Z16
	VADDPS    Z16, Z4, Z4
	VMAXPS    Z4, Z18, Z4
	VMOVUPS   Z4, K1, (DX)
	VMOVUPS.Z 64(DX), K2, Z17
	VADDPS    Z17, Z5, Z5
	VMAXPS    Z5, Z18, Z5
	VMOVUPS   Z5, K2, 64(DX)
	ADDQ      R11, DX
	VMOVUPS.Z (DX), K1, Z16
	VADDPS    Z16, Z6, Z6
	VMAXPS    Z6, Z18, Z6
	VMOVUPS   Z6, K1, (DX)
	VMOVUPS.Z 64(DX), K2, Z17
	VADDPS    Z17, Z7, Z7
	VMAXPS    Z7, Z18, Z7
	VMOVUPS   Z7, K2, 64(DX)
	ADDQ      R11, DX
	VMOVUPS.Z (DX), K1, Z16
	VADDPS    Z16, Z8, Z8
	VMAXPS    Z8, Z18, Z8
	VMOVUPS   Z8, K1, (DX)
	VMOVUPS.Z 64(DX), K2, Z17
	VADDPS    Z17, Z9, Z9
	VMAXPS    Z9, Z18, Z9
	VMOVUPS   Z9, K2, 64(DX)
	ADDQ      R11, DX
	VMOVUPS.Z (DX), K1, Z16
	VADDPS    Z16, Z10, Z10
	VMAXPS    Z10, Z18, Z10
	VMOVUPS   Z10, K1, (DX)
	VMOVUPS.Z 64(DX), K2, Z17
	VADDPS    Z17, Z11, Z11
	VMAXPS    Z11, Z18, Z11
	VMOVUPS   Z11, K2, 64(DX)
	ADDQ      R11, DX
	VMOVUPS.Z (DX), K1, Z16
	VADDPS    Z16, Z12, Z12
	VMAXPS    Z12, Z18, Z12
	VMOVUPS   Z12, K1, (DX)
	VMOVUPS.Z 64(DX), K2, Z17
	VADDPS    Z17, Z13, Z13
	VMAXPS    Z13, Z18, Z13
	VMOVUPS   Z13, K2, 64(DX)
	ADDQ      R11, DX
	VMOVUPS.Z (DX), K1, Z16
	VADDPS    Z16, Z14, Z14
	VMAXPS    Z14, Z18, Z14
	VMOVUPS   Z14, K1, (DX)
	VMOVUPS.Z 64(DX), K2, Z17
	VADDPS    Z17, Z15, Z15
	VMAXPS    Z15, Z18, Z15
	VMOVUPS   Z15, K2, 64(DX)
	VZEROUPPER
	RET

// func kern1x32ft(k int, a *float32, lda int, b *float32, ldb int, c *float32, mask uint64, lo float32)
//
// c[j] = max(lo, c[j] + Σ_l a[l*lda] · b[l*ldb+j]) for the columns j < 32
// selected by mask.
TEXT ·kern1x32ft(SB), NOSPLIT, $0-60
	MOVQ k+0(FP), CX
	MOVQ a+8(FP), SI
	MOVQ lda+16(FP), R8
	SHLQ $2, R8
	MOVQ b+24(FP), DI
	MOVQ ldb+32(FP), R10
	SHLQ $2, R10
	MOVQ c+40(FP), DX
	MOVQ mask+48(FP), AX
	KMOVW AX, K1
	SHRQ $16, AX
	KMOVW AX, K2
	VBROADCASTSS lo+56(FP), Z18

	VPXORD Z0, Z0, Z0
	VPXORD Z1, Z1, Z1
	VPXORD Z2, Z2, Z2
	VPXORD Z3, Z3, Z3

	MOVQ CX, BX
	SHRQ $1, BX
	JE   tail1t

loop1t:
	VMOVUPS.Z        (DI), K1, Z16
	VMOVUPS.Z        64(DI), K2, Z17
	VFMADD231PS.BCST (SI), Z16, Z0
	VFMADD231PS.BCST (SI), Z17, Z1
	ADDQ             R10, DI
	VMOVUPS.Z        (DI), K1, Z19
	VMOVUPS.Z        64(DI), K2, Z20
	VFMADD231PS.BCST (SI)(R8*1), Z19, Z2
	VFMADD231PS.BCST (SI)(R8*1), Z20, Z3
	LEAQ             (SI)(R8*2), SI
	ADDQ             R10, DI
	DECQ             BX
	JNZ              loop1t

tail1t:
	ANDQ $1, CX
	JE   store1t
	VMOVUPS.Z        (DI), K1, Z16
	VMOVUPS.Z        64(DI), K2, Z17
	VFMADD231PS.BCST (SI), Z16, Z0
	VFMADD231PS.BCST (SI), Z17, Z1

store1t:
	VADDPS    Z2, Z0, Z0
	VADDPS    Z3, Z1, Z1
	VMOVUPS.Z (DX), K1, Z16
	VADDPS    Z16, Z0, Z0
	VMAXPS    Z0, Z18, Z0
	VMOVUPS   Z0, K1, (DX)
	VMOVUPS.Z 64(DX), K2, Z17
	VADDPS    Z17, Z1, Z1
	VMAXPS    Z1, Z18, Z1
	VMOVUPS   Z1, K2, 64(DX)
	VZEROUPPER
	RET
