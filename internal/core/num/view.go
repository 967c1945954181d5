package num

import "unsafe"

// Typed views of byte buffers. Backends hold buffers as []byte; these
// reinterpret them in place, without copying, so that the slice kernels can
// run on them and so that callers such as internal/core/tree need not import
// unsafe themselves.
//
// Precondition: the buffer starts at an address aligned to the element size
// and its length is a multiple of it. Breaking either is internal misuse (the
// backends allocate their buffers aligned) and panics. An empty buffer gives
// an empty view.

// AsBFloat16s views b as bfloat16s.
func AsBFloat16s(b []byte) []BFloat16 { return view[BFloat16](b) }

// AsFloat16s views b as float16s.
func AsFloat16s(b []byte) []Float16 { return view[Float16](b) }

// AsFloat32s views b as float32s.
func AsFloat32s(b []byte) []float32 { return view[float32](b) }

// AsFloat64s views b as float64s.
func AsFloat64s(b []byte) []float64 { return view[float64](b) }

// AlignedBytes returns n zeroed bytes starting at an 8-byte aligned address,
// so that any of the views above may be taken of it.
func AlignedBytes(n int) []byte {
	if n == 0 {
		return []byte{}
	}
	w := make([]uint64, (n+7)/8)
	return unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(w))), n)
}

func view[T any](b []byte) []T {
	var zero T
	size := int(unsafe.Sizeof(zero))
	if len(b) == 0 {
		return []T{}
	}
	p := unsafe.Pointer(unsafe.SliceData(b))
	if len(b)%size != 0 || uintptr(p)%uintptr(size) != 0 {
		panic("num: byte view misaligned or not a whole number of elements")
	}
	return unsafe.Slice((*T)(p), len(b)/size)
}
