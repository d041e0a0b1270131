//go:build amd64 && !purego

#include "textflag.h"

DATA tanh_absmask<>+0(SB)/8, $0x7fffffffffffffff
DATA tanh_absmask<>+8(SB)/8, $0x7fffffffffffffff
DATA tanh_absmask<>+16(SB)/8, $0x7fffffffffffffff
DATA tanh_absmask<>+24(SB)/8, $0x7fffffffffffffff
GLOBL tanh_absmask<>(SB), RODATA|NOPTR, $32

DATA tanh_signmask<>+0(SB)/8, $0x8000000000000000
DATA tanh_signmask<>+8(SB)/8, $0x8000000000000000
DATA tanh_signmask<>+16(SB)/8, $0x8000000000000000
DATA tanh_signmask<>+24(SB)/8, $0x8000000000000000
GLOBL tanh_signmask<>(SB), RODATA|NOPTR, $32

DATA tanh_clamp<>+0(SB)/8, $0x4034000000000000
DATA tanh_clamp<>+8(SB)/8, $0x4034000000000000
DATA tanh_clamp<>+16(SB)/8, $0x4034000000000000
DATA tanh_clamp<>+24(SB)/8, $0x4034000000000000
GLOBL tanh_clamp<>(SB), RODATA|NOPTR, $32

DATA tanh_m2log2e<>+0(SB)/8, $0xc0071547652b82fe
DATA tanh_m2log2e<>+8(SB)/8, $0xc0071547652b82fe
DATA tanh_m2log2e<>+16(SB)/8, $0xc0071547652b82fe
DATA tanh_m2log2e<>+24(SB)/8, $0xc0071547652b82fe
GLOBL tanh_m2log2e<>(SB), RODATA|NOPTR, $32

DATA tanh_ln2hi<>+0(SB)/8, $0x3fe62e42fee00000
DATA tanh_ln2hi<>+8(SB)/8, $0x3fe62e42fee00000
DATA tanh_ln2hi<>+16(SB)/8, $0x3fe62e42fee00000
DATA tanh_ln2hi<>+24(SB)/8, $0x3fe62e42fee00000
GLOBL tanh_ln2hi<>(SB), RODATA|NOPTR, $32

DATA tanh_ln2lo<>+0(SB)/8, $0x3dea39ef35793c76
DATA tanh_ln2lo<>+8(SB)/8, $0x3dea39ef35793c76
DATA tanh_ln2lo<>+16(SB)/8, $0x3dea39ef35793c76
DATA tanh_ln2lo<>+24(SB)/8, $0x3dea39ef35793c76
GLOBL tanh_ln2lo<>(SB), RODATA|NOPTR, $32

DATA exp_log2e<>+0(SB)/8, $0x3ff71547652b82fe
DATA exp_log2e<>+8(SB)/8, $0x3ff71547652b82fe
DATA exp_log2e<>+16(SB)/8, $0x3ff71547652b82fe
DATA exp_log2e<>+24(SB)/8, $0x3ff71547652b82fe
GLOBL exp_log2e<>(SB), RODATA|NOPTR, $32

DATA tanh_magic<>+0(SB)/8, $0x4338000000000000
DATA tanh_magic<>+8(SB)/8, $0x4338000000000000
DATA tanh_magic<>+16(SB)/8, $0x4338000000000000
DATA tanh_magic<>+24(SB)/8, $0x4338000000000000
GLOBL tanh_magic<>(SB), RODATA|NOPTR, $32

DATA tanh_one<>+0(SB)/8, $0x3ff0000000000000
DATA tanh_one<>+8(SB)/8, $0x3ff0000000000000
DATA tanh_one<>+16(SB)/8, $0x3ff0000000000000
DATA tanh_one<>+24(SB)/8, $0x3ff0000000000000
GLOBL tanh_one<>(SB), RODATA|NOPTR, $32

DATA tanh_two<>+0(SB)/8, $0x4000000000000000
DATA tanh_two<>+8(SB)/8, $0x4000000000000000
DATA tanh_two<>+16(SB)/8, $0x4000000000000000
DATA tanh_two<>+24(SB)/8, $0x4000000000000000
GLOBL tanh_two<>(SB), RODATA|NOPTR, $32

DATA tanh_c1<>+0(SB)/8, $0x3ff0000000000000
DATA tanh_c1<>+8(SB)/8, $0x3ff0000000000000
DATA tanh_c1<>+16(SB)/8, $0x3ff0000000000000
DATA tanh_c1<>+24(SB)/8, $0x3ff0000000000000
GLOBL tanh_c1<>(SB), RODATA|NOPTR, $32

