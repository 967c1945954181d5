package driver

import (
	"errors"
	"fmt"
	"strings"
)

// ErrUnavailable is matched (errors.Is) by every error that means "no usable
// CUDA here": a build without cgo or off Linux, a missing or unloadable
// libcuda or NVRTC, a missing symbol, a failed cuInit, or a call made before
// Load. Callers use it to fall back or skip, never the message text.
var ErrUnavailable = errors.New("detcoll/cuda: CUDA unavailable")

// errNotLoaded is what a call returns when its library is not loaded.
var errNotLoaded = fmt.Errorf("%w: driver not loaded (call Load first)", ErrUnavailable)

// Result is a CUDA driver status (CUresult). Every non-zero Result returned by
// this package is wrapped in an error naming the failing call and its
// arguments; errors.As recovers the Result.
type Result int

// Error formats the code as "NAME (code): description". Names and
// descriptions come from a built-in table, so they work without a loaded
// driver; codes missing from the table are asked of cuGetErrorName and
// cuGetErrorString when the driver is loaded.
func (r Result) Error() string {
	name, desc := r.describe()
	return fmt.Sprintf("%s (%d): %s", name, int(r), desc)
}

// Name returns the CUDA name of the code, such as "CUDA_ERROR_OUT_OF_MEMORY".
func (r Result) Name() string {
	name, _ := r.describe()
	return name
}

func (r Result) describe() (name, desc string) {
	if e, ok := resultTable[r]; ok {
		return e.name, e.desc
	}
	if name, desc, ok := driverErrorStrings(r); ok {
		return name, desc
	}
	return fmt.Sprintf("CUresult(%d)", int(r)), "unrecognised CUDA status"
}

// NVRTCResult is an NVRTC status (nvrtcResult).
type NVRTCResult int

// Error formats the code as "NAME (code)". The names come from a built-in
// table; codes missing from it are asked of nvrtcGetErrorString when NVRTC is
// loaded.
func (r NVRTCResult) Error() string {
	if name, ok := nvrtcResultNames[r]; ok {
		return fmt.Sprintf("%s (%d)", name, int(r))
	}
	if name, ok := nvrtcErrorString(r); ok {
		return fmt.Sprintf("%s (%d)", name, int(r))
	}
	return fmt.Sprintf("nvrtcResult(%d)", int(r))
}

// NVRTCError is a failed NVRTC call. For a failed compilation it carries the
// compiler's log, which names the offending lines.
type NVRTCError struct {
	Call    string      // the NVRTC function, such as "nvrtcCompileProgram"
	Program string      // the program name given to Compile
	Result  NVRTCResult // the status NVRTC returned
	Log     string      // the program log; empty if NVRTC wrote none
}

// Error returns "call(program): NAME (code)" followed by the log, if any, on
// the next lines.
func (e *NVRTCError) Error() string {
	msg := fmt.Sprintf("%s(%s): %v", e.Call, e.Program, e.Result)
	if log := strings.Trim(e.Log, " \t\r\n\x00"); log != "" {
		msg += "\n" + log
	}
	return msg
}

// Unwrap returns the NVRTCResult, so errors.As finds it too.
func (e *NVRTCError) Unwrap() error { return e.Result }

// callError wraps err with the failing call and its arguments:
// "cuMemAlloc_v2(1048576): CUDA_ERROR_OUT_OF_MEMORY (2): out of memory".
// It runs only on failure, so its formatting cost is off the success path.
func callError(call string, err error, args ...any) error {
	var b strings.Builder
	b.WriteString(call)
	b.WriteByte('(')
	for i, a := range args {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprint(&b, a)
	}
	b.WriteString(")")
	return fmt.Errorf("%s: %w", b.String(), err)
}
