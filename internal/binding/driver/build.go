package driver

import "fmt"

// BuildKernel returns the CUBIN of src for arch (such as "sm_90", from
// Device.Arch), compiled by the loaded NVRTC with
// --gpu-architecture=arch plus opts, through the disk cache of
// CompileCached keyed by the NVRTC version. NVRTC reports only major.minor,
// so a patch release that changes code generation keeps serving older,
// equally valid, entries; clear the cache directory to force a rebuild.
func BuildKernel(src []byte, name, arch string, opts []string) ([]byte, error) {
	return buildKernel(src, name, arch, opts, nil)
}

// CacheKernel stores bin in the disk cache as BuildKernel's result for
// the same inputs: bin must be what the loaded NVRTC compiled from them
// (tools/aot, which has just compiled it).
func CacheKernel(src []byte, name, arch string, opts []string, bin []byte) error {
	_, err := buildKernel(src, name, arch, opts, bin)
	return err
}

func buildKernel(src []byte, name, arch string, opts []string, built []byte) ([]byte, error) {
	major, minor, err := NVRTCVersion()
	if err != nil {
		return nil, err
	}
	all := append([]string{"--gpu-architecture=" + arch}, opts...)
	version := fmt.Sprintf("%d.%d", major, minor)
	return CompileCached(src, name, arch, version, all, func() ([]byte, error) {
		if built != nil {
			return built, nil
		}
		return Compile(string(src), name, all)
	})
}
