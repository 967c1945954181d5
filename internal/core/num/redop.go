package num

import "fmt"

// RedOp is the operator of a reduction. Its value is part of the call's
// signature, which ranks compare, so values are never reused; Sum is 0, so
// that a signature that carries no operator (the cuda kernels write none)
// reads as a sum.
//
// What each computes, per element, over the ranks' inputs x_0 .. x_{W-1}
// (the contract, doc.go, says why):
//
//	Sum        T(x_0, ..., x_{W-1}) with the add at every node
//	Avg        Sum, then one division by W, rounded once (integers: the
//	           wrapped sum divided by W, truncated toward zero, as NCCL's)
//	PreMulSum  T over x_r * s_r, each product rounded once (s_r: rank r's scalar)
//	Max, Min   T with max or min at every node: -0 < +0, and a NaN operand
//	           gives the canonical NaN
//
// Every NaN result is the canonical NaN of its type. Sum, Avg, Max and Min
// take every element type, the integers too (a wrapping sum); PreMulSum
// the floating types.
type RedOp uint8

const (
	Sum RedOp = iota
	Avg
	PreMulSum
	Max
	Min
	numRedOps
)

var redOpNames = [numRedOps]string{Sum: "sum", Avg: "avg", PreMulSum: "premulsum", Max: "max", Min: "min"}

func (o RedOp) String() string {
	if o >= numRedOps {
		return fmt.Sprintf("redop(%d)", uint8(o))
	}
	return redOpNames[o]
}

// ParseRedOp is String's inverse.
func ParseRedOp(s string) (RedOp, error) {
	for o := Sum; o < numRedOps; o++ {
		if redOpNames[o] == s {
			return o, nil
		}
	}
	return 0, fmt.Errorf("unknown reduction %q (sum, avg, premulsum, max, min)", s)
}

// RedOps lists every operator.
func RedOps() []RedOp { return []RedOp{Sum, Avg, PreMulSum, Max, Min} }

// Valid reports whether o names a known operator.
func (o RedOp) Valid() bool { return o < numRedOps }

// Supports reports whether o is defined on dt.
func (o RedOp) Supports(dt DType) bool {
	switch o {
	case Sum, Avg, Max, Min:
		return dt.Reducible() || dt.Integer()
	case PreMulSum:
		return dt.Reducible()
	}
	return false
}

// Node is the operator at the tree's nodes: the add for Sum, Avg and
// PreMulSum (which scale before or after the tree), else o itself.
func (o RedOp) Node() RedOp {
	if o == Max || o == Min {
		return o
	}
	return Sum
}

// Integer reports whether d is an integer type.
func (d DType) Integer() bool { return d >= Int8Type && d <= Uint64Type }

// Combine sets dst[i] = node(a[i], b[i]) for the elements of type dt in the
// byte slices, node being Sum, Max or Min: one node of the tree. dst may be
// a or b (same start). It panics where node is not a node operator or does
// not take dt, and on unequal lengths.
func Combine(dt DType, node RedOp, dst, a, b []byte) {
	if node == Sum && dt.Reducible() {
		addBytes(dt, dst, a, b)
		return
	}
	switch node {
	case Sum, Max, Min:
	default:
		panic("num: Combine with " + node.String() + ", not a node operator")
	}
	checkLens(len(dst), len(a), len(b))
	switch dt {
	case BFloat16Type:
		extremum16(node, view[uint16](dst), view[uint16](a), view[uint16](b), 0x7F80, uint16(CanonicalNaNBFloat16))
	case Float16Type:
		extremum16(node, view[uint16](dst), view[uint16](a), view[uint16](b), 0x7C00, uint16(CanonicalNaNFloat16))
	case Float32Type:
		d, x, y := view[uint32](dst), view[uint32](a), view[uint32](b)
		n := extremum32Vec(node, d, x, y, 0x7F800000, CanonicalNaNFloat32)
		combineBits(node, d[n:], x[n:], y[n:], 0x7F800000, CanonicalNaNFloat32)
	case Float64Type:
		d, x, y := view[uint64](dst), view[uint64](a), view[uint64](b)
		n := extremum64Vec(node, d, x, y, 0x7FF0000000000000, CanonicalNaNFloat64)
		combineBits(node, d[n:], x[n:], y[n:], 0x7FF0000000000000, CanonicalNaNFloat64)
	case Int8Type, Uint8Type, Int16Type, Uint16Type, Int32Type, Uint32Type, Int64Type, Uint64Type:
		n := combineIntsVec(dt, node, dst, a, b)
		dst, a, b = dst[n:], a[n:], b[n:]
		switch dt {
		case Int8Type:
			combineInts(node, view[int8](dst), view[int8](a), view[int8](b))
		case Uint8Type:
			combineInts(node, dst, a, b)
		case Int16Type:
			combineInts(node, view[int16](dst), view[int16](a), view[int16](b))
		case Uint16Type:
			combineInts(node, view[uint16](dst), view[uint16](a), view[uint16](b))
		case Int32Type:
			combineInts(node, view[int32](dst), view[int32](a), view[int32](b))
		case Uint32Type:
			combineInts(node, view[uint32](dst), view[uint32](a), view[uint32](b))
		case Int64Type:
			combineInts(node, view[int64](dst), view[int64](a), view[int64](b))
		case Uint64Type:
			combineInts(node, view[uint64](dst), view[uint64](a), view[uint64](b))
		}
	default:
		panic("num: Combine of " + dt.String())
	}
}

