// The Adam kernels' shared code, for vectors of any width (adam4's YMM,
// adam8's ZMM registers): each lane does the same operations in the same
// order, so a weight gets the same bits from either kernel.

// ADAMARGS loads adam's arguments (w to DI, g to SI, m to R8, v to R9,
// clear to DX), reports finite until told otherwise, and sets CX to the
// passes of 1<<shift weights, going to done when there are none.
#define ADAMARGS(shift, done) \
	MOVQ    w_base+0(FP), DI; \
	MOVQ    w_len+8(FP), CX; \
	MOVQ    g_base+24(FP), SI; \
	MOVQ    m_base+48(FP), R8; \
	MOVQ    v_base+72(FP), R9; \
	MOVBQZX clear+144(FP), DX; \
	MOVB    $1, ret+152(FP); \
	SHRQ    $shift, CX; \
	JZ      done

// ADAMCONSTS broadcasts the constants: b1, b2, step, sc2, eps and scale to
// V8–V12 and V15, 1-b1 to V14, 1-b2 to V13.
#define ADAMCONSTS(V8, V9, V10, V11, V12, V13, V14, V15, X13) \
	VBROADCASTSD b1+96(FP), V8; \
	VBROADCASTSD b2+104(FP), V9; \
	VBROADCASTSD step+112(FP), V10; \
	VBROADCASTSD sc2+120(FP), V11; \
	VBROADCASTSD eps+128(FP), V12; \
	VBROADCASTSD scale+136(FP), V15; \
	MOVQ         $0x3ff0000000000000, AX; \
	MOVQ         AX, X13; \
	VBROADCASTSD X13, V13; \
	VSUBPD       V8, V13, V14; \
	VSUBPD       V9, V13, V13

// ADAMLOOP runs CX passes of width bytes of weights, with d = g·scale:
//   m = b1·m + (1-b1)·d;  v = b2·v + (1-b2)·d²;  w -= step·m / (√v·sc2 + eps)
// and g = 0 (from the zero V3) when DX is set, adding each new w minus
// itself (0, or NaN where w is not finite) into V7.
#define ADAMLOOP(V0, V1, V2, V3, V4, V5, V6, V7, V8, V9, V10, V11, V12, V13, V14, V15, width, loop, keep) \
loop: \
	VMULPD      (SI), V15, V0; \
	TESTQ       DX, DX; \
	JZ          keep; \
	VMOVUPD     V3, (SI); \
keep: \
	VMULPD      (R8), V8, V1; \
	VFMADD231PD V0, V14, V1; \
	VMOVUPD     V1, (R8); \
	VMULPD      V0, V0, V4; \
	VMULPD      (R9), V9, V2; \
	VFMADD231PD V4, V13, V2; \
	VMOVUPD     V2, (R9); \
	VSQRTPD     V2, V4; \
	VFMADD213PD V12, V11, V4; \
	VMULPD      V10, V1, V5; \
	VDIVPD      V4, V5, V5; \
	VMOVUPD     (DI), V6; \
	VSUBPD      V5, V6, V6; \
	VMOVUPD     V6, (DI); \
	VSUBPD      V6, V6, V6; \
	VADDPD      V6, V7, V7; \
	ADDQ        $width, SI; \
	ADDQ        $width, DI; \
	ADDQ        $width, R8; \
	ADDQ        $width, R9; \
	DECQ        CX; \
	JNZ         loop
