//go:build !purego

#include "textflag.h"

// The AVX2 slice kernels. Each takes len(dst) elements, a positive multiple
// of its block, from a and b (at least as long). MXCSR is Go's default
// (round to nearest even, no flush to zero, no denormals-are-zero), so a
// vector add rounds exactly as the scalar one. Every block is read before
// it is written, which is what lets dst be a or b.

// func addFloat32sAVX2(dst, a, b []float32)
TEXT ·addFloat32sAVX2(SB), NOSPLIT, $0-72
	MOVQ dst_base+0(FP), DI
	MOVQ dst_len+8(FP), CX
	MOVQ a_base+24(FP), SI
	MOVQ b_base+48(FP), DX
	MOVQ $0x7FFFFFFF, AX
	MOVQ AX, X7
	VPBROADCASTD X7, Y7 // canonical NaN
	XORQ AX, AX

loop32:
	VMOVUPS   (SI)(AX*4), Y0
	VMOVUPS   32(SI)(AX*4), Y1
	VADDPS    (DX)(AX*4), Y0, Y0
	VADDPS    32(DX)(AX*4), Y1, Y1
	VCMPPS    $3, Y0, Y0, Y2 // unordered: NaN lanes
	VCMPPS    $3, Y1, Y1, Y3
	VBLENDVPS Y2, Y7, Y0, Y0
	VBLENDVPS Y3, Y7, Y1, Y1
	VMOVUPS   Y0, (DI)(AX*4)
	VMOVUPS   Y1, 32(DI)(AX*4)
	ADDQ      $16, AX
	CMPQ      AX, CX
	JB        loop32
	VZEROUPPER
	RET

// func addFloat64sAVX2(dst, a, b []float64)
TEXT ·addFloat64sAVX2(SB), NOSPLIT, $0-72
	MOVQ dst_base+0(FP), DI
	MOVQ dst_len+8(FP), CX
	MOVQ a_base+24(FP), SI
	MOVQ b_base+48(FP), DX
	MOVQ $0x7FFFFFFFFFFFFFFF, AX
	MOVQ AX, X7
	VPBROADCASTQ X7, Y7 // canonical NaN
	XORQ AX, AX

loop64:
	VMOVUPD   (SI)(AX*8), Y0
	VMOVUPD   32(SI)(AX*8), Y1
	VADDPD    (DX)(AX*8), Y0, Y0
	VADDPD    32(DX)(AX*8), Y1, Y1
	VCMPPD    $3, Y0, Y0, Y2
	VCMPPD    $3, Y1, Y1, Y3
	VBLENDVPD Y2, Y7, Y0, Y0
	VBLENDVPD Y3, Y7, Y1, Y1
	VMOVUPD   Y0, (DI)(AX*8)
	VMOVUPD   Y1, 32(DI)(AX*8)
	ADDQ      $8, AX
	CMPQ      AX, CX
	JB        loop64
	VZEROUPPER
	RET

// func addBFloat16sAVX2(dst, a, b []BFloat16)
//
// bf16FromBits on 16 lanes. Unpacking against zero widens each bfloat16 to
// its float32 in place (within 128-bit lanes, low and high halves apart);
// after the add, adding 0x7FFF plus the lowest kept bit and shifting rounds,
// NaN lanes become 0x7FFF, and the pack, exact as every result fits 16 bits,
// puts the halves back in order.
TEXT ·addBFloat16sAVX2(SB), NOSPLIT, $0-72
	MOVQ dst_base+0(FP), DI
	MOVQ dst_len+8(FP), CX
	MOVQ a_base+24(FP), SI
	MOVQ b_base+48(FP), DX
	MOVQ $0x7FFF, AX
	MOVQ AX, X7
	VPBROADCASTD X7, Y7 // rounding bias and canonical NaN
	MOVQ $1, AX
	MOVQ AX, X6
	VPBROADCASTD X6, Y6
	VPXOR Y5, Y5, Y5
	XORQ AX, AX

