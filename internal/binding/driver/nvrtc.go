//go:build cgo && linux

package driver

/*
#include <stdlib.h>
#include "cudrv.h"
*/
import "C"

import (
	"fmt"
	"strings"
	"unsafe"
)

// NVRTCVersion returns the version of the loaded NVRTC, such as 13, 0.
func NVRTCVersion() (major, minor int, err error) {
	if err := missingNVRTC(); err != nil {
		return 0, 0, err
	}
	var a, b C.int
	if r := C.dc_nvrtcVersion(&a, &b); r != 0 {
		return 0, 0, nvrtcErr(r, "nvrtcVersion", "", "")
	}
	return int(a), int(b), nil
}

// Compile compiles CUDA C++ source to a CUBIN with NVRTC. name is the
// program's file name in messages (such as "allreduce.cu"); opts are NVRTC
// options and must include --gpu-architecture=sm_XY, since only a real
// architecture yields a CUBIN. On failure the error is an *NVRTCError that
// carries the compile log. It needs no CUDA context and is safe for
// concurrent use.
func Compile(src, name string, opts []string) ([]byte, error) {
	if err := missingNVRTC(); err != nil {
		return nil, err
	}
	if strings.IndexByte(src, 0) >= 0 {
		return nil, fmt.Errorf("detcoll/cuda: Compile(%s): source contains a NUL byte", name)
	}
	csrc, cname := C.CString(src), C.CString(name)
	defer C.free(unsafe.Pointer(csrc))
	defer C.free(unsafe.Pointer(cname))
	var copts **C.char
	if len(opts) > 0 {
		// The option array lives in C memory: it holds pointers, and Go
		// memory passed to C must not.
		copts = (**C.char)(C.malloc(C.size_t(len(opts)) * C.size_t(unsafe.Sizeof((*C.char)(nil)))))
		defer C.free(unsafe.Pointer(copts))
		list := unsafe.Slice(copts, len(opts))
		for i, o := range opts {
			list[i] = C.CString(o)
			defer C.free(unsafe.Pointer(list[i]))
		}
	}
	var prog C.nvrtcProgram
	if r := C.dc_nvrtcCreateProgram(&prog, csrc, cname, 0, nil, nil); r != 0 {
		return nil, nvrtcErr(r, "nvrtcCreateProgram", name, "")
	}
	defer C.dc_nvrtcDestroyProgram(&prog)
	if r := C.dc_nvrtcCompileProgram(prog, C.int(len(opts)), copts); r != 0 {
		return nil, nvrtcErr(r, "nvrtcCompileProgram", name, programLog(prog))
	}
	var n C.size_t
	if r := C.dc_nvrtcGetCUBINSize(prog, &n); r != 0 {
		return nil, nvrtcErr(r, "nvrtcGetCUBINSize", name, programLog(prog))
	}
	if n == 0 {
		return nil, fmt.Errorf("detcoll/cuda: Compile(%s): NVRTC produced no CUBIN (is --gpu-architecture a real sm_XY, not compute_XY?)", name)
	}
	bin := make([]byte, int(n))
	if r := C.dc_nvrtcGetCUBIN(prog, (*C.char)(unsafe.Pointer(&bin[0]))); r != 0 {
		return nil, nvrtcErr(r, "nvrtcGetCUBIN", name, "")
	}
	return bin, nil
}

// programLog returns the program's compile log, or "" if there is none.
func programLog(prog C.nvrtcProgram) string {
	var n C.size_t
	if C.dc_nvrtcGetProgramLogSize(prog, &n) != 0 || n <= 1 {
		return ""
	}
	buf := make([]byte, int(n))
	if C.dc_nvrtcGetProgramLog(prog, (*C.char)(unsafe.Pointer(&buf[0]))) != 0 {
		return ""
	}
	return strings.TrimRight(string(buf), "\x00")
}

// nvrtcErr turns a failed nvrtcResult into an *NVRTCError, or an error
// matching ErrUnavailable if NVRTC is not loaded.
func nvrtcErr(r C.nvrtcResult, call, program, log string) error {
	if r == C.DC_NOT_LOADED {
		return callError(call, errNotLoaded, program)
	}
	return &NVRTCError{Call: call, Program: program, Result: NVRTCResult(r), Log: log}
}
