package num

import "math"

// The slice kernels: dst[i] = a[i] + b[i] with each element equal, bit for
// bit, to the scalar add of its type. They are the CPU backend's inner loop,
// so each compiles to one tight loop: the rounding helpers they share with
// the scalar adds are small enough to inline, float16 operands come from a
// table, and there are no per-element function values.
//
// dst may be the same slice as a or b (same start); other overlaps are not
// supported. All three lengths must be equal: a mismatch is internal misuse
// and panics.

// AddBFloat16s sets dst[i] = AddBFloat16(a[i], b[i]).
func AddBFloat16s(dst, a, b []BFloat16) {
	checkLens(len(dst), len(a), len(b))
	a, b = a[:len(dst)], b[:len(dst)]
	for i := range dst {
		s := math.Float32bits(float32(math.Float32frombits(uint32(a[i])<<16) + math.Float32frombits(uint32(b[i])<<16)))
		dst[i] = bf16FromBits(s)
	}
}

// AddFloat16s sets dst[i] = AddFloat16(a[i], b[i]).
func AddFloat16s(dst, a, b []Float16) {
	checkLens(len(dst), len(a), len(b))
	a, b = a[:len(dst)], b[:len(dst)]
	t := f16Table()
	for i := range dst {
		s := math.Float32bits(float32(t[a[i]] + t[b[i]]))
		r, ok := f16Normal(s) // f16FromBits, whose cost is too high to inline
		if !ok {
			r = f16Rare(s)
		}
		dst[i] = r
	}
}

// AddFloat32s sets dst[i] = AddFloat32(a[i], b[i]).
func AddFloat32s(dst, a, b []float32) {
	checkLens(len(dst), len(a), len(b))
	a, b = a[:len(dst)], b[:len(dst)]
	for i := range dst {
		s := float32(a[i] + b[i])
		if s != s {
			s = math.Float32frombits(CanonicalNaNFloat32)
		}
		dst[i] = s
	}
}

// AddFloat64s sets dst[i] = AddFloat64(a[i], b[i]).
func AddFloat64s(dst, a, b []float64) {
	checkLens(len(dst), len(a), len(b))
	a, b = a[:len(dst)], b[:len(dst)]
	for i := range dst {
		s := float64(a[i] + b[i])
		if s != s {
			s = math.Float64frombits(CanonicalNaNFloat64)
		}
		dst[i] = s
	}
}

func checkLens(d, a, b int) {
	if a != d || b != d {
		panic("num: slice add of unequal lengths")
	}
}
