package check

import (
	"encoding/binary"
	"math"

	"github.com/detcoll/detcoll"
	"github.com/detcoll/detcoll/internal/core/num"
	"github.com/detcoll/detcoll/internal/core/tree"
)

// ReferenceReduce is the result of reducing ins (every rank's input, by
// rank) with op, element by element, written apart from the backends'
// code: the tree (tree.Eval) over bit patterns, with nodes of its own for
// Max and Min (an order key of the bits) and for the integers, the sum of
// ScalarAdd, Avg's division and PreMulSum's products through float64 (both
// exact there, or rounded once where double rounding is innocuous: see
// num.Average). scalars[r] is rank r's PreMulSum factor, already one value
// of dt.
func ReferenceReduce(dt detcoll.DType, op num.RedOp, ins [][]byte, scalars []float64) []byte {
	size := dt.Size()
	leaves := make([][]byte, len(ins))
	copy(leaves, ins)
	if op == num.PreMulSum {
		for r, in := range ins {
			leaves[r] = make([]byte, len(in))
			for i := 0; i < len(in); i += size {
				PutBits(leaves[r][i:], size, fromFloat64(dt, toFloat64(dt, GetBits(in[i:], size))*scalars[r]))
			}
		}
	}
	var out []byte
	switch {
	case op.Node() == num.Sum && dt.Reducible():
		out = ReferenceSum(dt, leaves)
	default:
		out = make([]byte, len(ins[0]))
		node := nodeOf(dt, op.Node())
		vals := make([]uint64, len(leaves))
		for i := 0; i < len(out); i += size {
			for r := range leaves {
				vals[r] = GetBits(leaves[r][i:], size)
			}
			v := tree.Eval(vals, node)
			if len(vals) == 1 && dt.Reducible() {
				v = node(v, v) // a NaN made canonical; max(x, x) = min(x, x) = x otherwise
			}
			PutBits(out[i:], size, v)
		}
	}
	if op == num.Avg {
		w := uint64(len(ins))
		for i := 0; i < len(out); i += size {
			v := GetBits(out[i:], size)
			switch {
			case dt.Reducible():
				v = fromFloat64(dt, toFloat64(dt, v)/float64(w))
			case signedInt(dt):
				shift := 64 - 8*uint(size)
				v = uint64((int64(v<<shift) >> shift) / int64(w)) // Go's division truncates toward zero
			default:
				v /= w
			}
			PutBits(out[i:], size, v)
		}
	}
	return out
}

func signedInt(dt detcoll.DType) bool {
	return dt == detcoll.TypeInt8 || dt == detcoll.TypeInt16 || dt == detcoll.TypeInt32 || dt == detcoll.TypeInt64
}

// nodeOf is the node of op (Max, Min, or the integers' wrapping Sum) on
// bit patterns of dt.
func nodeOf(dt detcoll.DType, op num.RedOp) func(a, b uint64) uint64 {
	bits := 8 * uint(dt.Size())
	mask := uint64(1)<<bits - 1
	if bits == 64 {
		mask = ^uint64(0)
	}
	if dt.Integer() {
		signed := signedInt(dt)
		// An order key: unsigned as it is, signed with the sign bit flipped.
		key := func(v uint64) uint64 {
			if signed {
				return v ^ 1<<(bits-1)
			}
			return v
		}
		return func(a, b uint64) uint64 {
			switch {
			case op == num.Sum:
				return (a + b) & mask
			case (key(a) > key(b)) == (op == num.Max):
				return a
			}
			return b
		}
	}
	// Floats: the key flips every bit of a negative value and the sign bit
	// of a positive one, so -0 < +0 and the keys order the values.
	sign := uint64(1) << (bits - 1)
	key := func(v uint64) uint64 {
		if v&sign != 0 {
			return ^v & mask
		}
		return v | sign
	}
	nan, isNaN := nanBits(dt)
	return func(a, b uint64) uint64 {
		switch {
		case isNaN(a) || isNaN(b):
			return nan
		case a == b:
			return a
		case (key(a) > key(b)) == (op == num.Max):
			return a
		}
		return b
	}
}

// toFloat64 is the value of the bits v of the float type dt, exactly.
func toFloat64(dt detcoll.DType, v uint64) float64 {
	switch dt {
	case detcoll.TypeBFloat16:
		return num.BFloat16(v).Float64()
	case detcoll.TypeFloat16:
		return num.Float16(v).Float64()
	case detcoll.TypeFloat32:
		return float64(math.Float32frombits(uint32(v)))
	}
	return math.Float64frombits(v)
}

// fromFloat64 rounds f once to dt (NaN canonical) and returns its bits.
func fromFloat64(dt detcoll.DType, f float64) uint64 {
	if f != f {
		nan, _ := nanBits(dt)
		return nan
	}
	switch dt {
	case detcoll.TypeBFloat16:
		return uint64(num.BFloat16FromFloat64(f))
	case detcoll.TypeFloat16:
		return uint64(num.Float16FromFloat64(f))
	case detcoll.TypeFloat32:
		return uint64(math.Float32bits(float32(f)))
	}
	return math.Float64bits(f)
}

// RoundTo is f rounded once to the float type dt, as a float64: a
// PreMulSum factor as the ranks use it.
func RoundTo(dt detcoll.DType, f float64) float64 { return toFloat64(dt, fromFloat64(dt, f)) }

// ScalarBytes is f rounded to the float type dt, as one element's bytes
// (little endian): a PreMulSum factor in memory.
func ScalarBytes(dt detcoll.DType, f float64) []byte {
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], fromFloat64(dt, f))
	return b[:dt.Size()]
}