DATA tanh_c2<>+0(SB)/8, $0x3fe0000000000000
DATA tanh_c2<>+8(SB)/8, $0x3fe0000000000000
DATA tanh_c2<>+16(SB)/8, $0x3fe0000000000000
DATA tanh_c2<>+24(SB)/8, $0x3fe0000000000000
GLOBL tanh_c2<>(SB), RODATA|NOPTR, $32

DATA tanh_c3<>+0(SB)/8, $0x3fc5555555555555
DATA tanh_c3<>+8(SB)/8, $0x3fc5555555555555
DATA tanh_c3<>+16(SB)/8, $0x3fc5555555555555
DATA tanh_c3<>+24(SB)/8, $0x3fc5555555555555
GLOBL tanh_c3<>(SB), RODATA|NOPTR, $32

DATA tanh_c4<>+0(SB)/8, $0x3fa5555555555555
DATA tanh_c4<>+8(SB)/8, $0x3fa5555555555555
DATA tanh_c4<>+16(SB)/8, $0x3fa5555555555555
DATA tanh_c4<>+24(SB)/8, $0x3fa5555555555555
GLOBL tanh_c4<>(SB), RODATA|NOPTR, $32

DATA tanh_c5<>+0(SB)/8, $0x3f81111111111111
DATA tanh_c5<>+8(SB)/8, $0x3f81111111111111
DATA tanh_c5<>+16(SB)/8, $0x3f81111111111111
DATA tanh_c5<>+24(SB)/8, $0x3f81111111111111
GLOBL tanh_c5<>(SB), RODATA|NOPTR, $32

DATA tanh_c6<>+0(SB)/8, $0x3f56c16c16c16c17
DATA tanh_c6<>+8(SB)/8, $0x3f56c16c16c16c17
DATA tanh_c6<>+16(SB)/8, $0x3f56c16c16c16c17
DATA tanh_c6<>+24(SB)/8, $0x3f56c16c16c16c17
GLOBL tanh_c6<>(SB), RODATA|NOPTR, $32

DATA tanh_c7<>+0(SB)/8, $0x3f2a01a01a01a01a
DATA tanh_c7<>+8(SB)/8, $0x3f2a01a01a01a01a
DATA tanh_c7<>+16(SB)/8, $0x3f2a01a01a01a01a
DATA tanh_c7<>+24(SB)/8, $0x3f2a01a01a01a01a
GLOBL tanh_c7<>(SB), RODATA|NOPTR, $32

DATA tanh_c8<>+0(SB)/8, $0x3efa01a01a01a01a
DATA tanh_c8<>+8(SB)/8, $0x3efa01a01a01a01a
DATA tanh_c8<>+16(SB)/8, $0x3efa01a01a01a01a
DATA tanh_c8<>+24(SB)/8, $0x3efa01a01a01a01a
GLOBL tanh_c8<>(SB), RODATA|NOPTR, $32

DATA tanh_c9<>+0(SB)/8, $0x3ec71de3a556c734
DATA tanh_c9<>+8(SB)/8, $0x3ec71de3a556c734
DATA tanh_c9<>+16(SB)/8, $0x3ec71de3a556c734
DATA tanh_c9<>+24(SB)/8, $0x3ec71de3a556c734
GLOBL tanh_c9<>(SB), RODATA|NOPTR, $32

DATA tanh_c10<>+0(SB)/8, $0x3e927e4fb7789f5c
DATA tanh_c10<>+8(SB)/8, $0x3e927e4fb7789f5c
DATA tanh_c10<>+16(SB)/8, $0x3e927e4fb7789f5c
DATA tanh_c10<>+24(SB)/8, $0x3e927e4fb7789f5c
GLOBL tanh_c10<>(SB), RODATA|NOPTR, $32

DATA tanh_c11<>+0(SB)/8, $0x3e5ae64567f544e4
DATA tanh_c11<>+8(SB)/8, $0x3e5ae64567f544e4
DATA tanh_c11<>+16(SB)/8, $0x3e5ae64567f544e4
DATA tanh_c11<>+24(SB)/8, $0x3e5ae64567f544e4
GLOBL tanh_c11<>(SB), RODATA|NOPTR, $32