loopbf16:
	VMOVDQU    (SI)(AX*2), Y8
	VMOVDQU    (DX)(AX*2), Y9
	VPUNPCKLWD Y8, Y5, Y0
	VPUNPCKHWD Y8, Y5, Y1
	VPUNPCKLWD Y9, Y5, Y2
	VPUNPCKHWD Y9, Y5, Y3
	VADDPS     Y2, Y0, Y0
	VADDPS     Y3, Y1, Y1
	VCMPPS     $3, Y0, Y0, Y2 // unordered: NaN lanes
	VCMPPS     $3, Y1, Y1, Y3
	VPSRLD     $16, Y0, Y8
	VPSRLD     $16, Y1, Y9
	VPAND      Y6, Y8, Y8
	VPAND      Y6, Y9, Y9
	VPADDD     Y7, Y0, Y0
	VPADDD     Y7, Y1, Y1
	VPADDD     Y8, Y0, Y0
	VPADDD     Y9, Y1, Y1
	VPSRLD     $16, Y0, Y0
	VPSRLD     $16, Y1, Y1
	VBLENDVPS  Y2, Y7, Y0, Y0
	VBLENDVPS  Y3, Y7, Y1, Y1
	VPACKUSDW  Y1, Y0, Y0
	VMOVDQU    Y0, (DI)(AX*2)
	ADDQ       $16, AX
	CMPQ       AX, CX
	JB         loopbf16
	VZEROUPPER
	RET

// func addFloat16sF16C(dst, a, b []Float16)
//
// The float16 to float32 conversion is exact and the conversion back, with
// immediate rounding mode 0, rounds once to nearest even, subnormals kept:
// f16FromBits. It would keep a NaN's payload, so NaN lanes are first set to
// the float32 0x7FFFE000, whose top 10 mantissa bits make 0x7FFF.
TEXT ·addFloat16sF16C(SB), NOSPLIT, $0-72
	MOVQ dst_base+0(FP), DI
	MOVQ dst_len+8(FP), CX
	MOVQ a_base+24(FP), SI
	MOVQ b_base+48(FP), DX
	MOVQ $0x7FFFE000, AX
	MOVQ AX, X7
	VPBROADCASTD X7, Y7
	XORQ AX, AX

loopf16:
	VCVTPH2PS (SI)(AX*2), Y0
	VCVTPH2PS (DX)(AX*2), Y1
	VADDPS    Y1, Y0, Y0
	VCMPPS    $3, Y0, Y0, Y2
	VBLENDVPS Y2, Y7, Y0, Y0
	VCVTPS2PH $0, Y0, (DI)(AX*2)
	ADDQ      $8, AX
	CMPQ      AX, CX
	JB        loopf16
	VZEROUPPER
	RET

// The extremum kernels: max (flip 0) or min (flip all ones) of float bit
// patterns in the order of redop.go's combineBits, a canonical NaN where
// either operand is a NaN. Per lane: neg = (0 > v), all ones for a
// negative value; key = v ^ (neg & mag) orders the bit patterns as signed
// integers as the floats they are, -0 below +0; key ^ flip reverses that
// order for min; a lane takes a where key(a) > key(b) after the flip, else
// b (equal keys are equal bits); v & mag > inf (a positive signed compare)
// finds NaNs. Registers: Y6 mag, Y7 canonical NaN, Y8 inf, Y9 flip, Y10
// zero.
//
// go vet reads no macros: the arguments are loaded in each function.
#define EXTREMUM_SETUP(BCAST) \
	MOVQ AX, X8 \
	BCAST X8, Y8 \
	MOVQ BX, X7 \
	BCAST X7, Y7 \
	MOVQ R8, X9 \
	BCAST X9, Y9 \
	VPXOR Y10, Y10, Y10 \
	VPCMPEQB Y6, Y6, Y6

#define EXTREMUM_BODY(GT, SCALE) \
	VMOVDQU (SI)(AX*SCALE), Y0 \
	VMOVDQU (DX)(AX*SCALE), Y1 \
	GT      Y0, Y10, Y2 \
	VPAND   Y6, Y2, Y2 \
	VPXOR   Y0, Y2, Y2 \
	VPXOR   Y9, Y2, Y2 \
	GT      Y1, Y10, Y3 \
	VPAND   Y6, Y3, Y3 \
	VPXOR   Y1, Y3, Y3 \
	VPXOR   Y9, Y3, Y3 \
	GT      Y3, Y2, Y4 \
	VPBLENDVB Y4, Y0, Y1, Y5 \
	VPAND   Y6, Y0, Y2 \
	GT      Y8, Y2, Y2 \
	VPAND   Y6, Y1, Y3 \
	GT      Y8, Y3, Y3 \
	VPOR    Y3, Y2, Y2 \
	VPBLENDVB Y2, Y7, Y5, Y5 \
	VMOVDQU Y5, (DI)(AX*SCALE)

