//go:build !cgo || !linux

package driver

// ProbeCUDA always fails in this build.
func ProbeCUDA() (name string, version int, err error) { return "", 0, stub("ProbeCUDA") }

// ProbeNVRTC always fails in this build.
func ProbeNVRTC() (name string, major, minor int, err error) { return "", 0, 0, stub("ProbeNVRTC") }