DATA tanh_c12<>+0(SB)/8, $0x3e21eed8eff8d898
DATA tanh_c12<>+8(SB)/8, $0x3e21eed8eff8d898
DATA tanh_c12<>+16(SB)/8, $0x3e21eed8eff8d898
DATA tanh_c12<>+24(SB)/8, $0x3e21eed8eff8d898
GLOBL tanh_c12<>(SB), RODATA|NOPTR, $32

DATA tanh_c13<>+0(SB)/8, $0x3de6124613a86d09
DATA tanh_c13<>+8(SB)/8, $0x3de6124613a86d09
DATA tanh_c13<>+16(SB)/8, $0x3de6124613a86d09
DATA tanh_c13<>+24(SB)/8, $0x3de6124613a86d09
GLOBL tanh_c13<>(SB), RODATA|NOPTR, $32

// EXPM1 sets Q to expm1(R) for |R| ≤ ln2/2: R·(c1 + R·(c2 + ... + R·c13)),
// the Taylor series to R^13 (error below 1e-16 relative).
#define EXPM1(R, Q) \
	VMOVUPD tanh_c13<>(SB), Q; \
	VFMADD213PD tanh_c12<>(SB), R, Q; \
	VFMADD213PD tanh_c11<>(SB), R, Q; \
	VFMADD213PD tanh_c10<>(SB), R, Q; \
	VFMADD213PD tanh_c9<>(SB), R, Q; \
	VFMADD213PD tanh_c8<>(SB), R, Q; \
	VFMADD213PD tanh_c7<>(SB), R, Q; \
	VFMADD213PD tanh_c6<>(SB), R, Q; \
	VFMADD213PD tanh_c5<>(SB), R, Q; \
	VFMADD213PD tanh_c4<>(SB), R, Q; \
	VFMADD213PD tanh_c3<>(SB), R, Q; \
	VFMADD213PD tanh_c2<>(SB), R, Q; \
	VFMADD213PD tanh_c1<>(SB), R, Q; \
	VMULPD R, Q, Q

// POW2 sets S to 2^K for the integral K in [-1022, 1023], from its bits.
#define POW2(K, S) \
	VADDPD tanh_magic<>(SB), K, S; \
	VPSLLQ $52, S, S; \
	VPADDQ tanh_one<>(SB), S, S

// func tanh4(dst, src []float64)
//
// dst[i] = tanh(src[i]) for i < len(src)&^3, four at a time with AVX2+FMA:
// tanh|x| = -e/(2+e) with e = expm1(-2|x|) = 2^k·q + (2^k - 1), where
// -2|x| = k·ln2 + r, |r| ≤ ln2/2, and q = expm1(r) by its Taylor series to
// r^13 (error below 1e-16 relative). |x| is clamped to 20 (tanh(20) rounds
// to 1) with NaN kept, so NaN propagates.
TEXT ·tanh4(SB), NOSPLIT, $0-48
	MOVQ dst_base+0(FP), DI
	MOVQ src_base+24(FP), SI
	MOVQ src_len+32(FP), CX
	SHRQ $2, CX
	JZ   done
	VMOVUPD tanh_absmask<>(SB), Y14
	VMOVUPD tanh_clamp<>(SB), Y13
	VMOVUPD tanh_signmask<>(SB), Y12

loop:
	VMOVUPD (SI), Y0
	VANDPD  Y0, Y14, Y1               // a = |x|
	VMINPD  Y1, Y13, Y1               // a = min(20, a), NaN kept
	VMULPD  tanh_m2log2e<>(SB), Y1, Y3 // -2a·log2(e)
	VROUNDPD $0, Y3, Y3               // k = round(-2a/ln2)
	VADDPD  Y1, Y1, Y2
	VXORPD  Y12, Y2, Y2               // z = -2a
	VFNMADD231PD tanh_ln2hi<>(SB), Y3, Y2 // r = z - k·ln2hi
	VFNMADD231PD tanh_ln2lo<>(SB), Y3, Y2 // r -= k·ln2lo
	EXPM1(Y2, Y4)                     // q = expm1(r)
	POW2(Y3, Y5)                      // s = 2^k
	VSUBPD  tanh_one<>(SB), Y5, Y6    // s - 1
	VFMADD231PD Y4, Y5, Y6            // e = s·q + (s - 1)
	VADDPD  tanh_two<>(SB), Y6, Y7    // 2 + e
	VDIVPD  Y7, Y6, Y6                // e/(2+e) = -tanh(a)
	VANDPD  Y6, Y14, Y6               // tanh(a)
	VANDPD  Y0, Y12, Y8
	VORPD   Y8, Y6, Y6                // with the sign of x
	VMOVUPD Y6, (DI)
	ADDQ    $32, SI
	ADDQ    $32, DI
	DECQ    CX
	JNZ     loop
	VZEROUPPER

