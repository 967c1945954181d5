//go:build !purego

package num

import "golang.org/x/sys/cpu"

// The vector kernels take the longest prefix that is a whole number of
// their blocks and leave the rest to the Go loops. Their blocks are 16
// float32s, 8 float64s, 16 bfloat16s or 8 float16s.

var (
	useAVX2 = cpu.X86.HasAVX2
	// F16C converts float16 both ways; AVX2 is needed for the broadcast.
	useF16C = cpu.X86.HasAVX2 && cpu.X86.HasF16C
)

//go:noescape
func addFloat32sAVX2(dst, a, b []float32)

//go:noescape
func addFloat64sAVX2(dst, a, b []float64)

//go:noescape
func addBFloat16sAVX2(dst, a, b []BFloat16)

//go:noescape
func addFloat16sF16C(dst, a, b []Float16)

func addFloat32sVec(dst, a, b []float32) int {
	n := len(dst) &^ 15
	if n == 0 || !useAVX2 {
		return 0
	}
	addFloat32sAVX2(dst[:n], a[:n], b[:n])
	return n
}

func addFloat64sVec(dst, a, b []float64) int {
	n := len(dst) &^ 7
	if n == 0 || !useAVX2 {
		return 0
	}
	addFloat64sAVX2(dst[:n], a[:n], b[:n])
	return n
}

func addBFloat16sVec(dst, a, b []BFloat16) int {
	n := len(dst) &^ 15
	if n == 0 || !useAVX2 {
		return 0
	}
	addBFloat16sAVX2(dst[:n], a[:n], b[:n])
	return n
}

func addFloat16sVec(dst, a, b []Float16) int {
	n := len(dst) &^ 7
	if n == 0 || !useF16C {
		return 0
	}
	addFloat16sF16C(dst[:n], a[:n], b[:n])
	return n
}

// The extremum kernels (max and min of floats, redop.go's combineBits):
// blocks of 16 16-bit, 8 32-bit or 4 64-bit values. flip is all ones for
// min (it reverses the order keys), 0 for max.

//go:noescape
func extremum16AVX2(dst, a, b []uint16, inf, nan, flip uint64)

//go:noescape
func extremum32AVX2(dst, a, b []uint32, inf, nan, flip uint64)

//go:noescape
func extremum64AVX2(dst, a, b []uint64, inf, nan, flip uint64)

func flipOf(node RedOp) uint64 {
	if node == Min {
		return ^uint64(0)
	}
	return 0
}

func extremum16Vec(node RedOp, dst, a, b []uint16, inf, nan uint16) int {
	n := len(dst) &^ 15
	if n == 0 || !useAVX2 {
		return 0
	}
	extremum16AVX2(dst[:n], a[:n], b[:n], uint64(inf), uint64(nan), flipOf(node))
	return n
}

func extremum32Vec(node RedOp, dst, a, b []uint32, inf, nan uint32) int {
	n := len(dst) &^ 7
	if n == 0 || !useAVX2 {
		return 0
	}
	extremum32AVX2(dst[:n], a[:n], b[:n], uint64(inf), uint64(nan), flipOf(node))
	return n
}

func extremum64Vec(node RedOp, dst, a, b []uint64, inf, nan uint64) int {
	n := len(dst) &^ 3
	if n == 0 || !useAVX2 {
		return 0
	}
	extremum64AVX2(dst[:n], a[:n], b[:n], inf, nan, flipOf(node))
	return n
}

// The scale kernels (Average, PreMultiply): blocks of 16 float32s, 8
// float64s or 16 bfloat16s; dst and src may be one slice.

//go:noescape
func divFloat32sAVX2(dst, src []float32, k float32)

//go:noescape
func mulFloat32sAVX2(dst, src []float32, k float32)

//go:noescape
func divFloat64sAVX2(dst, src []float64, k float64)

//go:noescape
func mulFloat64sAVX2(dst, src []float64, k float64)

//go:noescape
func divBFloat16sAVX2(dst, src []BFloat16, k float32)

//go:noescape
func mulBFloat16sAVX2(dst, src []BFloat16, k float32)

//go:noescape
func divFloat16sF16C(dst, src []Float16, k float32)

//go:noescape
func mulFloat16sF16C(dst, src []Float16, k float32)

