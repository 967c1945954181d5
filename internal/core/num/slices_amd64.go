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