// addBytes is the add of the floating types on bytes: the slice kernels.
func addBytes(dt DType, dst, a, b []byte) {
	switch dt {
	case BFloat16Type:
		AddBFloat16s(AsBFloat16s(dst), AsBFloat16s(a), AsBFloat16s(b))
	case Float16Type:
		AddFloat16s(AsFloat16s(dst), AsFloat16s(a), AsFloat16s(b))
	case Float32Type:
		AddFloat32s(AsFloat32s(dst), AsFloat32s(a), AsFloat32s(b))
	case Float64Type:
		AddFloat64s(AsFloat64s(dst), AsFloat64s(a), AsFloat64s(b))
	}
}

// extremum16 is combineBits of 16-bit floats, the vector kernel first.
func extremum16(node RedOp, dst, a, b []uint16, inf, nan uint16) {
	n := extremum16Vec(node, dst, a, b, inf, nan)
	combineBits(node, dst[n:], a[n:], b[n:], inf, nan)
}

// combineBits is Max or Min of a float type on its bits (uint16 for
// bfloat16 and float16, uint32, uint64): the larger (smaller) operand in
// keyOf's order, -0 below +0, nan for any NaN (a magnitude above inf's
// bits). The result is one of the operands, so it needs no rounding. All
// integer compares, which the compiler turns into conditional moves: a
// branch on random operands' order would mispredict half the time.
func combineBits[U uint16 | uint32 | uint64](node RedOp, dst, a, b []U, inf, nan U) {
	a, b = a[:len(dst)], b[:len(dst)]
	sign := ^(^U(0) >> 1)
	mag, shift := ^sign, bitsOf(sign)-1
	if node == Min {
		for i := range dst {
			x, y := a[i], b[i]
			r := y
			if keyOf(x, sign, shift) < keyOf(y, sign, shift) {
				r = x
			}
			if x&mag > inf || y&mag > inf {
				r = nan
			}
			dst[i] = r
		}
		return
	}
	for i := range dst {
		x, y := a[i], b[i]
		r := y
		if keyOf(x, sign, shift) > keyOf(y, sign, shift) {
			r = x
		}
		if x&mag > inf || y&mag > inf {
			r = nan
		}
		dst[i] = r
	}
}

// keyOf orders the bits of floats that are not NaNs as their values, -0
// below +0: a negative value's bits flipped, a positive one's sign bit set
// (sign is the sign bit, shift its place), without a branch on the sign.
func keyOf[U uint16 | uint32 | uint64](v, sign, shift U) U {
	neg := -(v >> shift) // all ones for a negative value
	return v ^ (neg | sign)
}

// bitsOf is the width of U, from its sign bit.
func bitsOf[U uint16 | uint32 | uint64](sign U) U {
	var n U
	for s := sign; s != 0; s >>= 1 {
		n++
	}
	return n
}

type integer interface {
	~int8 | ~uint8 | ~int16 | ~uint16 | ~int32 | ~uint32 | ~int64 | ~uint64
}

// combineInts is Sum (wrapping), Max or Min of an integer type: exact, so
// any order gives the same result.
func combineInts[T integer](node RedOp, dst, a, b []T) {
	for i := range dst {
		switch node {
		case Sum:
			dst[i] = a[i] + b[i]
		case Max:
			dst[i] = max(a[i], b[i])
		case Min:
			dst[i] = min(a[i], b[i])
		}
	}
}

