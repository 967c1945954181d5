package driver

import (
	"fmt"
	"os"
	"strings"

	"github.com/detcoll/detcoll/internal/num"
)

// NCCL is here as a reference to compare detcoll with (tests, benchmarks),
// never as a dependency of a collective: LoadNCCL opens it on demand and
// apart from Load, so a machine without NCCL loses nothing else.
//
// Like every call of this package that uses a context, NCCLCommInitRank
// and the collectives must run on a goroutine locked to its OS thread with
// the device's context current (see the package doc): NCCL reads the
// calling thread's current device to place the communicator.

// EnvLibNCCL names the NCCL library LoadNCCL opens (a path or a soname),
// instead of its default search.
const EnvLibNCCL = "DETCOLL_LIBNCCL"

// NCCLUniqueIDBytes is the size of an ncclUniqueId (NCCL_UNIQUE_ID_BYTES).
const NCCLUniqueIDBytes = 128

// ncclCandidates returns the NCCL names LoadNCCL tries, in order. Every
// NCCL 2 release has the soname libnccl.so.2; the plain development link
// comes last.
func ncclCandidates() []string {
	if v := os.Getenv(EnvLibNCCL); v != "" {
		return []string{v}
	}
	return []string{"libnccl.so.2", "libnccl.so"}
}

// ncclEnvHint says how the candidates were chosen, or how to choose another.
func ncclEnvHint() string {
	if os.Getenv(EnvLibNCCL) != "" {
		return "from " + EnvLibNCCL
	}
	return "set " + EnvLibNCCL + " to its path"
}

// NCCLComm is an NCCL communicator (ncclComm_t) held as an integer, like
// the other handles; 0 is no communicator.
type NCCLComm uintptr

// NCCLDataType is an ncclDataType_t. The values are fixed by NCCL's ABI.
type NCCLDataType int

// NCCL element types.
const (
	NCCLInt8     NCCLDataType = 0
	NCCLUint8    NCCLDataType = 1
	NCCLInt32    NCCLDataType = 2
	NCCLUint32   NCCLDataType = 3
	NCCLInt64    NCCLDataType = 4
	NCCLUint64   NCCLDataType = 5
	NCCLFloat16  NCCLDataType = 6
	NCCLFloat32  NCCLDataType = 7
	NCCLFloat64  NCCLDataType = 8
	NCCLBfloat16 NCCLDataType = 9
)

var ncclDataTypeNames = map[NCCLDataType]string{
	NCCLInt8: "int8", NCCLUint8: "uint8", NCCLInt32: "int32", NCCLUint32: "uint32",
	NCCLInt64: "int64", NCCLUint64: "uint64", NCCLFloat16: "float16", NCCLFloat32: "float32",
	NCCLFloat64: "float64", NCCLBfloat16: "bfloat16",
}

// String returns the type's name as detcoll spells it ("bfloat16").
func (t NCCLDataType) String() string {
	if s, ok := ncclDataTypeNames[t]; ok {
		return s
	}
	return fmt.Sprintf("ncclDataType(%d)", int(t))
}

// NCCLDataTypeOf returns NCCL's type for a detcoll element type. NCCL has
// no 16-bit integers, so int16 and uint16 (and invalid types) report false.
func NCCLDataTypeOf(dt num.DType) (NCCLDataType, bool) {
	switch dt {
	case num.Int8Type:
		return NCCLInt8, true
	case num.Uint8Type:
		return NCCLUint8, true
	case num.Int32Type:
		return NCCLInt32, true
	case num.Uint32Type:
		return NCCLUint32, true
	case num.Int64Type:
		return NCCLInt64, true
	case num.Uint64Type:
		return NCCLUint64, true
	case num.Float16Type:
		return NCCLFloat16, true
	case num.Float32Type:
		return NCCLFloat32, true
	case num.Float64Type:
		return NCCLFloat64, true
	case num.BFloat16Type:
		return NCCLBfloat16, true
	}
	return 0, false
}

// NCCLRedOp is a built-in ncclRedOp_t.
type NCCLRedOp int

