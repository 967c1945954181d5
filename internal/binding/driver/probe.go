//go:build cgo && linux

package driver

/*
#include "cudrv.h"
*/
import "C"

// ProbeCUDA and ProbeNVRTC are for reports of what a machine has (detcoll
// version): unlike Load, each opens its library on its own and ProbeCUDA
// calls no cuInit, so a machine with a driver but no GPU, or a driver and
// no NVRTC, still says what it has.

// ProbeCUDA returns the name of the libcuda Load would open and its
// version (cuDriverGetVersion: 12040 for CUDA 12.4). It needs no GPU.
// While a Load is in effect it asks the loaded library; otherwise it opens
// one by Load's search and leaves nothing resolved, so the package is as
// unloaded as before (the library stays mapped, as after Unload). Do not
// call the package's other functions concurrently with it, unless a Load
// is in effect. Errors match ErrUnavailable.
func ProbeCUDA() (name string, version int, err error) {
	lib.mu.Lock()
	defer lib.mu.Unlock()
	name = lib.cuda
	if lib.refs == 0 {
		if name, err = openLibrary(C.DC_LIB_CUDA, "libcuda", cudaCandidates()); err != nil {
			return "", 0, err
		}
		defer C.dc_sym_clear(C.DC_LIB_CUDA)
	}
	var v C.int
	if r := C.dc_cuDriverGetVersion(&v); r != 0 {
		return name, 0, cuErr(r, "cuDriverGetVersion")
	}
	return name, int(v), nil
}

// ProbeNVRTC returns the name of the NVRTC Load would open and its
// version, as ProbeCUDA does for libcuda. It needs no driver or GPU.
func ProbeNVRTC() (name string, major, minor int, err error) {
	lib.mu.Lock()
	defer lib.mu.Unlock()
	name = lib.nvrtc
	if lib.refs == 0 {
		if name, err = openLibrary(C.DC_LIB_NVRTC, "NVRTC", nvrtcCandidates()); err != nil {
			return "", 0, 0, err
		}
		defer C.dc_sym_clear(C.DC_LIB_NVRTC)
	}
	var a, b C.int
	if r := C.dc_nvrtcVersion(&a, &b); r != 0 {
		return name, 0, 0, nvrtcErr(r, "nvrtcVersion", "", "")
	}
	return name, int(a), int(b), nil
}
