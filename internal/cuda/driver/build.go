package driver

import "fmt"

// BuildKernel returns the CUBIN of src for arch (such as "sm_90", from
// Device.Arch), compiled by the loaded NVRTC with
// --gpu-architecture=arch plus opts, through the disk cache of
// CompileCached keyed by the NVRTC version. NVRTC reports only major.minor,
// so a patch release that changes code generation keeps serving older,
// equally valid, entries; clear the cache directory to force a rebuild.
func BuildKernel(src []byte, name, arch string, opts []string) ([]byte, error) {
	major, minor, err := NVRTCVersion()
	if err != nil {
		return nil, err
	}
	all := append([]string{"--gpu-architecture=" + arch}, opts...)
	version := fmt.Sprintf("%d.%d", major, minor)
	return CompileCached(src, name, arch, version, all, func() ([]byte, error) {
		return Compile(string(src), name, all)
	})
}