done:
	RET

// func exp4(dst, src []float64)
//
// dst[i] = exp(src[i]) for i < len(src)&^3, four at a time with AVX2+FMA,
// by tanh4's reduction: x = k·ln2 + r, |r| ≤ ln2/2, exp(x) = 2^k·(1 + q)
// with q = expm1(r) by the same series. 2^k is built from k's bits, which
// holds for x in [-708, 709]; the caller recomputes the rest (and NaN).
TEXT ·exp4(SB), NOSPLIT, $0-48
	MOVQ dst_base+0(FP), DI
	MOVQ src_base+24(FP), SI
	MOVQ src_len+32(FP), CX
	SHRQ $2, CX
	JZ   edone

eloop:
	VMOVUPD (SI), Y0
	VMULPD  exp_log2e<>(SB), Y0, Y3   // x·log2(e)
	VROUNDPD $0, Y3, Y3               // k = round(x/ln2)
	VMOVAPD Y0, Y2
	VFNMADD231PD tanh_ln2hi<>(SB), Y3, Y2 // r = x - k·ln2hi
	VFNMADD231PD tanh_ln2lo<>(SB), Y3, Y2 // r -= k·ln2lo
	EXPM1(Y2, Y4)                     // q = expm1(r)
	POW2(Y3, Y5)                      // s = 2^k
	VFMADD231PD Y4, Y5, Y5            // s·q + s
	VMOVUPD Y5, (DI)
	ADDQ    $32, SI
	ADDQ    $32, DI
	DECQ    CX
	JNZ     eloop
	VZEROUPPER

edone:
	RET

// func tanhGrad4(xg, g, y []float64)
//
// xg[i] += g[i]·(1 - y[i]·y[i]) for i < len(g)&^3, four at a time, each
// product, difference and sum rounded on its own (no FMA): the bits of the
// scalar loop.
TEXT ·tanhGrad4(SB), NOSPLIT, $0-72
	MOVQ xg_base+0(FP), DI
	MOVQ g_base+24(FP), SI
	MOVQ g_len+32(FP), CX
	MOVQ y_base+48(FP), DX
	SHRQ $2, CX
	JZ   gdone
	VMOVUPD tanh_one<>(SB), Y15

gloop:
	VMOVUPD (DX), Y0
	VMULPD  Y0, Y0, Y0                // y·y
	VSUBPD  Y0, Y15, Y0               // 1 - y·y
	VMULPD  (SI), Y0, Y0              // g·(1 - y·y)
	VADDPD  (DI), Y0, Y0              // xg + g·(1 - y·y)
	VMOVUPD Y0, (DI)
	ADDQ    $32, SI
	ADDQ    $32, DI
	ADDQ    $32, DX
	DECQ    CX
	JNZ     gloop
	VZEROUPPER

gdone:
	RET

DATA log_mant<>+0(SB)/8, $0x000fffffffffffff
DATA log_mant<>+8(SB)/8, $0x000fffffffffffff
DATA log_mant<>+16(SB)/8, $0x000fffffffffffff
DATA log_mant<>+24(SB)/8, $0x000fffffffffffff
GLOBL log_mant<>(SB), RODATA|NOPTR, $32

DATA log_two52<>+0(SB)/8, $0x4330000000000000
DATA log_two52<>+8(SB)/8, $0x4330000000000000
DATA log_two52<>+16(SB)/8, $0x4330000000000000
DATA log_two52<>+24(SB)/8, $0x4330000000000000
GLOBL log_two52<>(SB), RODATA|NOPTR, $32

DATA log_bias<>+0(SB)/8, $0x408ff80000000000
DATA log_bias<>+8(SB)/8, $0x408ff80000000000
DATA log_bias<>+16(SB)/8, $0x408ff80000000000
DATA log_bias<>+24(SB)/8, $0x408ff80000000000
GLOBL log_bias<>(SB), RODATA|NOPTR, $32

