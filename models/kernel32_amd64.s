//go:build amd64 && !purego

#include "textflag.h"

// The float32 AVX-512 kernels of the inference path (gemm32.go). Like the
// float64 kernels in kernel512_amd64.s, each adds a block of A·B to C,
// here 8 rows (or 1) by up to 32 columns in two ZMM registers of sixteen
// float32 lanes, the columns selected by two 16-bit lane masks (mask &
// 0xffff for columns 0–15, mask >> 16 for 16–31). On the way out each
// result is raised to at least lo: 0 applies a ReLU in the same pass,
// -Inf leaves the values as they are (and NaN passes either way).

// func kern8x32f(k int, a *float32, lda int, b *float32, ldb int, c *float32, ldc int, mask uint64, lo float32)
//
// c[r*ldc+j] = max(lo, c[r*ldc+j] + Σ_l a[r*lda+l] · b[l*ldb+j]) for r < 8
// and the columns j < 32 selected by mask, with sixteen accumulators and
// multiply-adds that broadcast A's element from memory; B's row is
// prefetched eight steps ahead.
TEXT ·kern8x32f(SB), NOSPLIT, $0-68
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

	LEAQ (R8)(R8*2), R15 // 3 rows
	LEAQ (SI)(R8*4), R12 // row 4
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
	JE    store8

loop8:
	PREFETCHT0       (DI)(R14*1)
	PREFETCHT0       64(DI)(R14*1)
	VMOVUPS.Z        (DI), K1, Z16
	VMOVUPS.Z        64(DI), K2, Z17
	VFMADD231PS.BCST (SI), Z16, Z0
	VFMADD231PS.BCST (SI), Z17, Z1
	VFMADD231PS.BCST (SI)(R8*1), Z16, Z2
	VFMADD231PS.BCST (SI)(R8*1), Z17, Z3
	VFMADD231PS.BCST (SI)(R8*2), Z16, Z4
	VFMADD231PS.BCST (SI)(R8*2), Z17, Z5
	VFMADD231PS.BCST (SI)(R15*1), Z16, Z6
	VFMADD231PS.BCST (SI)(R15*1), Z17, Z7
	VFMADD231PS.BCST (R12), Z16, Z8
	VFMADD231PS.BCST (R12), Z17, Z9
	VFMADD231PS.BCST (R12)(R8*1), Z16, Z10
	VFMADD231PS.BCST (R12)(R8*1), Z17, Z11
	VFMADD231PS.BCST (R12)(R8*2), Z16, Z12
	VFMADD231PS.BCST (R12)(R8*2), Z17, Z13
	VFMADD231PS.BCST (R12)(R15*1), Z16, Z14
	VFMADD231PS.BCST (R12)(R15*1), Z17, Z15
	ADDQ             $4, SI
	ADDQ             $4, R12
	ADDQ             R10, DI
	DECQ             CX
	JNZ              loop8

store8:
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

// func kern1x32f(k int, a *float32, b *float32, ldb int, c *float32, mask uint64, lo float32)
//
// c[j] = max(lo, c[j] + Σ_l a[l] · b[l*ldb+j]) for the columns j < 32
// selected by mask; even and odd steps of l go to separate accumulators to
// hide the multiply-add latency.
TEXT ·kern1x32f(SB), NOSPLIT, $0-52
	MOVQ k+0(FP), CX
	MOVQ a+8(FP), SI
	MOVQ b+16(FP), DI
	MOVQ ldb+24(FP), R10
	SHLQ $2, R10
	MOVQ c+32(FP), DX
	MOVQ mask+40(FP), AX
	KMOVW AX, K1
	SHRQ $16, AX
	KMOVW AX, K2
	VBROADCASTSS lo+48(FP), Z18

	VPXORD Z0, Z0, Z0
	VPXORD Z1, Z1, Z1
	VPXORD Z2, Z2, Z2
	VPXORD Z3, Z3, Z3

	MOVQ CX, BX
	SHRQ $1, BX
	JE   tail1

loop1:
	VMOVUPS.Z        (DI), K1, Z16
	VMOVUPS.Z        64(DI), K2, Z17
	VFMADD231PS.BCST (SI), Z16, Z0
	VFMADD231PS.BCST (SI), Z17, Z1
	ADDQ             R10, DI
	VMOVUPS.Z        (DI), K1, Z19
	VMOVUPS.Z        64(DI), K2, Z20
	VFMADD231PS.BCST 4(SI), Z19, Z2
	VFMADD231PS.BCST 4(SI), Z20, Z3
	ADDQ             $8, SI
	ADDQ             R10, DI
	DECQ             BX
	JNZ              loop1

