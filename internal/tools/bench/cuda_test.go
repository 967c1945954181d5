package bench

import (
	"os"
	"strings"
	"testing"

	"github.com/detcoll/detcoll"
)

func TestCallsPerSample(t *testing.T) {
	for _, tt := range []struct{ bytes, pipelined, graph int }{
		{0, 100, 50},
		{1 << 10, 100, 50},
		{8 << 20, 100, 50},
		{16 << 20, 64, 50},
		{64 << 20, 16, 16},
		{256 << 20, 4, 4},
		{1 << 30, 4, 4},
	} {
		if p, g := PipelinedCalls(tt.bytes), GraphCalls(tt.bytes); p != tt.pipelined || g != tt.graph {
			t.Errorf("calls per sample at %d bytes: pipelined %d, graph %d; want %d, %d", tt.bytes, p, g, tt.pipelined, tt.graph)
		}
	}
	if note := timingNote(); !strings.Contains(note, "4 and 4 at 256 MiB") || !strings.Contains(note, "max(4, 1024 MiB / input bytes per rank)") {
		t.Errorf("timing note: %s", note)
	}
}

func TestParseDriverVersion(t *testing.T) {
	for in, want := range map[string]string{
		"NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.159.03  Release Build  (dvs-builder@U16)  Thu\nGCC version:  gcc version 12.3.0\n": "580.159.03",
		"NVRM version: NVIDIA UNIX x86_64 Kernel Module  535.104.05  Sat Aug 19 01:15:15 UTC 2023\n":                                                     "535.104.05",
		"NVRM version: NVIDIA UNIX x86_64 Kernel Module  580.159\n":                                                                                      "580.159",
		"": "",
	} {
		if got := parseDriverVersion(in); got != want {
			t.Errorf("parseDriverVersion(%q) = %q; want %q", in, got, want)
		}
	}
}

func TestNCCLSettings(t *testing.T) {
	env := []string{"PATH=/bin", "NCCL_PROTO=Simple", "NCCL_ALGO=Ring", "DETCOLL_X=1", "NCCL_NVLS_ENABLE=0"}
	if got, want := strings.Join(ncclEnv(env), " "), "NCCL_ALGO=Ring NCCL_NVLS_ENABLE=0 NCCL_PROTO=Simple"; got != want {
		t.Errorf("ncclEnv = %q; want %q", got, want)
	}
	if ncclDeterministic(env) {
		t.Errorf("ncclDeterministic(%q) = true without the channel settings", env)
	}
	for _, kv := range NCCLDeterministicEnv {
		k, _, _ := strings.Cut(kv, "=")
		t.Setenv(k, "other") // restored after the test
	}
	if err := SetNCCLDeterministic(); err != nil {
		t.Fatal(err)
	}
	if !ncclDeterministic(os.Environ()) {
		t.Errorf("after SetNCCLDeterministic the environment has %q; want %q", ncclEnv(os.Environ()), NCCLDeterministicEnv)
	}
}

func TestNewCUDARefusesHostComm(t *testing.T) {
	c, err := detcoll.Open(t.Context(), detcoll.Options{WorldSize: 1, Capacity: 4096})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(t.Context())
	if d, err := NewCUDA(c); err == nil || !strings.Contains(err.Error(), "needs a cuda communicator") {
		t.Errorf("NewCUDA(cpu communicator) = %v, %v; want a refusal", d, err)
	}
}

// TestReleaseGivesWindowsBackFirst: release runs beforeFree, where
// detcoll's side gives back the windows on the prepared call's buffers,
// while the call is still prepared (its buffers not yet freed): every
// path that frees them goes through release (Release, a failed Prepare's
// buffers, Close).
func TestReleaseGivesWindowsBackFirst(t *testing.T) {
	g := &gpuSide{}
	calls := 0
	g.beforeFree = func() {
		calls++
		if g.call == nil {
			t.Errorf("beforeFree ran after the prepared call was released")
		}
	}
	g.prepared(1024, func() error { return nil })
	g.release()
	if calls != 1 || g.call != nil {
		t.Errorf("after release: beforeFree ran %d times, the call still prepared: %t; want once, false", calls, g.call != nil)
	}
}
