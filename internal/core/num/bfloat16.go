package num

import (
	"math"
	"strconv"
)

// BFloat16 is a bfloat16 held as its raw bits: the top 16 bits of a float32
// (1 sign, 8 exponent, 7 mantissa bits).
type BFloat16 uint16

// BFloat16FromFloat32 rounds f to the nearest bfloat16, ties to even.
// Subnormals are kept, values beyond the largest finite bfloat16 round to
// ±Inf as IEEE round-to-nearest-even does, and any NaN becomes
// CanonicalNaNBFloat16.
func BFloat16FromFloat32(f float32) BFloat16 {
	return bf16FromBits(math.Float32bits(f))
}

// BFloat16FromFloat64 rounds f to the nearest bfloat16 in one step, with the
// same rules as BFloat16FromFloat32. It does not go through float32: rounding
// twice can land on the wrong side of a bfloat16 tie.
func BFloat16FromFloat64(f float64) BFloat16 {
	return BFloat16(roundFloat64(f, 7, 8, uint64(CanonicalNaNBFloat16)))
}

// bf16FromBits rounds the float32 with bits x. Adding 0x7FFF plus the lowest
// kept bit and truncating is round-to-nearest-even; the carry runs into the
// exponent, which also turns values past the largest finite into Inf. It would
// also turn some NaNs into Inf, hence the NaN check first.
func bf16FromBits(x uint32) BFloat16 {
	if x&0x7FFFFFFF > 0x7F800000 {
		return CanonicalNaNBFloat16
	}
	return BFloat16((x + 0x7FFF + (x>>16)&1) >> 16)
}

// Float32 returns b exactly as a float32. A NaN keeps its payload.
func (b BFloat16) Float32() float32 { return math.Float32frombits(uint32(b) << 16) }

// Float64 returns b exactly as a float64.
func (b BFloat16) Float64() float64 { return float64(b.Float32()) }

// IsNaN reports whether b is a NaN (any payload, either sign).
func (b BFloat16) IsNaN() bool { return b&0x7FFF > 0x7F80 }

// String formats the value b holds, as strconv does for its float32.
func (b BFloat16) String() string {
	return strconv.FormatFloat(float64(b.Float32()), 'g', -1, 32)
}