tail1:
	ANDQ $1, CX
	JE   store1
	VMOVUPS.Z        (DI), K1, Z16
	VMOVUPS.Z        64(DI), K2, Z17
	VFMADD231PS.BCST (SI), Z16, Z0
	VFMADD231PS.BCST (SI), Z17, Z1

store1:
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

// func narrow8(dst []float32, src []float64)
//
// dst[i] = float32(src[i]) for i < len(src)&^15 (rounding to nearest);
// dst must be at least as long.
TEXT ·narrow8(SB), NOSPLIT, $0-48
	MOVQ dst_base+0(FP), DI
	MOVQ src_base+24(FP), SI
	MOVQ src_len+32(FP), CX
	SHRQ $4, CX
	JE   narrowdone

narrowloop:
	VCVTPD2PS (SI), Y0
	VCVTPD2PS 64(SI), Y1
	VMOVUPS   Y0, (DI)
	VMOVUPS   Y1, 32(DI)
	ADDQ      $128, SI
	ADDQ      $64, DI
	DECQ      CX
	JNZ       narrowloop

narrowdone:
	VZEROUPPER
	RET

// func kern8x32fd(k int, a *float32, lda int, b *float64, ldb int, c *float32, ldc int, mask uint64, lo float32)
//
// kern8x32f with B in float64, narrowed to float32 as it is loaded: a
// weight matrix streamed from memory once per call (a layer on a few
// observations) is then read as it is stored, with no float32 copy
// written and read back.
TEXT ·kern8x32fd(SB), NOSPLIT, $0-68
	MOVQ k+0(FP), CX
	MOVQ a+8(FP), SI
	MOVQ lda+16(FP), R8
	SHLQ $2, R8
	MOVQ b+24(FP), DI
	MOVQ ldb+32(FP), R10
	SHLQ $3, R10
	MOVQ c+40(FP), DX
	MOVQ ldc+48(FP), R11
	SHLQ $2, R11
	MOVQ mask+56(FP), AX
	KMOVW AX, K5
	MOVQ AX, BX
	KMOVB BX, K1
	SHRQ $8, BX
	KMOVB BX, K2
	SHRQ $8, BX
	KMOVB BX, K3
	SHRQ $8, BX
	KMOVB BX, K4
	SHRQ $16, AX
	KMOVW AX, K6
	VBROADCASTSS lo+64(FP), Z18

	LEAQ (R8)(R8*2), R15 // 3 rows
	LEAQ (SI)(R8*4), R12 // row 4
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
	JE    store8d

loop8d:
	PREFETCHT0       (DI)(R14*1)
	PREFETCHT0       64(DI)(R14*1)
	PREFETCHT0       128(DI)(R14*1)
	PREFETCHT0       192(DI)(R14*1)
	VMOVUPD.Z        (DI), K1, Z20
	VMOVUPD.Z        64(DI), K2, Z21
	VMOVUPD.Z        128(DI), K3, Z22
	VMOVUPD.Z        192(DI), K4, Z23
	VCVTPD2PS        Z20, Y16
	VCVTPD2PS        Z21, Y24
	VINSERTF64X4     $1, Y24, Z16, Z16
	VCVTPD2PS        Z22, Y17
	VCVTPD2PS        Z23, Y25
	VINSERTF64X4     $1, Y25, Z17, Z17
	VFMADD231PS.BCST (SI), Z16, Z0
	VFMADD231PS.BCST (SI), Z17, Z1
	VFMADD231PS.BCST (SI)(R8*1), Z16, Z2
	VFMADD231PS.BCST (SI)(R8*1), Z17, Z3
	VFMADD231PS.BCST (SI)(R8*2), Z16, Z4
	VFMADD231PS.BCST (SI)(R8*2), Z17, Z5
	VFMADD231PS.BCST (SI)(R15*1), Z16, Z6
	VFMADD231PS.BCST (SI)(R15*1), Z17, Z7
	VFMADD231PS.BCST (R12), Z16, Z8
	VFMADD231PS.BCST (R12), Z17, Z9
	VFMADD231PS.BCST (R12)(R8*1), Z16, Z10
	VFMADD231PS.BCST (R12)(R8*1), Z17, Z11
	VFMADD231PS.BCST (R12)(R8*2), Z16, Z12
	VFMADD231PS.BCST (R12)(R8*2), Z17, Z13
	VFMADD231PS.BCST (R12)(R15*1), Z16, Z14
	VFMADD231PS.BCST (R12)(R15*1), Z17, Z15
	ADDQ             $4, SI
	ADDQ             $4, R12
	ADDQ             R10, DI
	DECQ             CX
	JNZ              loop8d

