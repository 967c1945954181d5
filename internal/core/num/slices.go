package num

import "math"

// The slice kernels: dst[i] = a[i] + b[i] with each element equal, bit for
// bit, to the scalar add of its type. They are the CPU backend's inner loop.
// Where the CPU has them (slices_amd64.s), vector instructions take the
// longest prefix of whole vector blocks; the Go loops here take the rest,
// and everything on other CPUs or with the purego build tag. The Go loops
// for float32 and float64 add unrolled blocks with one NaN test per block,
// as a per-element test costs more than the add; all of them inline the
// rounding helpers they share with the scalar adds, look float16 operands up
// in a table, and call no per-element function values.
//
// dst may be the same slice as a or b (same start); other overlaps are not
// supported. All three lengths must be equal: a mismatch is internal misuse
// and panics.

// AddBFloat16s sets dst[i] = AddBFloat16(a[i], b[i]).
func AddBFloat16s(dst, a, b []BFloat16) {
	checkLens(len(dst), len(a), len(b))
	n := addBFloat16sVec(dst, a, b)
	addBFloat16sGo(dst[n:], a[n:], b[n:])
}

// AddFloat16s sets dst[i] = AddFloat16(a[i], b[i]).
func AddFloat16s(dst, a, b []Float16) {
	checkLens(len(dst), len(a), len(b))
	// Only the Go loop needs the table, so a vector path that does it all
	// never builds it.
	if n := addFloat16sVec(dst, a, b); n < len(dst) {
		addFloat16sGo(dst[n:], a[n:], b[n:])
	}
}

// AddFloat32s sets dst[i] = AddFloat32(a[i], b[i]).
func AddFloat32s(dst, a, b []float32) {
	checkLens(len(dst), len(a), len(b))
	n := addFloat32sVec(dst, a, b)
	addFloat32sGo(dst[n:], a[n:], b[n:])
}

// AddFloat64s sets dst[i] = AddFloat64(a[i], b[i]).
func AddFloat64s(dst, a, b []float64) {
	checkLens(len(dst), len(a), len(b))
	n := addFloat64sVec(dst, a, b)
	addFloat64sGo(dst[n:], a[n:], b[n:])
}

func checkLens(d, a, b int) {
	if a != d || b != d {
		panic("num: slice add of unequal lengths")
	}
}

func addBFloat16sGo(dst, a, b []BFloat16) {
	a, b = a[:len(dst)], b[:len(dst)]
	for i := range dst {
		s := math.Float32bits(float32(math.Float32frombits(uint32(a[i])<<16) + math.Float32frombits(uint32(b[i])<<16)))
		dst[i] = bf16FromBits(s)
	}
}

func addFloat16sGo(dst, a, b []Float16) {
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

// addFloat32sGo adds blocks of 8 with no per-element NaN test: the sum of
// the block's 8 results is NaN if any of them is (and, harmlessly, for
// Inf - Inf), so one well-predicted test per block decides whether to rescan
// it.
func addFloat32sGo(dst, a, b []float32) {
	a, b = a[:len(dst)], b[:len(dst)]
	for len(dst) >= 8 {
		d, x, y := (*[8]float32)(dst), (*[8]float32)(a), (*[8]float32)(b)
		s0, s1, s2, s3 := float32(x[0]+y[0]), float32(x[1]+y[1]), float32(x[2]+y[2]), float32(x[3]+y[3])
		s4, s5, s6, s7 := float32(x[4]+y[4]), float32(x[5]+y[5]), float32(x[6]+y[6]), float32(x[7]+y[7])
		d[0], d[1], d[2], d[3], d[4], d[5], d[6], d[7] = s0, s1, s2, s3, s4, s5, s6, s7
		if t := ((s0 + s1) + (s2 + s3)) + ((s4 + s5) + (s6 + s7)); t != t {
			canonFloat32s(d[:])
		}
		dst, a, b = dst[8:], a[8:], b[8:]
	}
	for i := range dst {
		dst[i] = AddFloat32(a[i], b[i])
	}
}

func canonFloat32s(d []float32) {
	for i, s := range d {
		if s != s {
			d[i] = math.Float32frombits(CanonicalNaNFloat32)
		}
	}
}

// addFloat64sGo is addFloat32sGo for float64.
func addFloat64sGo(dst, a, b []float64) {
	a, b = a[:len(dst)], b[:len(dst)]
	for len(dst) >= 8 {
		d, x, y := (*[8]float64)(dst), (*[8]float64)(a), (*[8]float64)(b)
		s0, s1, s2, s3 := float64(x[0]+y[0]), float64(x[1]+y[1]), float64(x[2]+y[2]), float64(x[3]+y[3])
		s4, s5, s6, s7 := float64(x[4]+y[4]), float64(x[5]+y[5]), float64(x[6]+y[6]), float64(x[7]+y[7])
		d[0], d[1], d[2], d[3], d[4], d[5], d[6], d[7] = s0, s1, s2, s3, s4, s5, s6, s7
		if t := ((s0 + s1) + (s2 + s3)) + ((s4 + s5) + (s6 + s7)); t != t {
			canonFloat64s(d[:])
		}
		dst, a, b = dst[8:], a[8:], b[8:]
	}
	for i := range dst {
		dst[i] = AddFloat64(a[i], b[i])
	}
}

func canonFloat64s(d []float64) {
	for i, s := range d {
		if s != s {
			d[i] = math.Float64frombits(CanonicalNaNFloat64)
		}
	}
}
