package num

import (
	"math"
	"strconv"
	"sync"
)

// Float16 is an IEEE 754 binary16 held as its raw bits (1 sign, 5 exponent,
// 10 mantissa bits).
type Float16 uint16

// Float16FromFloat32 rounds f to the nearest float16, ties to even.
// Subnormals are kept, values from 65520 up round to ±Inf as IEEE
// round-to-nearest-even does, and any NaN becomes CanonicalNaNFloat16.
func Float16FromFloat32(f float32) Float16 {
	return f16FromBits(math.Float32bits(f))
}

// Float16FromFloat64 rounds f to the nearest float16 in one step, with the
// same rules as Float16FromFloat32. It does not go through float32: rounding
// twice can land on the wrong side of a float16 tie.
func Float16FromFloat64(f float64) Float16 {
	return Float16(roundFloat64(f, 10, 5, uint64(CanonicalNaNFloat16)))
}

// f16FromBits rounds the float32 with bits w to float16: f16Normal for the
// common case, f16Rare for the rest. Every float32 is checked against an
// independent reference by the tests.
func f16FromBits(w uint32) Float16 {
	if r, ok := f16Normal(w); ok {
		return r
	}
	return f16Rare(w)
}

// f16Normal rounds the float32 with bits w if the result is a normal
// float16, |w| in [2^-14, 65520), and reports whether it was. It rebiases
// the exponent 127 -> 15, then adds 0xFFF plus the lowest kept bit and
// truncates: round-to-nearest-even, with a carry into the exponent the right
// answer. It is small enough to inline into the slice kernel's loop.
func f16Normal(w uint32) (Float16, bool) {
	// |w| - 2^-14, unsigned, is below 65520 - 2^-14 exactly in that range.
	x := w&0x7FFFFFFF - 0x38800000
	if x >= 0x477FF000-0x38800000 {
		return 0, false
	}
	x += 1 << 23
	return Float16(w>>16&0x8000) | Float16((x+0xFFF+(x>>13)&1)>>13), true
}

// f16Rare rounds the float32 with bits w to float16 where f16Normal does not:
// NaN, overflow to Inf, subnormal or zero (it is right for normals too). It
// lets the float32 adder do the rounding (after Maratyszcza's FP16 library,
// fp16_ieee_from_fp32_value): adding 2^(e+15) to
// 4|w|, where 2^e is |w|'s binade or 2^-14 (the float16 normal minimum) if
// that is larger, leaves exactly float16's 10 mantissa bits, or the
// subnormal quantum, in the sum's mantissa, rounded to nearest-even by the
// hardware. The sum's low exponent bits then wrap into float16's exponent
// field, and a carry out of the mantissa lands in the exponent as it should.
// The first scaling sends |w| >= 2^16 to Inf.
//
// The conversion of base pins it to float32 so that the product is not fused
// into the following add (Go allows that, and GOAMD64=v3 does it); a product
// of products cannot be fused.
func f16Rare(w uint32) Float16 {
	a := w & 0x7FFFFFFF
	if a > 0x7F800000 {
		return CanonicalNaNFloat16
	}
	base := float32(math.Float32frombits(a) * 0x1p112 * 0x1p-110)
	bias := max(a&0x7F800000, 113<<23) + 15<<23 // 2^(max(e, -14) + 15)
	bits := math.Float32bits(float32(math.Float32frombits(bias) + base))
	return Float16(w>>16&0x8000 | (bits>>13&0x7C00 + bits&0xFFF))
}

// Float32 returns h exactly as a float32. A NaN keeps its payload.
func (h Float16) Float32() float32 { return math.Float32frombits(f16Bits32(h)) }

// Float64 returns h exactly as a float64.
func (h Float16) Float64() float64 { return float64(h.Float32()) }

// IsNaN reports whether h is a NaN (any payload, either sign).
func (h Float16) IsNaN() bool { return h&0x7FFF > 0x7C00 }

// String formats the value h holds, as strconv does for its float32.
func (h Float16) String() string {
	return strconv.FormatFloat(float64(h.Float32()), 'g', -1, 32)
}

// f16Bits32 widens h to the bits of the equal float32.
func f16Bits32(h Float16) uint32 {
	sign := uint32(h&0x8000) << 16
	e := h & 0x7C00
	m := uint32(h & 0x3FF)
	switch {
	case e == 0x7C00: // Inf or NaN: all-ones exponent, payload shifted up
		return sign | 0x7F800000 | m<<13
	case e != 0: // normal: rebias the exponent 15 -> 127
		return sign | (uint32(h&0x7FFF)<<13 + 112<<23)
	default: // zero or subnormal: m * 2^-24, exact in float32
		return sign | math.Float32bits(float32(m)*0x1p-24)
	}
}

// f16Table maps every float16 pattern to its float32. The slice kernel looks
// elements up here rather than branching per element on the exponent. It is
// built on first use (256 KiB) so that importers who never add float16 do not
// pay for it.
var f16Table = sync.OnceValue(func() *[1 << 16]float32 {
	t := new([1 << 16]float32)
	for i := range t {
		t[i] = Float16(i).Float32()
	}
	return t
})
