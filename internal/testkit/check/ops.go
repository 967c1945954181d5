package check

import (
	"fmt"

	"github.com/detcoll/detcoll"
	"github.com/detcoll/detcoll/internal/core/num"
)

// The reductions of every element type with an operator: what the
// operator cases of the conformance suite call.

// Reduction names a reduction call.
type Reduction int

const (
	CallAllReduce         Reduction = iota // AllReduce: ins[0] into outs[0]
	CallReduceScatter                      // ReduceScatter: ins[0] into outs[0]
	CallReduceScatterMany                  // ReduceScatterMany: ins into outs
	CallStaged                             // Stage, then AllReduceStaged: ins[0] into outs[0]
)

// Reduce makes call k of the elements of dt with op.
func Reduce(c *detcoll.Comm, k Reduction, dt detcoll.DType, op detcoll.RedOp, ins, outs [][]byte) error {
	switch dt {
	case detcoll.TypeBFloat16:
		return reduceAs[detcoll.BFloat16](c, k, op, ins, outs)
	case detcoll.TypeFloat16:
		return reduceAs[detcoll.Float16](c, k, op, ins, outs)
	case detcoll.TypeFloat32:
		return reduceAs[float32](c, k, op, ins, outs)
	case detcoll.TypeFloat64:
		return reduceAs[float64](c, k, op, ins, outs)
	case detcoll.TypeInt8:
		return reduceAs[int8](c, k, op, ins, outs)
	case detcoll.TypeUint8:
		return reduceAs[uint8](c, k, op, ins, outs)
	case detcoll.TypeInt16:
		return reduceAs[int16](c, k, op, ins, outs)
	case detcoll.TypeUint16:
		return reduceAs[uint16](c, k, op, ins, outs)
	case detcoll.TypeInt32:
		return reduceAs[int32](c, k, op, ins, outs)
	case detcoll.TypeUint32:
		return reduceAs[uint32](c, k, op, ins, outs)
	case detcoll.TypeInt64:
		return reduceAs[int64](c, k, op, ins, outs)
	case detcoll.TypeUint64:
		return reduceAs[uint64](c, k, op, ins, outs)
	}
	return fmt.Errorf("no element type %v", dt)
}

func reduceAs[T detcoll.Element](c *detcoll.Comm, k Reduction, op detcoll.RedOp, ins, outs [][]byte) error {
	switch k {
	case CallAllReduce:
		return detcoll.AllReduce(c, Typed[T](ins[0]), Typed[T](outs[0]), op)
	case CallReduceScatter:
		return detcoll.ReduceScatter(c, Typed[T](ins[0]), Typed[T](outs[0]), op)
	case CallReduceScatterMany:
		return detcoll.ReduceScatterMany(c, TypedEach[T](ins), TypedEach[T](outs), op)
	case CallStaged:
		view, err := detcoll.Stage[T](c, len(outs[0])/int(detcoll.DTypeOf[T]().Size()))
		if err != nil {
			return err
		}
		copy(view, Typed[T](ins[0]))
		return detcoll.AllReduceStaged(c, Typed[T](outs[0]), op)
	}
	return fmt.Errorf("no reduction %d", k)
}

// PremulFactor is rank's PreMulSum factor in the tools' and tests' calls:
// positive and negative, not a power of two, so that every product rounds.
func PremulFactor(rank int) float64 {
	f := 0.75 + 0.3*float64(rank)
	if rank%2 == 1 {
		return -f
	}
	return f
}

// RedOpOf is op as detcoll's API takes it on rank: PreMulSum with rank's
// PremulFactor.
func RedOpOf(op num.RedOp, rank int) detcoll.RedOp {
	switch op {
	case num.Avg:
		return detcoll.Avg
	case num.PreMulSum:
		return detcoll.PreMulSum(PremulFactor(rank))
	case num.Max:
		return detcoll.Max
	case num.Min:
		return detcoll.Min
	}
	return detcoll.Sum
}

// PremulFactors are every rank's PremulFactor rounded to dt: the scalars
// of ReferenceReduce.
func PremulFactors(dt detcoll.DType, world int) []float64 {
	s := make([]float64, world)
	for r := range s {
		s[r] = RoundTo(dt, PremulFactor(r))
	}
	return s
}