// func extremum16AVX2(dst, a, b []uint16, inf, nan, flip uint64)
TEXT ·extremum16AVX2(SB), NOSPLIT, $0-96
	MOVQ dst_base+0(FP), DI
	MOVQ dst_len+8(FP), CX
	MOVQ a_base+24(FP), SI
	MOVQ b_base+48(FP), DX
	MOVQ inf+72(FP), AX
	MOVQ nan+80(FP), BX
	MOVQ flip+88(FP), R8
	EXTREMUM_SETUP(VPBROADCASTW)
	VPSRLW $1, Y6, Y6 // mag: 0x7FFF
	XORQ AX, AX

loopx16:
	EXTREMUM_BODY(VPCMPGTW, 2)
	ADDQ $16, AX
	CMPQ AX, CX
	JB   loopx16
	VZEROUPPER
	RET

// func extremum32AVX2(dst, a, b []uint32, inf, nan, flip uint64)
TEXT ·extremum32AVX2(SB), NOSPLIT, $0-96
	MOVQ dst_base+0(FP), DI
	MOVQ dst_len+8(FP), CX
	MOVQ a_base+24(FP), SI
	MOVQ b_base+48(FP), DX
	MOVQ inf+72(FP), AX
	MOVQ nan+80(FP), BX
	MOVQ flip+88(FP), R8
	EXTREMUM_SETUP(VPBROADCASTD)
	VPSRLD $1, Y6, Y6 // mag: 0x7FFFFFFF
	XORQ AX, AX

loopx32:
	EXTREMUM_BODY(VPCMPGTD, 4)
	ADDQ $8, AX
	CMPQ AX, CX
	JB   loopx32
	VZEROUPPER
	RET

// func extremum64AVX2(dst, a, b []uint64, inf, nan, flip uint64)
TEXT ·extremum64AVX2(SB), NOSPLIT, $0-96
	MOVQ dst_base+0(FP), DI
	MOVQ dst_len+8(FP), CX
	MOVQ a_base+24(FP), SI
	MOVQ b_base+48(FP), DX
	MOVQ inf+72(FP), AX
	MOVQ nan+80(FP), BX
	MOVQ flip+88(FP), R8
	EXTREMUM_SETUP(VPBROADCASTQ)
	VPSRLQ $1, Y6, Y6 // mag: 0x7FFFFFFFFFFFFFFF
	XORQ AX, AX

loopx64:
	EXTREMUM_BODY(VPCMPGTQ, 8)
	ADDQ $4, AX
	CMPQ AX, CX
	JB   loopx64
	VZEROUPPER
	RET

// The scale kernels: dst = src op k for every element, op a division
// (Avg's last step) or a product (PreMulSum's first), each correctly
// rounded as the scalar ones (redop.go), NaN canonical. Float32 and
// float64 work in their own type: IEEE division and product round once.
// Bfloat16 works in float32 and rounds to bfloat16 as addBFloat16sAVX2
// does: a float32 quotient (or product of two 8-bit significands, exact)
// rounded again to 8 bits is the correctly rounded one (24 >= 2*8+2).

#define SCALE32_BODY(OP) \
	VMOVUPS (SI)(AX*4), Y0 \
	VMOVUPS 32(SI)(AX*4), Y1 \
	OP      Y6, Y0, Y0 \
	OP      Y6, Y1, Y1 \
	VCMPPS  $3, Y0, Y0, Y2 \
	VCMPPS  $3, Y1, Y1, Y3 \
	VBLENDVPS Y2, Y7, Y0, Y0 \
	VBLENDVPS Y3, Y7, Y1, Y1 \
	VMOVUPS Y0, (DI)(AX*4) \
	VMOVUPS Y1, 32(DI)(AX*4)

// func divFloat32sAVX2(dst, src []float32, k float32)
TEXT ·divFloat32sAVX2(SB), NOSPLIT, $0-52
	MOVQ dst_base+0(FP), DI
	MOVQ dst_len+8(FP), CX
	MOVQ src_base+24(FP), SI
	VBROADCASTSS k+48(FP), Y6
	MOVQ $0x7FFFFFFF, AX
	MOVQ AX, X7
	VPBROADCASTD X7, Y7
	XORQ AX, AX