store8d:
	VMOVUPS.Z (DX), K5, Z16
	VADDPS    Z16, Z0, Z0
	VMAXPS    Z0, Z18, Z0
	VMOVUPS   Z0, K5, (DX)
	VMOVUPS.Z 64(DX), K6, Z17
	VADDPS    Z17, Z1, Z1
	VMAXPS    Z1, Z18, Z1
	VMOVUPS   Z1, K6, 64(DX)
	ADDQ      R11, DX
	VMOVUPS.Z (DX), K5, Z16
	VADDPS    Z16, Z2, Z2
	VMAXPS    Z2, Z18, Z2
	VMOVUPS   Z2, K5, (DX)
	VMOVUPS.Z 64(DX), K6, Z17
	VADDPS    Z17, Z3, Z3
	VMAXPS    Z3, Z18, Z3
	VMOVUPS   Z3, K6, 64(DX)
	ADDQ      R11, DX
	VMOVUPS.Z (DX), K5, Z16
	VADDPS    Z16, Z4, Z4
	VMAXPS    Z4, Z18, Z4
	VMOVUPS   Z4, K5, (DX)
	VMOVUPS.Z 64(DX), K6, Z17
	VADDPS    Z17, Z5, Z5
	VMAXPS    Z5, Z18, Z5
	VMOVUPS   Z5, K6, 64(DX)
	ADDQ      R11, DX
	VMOVUPS.Z (DX), K5, Z16
	VADDPS    Z16, Z6, Z6
	VMAXPS    Z6, Z18, Z6
	VMOVUPS   Z6, K5, (DX)
	VMOVUPS.Z 64(DX), K6, Z17
	VADDPS    Z17, Z7, Z7
	VMAXPS    Z7, Z18, Z7
	VMOVUPS   Z7, K6, 64(DX)
	ADDQ      R11, DX
	VMOVUPS.Z (DX), K5, Z16
	VADDPS    Z16, Z8, Z8
	VMAXPS    Z8, Z18, Z8
	VMOVUPS   Z8, K5, (DX)
	VMOVUPS.Z 64(DX), K6, Z17
	VADDPS    Z17, Z9, Z9
	VMAXPS    Z9, Z18, Z9
	VMOVUPS   Z9, K6, 64(DX)
	ADDQ      R11, DX
	VMOVUPS.Z (DX), K5, Z16
	VADDPS    Z16, Z10, Z10
	VMAXPS    Z10, Z18, Z10
	VMOVUPS   Z10, K5, (DX)
	VMOVUPS.Z 64(DX), K6, Z17
	VADDPS    Z17, Z11, Z11
	VMAXPS    Z11, Z18, Z11
	VMOVUPS   Z11, K6, 64(DX)
	ADDQ      R11, DX
	VMOVUPS.Z (DX), K5, Z16
	VADDPS    Z16, Z12, Z12
	VMAXPS    Z12, Z18, Z12
	VMOVUPS   Z12, K5, (DX)
	VMOVUPS.Z 64(DX), K6, Z17
	VADDPS    Z17, Z13, Z13
	VMAXPS    Z13, Z18, Z13
	VMOVUPS   Z13, K6, 64(DX)
	ADDQ      R11, DX
	VMOVUPS.Z (DX), K5, Z16
	VADDPS    Z16, Z14, Z14
	VMAXPS    Z14, Z18, Z14
	VMOVUPS   Z14, K5, (DX)
	VMOVUPS.Z 64(DX), K6, Z17
	VADDPS    Z17, Z15, Z15
	VMAXPS    Z15, Z18, Z15
	VMOVUPS   Z15, K6, 64(DX)
	VZEROUPPER
	RET

