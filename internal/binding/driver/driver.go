//go:build cgo && linux

package driver

/*
#cgo LDFLAGS: -ldl
#include "cudrv.h"
*/
import "C"

// dynamicLoading reports whether this build can load the driver at all.
const dynamicLoading = true

// cuErr turns a failed CUresult into an error naming the call.
func cuErr(r C.CUresult, call string, args ...any) error {
	if r == C.DC_NOT_LOADED {
		return callError(call, errNotLoaded, args...)
	}
	return callError(call, Result(r), args...)
}

// driverErrorStrings asks the loaded driver for the name and description of
// a code missing from resultTable.
func driverErrorStrings(r Result) (name, desc string, ok bool) {
	var n, d *C.char
	if C.dc_cuGetErrorName(C.CUresult(r), &n) != 0 || n == nil {
		return "", "", false
	}
	desc = "no description"
	if C.dc_cuGetErrorString(C.CUresult(r), &d) == 0 && d != nil {
		desc = C.GoString(d)
	}
	return C.GoString(n), desc, true
}

// nvrtcErrorString asks the loaded NVRTC for the name of a code missing from
// nvrtcResultNames.
func nvrtcErrorString(r NVRTCResult) (string, bool) {
	s := C.dc_nvrtcGetErrorString(C.nvrtcResult(r))
	if s == nil {
		return "", false
	}
	return C.GoString(s), true
}
