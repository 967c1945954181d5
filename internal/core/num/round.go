package num

import "math"

// roundFloat64 rounds x once to the binary format with mbits stored mantissa
// bits and ebits exponent bits, ties to even, subnormals kept and overflow to
// ±Inf, and returns its raw bits; any NaN gives nan. It serves the
// FromFloat64 conversions, where going through float32 would round twice.
func roundFloat64(x float64, mbits, ebits int, nan uint64) uint64 {
	b := math.Float64bits(x)
	sign := b >> 63 << (mbits + ebits)
	a := b &^ (1 << 63)
	bias := 1<<(ebits-1) - 1
	inf := uint64(1<<ebits-1) << mbits
	emin := 1 - bias // exponent of the smallest normal
	e := int(a>>52) - 1023
	switch {
	case a > 0x7FF0000000000000:
		return nan
	case e > bias: // >= 2^(emax+1), or Inf
		return sign | inf
	case e < emin-mbits-1: // below half the smallest subnormal (float64 subnormals too): ±0
		return sign
	}
	sig := a&(1<<52-1) | 1<<52 // x = sig * 2^(e-52)
	q := max(e, emin)          // result exponent before any carry
	shift := uint(52 - mbits + q - e)
	r := (sig + 1<<(shift-1) - 1 + (sig>>shift)&1) >> shift
	// r holds the implicit bit for normals, so (q+bias-1)<<mbits + r is the
	// encoding; for subnormals q+bias-1 is 0. A carry out of r moves the
	// exponent up, possibly to Inf, which is the right answer.
	bits := uint64(q+bias-1)<<mbits + r
	if bits >= inf {
		return sign | inf
	}
	return sign | bits
}
