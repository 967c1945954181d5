package driver

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"
)

// TestProbe checks that the probes report what is here (a GPU machine:
// versions; elsewhere: ErrUnavailable) and leave the package unloaded.
func TestProbe(t *testing.T) {
	if cuda, nvrtc := Libraries(); cuda != "" || nvrtc != "" {
		t.Skipf("loaded by an earlier test (%s, %s)", cuda, nvrtc)
	}
	name, v, err := ProbeCUDA()
	switch {
	case err != nil && !errors.Is(err, ErrUnavailable):
		t.Errorf("ProbeCUDA() = %v; want an error matching ErrUnavailable", err)
	case err == nil && (name == "" || v < 11000):
		t.Errorf("ProbeCUDA() = %q, %d; want a library and a version of CUDA 11 or later", name, v)
	}
	t.Logf("ProbeCUDA() = %q, %d, %v", name, v, err)
	name, major, minor, err := ProbeNVRTC()
	switch {
	case err != nil && !errors.Is(err, ErrUnavailable):
		t.Errorf("ProbeNVRTC() = %v; want an error matching ErrUnavailable", err)
	case err == nil && (name == "" || major < 11):
		t.Errorf("ProbeNVRTC() = %q, %d.%d; want a library and a version of 11 or later", name, major, minor)
	}
	t.Logf("ProbeNVRTC() = %q, %d.%d, %v", name, major, minor, err)
	if _, err := DriverVersion(); !errors.Is(err, ErrUnavailable) {
		t.Errorf("DriverVersion after the probes = %v; want ErrUnavailable (nothing loaded)", err)
	}
	if _, _, err := NVRTCVersion(); !errors.Is(err, ErrUnavailable) {
		t.Errorf("NVRTCVersion after the probes = %v; want ErrUnavailable (nothing loaded)", err)
	}
}

// TestProbeMissing checks the errors for libraries that are not there or
// are not what they claim.
func TestProbeMissing(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "libcuda.so.1")
	t.Setenv(EnvLibCUDA, missing)
	t.Setenv(EnvLibNVRTC, missing)
	if _, _, err := ProbeCUDA(); !errors.Is(err, ErrUnavailable) || (dynamicLoading && !strings.Contains(err.Error(), missing)) {
		t.Errorf("ProbeCUDA with %s=%s = %v; want ErrUnavailable naming the file", EnvLibCUDA, missing, err)
	}
	if _, _, _, err := ProbeNVRTC(); !errors.Is(err, ErrUnavailable) || (dynamicLoading && !strings.Contains(err.Error(), missing)) {
		t.Errorf("ProbeNVRTC with %s=%s = %v; want ErrUnavailable naming the file", EnvLibNVRTC, missing, err)
	}
	if !dynamicLoading {
		return
	}
	t.Setenv(EnvLibCUDA, "libc.so.6") // on every Linux system, with no CUDA symbol
	if _, _, err := ProbeCUDA(); !errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), "dlsym cuGetErrorName in libc.so.6") {
		t.Errorf("ProbeCUDA with libc = %v; want ErrUnavailable naming the missing symbol", err)
	}
}
