package driver

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"
)

func TestLoadMissingLibrary(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "libcuda.so.1")
	t.Setenv(EnvLibCUDA, missing)
	err := Load()
	if err == nil {
		Unload()
		t.Fatalf("Load with %s=%s succeeded; want an error", EnvLibCUDA, missing)
	}
	if !errors.Is(err, ErrUnavailable) {
		t.Errorf("Load() = %v; want an error matching ErrUnavailable", err)
	}
	if dynamicLoading && !strings.Contains(err.Error(), missing) {
		t.Errorf("Load() = %q; want the message to name %s", err, missing)
	}
	t.Logf("Load() = %v", err)
	if cuda, nvrtc := Libraries(); cuda != "" || nvrtc != "" {
		t.Errorf("Libraries() = %q, %q after a failed Load; want empty", cuda, nvrtc)
	}
}

func TestLoadNotACUDALibrary(t *testing.T) {
	if !dynamicLoading {
		t.Skip("this build cannot dlopen")
	}
	// libc is on every Linux system and has none of the CUDA symbols.
	t.Setenv(EnvLibCUDA, "libc.so.6")
	err := Load()
	if err == nil {
		Unload()
		t.Fatal("Load with libc as libcuda succeeded; want an error")
	}
	if !errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), "dlsym cuGetErrorName in libc.so.6") {
		t.Errorf("Load() = %q; want ErrUnavailable naming the missing symbol", err)
	}
	// The failed Load must leave nothing resolved.
	if _, err := DriverVersion(); !errors.Is(err, ErrUnavailable) {
		t.Errorf("DriverVersion after a failed Load = %v; want ErrUnavailable", err)
	}
}

func TestCallsBeforeLoad(t *testing.T) {
	for _, tc := range []struct {
		name string
		call func() error
		cgo  string // the message start in the cgo build
	}{
		{"MemAlloc", func() error { _, err := MemAlloc(16); return err }, "cuMemAlloc_v2(16): "},
		{"DeviceCount", func() error { _, err := DeviceCount(); return err }, "cuDeviceGetCount(): "},
		{"Launch", func() error { return Function(0).Launch(LaunchConfig{}) }, "cuLaunchKernel("},
		{"Compile", func() error { _, err := Compile("", "k.cu", nil); return err }, "nvrtcCreateProgram(k.cu): "},
		{"BuildKernel", func() error { _, err := BuildKernel(nil, "k.cu", "sm_90", nil); return err }, "nvrtcVersion(): "},
	} {
		err := tc.call()
		if !errors.Is(err, ErrUnavailable) {
			t.Errorf("%s before Load = %v; want ErrUnavailable", tc.name, err)
			continue
		}
		if dynamicLoading && !strings.HasPrefix(err.Error(), tc.cgo) {
			t.Errorf("%s before Load = %q; want it to start with %q", tc.name, err, tc.cgo)
		}
	}
}

func TestUnloadWithoutLoad(t *testing.T) {
	if err := Unload(); err == nil {
		t.Error("Unload without Load = nil; want an error")
	}
}
