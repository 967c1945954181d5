package ncclshim

import (
	"fmt"

	"github.com/detcoll/detcoll"
)

// Handle is an ncclComm_t: the real NCCL communicator's address.
type Handle uintptr

// Result is an ncclResult_t.
type Result int32

// NCCL's result codes (nccl.h).
const (
	Success            Result = 0
	UnhandledCudaError Result = 1
	SystemError        Result = 2
	InternalError      Result = 3
	InvalidArgument    Result = 4
	InvalidUsage       Result = 5
	RemoteError        Result = 6
	InProgress         Result = 7
)

// DataType is an ncclDataType_t.
type DataType int32

// NCCL's element types (nccl.h).
const (
	Int8     DataType = 0
	Uint8    DataType = 1
	Int32    DataType = 2
	Uint32   DataType = 3
	Int64    DataType = 4
	Uint64   DataType = 5
	Float16  DataType = 6
	Float32  DataType = 7
	Float64  DataType = 8
	BFloat16 DataType = 9
)

// RedOp is an ncclRedOp_t; values from ncclNumOps on are ops the
// application created (ncclRedOpCreatePreMulSum).
type RedOp int32

// NCCL's built-in reductions (nccl.h).
const (
	Sum  RedOp = 0
	Prod RedOp = 1
	Max  RedOp = 2
	Min  RedOp = 3
	Avg  RedOp = 4
)

// detcollType is dt as a detcoll element type that detcoll sums, if it is
// one.
func detcollType(dt DataType) (detcoll.DType, bool) {
	switch dt {
	case BFloat16:
		return detcoll.TypeBFloat16, true
	case Float16:
		return detcoll.TypeFloat16, true
	case Float32:
		return detcoll.TypeFloat32, true
	case Float64:
		return detcoll.TypeFloat64, true
	}
	return 0, false
}

func (dt DataType) String() string {
	names := [...]string{"int8", "uint8", "int32", "uint32", "int64", "uint64", "float16", "float32", "float64", "bfloat16"}
	if dt >= 0 && int(dt) < len(names) {
		return names[dt]
	}
	return fmt.Sprintf("datatype(%d)", int32(dt))
}

func (op RedOp) String() string {
	names := [...]string{"sum", "prod", "max", "min", "avg"}
	if op >= 0 && int(op) < len(names) {
		return names[op]
	}
	return fmt.Sprintf("op(%d)", int32(op))
}
