//go:build !amd64 || purego

package num

// Without assembly the Go loops do all the work.

func addFloat32sVec(dst, a, b []float32) int   { return 0 }
func addFloat64sVec(dst, a, b []float64) int   { return 0 }
func addBFloat16sVec(dst, a, b []BFloat16) int { return 0 }
func addFloat16sVec(dst, a, b []Float16) int   { return 0 }