// func kern1x32fd(k int, a *float32, b *float64, ldb int, c *float32, mask uint64, lo float32)
//
// kern1x32f with B in float64, narrowed as it is loaded.
TEXT ·kern1x32fd(SB), NOSPLIT, $0-52
	MOVQ k+0(FP), CX
	MOVQ a+8(FP), SI
	MOVQ b+16(FP), DI
	MOVQ ldb+24(FP), R10
	SHLQ $3, R10
	MOVQ c+32(FP), DX
	MOVQ mask+40(FP), AX
	KMOVW AX, K5
	MOVQ AX, BX
	KMOVB BX, K1
	SHRQ $8, BX
	KMOVB BX, K2
	SHRQ $8, BX
	KMOVB BX, K3
	SHRQ $8, BX
	KMOVB BX, K4
	SHRQ $16, AX
	KMOVW AX, K6
	VBROADCASTSS lo+48(FP), Z18
	LEAQ (R10*8), R14

	VPXORD Z0, Z0, Z0
	VPXORD Z1, Z1, Z1

	TESTQ CX, CX
	JE    store1d

loop1d:
	PREFETCHT0       (DI)(R14*1)
	PREFETCHT0       64(DI)(R14*1)
	PREFETCHT0       128(DI)(R14*1)
	PREFETCHT0       192(DI)(R14*1)
	VMOVUPD.Z        (DI), K1, Z20
	VMOVUPD.Z        64(DI), K2, Z21
	VMOVUPD.Z        128(DI), K3, Z22
	VMOVUPD.Z        192(DI), K4, Z23
	VCVTPD2PS        Z20, Y16
	VCVTPD2PS        Z21, Y24
	VINSERTF64X4     $1, Y24, Z16, Z16
	VCVTPD2PS        Z22, Y17
	VCVTPD2PS        Z23, Y25
	VINSERTF64X4     $1, Y25, Z17, Z17
	VFMADD231PS.BCST (SI), Z16, Z0
	VFMADD231PS.BCST (SI), Z17, Z1
	ADDQ             $4, SI
	ADDQ             R10, DI
	DECQ             CX
	JNZ              loop1d

store1d:
	VMOVUPS.Z (DX), K5, Z16
	VADDPS    Z16, Z0, Z0
	VMAXPS    Z0, Z18, Z0
	VMOVUPS   Z0, K5, (DX)
	VMOVUPS.Z 64(DX), K6, Z17
	VADDPS    Z17, Z1, Z1
	VMAXPS    Z1, Z18, Z1
	VMOVUPS   Z1, K6, 64(DX)
	VZEROUPPER
	RET

// func kern16x16f(k int, a *float32, lda int, b *float32, ldb int, c *float32, ldc int, mask uint64, lo float32)
//
// kern8x32f's shape for narrow products (at most 16 columns, such as a
// first convolution with 16 filters): 16 rows by up to 16 columns, so that
// every lane of the sixteen accumulators does work.
TEXT ·kern16x16f(SB), NOSPLIT, $0-68
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
	VBROADCASTSS lo+64(FP), Z18

	LEAQ (R8)(R8*2), R15 // 3 rows
	LEAQ (SI)(R8*4), R12 // row 4
	LEAQ (R12)(R8*4), R13 // row 8
	LEAQ (R13)(R8*4), BX  // row 12
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
	JE    store16

loop16:
	PREFETCHT0       (DI)(R14*1)
	VMOVUPS.Z        (DI), K1, Z16
	VFMADD231PS.BCST (SI), Z16, Z0
	VFMADD231PS.BCST (SI)(R8*1), Z16, Z1
	VFMADD231PS.BCST (SI)(R8*2), Z16, Z2
	VFMADD231PS.BCST (SI)(R15*1), Z16, Z3
	VFMADD231PS.BCST (R12), Z16, Z4
	VFMADD231PS.BCST (R12)(R8*1), Z16, Z5
	VFMADD231PS.BCST (R12)(R8*2), Z16, Z6
	VFMADD231PS.BCST (R12)(R15*1), Z16, Z7
	VFMADD231PS.BCST (R13), Z16, Z8
	VFMADD231PS.BCST (R13)(R8*1), Z16, Z9
	VFMADD231PS.BCST (R13)(R8*2), Z16, Z10
	VFMADD231PS.BCST (R13)(R15*1), Z16, Z11
	VFMADD231PS.BCST (BX), Z16, Z12
	VFMADD231PS.BCST (BX)(R8*1), Z16, Z13
	VFMADD231PS.BCST (BX)(R8*2), Z16, Z14
	VFMADD231PS.BCST (BX)(R15*1), Z16, Z15
	ADDQ             $4, SI
	ADDQ             $4, R12
	ADDQ             $4, R13
	ADDQ             $4, BX
	ADDQ             R10, DI
	DECQ             CX
	JNZ              loop16

