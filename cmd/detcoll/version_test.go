package main

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"

	"github.com/detcoll/detcoll/internal/binding/driver"
	"github.com/detcoll/detcoll/internal/binding/nccl"
)

// TestVersion runs detcoll version: on this machine (no GPU in CI) each
// library line says its version or "not found", and the exit status is 0.
func TestVersion(t *testing.T) {
	var stdout, stderr bytes.Buffer
	code := runMain(t.Context(), []string{"version"}, &stdout, &stderr)
	if code != 0 || stderr.Len() != 0 {
		t.Fatalf("detcoll version: exit %d, stderr %q; want exit 0 and nothing on stderr", code, stderr.String())
	}
	lines := strings.Split(strings.TrimSuffix(stdout.String(), "\n"), "\n")
	var names []string
	for _, l := range lines {
		name, _, _ := strings.Cut(l, " ")
		names = append(names, name)
	}
	if got, want := strings.Join(names, " "), "detcoll commit go cuda nvrtc nccl"; got != want {
		t.Fatalf("detcoll version printed lines %q:\n%s\nwant %q", got, stdout.String(), want)
	}
	if !strings.HasPrefix(lines[2], "go       go1.") {
		t.Errorf("go line %q", lines[2])
	}
	if _, _, err := driver.ProbeCUDA(); err != nil && !strings.HasPrefix(lines[3], "cuda     not found: ") {
		t.Errorf("without a CUDA driver (%v) the cuda line is %q; want \"not found: ...\"", err, lines[3])
	}
	t.Logf("detcoll version:\n%s", stdout.String())
}

// TestVersionWithoutGPU hides every library: the lines say why each is
// not found, and the exit status is still 0.
func TestVersionWithoutGPU(t *testing.T) {
	if cuda, _ := driver.Libraries(); cuda != "" || nccl.Library() != "" {
		t.Skip("a library is loaded already: the probes would report it")
	}
	missing := filepath.Join(t.TempDir(), "missing.so")
	t.Setenv(driver.EnvLibCUDA, missing)
	t.Setenv(driver.EnvLibNVRTC, missing)
	t.Setenv(nccl.EnvLib, missing)
	var stdout, stderr bytes.Buffer
	if code := runMain(t.Context(), []string{"version"}, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d, stderr %q", code, stderr.String())
	}
	for _, name := range []string{"cuda", "nvrtc", "nccl"} {
		if !strings.Contains(stdout.String(), "\n"+name+strings.Repeat(" ", 9-len(name))+"not found: ") {
			t.Errorf("no %q line saying not found:\n%s", name, stdout.String())
		}
	}
	var stdout2, stderr2 bytes.Buffer
	if code := runMain(t.Context(), []string{"version", "extra"}, &stdout2, &stderr2); code != 2 {
		t.Errorf("detcoll version extra: exit %d; want 2", code)
	}
}
