package num

import "math"

// The scalar node operations. Each is one IEEE addition in its type,
// round-to-nearest-even, subnormals kept, +0 + -0 = +0 and -0 + -0 = -0, and
// every NaN result canonical. They define what every kernel must compute.

// AddBFloat16 returns a+b rounded once to bfloat16. The float32 sum of two
// bfloat16s, rounded to bfloat16, equals the correctly rounded bfloat16 sum
// (see the package comment).
func AddBFloat16(a, b BFloat16) BFloat16 {
	return bf16FromBits(math.Float32bits(float32(a.Float32() + b.Float32())))
}

// AddFloat16 returns a+b rounded once to float16, by way of an exact float32
// sum as AddBFloat16 does.
func AddFloat16(a, b Float16) Float16 {
	return f16FromBits(math.Float32bits(float32(a.Float32() + b.Float32())))
}

// AddFloat32 returns the IEEE float32 sum of a and b, with a NaN result
// replaced by CanonicalNaNFloat32. The conversion pins the rounding to float32
// (the Go spec lets an implementation fuse operations only where no explicit
// conversion intervenes).
func AddFloat32(a, b float32) float32 {
	s := float32(a + b)
	if s != s {
		return math.Float32frombits(CanonicalNaNFloat32)
	}
	return s
}

// AddFloat64 returns the IEEE float64 sum of a and b, with a NaN result
// replaced by CanonicalNaNFloat64.
func AddFloat64(a, b float64) float64 {
	s := float64(a + b)
	if s != s {
		return math.Float64frombits(CanonicalNaNFloat64)
	}
	return s
}
