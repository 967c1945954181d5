package ncclshim

import (
	"github.com/detcoll/detcoll"
	"github.com/detcoll/detcoll/internal/binding/nccl"
)

// Handle is an ncclComm_t: the real NCCL communicator's address.
type Handle uintptr

// detcollType is dt as a detcoll element type that detcoll sums, if it is
// one.
func detcollType(dt nccl.DataType) (detcoll.DType, bool) {
	switch dt {
	case nccl.Bfloat16:
		return detcoll.TypeBFloat16, true
	case nccl.Float16:
		return detcoll.TypeFloat16, true
	case nccl.Float32:
		return detcoll.TypeFloat32, true
	case nccl.Float64:
		return detcoll.TypeFloat64, true
	}
	return 0, false
}

// exact reports whether NCCL's reduction op of dt gives the same bits in
// any order, so that handing it on costs no determinism: integer sums and
// products wrap modulo 2^n, which is associative and commutative; integer
// min and max are too; an integer average is the exact sum divided once
// (NCCL's FuncSumPostDiv). Floating-point min and max are not here: which
// NaN payload or which zero they return can depend on the order.
func exact(dt nccl.DataType, op nccl.RedOp) bool {
	switch dt {
	case nccl.Int8, nccl.Uint8, nccl.Int32, nccl.Uint32, nccl.Int64, nccl.Uint64:
	default:
		return false
	}
	switch op {
	case nccl.Sum, nccl.Prod, nccl.Max, nccl.Min, nccl.Avg:
		return true
	}
	return false // a ncclRedOpCreatePreMulSum op, whose scalar the shim does not see
}