func divFloat16sVec(dst, src []Float16, k float32) int {
	if !useF16C {
		return 0
	}
	return scaleVec(divFloat16sF16C, dst, src, k, 8)
}
func mulFloat16sVec(dst, src []Float16, k float32) int {
	if !useF16C {
		return 0
	}
	return scaleVec(mulFloat16sF16C, dst, src, k, 8)
}

// scaleVec runs kernel over the longest prefix of whole blocks of block
// elements and returns its length.
func scaleVec[T any, K any](kernel func(dst, src []T, k K), dst, src []T, k K, block int) int {
	n := len(dst) &^ (block - 1)
	if n == 0 || !useAVX2 {
		return 0
	}
	kernel(dst[:n], src[:n], k)
	return n
}

func divFloat32sVec(dst, src []float32, k float32) int {
	return scaleVec(divFloat32sAVX2, dst, src, k, 16)
}
func mulFloat32sVec(dst, src []float32, k float32) int {
	return scaleVec(mulFloat32sAVX2, dst, src, k, 16)
}
func divFloat64sVec(dst, src []float64, k float64) int {
	return scaleVec(divFloat64sAVX2, dst, src, k, 8)
}
func mulFloat64sVec(dst, src []float64, k float64) int {
	return scaleVec(mulFloat64sAVX2, dst, src, k, 8)
}
func divBFloat16sVec(dst, src []BFloat16, k float32) int {
	return scaleVec(divBFloat16sAVX2, dst, src, k, 16)
}
func mulBFloat16sVec(dst, src []BFloat16, k float32) int {
	return scaleVec(mulBFloat16sAVX2, dst, src, k, 16)
}

// The integer kernels (Combine of integer types), on bytes: blocks of 64.

//go:noescape
func addInt8sAVX2(dst, a, b []byte)

//go:noescape
func addInt16sAVX2(dst, a, b []byte)

//go:noescape
func addInt32sAVX2(dst, a, b []byte)

//go:noescape
func addInt64sAVX2(dst, a, b []byte)

//go:noescape
func maxInt8sAVX2(dst, a, b []byte)

//go:noescape
func maxInt16sAVX2(dst, a, b []byte)

//go:noescape
func maxInt32sAVX2(dst, a, b []byte)

//go:noescape
func maxUint8sAVX2(dst, a, b []byte)

//go:noescape
func maxUint16sAVX2(dst, a, b []byte)

//go:noescape
func maxUint32sAVX2(dst, a, b []byte)

//go:noescape
func minInt8sAVX2(dst, a, b []byte)

//go:noescape
func minInt16sAVX2(dst, a, b []byte)

//go:noescape
func minInt32sAVX2(dst, a, b []byte)

//go:noescape
func minUint8sAVX2(dst, a, b []byte)

//go:noescape
func minUint16sAVX2(dst, a, b []byte)

//go:noescape
func minUint32sAVX2(dst, a, b []byte)

// intKernels is the kernel of each integer type and node operator.
var intKernels = map[DType][numRedOps]func(dst, a, b []byte){
	Int8Type:   {Sum: addInt8sAVX2, Max: maxInt8sAVX2, Min: minInt8sAVX2},
	Uint8Type:  {Sum: addInt8sAVX2, Max: maxUint8sAVX2, Min: minUint8sAVX2},
	Int16Type:  {Sum: addInt16sAVX2, Max: maxInt16sAVX2, Min: minInt16sAVX2},
	Uint16Type: {Sum: addInt16sAVX2, Max: maxUint16sAVX2, Min: minUint16sAVX2},
	Int32Type:  {Sum: addInt32sAVX2, Max: maxInt32sAVX2, Min: minInt32sAVX2},
	Uint32Type: {Sum: addInt32sAVX2, Max: maxUint32sAVX2, Min: minUint32sAVX2},
	Int64Type:  {Sum: addInt64sAVX2},
	Uint64Type: {Sum: addInt64sAVX2},
}

// combineIntsVec runs the kernel of (dt, node) over the longest prefix of
// whole blocks and returns its length in bytes.
func combineIntsVec(dt DType, node RedOp, dst, a, b []byte) int {
	n := len(dst) &^ 63
	if n == 0 || !useAVX2 || node >= numRedOps {
		return 0
	}
	k := intKernels[dt][node]
	if k == nil {
		return 0
	}
	k(dst[:n], a[:n], b[:n])
	return n
}
