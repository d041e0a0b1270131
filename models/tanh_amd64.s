//go:build amd64 && !purego

#include "textflag.h"

// CONST4 declares name as four copies of the 64-bit value v: a constant
// for all four lanes of a vector.
#define CONST4(name, v) \
	DATA name<>+0(SB)/8, $v; \
	DATA name<>+8(SB)/8, $v; \
	DATA name<>+16(SB)/8, $v; \
	DATA name<>+24(SB)/8, $v; \
	GLOBL name<>(SB), RODATA|NOPTR, $32

CONST4(tanh_absmask, 0x7fffffffffffffff)
CONST4(tanh_signmask, 0x8000000000000000)
CONST4(tanh_clamp, 0x4034000000000000)
CONST4(tanh_m2log2e, 0xc0071547652b82fe)
CONST4(tanh_ln2hi, 0x3fe62e42fee00000)
CONST4(tanh_ln2lo, 0x3dea39ef35793c76)
CONST4(exp_log2e, 0x3ff71547652b82fe)
CONST4(tanh_magic, 0x4338000000000000)
CONST4(tanh_one, 0x3ff0000000000000)
CONST4(tanh_two, 0x4000000000000000)
CONST4(tanh_c1, 0x3ff0000000000000)
CONST4(tanh_c2, 0x3fe0000000000000)
CONST4(tanh_c3, 0x3fc5555555555555)
CONST4(tanh_c4, 0x3fa5555555555555)
CONST4(tanh_c5, 0x3f81111111111111)
CONST4(tanh_c6, 0x3f56c16c16c16c17)
CONST4(tanh_c7, 0x3f2a01a01a01a01a)
CONST4(tanh_c8, 0x3efa01a01a01a01a)
CONST4(tanh_c9, 0x3ec71de3a556c734)
CONST4(tanh_c10, 0x3e927e4fb7789f5c)
CONST4(tanh_c11, 0x3e5ae64567f544e4)
CONST4(tanh_c12, 0x3e21eed8eff8d898)
CONST4(tanh_c13, 0x3de6124613a86d09)

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

// MAP4ARGS loads an elementwise kernel's (dst, src []float64) arguments:
// dst to DI, src to SI, and to CX the passes of four values, going to
// done when there are none.
#define MAP4ARGS(done) \
	MOVQ dst_base+0(FP), DI; \
	MOVQ src_base+24(FP), SI; \
	MOVQ src_len+32(FP), CX; \
	SHRQ $2, CX; \
	JZ   done

// func tanh4(dst, src []float64)
//
// dst[i] = tanh(src[i]) for i < len(src)&^3, four at a time with AVX2+FMA:
// tanh|x| = -e/(2+e) with e = expm1(-2|x|) = 2^k·q + (2^k - 1), where
// -2|x| = k·ln2 + r, |r| ≤ ln2/2, and q = expm1(r) by its Taylor series to
// r^13 (error below 1e-16 relative). |x| is clamped to 20 (tanh(20) rounds
// to 1) with NaN kept, so NaN propagates.
TEXT ·tanh4(SB), NOSPLIT, $0-48
	MAP4ARGS(done)
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
	MAP4ARGS(edone)

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

// log4's: the mantissa's bits, 2^52, the exponent's bias, √2, ½, and the
// series' coefficients a_k = 2/(2k+1) (a_0 = 2 is an addition).
CONST4(log_mant, 0x000fffffffffffff)
CONST4(log_two52, 0x4330000000000000)
CONST4(log_bias, 0x408ff80000000000)
CONST4(log_sqrt2, 0x3ff6a09e667f3bcd)
CONST4(log_half, 0x3fe0000000000000)
CONST4(log_a1, 0x3fe5555555555555)
CONST4(log_a2, 0x3fd999999999999a)
CONST4(log_a3, 0x3fd2492492492492)
CONST4(log_a4, 0x3fcc71c71c71c71c)
CONST4(log_a5, 0x3fc745d1745d1746)
CONST4(log_a6, 0x3fc3b13b13b13b14)
CONST4(log_a7, 0x3fc1111111111111)
CONST4(log_a8, 0x3fbe1e1e1e1e1e1e)
CONST4(log_a9, 0x3fbaf286bca1af28)
CONST4(log_a10, 0x3fb8618618618618)
CONST4(log_a11, 0x3fb642c8590b2164)
// func log4(dst, src []float64)
//
// dst[i] = log(src[i]) for i < len(src)&^3, four at a time with AVX2+FMA,
// right for positive normal src[i] (the caller recomputes the rest): with
// x = 2^e·m, m in [√½, √2) from x's bits, log x = e·ln2 + log m, and
// log m = 2·atanh(s) = s·(2 + 2s²/3 + 2s⁴/5 + ...), s = (m-1)/(m+1),
// |s| ≤ 0.172, by its series to s^23 (error below 1e-17 relative).
TEXT ·log4(SB), NOSPLIT, $0-48
	MAP4ARGS(ldone)
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
