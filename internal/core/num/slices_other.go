//go:build !amd64 || purego

package num

// Without assembly the Go loops do all the work.

func addFloat32sVec(dst, a, b []float32) int   { return 0 }
func addFloat64sVec(dst, a, b []float64) int   { return 0 }
func addBFloat16sVec(dst, a, b []BFloat16) int { return 0 }
func addFloat16sVec(dst, a, b []Float16) int   { return 0 }

func extremum16Vec(node RedOp, dst, a, b []uint16, inf, nan uint16) int { return 0 }
func extremum32Vec(node RedOp, dst, a, b []uint32, inf, nan uint32) int { return 0 }
func extremum64Vec(node RedOp, dst, a, b []uint64, inf, nan uint64) int { return 0 }

func divFloat32sVec(dst, src []float32, k float32) int          { return 0 }
func mulFloat32sVec(dst, src []float32, k float32) int          { return 0 }
func divFloat64sVec(dst, src []float64, k float64) int          { return 0 }
func mulFloat64sVec(dst, src []float64, k float64) int          { return 0 }
func divBFloat16sVec(dst, src []BFloat16, k float32) int        { return 0 }
func mulBFloat16sVec(dst, src []BFloat16, k float32) int        { return 0 }
func divFloat16sVec(dst, src []Float16, k float32) int          { return 0 }
func mulFloat16sVec(dst, src []Float16, k float32) int          { return 0 }
func combineIntsVec(dt DType, node RedOp, dst, a, b []byte) int { return 0 }