// NCCL reduction operations.
const (
	NCCLSum  NCCLRedOp = 0
	NCCLProd NCCLRedOp = 1
	NCCLMax  NCCLRedOp = 2
	NCCLMin  NCCLRedOp = 3
	NCCLAvg  NCCLRedOp = 4
)

// String returns the operation's name ("sum").
func (op NCCLRedOp) String() string {
	switch op {
	case NCCLSum:
		return "sum"
	case NCCLProd:
		return "prod"
	case NCCLMax:
		return "max"
	case NCCLMin:
		return "min"
	case NCCLAvg:
		return "avg"
	}
	return fmt.Sprintf("ncclRedOp(%d)", int(op))
}

// NCCLResult is an NCCL status (ncclResult_t).
type NCCLResult int

// NCCL status codes.
const (
	NCCLSuccess            NCCLResult = 0
	NCCLUnhandledCudaError NCCLResult = 1
	NCCLSystemError        NCCLResult = 2
	NCCLInternalError      NCCLResult = 3
	NCCLInvalidArgument    NCCLResult = 4
	NCCLInvalidUsage       NCCLResult = 5
	NCCLRemoteError        NCCLResult = 6
	NCCLInProgress         NCCLResult = 7
)

var ncclResultNames = map[NCCLResult]string{
	NCCLSuccess:            "ncclSuccess",
	NCCLUnhandledCudaError: "ncclUnhandledCudaError",
	NCCLSystemError:        "ncclSystemError",
	NCCLInternalError:      "ncclInternalError",
	NCCLInvalidArgument:    "ncclInvalidArgument",
	NCCLInvalidUsage:       "ncclInvalidUsage",
	NCCLRemoteError:        "ncclRemoteError",
	NCCLInProgress:         "ncclInProgress",
}

// Name returns NCCL's name of the code, such as "ncclInvalidArgument".
func (r NCCLResult) Name() string {
	if s, ok := ncclResultNames[r]; ok {
		return s
	}
	return fmt.Sprintf("ncclResult(%d)", int(r))
}

// Error formats the code as "NAME (code)"; it works without NCCL loaded.
func (r NCCLResult) Error() string { return fmt.Sprintf("%s (%d)", r.Name(), int(r)) }

// NCCLError is a failed NCCL call. errors.As finds it, and through Unwrap
// the NCCLResult.
type NCCLError struct {
	Call   string     // the NCCL function and its arguments: "ncclAllReduce(0x7f00, 0x7f00, 16, float32, sum, 0x0)"
	Result NCCLResult // the status NCCL returned
	Text   string     // ncclGetErrorString's description of Result, taken when the call failed
	Detail string     // NCCL's last warning (ncclGetLastError), if this NCCL has it and it says more than Text
}

// Error returns "call: NAME (code): text", then "; NCCL's last warning: detail"
// if there is a detail.
func (e *NCCLError) Error() string {
	msg := e.Call + ": " + e.Result.Error()
	if e.Text != "" {
		msg += ": " + e.Text
	}
	if e.Detail != "" {
		msg += "; NCCL's last warning: " + e.Detail
	}
	return msg
}

// Unwrap returns the NCCLResult, so errors.As finds it too.
func (e *NCCLError) Unwrap() error { return e.Result }

// ncclCall formats a call and its arguments for messages:
// "ncclAllGather(0x1000, 0x2000, 15, uint8, 0x0)".
func ncclCall(call string, args ...any) string {
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

// newNCCLError builds the error of a failed call; text and detail are what
// the loaded NCCL said, if anything. A detail that only repeats text, or
// is empty, is dropped.
func newNCCLError(r NCCLResult, text, detail, call string, args ...any) *NCCLError {
	text, detail = strings.TrimSpace(text), strings.TrimSpace(detail)
	if detail == text {
		detail = ""
	}
	return &NCCLError{Call: ncclCall(call, args...), Result: r, Text: text, Detail: detail}
}

// ncclCountError refuses a count that size_t cannot hold, before NCCL sees it.
func ncclCountError(call string, count int) error {
	return fmt.Errorf("detcoll/cuda: %s: negative count %d", call, count)
}
