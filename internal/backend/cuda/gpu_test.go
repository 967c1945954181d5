package cuda

import (
	"context"
	"encoding/binary"
	"os"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/detcoll/detcoll/internal/binding/driver"
	"github.com/detcoll/detcoll/internal/core/base"
	"github.com/detcoll/detcoll/internal/testkit/gputest"
)

// The package's own GPU tests: one rank on device 0, where the internals
// they read are not visible from the public API. The tests through the
// public API, the conformance suite's among them, are the external
// package's (conformance_test.go and the files it names).

// openOne opens a communicator of one rank on device 0, or ends t by
// gputest.
func openOne(t *testing.T) *Comm {
	t.Helper()
	if err := driver.Load(); err != nil {
		gputest.Missing(t, "cuda: no CUDA driver: %v", err)
		return nil
	}
	n, err := driver.DeviceCount()
	driver.Unload()
	gputest.Need(t, 1, n, err)
	c, err := Open(context.Background(), Config{World: 1, Capacity: 1 << 20, Timeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// doneWord reads the communicator's done word: the seq of its last call.
func doneWord(t *testing.T, c *Comm) uint64 {
	t.Helper()
	if err := c.current(); err != nil {
		t.Fatal(err)
	}
	defer runtime.UnlockOSThread()
	b := make([]byte, 8)
	if err := driver.MemcpyDtoH(b, c.buf+offDone); err != nil {
		t.Fatal(err)
	}
	return binary.LittleEndian.Uint64(b)
}

// TestSeqStartsAtRandomGPU: two communicators opened one after the other
// in the same memory count their calls from different random starts
// (issue 11, defect 7: both started at 1, so a late LL line of the first
// could carry the flag of a call of the second).
func TestSeqStartsAtRandomGPU(t *testing.T) {
	var before [2]uint64
	for i := range before {
		c := openOne(t)
		before[i] = doneWord(t, c)
		if err := c.Do(&base.Request{Op: base.OpBarrier}); err != nil {
			t.Fatal(err)
		}
		if got := doneWord(t, c); got != before[i]+1 {
			t.Errorf("communicator %d: done %#x after one call from %#x", i, got, before[i])
		}
		if err := c.Close(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("done before the first call: %#x, then %#x", before[0], before[1])
	for i, d := range before {
		if d+1 < 1<<32 {
			t.Errorf("communicator %d: first call's seq %#x, want at least 2^32", i, d+1)
		}
	}
	if before[0] == before[1] {
		t.Errorf("both communicators start at seq %#x", before[0]+1)
	}
}

// TestOpenLoadsKernelsBuiltAheadOfTimeGPU: on a GPU the module carries
// kernels for, the first Open on a fresh machine (an empty kernel cache)
// compiles nothing: it leaves the cache empty. It logs how long it took.
func TestOpenLoadsKernelsBuiltAheadOfTimeGPU(t *testing.T) {
	dir := t.TempDir()
	t.Setenv(driver.EnvCacheDir, dir)
	start := time.Now()
	c := openOne(t)
	took := time.Since(start)
	defer c.Close(context.Background())
	arch, err := c.dev.Arch()
	if err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir(dir)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	carried := slices.Contains(AheadOfTimeArchs, arch)
	t.Logf("%s: first Open in %v with an empty cache (kernels carried for it: %v)", arch, took.Round(time.Millisecond), carried)
	if carried && len(entries) > 0 {
		t.Errorf("%s: Open compiled (%d cache entries) though the module carries kernels for it", arch, len(entries))
	}
	if !carried && len(entries) == 0 {
		t.Errorf("%s: Open compiled nothing, and the module carries no kernels for it", arch)
	}
}
