package num

// Canonical NaNs, as raw bits. Hardware disagrees on which NaN an operation
// returns (x86 propagates payloads, the GPU's fp64 add gives 0xFFF8...), so
// every NaN a node produces is replaced by the one of its type: results then
// match bit for bit whichever backend or operand order produced the NaN.
const (
	CanonicalNaNBFloat16 BFloat16 = 0x7FFF
	CanonicalNaNFloat16  Float16  = 0x7FFF
	CanonicalNaNFloat32  uint32   = 0x7FFFFFFF
	CanonicalNaNFloat64  uint64   = 0x7FFFFFFFFFFFFFFF
)

// CanonicalizeNaNs replaces every NaN element of b, of type dt, with the
// canonical NaN of dt, in place. It is T over a single leaf: a one-rank
// reduction copies its input, and the copy must not keep a NaN's payload
// (every NaN result is canonical, whatever the world size). It panics if dt
// is not reducible or b is misaligned for it, as the views do.
func CanonicalizeNaNs(dt DType, b []byte) {
	switch dt {
	case BFloat16Type:
		s := AsBFloat16s(b)
		for i, v := range s {
			if v&0x7FFF > 0x7F80 { // exponent all ones, mantissa not zero
				s[i] = CanonicalNaNBFloat16
			}
		}
	case Float16Type:
		s := AsFloat16s(b)
		for i, v := range s {
			if v&0x7FFF > 0x7C00 {
				s[i] = CanonicalNaNFloat16
			}
		}
	case Float32Type:
		canonFloat32s(AsFloat32s(b))
	case Float64Type:
		canonFloat64s(AsFloat64s(b))
	default:
		panic("num: CanonicalizeNaNs of non-reducible dtype " + dt.String())
	}
}
