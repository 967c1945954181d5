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
