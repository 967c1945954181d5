package soak

import (
	"context"
	"testing"
	"time"

	"github.com/detcoll/detcoll"
	"github.com/detcoll/detcoll/internal/testkit/gputest"
	"github.com/detcoll/detcoll/internal/tools/devmem"
)

// TestRankGPU runs one rank of the soak on the cuda backend (deviceExec:
// calls queued on a stream, checked after each batch) and checks that
// CorruptCall fails it, that nothing else fails, and that the GPU's free
// memory was read before Open and after Close. It ends by gputest where
// no GPU is here.
func TestRankGPU(t *testing.T) {
	have, err := devmem.Count()
	if err != nil {
		gputest.Missing(t, "cuda: no CUDA driver: %v", err)
		return
	}
	gputest.Need(t, 1, have, nil)
	shm := t.TempDir()
	t.Setenv("DETCOLL_SHM_DIR", shm)
	cfg := Config{Seed: 2, Calls: 300, MaxBytes: 1 << 20, CorruptCall: 123}
	opts := detcoll.Options{Backend: "cuda", WorldSize: 1, Capacity: cfg.Capacity(), Timeout: time.Minute}
	res := RunRank(context.Background(), 0, 1, opts, cfg, nil)
	if res.Error != "" {
		t.Fatal(res.Error)
	}
	if res.Calls != 300 || res.Failures != 1 || res.Details[0].Call != 123 {
		t.Errorf("%d calls, %d failures %+v; want 300 calls, call 123 failed", res.Calls, res.Failures, res.Details)
	}
	if res.DeviceFreeBefore <= 0 || res.DeviceFreeAfter <= 0 {
		t.Errorf("device free before %d, after %d bytes; want both read", res.DeviceFreeBefore, res.DeviceFreeAfter)
	}
	if left := Leaks(shm); len(left) != 0 {
		t.Errorf("left behind: %v", left)
	}
	t.Logf("%d calls; device free %d MiB before, %d MiB after", res.Calls, res.DeviceFreeBefore>>20, res.DeviceFreeAfter>>20)
}
