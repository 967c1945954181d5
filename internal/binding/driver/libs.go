package driver

import "github.com/detcoll/detcoll/internal/core/settings"

// Environment variables that override the library search. Each names one
// file (a path or a soname for the dynamic loader); only it is tried.
const (
	EnvLibCUDA  = settings.LibCUDA
	EnvLibNVRTC = settings.LibNVRTC
)

// cudaCandidates returns the libcuda names Load tries, in order. libcuda is
// installed by the GPU driver, whose soname has been libcuda.so.1 for every
// release; the unversioned libcuda.so is a development link, often to a stub
// that fails cuInit, so it is not tried.
func cudaCandidates() []string {
	if v := settings.Get(EnvLibCUDA); v != "" {
		return []string{v}
	}
	return []string{"libcuda.so.1"}
}

// nvrtcCandidates returns the NVRTC names Load tries, newest first. NVRTC
// comes with a CUDA toolkit (or a pip wheel), so several may be installed;
// CUDA 11.2 to 11.8 all use the soname libnvrtc.so.11.2. The plain
// development link and the toolkit's default location come last.
func nvrtcCandidates() []string {
	if v := settings.Get(EnvLibNVRTC); v != "" {
		return []string{v}
	}
	return []string{
		"libnvrtc.so.13",
		"libnvrtc.so.12",
		"libnvrtc.so.11.2",
		"libnvrtc.so.11.1",
		"libnvrtc.so.11.0",
		"libnvrtc.so",
		"/usr/local/cuda/lib64/libnvrtc.so",
	}
}
