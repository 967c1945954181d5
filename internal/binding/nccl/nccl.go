package nccl

import (
	"errors"
	"fmt"
	"strings"

	"github.com/detcoll/detcoll/internal/core/num"
	"github.com/detcoll/detcoll/internal/core/settings"
)

// ErrUnavailable is matched (errors.Is) by every error that means "no
// usable NCCL": not installed, not loaded, or a build without cgo.
var ErrUnavailable = errors.New("detcoll/nccl: NCCL unavailable")

// EnvLib names the NCCL library Load opens (a path or a soname), instead
// of its default search.
const EnvLib = settings.LibNCCL

// UniqueIDBytes is the size of an ncclUniqueId (NCCL_UNIQUE_ID_BYTES).
const UniqueIDBytes = 128

// UniqueID is an ncclUniqueId: one rank gets it from GetUniqueID and sends
// its bytes to every other rank of the communicator to create.
type UniqueID [UniqueIDBytes]byte

// candidates returns the NCCL names Load tries, in order. Every NCCL 2
// release has the soname libnccl.so.2; the plain development link comes
// last.
func candidates() []string {
	if v := settings.Get(EnvLib); v != "" {
		return []string{v}
	}
	return []string{"libnccl.so.2", "libnccl.so"}
}

// envHint says how the candidates were chosen, or how to choose another.
func envHint() string {
	if settings.Get(EnvLib) != "" {
		return "from " + EnvLib
	}
	return "set " + EnvLib + " to its path"
}

// Comm is an NCCL communicator (ncclComm_t) held as an integer, like the
// driver's handles; 0 is no communicator.
type Comm uintptr

// DataType is an ncclDataType_t. The values are fixed by NCCL's ABI.
type DataType int

// NCCL element types.
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
	Bfloat16 DataType = 9
)

var dataTypeNames = map[DataType]string{
	Int8: "int8", Uint8: "uint8", Int32: "int32", Uint32: "uint32",
	Int64: "int64", Uint64: "uint64", Float16: "float16", Float32: "float32",
	Float64: "float64", Bfloat16: "bfloat16",
}

// String returns the type's name as detcoll spells it ("bfloat16").
func (t DataType) String() string {
	if s, ok := dataTypeNames[t]; ok {
		return s
	}
	return fmt.Sprintf("ncclDataType(%d)", int(t))
}

// DataTypeOf returns NCCL's type for a detcoll element type. NCCL has
// no 16-bit integers, so int16 and uint16 (and invalid types) report false.
func DataTypeOf(dt num.DType) (DataType, bool) {
	switch dt {
	case num.Int8Type:
		return Int8, true
	case num.Uint8Type:
		return Uint8, true
	case num.Int32Type:
		return Int32, true
	case num.Uint32Type:
		return Uint32, true
	case num.Int64Type:
		return Int64, true
	case num.Uint64Type:
		return Uint64, true
	case num.Float16Type:
		return Float16, true
	case num.Float32Type:
		return Float32, true
	case num.Float64Type:
		return Float64, true
	case num.BFloat16Type:
		return Bfloat16, true
	}
	return 0, false
}

// RedOp is a built-in ncclRedOp_t.
type RedOp int

// NCCL reduction operations.
const (
	Sum  RedOp = 0
	Prod RedOp = 1
	Max  RedOp = 2
	Min  RedOp = 3
	Avg  RedOp = 4

	// NumOps is ncclNumOps: the operators below it are built in; those
	// ncclRedOpCreatePreMulSum makes are numbered from it.
	NumOps RedOp = 5
)

// String returns the operation's name ("sum").
func (op RedOp) String() string {
	switch op {
	case Sum:
		return "sum"
	case Prod:
		return "prod"
	case Max:
		return "max"
	case Min:
		return "min"
	case Avg:
		return "avg"
	}
	return fmt.Sprintf("ncclRedOp(%d)", int(op))
}

// Result is an NCCL status (ncclResult_t).
type Result int

// NCCL status codes.
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

var resultNames = map[Result]string{
	Success:            "ncclSuccess",
	UnhandledCudaError: "ncclUnhandledCudaError",
	SystemError:        "ncclSystemError",
	InternalError:      "ncclInternalError",
	InvalidArgument:    "ncclInvalidArgument",
	InvalidUsage:       "ncclInvalidUsage",
	RemoteError:        "ncclRemoteError",
	InProgress:         "ncclInProgress",
}

// Name returns NCCL's name of the code, such as "ncclInvalidArgument".
func (r Result) Name() string {
	if s, ok := resultNames[r]; ok {
		return s
	}
	return fmt.Sprintf("ncclResult(%d)", int(r))
}

// Error formats the code as "NAME (code)"; it works without NCCL loaded.
func (r Result) Error() string { return fmt.Sprintf("%s (%d)", r.Name(), int(r)) }

// Error is a failed NCCL call. errors.As finds it, and through Unwrap
// the Result.
type Error struct {
	Call   string // the NCCL function and its arguments: "ncclAllReduce(0x7f00, 0x7f00, 16, float32, sum, 0x0)"
	Result Result // the status NCCL returned
	Text   string // ncclGetErrorString's description of Result, taken when the call failed
	Detail string // NCCL's last warning (ncclGetLastError), if this NCCL has it and it says more than Text
}

// Error returns "call: NAME (code): text", then "; NCCL's last warning: detail"
// if there is a detail.
func (e *Error) Error() string {
	msg := e.Call + ": " + e.Result.Error()
	if e.Text != "" {
		msg += ": " + e.Text
	}
	if e.Detail != "" {
		msg += "; NCCL's last warning: " + e.Detail
	}
	return msg
}

// Unwrap returns the Result, so errors.As finds it too.
func (e *Error) Unwrap() error { return e.Result }

// callString formats a call and its arguments for messages:
// "ncclAllGather(0x1000, 0x2000, 15, uint8, 0x0)".
func callString(call string, args ...any) string {
	var b strings.Builder
	b.WriteString(call)
	b.WriteByte('(')
	for i, a := range args {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprint(&b, a)
	}
	b.WriteByte(')')
	return b.String()
}

// newError builds the error of a failed call; text and detail are what
// the loaded NCCL said, if anything. A detail that only repeats text, or
// is empty, is dropped.
func newError(r Result, text, detail, call string, args ...any) *Error {
	text, detail = strings.TrimSpace(text), strings.TrimSpace(detail)
	if detail == text {
		detail = ""
	}
	return &Error{Call: callString(call, args...), Result: r, Text: text, Detail: detail}
}

// countError refuses a count that size_t cannot hold, before NCCL sees it.
func countError(call string, count int) error {
	return fmt.Errorf("detcoll/nccl: %s: negative count %d", call, count)
}