store16:
	VMOVUPS.Z (DX), K1, Z16
	VADDPS    Z16, Z0, Z0
	VMAXPS    Z0, Z18, Z0
	VMOVUPS   Z0, K1, (DX)
	ADDQ      R11, DX
	VMOVUPS.Z (DX), K1, Z16
	VADDPS    Z16, Z1, Z1
	VMAXPS    Z1, Z18, Z1
	VMOVUPS   Z1, K1, (DX)
	ADDQ      R11, DX
	VMOVUPS.Z (DX), K1, Z16
	VADDPS    Z16, Z2, Z2
	VMAXPS    Z2, Z18, Z2
	VMOVUPS   Z2, K1, (DX)
	ADDQ      R11, DX
	VMOVUPS.Z (DX), K1, Z16
	VADDPS    Z16, Z3, Z3
	VMAXPS    Z3, Z18, Z3
	VMOVUPS   Z3, K1, (DX)
	ADDQ      R11, DX
	VMOVUPS.Z (DX), K1, Z16
	VADDPS    Z16, Z4, Z4
	VMAXPS    Z4, Z18, Z4
	VMOVUPS   Z4, K1, (DX)
	ADDQ      R11, DX
	VMOVUPS.Z (DX), K1, Z16
	VADDPS    Z16, Z5, Z5
	VMAXPS    Z5, Z18, Z5
	VMOVUPS   Z5, K1, (DX)
	ADDQ      R11, DX
	VMOVUPS.Z (DX), K1, Z16
	VADDPS    Z16, Z6, Z6
	VMAXPS    Z6, Z18, Z6
	VMOVUPS   Z6, K1, (DX)
	ADDQ      R11, DX
	VMOVUPS.Z (DX), K1, Z16
	VADDPS    Z16, Z7, Z7
	VMAXPS    Z7, Z18, Z7
	VMOVUPS   Z7, K1, (DX)
	ADDQ      R11, DX
	VMOVUPS.Z (DX), K1, Z16
	VADDPS    Z16, Z8, Z8
	VMAXPS    Z8, Z18, Z8
	VMOVUPS   Z8, K1, (DX)
	ADDQ      R11, DX
	VMOVUPS.Z (DX), K1, Z16
	VADDPS    Z16, Z9, Z9
	VMAXPS    Z9, Z18, Z9
	VMOVUPS   Z9, K1, (DX)
	ADDQ      R11, DX
	VMOVUPS.Z (DX), K1, Z16
	VADDPS    Z16, Z10, Z10
	VMAXPS    Z10, Z18, Z10
	VMOVUPS   Z10, K1, (DX)
	ADDQ      R11, DX
	VMOVUPS.Z (DX), K1, Z16
	VADDPS    Z16, Z11, Z11
	VMAXPS    Z11, Z18, Z11
	VMOVUPS   Z11, K1, (DX)
	ADDQ      R11, DX
	VMOVUPS.Z (DX), K1, Z16
	VADDPS    Z16, Z12, Z12
	VMAXPS    Z12, Z18, Z12
	VMOVUPS   Z12, K1, (DX)
	ADDQ      R11, DX
	VMOVUPS.Z (DX), K1, Z16
	VADDPS    Z16, Z13, Z13
	VMAXPS    Z13, Z18, Z13
	VMOVUPS   Z13, K1, (DX)
	ADDQ      R11, DX
	VMOVUPS.Z (DX), K1, Z16
	VADDPS    Z16, Z14, Z14
	VMAXPS    Z14, Z18, Z14
	VMOVUPS   Z14, K1, (DX)
	ADDQ      R11, DX
	VMOVUPS.Z (DX), K1, Z16
	VADDPS    Z16, Z15, Z15
	VMAXPS    Z15, Z18, Z15
	VMOVUPS   Z15, K1, (DX)
	VZEROUPPER
	RET