DATA log_sqrt2<>+0(SB)/8, $0x3ff6a09e667f3bcd
DATA log_sqrt2<>+8(SB)/8, $0x3ff6a09e667f3bcd
DATA log_sqrt2<>+16(SB)/8, $0x3ff6a09e667f3bcd
DATA log_sqrt2<>+24(SB)/8, $0x3ff6a09e667f3bcd
GLOBL log_sqrt2<>(SB), RODATA|NOPTR, $32

DATA log_half<>+0(SB)/8, $0x3fe0000000000000
DATA log_half<>+8(SB)/8, $0x3fe0000000000000
DATA log_half<>+16(SB)/8, $0x3fe0000000000000
DATA log_half<>+24(SB)/8, $0x3fe0000000000000
GLOBL log_half<>(SB), RODATA|NOPTR, $32

DATA log_a0<>+0(SB)/8, $0x4000000000000000
DATA log_a0<>+8(SB)/8, $0x4000000000000000
DATA log_a0<>+16(SB)/8, $0x4000000000000000
DATA log_a0<>+24(SB)/8, $0x4000000000000000
GLOBL log_a0<>(SB), RODATA|NOPTR, $32

DATA log_a1<>+0(SB)/8, $0x3fe5555555555555
DATA log_a1<>+8(SB)/8, $0x3fe5555555555555
DATA log_a1<>+16(SB)/8, $0x3fe5555555555555
DATA log_a1<>+24(SB)/8, $0x3fe5555555555555
GLOBL log_a1<>(SB), RODATA|NOPTR, $32

DATA log_a2<>+0(SB)/8, $0x3fd999999999999a
DATA log_a2<>+8(SB)/8, $0x3fd999999999999a
DATA log_a2<>+16(SB)/8, $0x3fd999999999999a
DATA log_a2<>+24(SB)/8, $0x3fd999999999999a
GLOBL log_a2<>(SB), RODATA|NOPTR, $32

DATA log_a3<>+0(SB)/8, $0x3fd2492492492492
DATA log_a3<>+8(SB)/8, $0x3fd2492492492492
DATA log_a3<>+16(SB)/8, $0x3fd2492492492492
DATA log_a3<>+24(SB)/8, $0x3fd2492492492492
GLOBL log_a3<>(SB), RODATA|NOPTR, $32

DATA log_a4<>+0(SB)/8, $0x3fcc71c71c71c71c
DATA log_a4<>+8(SB)/8, $0x3fcc71c71c71c71c
DATA log_a4<>+16(SB)/8, $0x3fcc71c71c71c71c
DATA log_a4<>+24(SB)/8, $0x3fcc71c71c71c71c
GLOBL log_a4<>(SB), RODATA|NOPTR, $32

DATA log_a5<>+0(SB)/8, $0x3fc745d1745d1746
DATA log_a5<>+8(SB)/8, $0x3fc745d1745d1746
DATA log_a5<>+16(SB)/8, $0x3fc745d1745d1746
DATA log_a5<>+24(SB)/8, $0x3fc745d1745d1746
GLOBL log_a5<>(SB), RODATA|NOPTR, $32

DATA log_a6<>+0(SB)/8, $0x3fc3b13b13b13b14
DATA log_a6<>+8(SB)/8, $0x3fc3b13b13b13b14
DATA log_a6<>+16(SB)/8, $0x3fc3b13b13b13b14
DATA log_a6<>+24(SB)/8, $0x3fc3b13b13b13b14
GLOBL log_a6<>(SB), RODATA|NOPTR, $32

DATA log_a7<>+0(SB)/8, $0x3fc1111111111111
DATA log_a7<>+8(SB)/8, $0x3fc1111111111111
DATA log_a7<>+16(SB)/8, $0x3fc1111111111111
DATA log_a7<>+24(SB)/8, $0x3fc1111111111111
GLOBL log_a7<>(SB), RODATA|NOPTR, $32

DATA log_a8<>+0(SB)/8, $0x3fbe1e1e1e1e1e1e
DATA log_a8<>+8(SB)/8, $0x3fbe1e1e1e1e1e1e
DATA log_a8<>+16(SB)/8, $0x3fbe1e1e1e1e1e1e
DATA log_a8<>+24(SB)/8, $0x3fbe1e1e1e1e1e1e
GLOBL log_a8<>(SB), RODATA|NOPTR, $32

DATA log_a9<>+0(SB)/8, $0x3fbaf286bca1af28
DATA log_a9<>+8(SB)/8, $0x3fbaf286bca1af28
DATA log_a9<>+16(SB)/8, $0x3fbaf286bca1af28
DATA log_a9<>+24(SB)/8, $0x3fbaf286bca1af28
GLOBL log_a9<>(SB), RODATA|NOPTR, $32

