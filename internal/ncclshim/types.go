package ncclshim

import (
	"github.com/detcoll/detcoll"
	"github.com/detcoll/detcoll/internal/nccl"
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