loopdiv32:
	SCALE32_BODY(VDIVPS)
	ADDQ $16, AX
	CMPQ AX, CX
	JB   loopdiv32
	VZEROUPPER
	RET

// func mulFloat32sAVX2(dst, src []float32, k float32)
TEXT ·mulFloat32sAVX2(SB), NOSPLIT, $0-52
	MOVQ dst_base+0(FP), DI
	MOVQ dst_len+8(FP), CX
	MOVQ src_base+24(FP), SI
	VBROADCASTSS k+48(FP), Y6
	MOVQ $0x7FFFFFFF, AX
	MOVQ AX, X7
	VPBROADCASTD X7, Y7
	XORQ AX, AX

loopmul32:
	SCALE32_BODY(VMULPS)
	ADDQ $16, AX
	CMPQ AX, CX
	JB   loopmul32
	VZEROUPPER
	RET

#define SCALE64_BODY(OP) \
	VMOVUPD (SI)(AX*8), Y0 \
	VMOVUPD 32(SI)(AX*8), Y1 \
	OP      Y6, Y0, Y0 \
	OP      Y6, Y1, Y1 \
	VCMPPD  $3, Y0, Y0, Y2 \
	VCMPPD  $3, Y1, Y1, Y3 \
	VBLENDVPD Y2, Y7, Y0, Y0 \
	VBLENDVPD Y3, Y7, Y1, Y1 \
	VMOVUPD Y0, (DI)(AX*8) \
	VMOVUPD Y1, 32(DI)(AX*8)

// func divFloat64sAVX2(dst, src []float64, k float64)
TEXT ·divFloat64sAVX2(SB), NOSPLIT, $0-56
	MOVQ dst_base+0(FP), DI
	MOVQ dst_len+8(FP), CX
	MOVQ src_base+24(FP), SI
	VBROADCASTSD k+48(FP), Y6
	MOVQ $0x7FFFFFFFFFFFFFFF, AX
	MOVQ AX, X7
	VPBROADCASTQ X7, Y7
	XORQ AX, AX

loopdiv64:
	SCALE64_BODY(VDIVPD)
	ADDQ $8, AX
	CMPQ AX, CX
	JB   loopdiv64
	VZEROUPPER
	RET

// func mulFloat64sAVX2(dst, src []float64, k float64)
TEXT ·mulFloat64sAVX2(SB), NOSPLIT, $0-56
	MOVQ dst_base+0(FP), DI
	MOVQ dst_len+8(FP), CX
	MOVQ src_base+24(FP), SI
	VBROADCASTSD k+48(FP), Y6
	MOVQ $0x7FFFFFFFFFFFFFFF, AX
	MOVQ AX, X7
	VPBROADCASTQ X7, Y7
	XORQ AX, AX

loopmul64:
	SCALE64_BODY(VMULPD)
	ADDQ $8, AX
	CMPQ AX, CX
	JB   loopmul64
	VZEROUPPER
	RET

// The bfloat16 body: 16 lanes widened as in addBFloat16sAVX2, scaled by
// Y4, rounded back. Y5 zero, Y6 ones, Y7 rounding bias and canonical NaN.
#define SCALEBF16_BODY(OP) \
	VMOVDQU    (SI)(AX*2), Y8 \
	VPUNPCKLWD Y8, Y5, Y0 \
	VPUNPCKHWD Y8, Y5, Y1 \
	OP         Y4, Y0, Y0 \
	OP         Y4, Y1, Y1 \
	VCMPPS     $3, Y0, Y0, Y2 \
	VCMPPS     $3, Y1, Y1, Y3 \
	VPSRLD     $16, Y0, Y8 \
	VPSRLD     $16, Y1, Y9 \
	VPAND      Y6, Y8, Y8 \
	VPAND      Y6, Y9, Y9 \
	VPADDD     Y7, Y0, Y0 \
	VPADDD     Y7, Y1, Y1 \
	VPADDD     Y8, Y0, Y0 \
	VPADDD     Y9, Y1, Y1 \
	VPSRLD     $16, Y0, Y0 \
	VPSRLD     $16, Y1, Y1 \
	VBLENDVPS  Y2, Y7, Y0, Y0 \
	VBLENDVPS  Y3, Y7, Y1, Y1 \
	VPACKUSDW  Y1, Y0, Y0 \
	VMOVDQU    Y0, (DI)(AX*2)

