package detcoll_test

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/detcoll/detcoll"
	"github.com/detcoll/detcoll/internal/check"
	"github.com/detcoll/detcoll/internal/cuda/driver"
	"github.com/detcoll/detcoll/internal/cuda/gputest"
)

// gpuCount returns the number of CUDA devices here, 0 without a driver.
func gpuCount() int {
	if driver.Load() != nil {
		return 0
	}
	defer driver.Unload()
	n, err := driver.DeviceCount()
	if err != nil {
		return 0
	}
	return n
}

// requireGPUs skips t unless n GPUs are here, or fails it under
// DETCOLL_REQUIRE_GPU=1 (gputest).
func requireGPUs(t *testing.T, n int) {
	t.Helper()
	if err := driver.Load(); err != nil {
		gputest.Missing(t, "cuda: no CUDA driver: %v", err)
		return
	}
	defer driver.Unload()
	have, err := driver.DeviceCount()
	gputest.Need(t, n, have, err)
}

// gpusFor returns the TEST_GPUS setting that runs world ranks here: a GPU
// per rank where there are that many (TEST_GPUS=0: device = LOCAL_RANK),
// else the ranks time-sliced on the GPUs there are, which checks
// correctness only. It ends t by gputest where there is no GPU at all.
func gpusFor(t *testing.T, world int) string {
	t.Helper()
	requireGPUs(t, 1)
	if have := gpuCount(); have < world {
		t.Logf("%d ranks time-sliced on %d GPUs", world, have)
		return "TEST_GPUS=" + strconv.Itoa(have)
	}
	return "TEST_GPUS=0"
}

// gpuRank is a test rank's GPU: the communicator's device context current
// on the rank's locked thread, and an arena of device memory for its
// buffers, all on the legacy default stream unless a test says otherwise.
type gpuRank struct {
	dev   driver.Device
	ctx   driver.Context
	arena driver.DevicePtr
	size  int
	used  int
}

const arenaSize = 256 << 20

// openGPURank opens a cuda communicator from the environment the parent
// set and sets up the rank's GPU. The calling goroutine stays locked to
// its thread: a rank is a process of its own.
func openGPURank(ctx context.Context) (*detcoll.Comm, *gpuRank, error) {
	runtime.LockOSThread()
	// TEST_GPUS=n shares n GPUs among the ranks, rank r on GPU r mod n, so
	// that more ranks than GPUs run the code of wider worlds. Ranks on one
	// GPU are time-sliced: for correctness only. It must narrow the
	// devices before anything initialises CUDA in this process.
	if n := envInt("TEST_GPUS", 0); n > 0 {
		os.Setenv("CUDA_VISIBLE_DEVICES", strconv.Itoa(envInt("LOCAL_RANK", 0)%n))
		os.Setenv("LOCAL_RANK", "0") // device 0 of the narrowed list
	}
	opts := detcoll.Options{Backend: "cuda", Capacity: int64(envInt("TEST_CAPACITY", 8<<20))}
	if ms := envInt("TEST_TIMEOUT_MS", 0); ms > 0 {
		opts.Timeout = time.Duration(ms) * time.Millisecond
	}
	c, err := detcoll.Open(ctx, opts)
	if err != nil {
		return nil, nil, err
	}
	g, err := newGPURank(c.Device())
	if err != nil {
		c.Close(ctx)
		return nil, nil, err
	}
	return c, g, nil
}

func newGPURank(device int) (*gpuRank, error) {
	if err := driver.Load(); err != nil {
		return nil, err
	}
	g := &gpuRank{size: arenaSize}
	var err error
	if g.dev, err = driver.DeviceGet(device); err != nil {
		return nil, err
	}
	if g.ctx, err = g.dev.PrimaryCtxRetain(); err != nil {
		return nil, err
	}
	if err := g.ctx.SetCurrent(); err != nil {
		return nil, err
	}
	if g.arena, err = driver.MemAlloc(g.size); err != nil {
		return nil, err
	}
	return g, nil
}

func (g *gpuRank) close() {
	driver.MemFree(g.arena)
	g.dev.PrimaryCtxRelease()
	driver.Unload()
}

// reset frees every buffer of the arena.
func (g *gpuRank) reset() { g.used = 0 }

// alloc returns n bytes of the arena, 256-byte aligned.
func (g *gpuRank) alloc(n int) driver.DevicePtr {
	p := g.arena + driver.DevicePtr(g.used)
	g.used += (n + 255) &^ 255
	if g.used > g.size {
		panic(fmt.Sprintf("test arena of %d bytes exhausted", g.size))
	}
	return p
}

func (g *gpuRank) put(p driver.DevicePtr, b []byte) error {
	if len(b) == 0 {
		return nil
	}
	return driver.MemcpyHtoD(p, b)
}

func (g *gpuRank) get(p driver.DevicePtr, n int) ([]byte, error) {
	b := make([]byte, n)
	if n == 0 {
		return b, nil
	}
	return b, driver.MemcpyDtoH(b, p)
}

// devGuarded is a device buffer of n bytes at offset off from an aligned
// start, with guard bytes (check.GuardLen of 0xA5) before and after it.
type devGuarded struct {
	g      *gpuRank
	base   driver.DevicePtr
	off, n int
}

func (g *gpuRank) guarded(n, off int) (*devGuarded, error) {
	total := check.GuardLen + off + n + check.GuardLen
	d := &devGuarded{g: g, base: g.alloc(total), off: off, n: n}
	return d, driver.MemsetD8(d.base, 0xA5, total)
}

func (d *devGuarded) ptr() detcoll.DevicePtr {
	return detcoll.DevicePtr(d.base) + detcoll.DevicePtr(check.GuardLen+d.off)
}

func (d *devGuarded) write(b []byte) error { return d.g.put(driver.DevicePtr(d.ptr()), b) }

// read returns the buffer's bytes after checking the guards.
func (d *devGuarded) read() ([]byte, error) {
	all, err := d.g.get(d.base, check.GuardLen+d.off+d.n+check.GuardLen)
	if err != nil {
		return nil, err
	}
	lo, hi := check.GuardLen+d.off, check.GuardLen+d.off+d.n
	for i, b := range all {
		if (i < lo || i >= hi) && b != 0xA5 {
			return nil, fmt.Errorf("guard byte %d (buffer is [%d, %d)) changed to %#x", i, lo, hi, b)
		}
	}
	return all[lo:hi], nil
}

// devPtr converts the public device address to the driver's.
func devPtr(p detcoll.DevicePtr) driver.DevicePtr { return driver.DevicePtr(p) }
