package driver

import (
	"errors"
	"strings"
	"testing"
)

func TestResultError(t *testing.T) {
	for _, tc := range []struct {
		r    Result
		want string
	}{
		{ResultOutOfMemory, "CUDA_ERROR_OUT_OF_MEMORY (2): out of memory"},
		{ResultNotReady, "CUDA_ERROR_NOT_READY (600): device not ready"},
		{ResultIllegalAddress, "CUDA_ERROR_ILLEGAL_ADDRESS (700): an illegal memory access was encountered"},
		{Result(123456), "CUresult(123456) (123456): unrecognised CUDA status"},
	} {
		if got := tc.r.Error(); got != tc.want {
			t.Errorf("Result(%d).Error() = %q; want %q", int(tc.r), got, tc.want)
		}
	}
	if got, want := ResultInvalidContext.Name(), "CUDA_ERROR_INVALID_CONTEXT"; got != want {
		t.Errorf("Name() = %q; want %q", got, want)
	}
}

func TestResultTableNames(t *testing.T) {
	seen := map[string]Result{}
	for r, e := range resultTable {
		if !strings.HasPrefix(e.name, "CUDA_") || e.desc == "" {
			t.Errorf("resultTable[%d] = %+v; want a CUDA_ name and a description", int(r), e)
		}
		if prev, dup := seen[e.name]; dup {
			t.Errorf("name %s used by %d and %d", e.name, int(prev), int(r))
		}
		seen[e.name] = r
	}
	for r, name := range nvrtcResultNames {
		if !strings.HasPrefix(name, "NVRTC_") {
			t.Errorf("nvrtcResultNames[%d] = %q; want an NVRTC_ name", int(r), name)
		}
	}
}

func TestCallError(t *testing.T) {
	err := callError("cuMemAlloc_v2", ResultOutOfMemory, 1048576)
	if got, want := err.Error(), "cuMemAlloc_v2(1048576): CUDA_ERROR_OUT_OF_MEMORY (2): out of memory"; got != want {
		t.Errorf("Error() = %q; want %q", got, want)
	}
	var r Result
	if !errors.As(err, &r) || r != ResultOutOfMemory {
		t.Errorf("errors.As(%v) = %v, %d; want true, %d", err, errors.As(err, &r), int(r), int(ResultOutOfMemory))
	}
	if !errors.Is(err, ResultOutOfMemory) {
		t.Errorf("errors.Is(%v, ResultOutOfMemory) = false", err)
	}
	if errors.Is(err, ErrUnavailable) {
		t.Errorf("errors.Is(%v, ErrUnavailable) = true; want false", err)
	}

	err = callError("cuMemcpyDtoD_v2", ResultInvalidValue, DevicePtr(0x7f0000001000), DevicePtr(0), 16)
	if got, want := err.Error(), "cuMemcpyDtoD_v2(0x7f0000001000, 0x0, 16): CUDA_ERROR_INVALID_VALUE (1): invalid argument"; got != want {
		t.Errorf("Error() = %q; want %q", got, want)
	}

	err = callError("cuInit", errNotLoaded, 0)
	if !errors.Is(err, ErrUnavailable) {
		t.Errorf("errors.Is(%v, ErrUnavailable) = false", err)
	}
	if !strings.HasPrefix(err.Error(), "cuInit(0): detcoll/cuda: ") {
		t.Errorf("Error() = %q; want it to start with the call", err)
	}
}

func TestNVRTCError(t *testing.T) {
	var err error = &NVRTCError{
		Call:    "nvrtcCompileProgram",
		Program: "k.cu",
		Result:  NVRTCCompilation,
		Log:     "k.cu(3): error: identifier \"x\" is undefined\n\x00",
	}
	want := "nvrtcCompileProgram(k.cu): NVRTC_ERROR_COMPILATION (6)\nk.cu(3): error: identifier \"x\" is undefined"
	if got := err.Error(); got != want {
		t.Errorf("Error() = %q; want %q", got, want)
	}
	var ne *NVRTCError
	if !errors.As(err, &ne) || !strings.Contains(ne.Log, "undefined") {
		t.Errorf("errors.As(*NVRTCError) failed or lost the log: %v", err)
	}
	var r NVRTCResult
	if !errors.As(err, &r) || r != NVRTCCompilation {
		t.Errorf("errors.As(NVRTCResult) = %d; want %d", int(r), int(NVRTCCompilation))
	}
	if got, want := NVRTCResult(99).Error(), "nvrtcResult(99)"; got != want {
		t.Errorf("NVRTCResult(99).Error() = %q; want %q", got, want)
	}
	noLog := &NVRTCError{Call: "nvrtcGetCUBIN", Program: "k.cu", Result: NVRTCInvalidProgram}
	if got, want := noLog.Error(), "nvrtcGetCUBIN(k.cu): NVRTC_ERROR_INVALID_PROGRAM (4)"; got != want {
		t.Errorf("Error() = %q; want %q", got, want)
	}
}