#define SCALEBF16_SETUP \
	MOVQ $0x7FFF, AX \
	MOVQ AX, X7 \
	VPBROADCASTD X7, Y7 \
	MOVQ $1, AX \
	MOVQ AX, X6 \
	VPBROADCASTD X6, Y6 \
	VPXOR Y5, Y5, Y5 \
	XORQ AX, AX

// func divBFloat16sAVX2(dst, src []BFloat16, k float32)
TEXT ·divBFloat16sAVX2(SB), NOSPLIT, $0-52
	MOVQ dst_base+0(FP), DI
	MOVQ dst_len+8(FP), CX
	MOVQ src_base+24(FP), SI
	VBROADCASTSS k+48(FP), Y4
	SCALEBF16_SETUP

loopdivbf16:
	SCALEBF16_BODY(VDIVPS)
	ADDQ $16, AX
	CMPQ AX, CX
	JB   loopdivbf16
	VZEROUPPER
	RET

// func mulBFloat16sAVX2(dst, src []BFloat16, k float32)
TEXT ·mulBFloat16sAVX2(SB), NOSPLIT, $0-52
	MOVQ dst_base+0(FP), DI
	MOVQ dst_len+8(FP), CX
	MOVQ src_base+24(FP), SI
	VBROADCASTSS k+48(FP), Y4
	SCALEBF16_SETUP

loopmulbf16:
	SCALEBF16_BODY(VMULPS)
	ADDQ $16, AX
	CMPQ AX, CX
	JB   loopmulbf16
	VZEROUPPER
	RET

// The float16 scale kernels, converting as addFloat16sF16C does: a float32
// quotient or product (of two 11-bit significands: exact) rounded again to
// float16 is the correctly rounded one (24 >= 2*11+2).
#define SCALEF16_BODY(OP) \
	VCVTPH2PS (SI)(AX*2), Y0 \
	OP        Y6, Y0, Y0 \
	VCMPPS    $3, Y0, Y0, Y2 \
	VBLENDVPS Y2, Y7, Y0, Y0 \
	VCVTPS2PH $0, Y0, (DI)(AX*2)

// func divFloat16sF16C(dst, src []Float16, k float32)
TEXT ·divFloat16sF16C(SB), NOSPLIT, $0-52
	MOVQ dst_base+0(FP), DI
	MOVQ dst_len+8(FP), CX
	MOVQ src_base+24(FP), SI
	VBROADCASTSS k+48(FP), Y6
	MOVQ $0x7FFFE000, AX
	MOVQ AX, X7
	VPBROADCASTD X7, Y7
	XORQ AX, AX

loopdivf16:
	SCALEF16_BODY(VDIVPS)
	ADDQ $8, AX
	CMPQ AX, CX
	JB   loopdivf16
	VZEROUPPER
	RET

// func mulFloat16sF16C(dst, src []Float16, k float32)
TEXT ·mulFloat16sF16C(SB), NOSPLIT, $0-52
	MOVQ dst_base+0(FP), DI
	MOVQ dst_len+8(FP), CX
	MOVQ src_base+24(FP), SI
	VBROADCASTSS k+48(FP), Y6
	MOVQ $0x7FFFE000, AX
	MOVQ AX, X7
	VPBROADCASTD X7, Y7
	XORQ AX, AX

loopmulf16:
	SCALEF16_BODY(VMULPS)
	ADDQ $8, AX
	CMPQ AX, CX
	JB   loopmulf16
	VZEROUPPER
	RET

// The integer kernels: a wrapping sum, or max or min, lane by lane, over
// len(dst) bytes (a positive multiple of 64) of a and b. Exact in any
// order; the vector op is the Go one. AVX2 has no 64-bit max or min: those
// stay Go loops.
#define INT_BODY(OP) \
	VMOVDQU (SI)(AX*1), Y0 \
	VMOVDQU 32(SI)(AX*1), Y1 \
	OP      (DX)(AX*1), Y0, Y0 \
	OP      32(DX)(AX*1), Y1, Y1 \
	VMOVDQU Y0, (DI)(AX*1) \
	VMOVDQU Y1, 32(DI)(AX*1)