DATA log_a10<>+0(SB)/8, $0x3fb8618618618618
DATA log_a10<>+8(SB)/8, $0x3fb8618618618618
DATA log_a10<>+16(SB)/8, $0x3fb8618618618618
DATA log_a10<>+24(SB)/8, $0x3fb8618618618618
GLOBL log_a10<>(SB), RODATA|NOPTR, $32

DATA log_a11<>+0(SB)/8, $0x3fb642c8590b2164
DATA log_a11<>+8(SB)/8, $0x3fb642c8590b2164
DATA log_a11<>+16(SB)/8, $0x3fb642c8590b2164
DATA log_a11<>+24(SB)/8, $0x3fb642c8590b2164
GLOBL log_a11<>(SB), RODATA|NOPTR, $32

// func log4(dst, src []float64)
//
// dst[i] = log(src[i]) for i < len(src)&^3, four at a time with AVX2+FMA,
// right for positive normal src[i] (the caller recomputes the rest): with
// x = 2^e·m, m in [√½, √2) from x's bits, log x = e·ln2 + log m, and
// log m = 2·atanh(s) = s·(2 + 2s²/3 + 2s⁴/5 + ...), s = (m-1)/(m+1),
// |s| ≤ 0.172, by its series to s^23 (error below 1e-17 relative).
TEXT ·log4(SB), NOSPLIT, $0-48
	MOVQ dst_base+0(FP), DI
	MOVQ src_base+24(FP), SI
	MOVQ src_len+32(FP), CX
	SHRQ $2, CX
	JZ   ldone
	VMOVUPD tanh_one<>(SB), Y15
	VMOVUPD log_two52<>(SB), Y14
	VMOVUPD log_sqrt2<>(SB), Y13

lloop:
	VMOVUPD (SI), Y0
	VPSRLQ  $52, Y0, Y1               // the biased exponent, as an integer
	VPOR    Y14, Y1, Y1
	VSUBPD  Y14, Y1, Y1               // ... as a double
	VSUBPD  log_bias<>(SB), Y1, Y1    // e
	VPAND   log_mant<>(SB), Y0, Y2
	VPOR    Y15, Y2, Y2               // m in [1, 2)
	VCMPPD  $0x1e, Y13, Y2, Y3        // m > √2
	VMULPD  log_half<>(SB), Y2, Y4
	VBLENDVPD Y3, Y4, Y2, Y2          // m/2 where m > √2
	VANDPD  Y15, Y3, Y4
	VADDPD  Y4, Y1, Y1                // e+1 there
	VSUBPD  Y15, Y2, Y5               // m - 1
	VADDPD  Y15, Y2, Y6               // m + 1
	VDIVPD  Y6, Y5, Y5                // s
	VMULPD  Y5, Y5, Y6                // z = s²
	VMOVUPD log_a11<>(SB), Y7
	VFMADD213PD log_a10<>(SB), Y6, Y7
	VFMADD213PD log_a9<>(SB), Y6, Y7
	VFMADD213PD log_a8<>(SB), Y6, Y7
	VFMADD213PD log_a7<>(SB), Y6, Y7
	VFMADD213PD log_a6<>(SB), Y6, Y7
	VFMADD213PD log_a5<>(SB), Y6, Y7
	VFMADD213PD log_a4<>(SB), Y6, Y7
	VFMADD213PD log_a3<>(SB), Y6, Y7
	VFMADD213PD log_a2<>(SB), Y6, Y7
	VFMADD213PD log_a1<>(SB), Y6, Y7  // (2/3 + z·(2/5 + ...))
	VMULPD  Y6, Y7, Y7                // z·(...)
	VMULPD  Y5, Y7, Y7                // s·z·(...)
	VFMADD231PD tanh_ln2lo<>(SB), Y1, Y7 // + e·ln2lo
	VADDPD  Y5, Y5, Y5                // 2s
	VADDPD  Y5, Y7, Y7                // log m + e·ln2lo
	VFMADD231PD tanh_ln2hi<>(SB), Y1, Y7 // + e·ln2hi
	VMOVUPD Y7, (DI)
	ADDQ    $32, SI
	ADDQ    $32, DI
	DECQ    CX
	JNZ     lloop
	VZEROUPPER

ldone:
	RET