// Average divides every element of b, of type dt, by w in place (Avg's
// last step): a float's quotient rounded once to dt, an integer's
// truncated toward zero. The quotient of two
// values of p bits, computed in a type of at least 2p+2 bits and rounded
// to p bits, is the correctly rounded one (double rounding is innocuous
// there): bfloat16 and float16 divide in float32, float32 in float64.
func Average(dt DType, b []byte, w int) {
	switch dt {
	case BFloat16Type:
		s, d := AsBFloat16s(b), float32(w)
		s = s[divBFloat16sVec(s, s, d):]
		for i, v := range s {
			s[i] = BFloat16FromFloat32(v.Float32() / d)
		}
	case Float16Type:
		s, d := AsFloat16s(b), float32(w)
		s = s[divFloat16sVec(s, s, d):]
		for i, v := range s {
			s[i] = Float16FromFloat32(v.Float32() / d)
		}
	case Float32Type:
		// The vector kernel divides in float32, the loop in float64 and
		// rounds once more: the same correctly rounded quotient.
		s := AsFloat32s(b)
		s = s[divFloat32sVec(s, s, float32(w)):]
		d := float64(w)
		for i, v := range s {
			s[i] = float32(float64(v) / d)
		}
		canonFloat32s(s)
	case Float64Type:
		s, d := AsFloat64s(b), float64(w)
		s = s[divFloat64sVec(s, s, d):]
		for i, v := range s {
			s[i] = v / d
		}
		canonFloat64s(s)
	case Int8Type:
		divSigned(view[int8](b), int64(w))
	case Uint8Type:
		divUnsigned(b, uint64(w))
	case Int16Type:
		divSigned(view[int16](b), int64(w))
	case Uint16Type:
		divUnsigned(view[uint16](b), uint64(w))
	case Int32Type:
		divSigned(view[int32](b), int64(w))
	case Uint32Type:
		divUnsigned(view[uint32](b), uint64(w))
	case Int64Type:
		divSigned(view[int64](b), int64(w))
	case Uint64Type:
		divUnsigned(view[uint64](b), uint64(w))
	default:
		panic("num: Average of " + dt.String())
	}
}

// divSigned and divUnsigned divide every element of s by w (> 0, so no
// quotient overflows), truncating toward zero, in 64 bits: W need not fit
// the element type (int8 at W = 128 divides by 128, not by -128), as the
// kernels divide by the whole world size.
func divSigned[T int8 | int16 | int32 | int64](s []T, w int64) {
	for i, v := range s {
		s[i] = T(int64(v) / w)
	}
}

func divUnsigned[T uint8 | uint16 | uint32 | uint64](s []T, w uint64) {
	for i, v := range s {
		s[i] = T(uint64(v) / w)
	}
}

// PreMultiply sets dst[i] = src[i] * scalar for the elements of floating
// type dt, each product rounded once to dt (PreMulSum's first step; dst may
// be src). scalar is one element of dt. The product of two values of p
// bits is exact in a type of 2p bits: bfloat16 and float16 multiply in
// float32, float32 in float64, and the one rounding is to dt.
func PreMultiply(dt DType, dst, src, scalar []byte) {
	if len(scalar) != dt.Size() {
		panic("num: PreMultiply's scalar is not one element of " + dt.String())
	}
	if len(dst) != len(src) {
		panic("num: PreMultiply of unequal lengths")
	}
	switch dt {
	case BFloat16Type:
		d, s, k := AsBFloat16s(dst), AsBFloat16s(src), AsBFloat16s(scalar)[0].Float32()
		n := mulBFloat16sVec(d, s, k)
		d, s = d[n:], s[n:]
		for i, v := range s {
			d[i] = BFloat16FromFloat32(v.Float32() * k)
		}
	case Float16Type:
		d, s, k := AsFloat16s(dst), AsFloat16s(src), AsFloat16s(scalar)[0].Float32()
		n := mulFloat16sVec(d, s, k)
		d, s = d[n:], s[n:]
		for i, v := range s {
			d[i] = Float16FromFloat32(v.Float32() * k)
		}
	case Float32Type:
		// The product of two float32s is exact in float64: the loop's
		// one rounding is the vector kernel's.
		d, s, k32 := AsFloat32s(dst), AsFloat32s(src), AsFloat32s(scalar)[0]
		n := mulFloat32sVec(d, s, k32)
		d, s = d[n:], s[n:]
		k := float64(k32)
		for i, v := range s {
			d[i] = float32(float64(v) * k)
		}
		canonFloat32s(d)
	case Float64Type:
		d, s, k := AsFloat64s(dst), AsFloat64s(src), AsFloat64s(scalar)[0]
		n := mulFloat64sVec(d, s, k)
		d, s = d[n:], s[n:]
		for i, v := range s {
			d[i] = float64(v * k)
		}
		canonFloat64s(d)
	default:
		panic("num: PreMultiply of " + dt.String())
	}
}