// func addInt8sAVX2(dst, a, b []byte)
TEXT ·addInt8sAVX2(SB), NOSPLIT, $0-72
	MOVQ dst_base+0(FP), DI
	MOVQ dst_len+8(FP), CX
	MOVQ a_base+24(FP), SI
	MOVQ b_base+48(FP), DX
	XORQ AX, AX

loop_addInt8s:
	INT_BODY(VPADDB)
	ADDQ $64, AX
	CMPQ AX, CX
	JB   loop_addInt8s
	VZEROUPPER
	RET

// func addInt16sAVX2(dst, a, b []byte)
TEXT ·addInt16sAVX2(SB), NOSPLIT, $0-72
	MOVQ dst_base+0(FP), DI
	MOVQ dst_len+8(FP), CX
	MOVQ a_base+24(FP), SI
	MOVQ b_base+48(FP), DX
	XORQ AX, AX

loop_addInt16s:
	INT_BODY(VPADDW)
	ADDQ $64, AX
	CMPQ AX, CX
	JB   loop_addInt16s
	VZEROUPPER
	RET

// func addInt32sAVX2(dst, a, b []byte)
TEXT ·addInt32sAVX2(SB), NOSPLIT, $0-72
	MOVQ dst_base+0(FP), DI
	MOVQ dst_len+8(FP), CX
	MOVQ a_base+24(FP), SI
	MOVQ b_base+48(FP), DX
	XORQ AX, AX

loop_addInt32s:
	INT_BODY(VPADDD)
	ADDQ $64, AX
	CMPQ AX, CX
	JB   loop_addInt32s
	VZEROUPPER
	RET

// func addInt64sAVX2(dst, a, b []byte)
TEXT ·addInt64sAVX2(SB), NOSPLIT, $0-72
	MOVQ dst_base+0(FP), DI
	MOVQ dst_len+8(FP), CX
	MOVQ a_base+24(FP), SI
	MOVQ b_base+48(FP), DX
	XORQ AX, AX

loop_addInt64s:
	INT_BODY(VPADDQ)
	ADDQ $64, AX
	CMPQ AX, CX
	JB   loop_addInt64s
	VZEROUPPER
	RET

// func maxInt8sAVX2(dst, a, b []byte)
TEXT ·maxInt8sAVX2(SB), NOSPLIT, $0-72
	MOVQ dst_base+0(FP), DI
	MOVQ dst_len+8(FP), CX
	MOVQ a_base+24(FP), SI
	MOVQ b_base+48(FP), DX
	XORQ AX, AX

loop_maxInt8s:
	INT_BODY(VPMAXSB)
	ADDQ $64, AX
	CMPQ AX, CX
	JB   loop_maxInt8s
	VZEROUPPER
	RET

// func maxInt16sAVX2(dst, a, b []byte)
TEXT ·maxInt16sAVX2(SB), NOSPLIT, $0-72
	MOVQ dst_base+0(FP), DI
	MOVQ dst_len+8(FP), CX
	MOVQ a_base+24(FP), SI
	MOVQ b_base+48(FP), DX
	XORQ AX, AX

loop_maxInt16s:
	INT_BODY(VPMAXSW)
	ADDQ $64, AX
	CMPQ AX, CX
	JB   loop_maxInt16s
	VZEROUPPER
	RET

// func maxInt32sAVX2(dst, a, b []byte)
TEXT ·maxInt32sAVX2(SB), NOSPLIT, $0-72
	MOVQ dst_base+0(FP), DI
	MOVQ dst_len+8(FP), CX
	MOVQ a_base+24(FP), SI
	MOVQ b_base+48(FP), DX
	XORQ AX, AX

loop_maxInt32s:
	INT_BODY(VPMAXSD)
	ADDQ $64, AX
	CMPQ AX, CX
	JB   loop_maxInt32s
	VZEROUPPER
	RET

// func maxUint8sAVX2(dst, a, b []byte)
TEXT ·maxUint8sAVX2(SB), NOSPLIT, $0-72
	MOVQ dst_base+0(FP), DI
	MOVQ dst_len+8(FP), CX
	MOVQ a_base+24(FP), SI
	MOVQ b_base+48(FP), DX
	XORQ AX, AX

loop_maxUint8s:
	INT_BODY(VPMAXUB)
	ADDQ $64, AX
	CMPQ AX, CX
	JB   loop_maxUint8s
	VZEROUPPER
	RET

// func maxUint16sAVX2(dst, a, b []byte)
TEXT ·maxUint16sAVX2(SB), NOSPLIT, $0-72
	MOVQ dst_base+0(FP), DI
	MOVQ dst_len+8(FP), CX
	MOVQ a_base+24(FP), SI
	MOVQ b_base+48(FP), DX
	XORQ AX, AX

loop_maxUint16s:
	INT_BODY(VPMAXUW)
	ADDQ $64, AX
	CMPQ AX, CX
	JB   loop_maxUint16s
	VZEROUPPER
	RET

// func maxUint32sAVX2(dst, a, b []byte)
TEXT ·maxUint32sAVX2(SB), NOSPLIT, $0-72
	MOVQ dst_base+0(FP), DI
	MOVQ dst_len+8(FP), CX
	MOVQ a_base+24(FP), SI
	MOVQ b_base+48(FP), DX
	XORQ AX, AX

loop_maxUint32s:
	INT_BODY(VPMAXUD)
	ADDQ $64, AX
	CMPQ AX, CX
	JB   loop_maxUint32s
	VZEROUPPER
	RET

// func minInt8sAVX2(dst, a, b []byte)
TEXT ·minInt8sAVX2(SB), NOSPLIT, $0-72
	MOVQ dst_base+0(FP), DI
	MOVQ dst_len+8(FP), CX
	MOVQ a_base+24(FP), SI
	MOVQ b_base+48(FP), DX
	XORQ AX, AX

loop_minInt8s:
	INT_BODY(VPMINSB)
	ADDQ $64, AX
	CMPQ AX, CX
	JB   loop_minInt8s
	VZEROUPPER
	RET

// func minInt16sAVX2(dst, a, b []byte)
TEXT ·minInt16sAVX2(SB), NOSPLIT, $0-72
	MOVQ dst_base+0(FP), DI
	MOVQ dst_len+8(FP), CX
	MOVQ a_base+24(FP), SI
	MOVQ b_base+48(FP), DX
	XORQ AX, AX

loop_minInt16s:
	INT_BODY(VPMINSW)
	ADDQ $64, AX
	CMPQ AX, CX
	JB   loop_minInt16s
	VZEROUPPER
	RET

// func minInt32sAVX2(dst, a, b []byte)
TEXT ·minInt32sAVX2(SB), NOSPLIT, $0-72
	MOVQ dst_base+0(FP), DI
	MOVQ dst_len+8(FP), CX
	MOVQ a_base+24(FP), SI
	MOVQ b_base+48(FP), DX
	XORQ AX, AX

loop_minInt32s:
	INT_BODY(VPMINSD)
	ADDQ $64, AX
	CMPQ AX, CX
	JB   loop_minInt32s
	VZEROUPPER
	RET

// func minUint8sAVX2(dst, a, b []byte)
TEXT ·minUint8sAVX2(SB), NOSPLIT, $0-72
	MOVQ dst_base+0(FP), DI
	MOVQ dst_len+8(FP), CX
	MOVQ a_base+24(FP), SI
	MOVQ b_base+48(FP), DX
	XORQ AX, AX

loop_minUint8s:
	INT_BODY(VPMINUB)
	ADDQ $64, AX
	CMPQ AX, CX
	JB   loop_minUint8s
	VZEROUPPER
	RET

// func minUint16sAVX2(dst, a, b []byte)
TEXT ·minUint16sAVX2(SB), NOSPLIT, $0-72
	MOVQ dst_base+0(FP), DI
	MOVQ dst_len+8(FP), CX
	MOVQ a_base+24(FP), SI
	MOVQ b_base+48(FP), DX
	XORQ AX, AX

loop_minUint16s:
	INT_BODY(VPMINUW)
	ADDQ $64, AX
	CMPQ AX, CX
	JB   loop_minUint16s
	VZEROUPPER
	RET

// func minUint32sAVX2(dst, a, b []byte)
TEXT ·minUint32sAVX2(SB), NOSPLIT, $0-72
	MOVQ dst_base+0(FP), DI
	MOVQ dst_len+8(FP), CX
	MOVQ a_base+24(FP), SI
	MOVQ b_base+48(FP), DX
	XORQ AX, AX

loop_minUint32s:
	INT_BODY(VPMINUD)
	ADDQ $64, AX
	CMPQ AX, CX
	JB   loop_minUint32s
	VZEROUPPER
	RET
