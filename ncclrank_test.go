package detcoll_test

import (
	"context"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/detcoll/detcoll"
	"github.com/detcoll/detcoll/internal/check"
	"github.com/detcoll/detcoll/internal/conformance"
	"github.com/detcoll/detcoll/internal/cuda/driver"
	"github.com/detcoll/detcoll/internal/cuda/gputest"
	"github.com/detcoll/detcoll/internal/devmem"
)

// What the ranks of ncclcompare_test.go use, over the one GPU helper
// (internal/devmem) and the one check engine (internal/check): a cuda
// communicator and its GPU, guarded device buffers, the suite's inputs and
// sweeps. Every other GPU test of the backend is in internal/cuda, which
// has all of this already (conformance_test.go): the comparison belongs
// there, and this file goes away when it moves.

const testSeed = 20261130

var (
	inputBytes   = check.Input
	referenceSum = check.ReferenceSum
	shares       = check.Shares
	gatherSizes  = conformance.GatherBytes
)

// deviceReduceCounts are the cuda tests' element counts (internal/cuda's
// reduceCounts, the full sweep): around the 2 MiB LL threshold and its
// share per rank, with odd tails.
func deviceReduceCounts(dt detcoll.DType, w int) []int {
	f := 2 << 20 / dt.Size()
	return []int{0, 1, 2, 3, 7, 31, 33, 1000, f/w - 1, f / w, f/w + 1, f - 1, f, f + 1, 3*f + 5, 100003}
}

// envInt reads an integer the parent test passed to the ranks.
func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil {
		return v
	}
	return def
}

// requireGPUs ends t unless n GPUs are here (gputest).
func requireGPUs(t *testing.T, n int) {
	t.Helper()
	have, err := devmem.Count()
	if err != nil {
		gputest.Missing(t, "cuda: no CUDA driver: %v", err)
		return
	}
	gputest.Need(t, n, have, nil)
}

// gpuRank is a rank's GPU, current on its locked thread, and the memory
// of its buffers on the legacy default stream.
type gpuRank struct {
	gpu *devmem.GPU
	mem *devmem.Memory
}

// openGPURank opens a cuda communicator from the job's environment and
// the rank's GPU.
func openGPURank(ctx context.Context) (*detcoll.Comm, *gpuRank, error) {
	opts := detcoll.Options{Backend: "cuda", Capacity: 8 << 20}
	if ms := envInt("TEST_TIMEOUT_MS", 0); ms > 0 {
		opts.Timeout = time.Duration(ms) * time.Millisecond
	}
	c, err := detcoll.Open(ctx, opts)
	if err != nil {
		return nil, nil, err
	}
	g, err := devmem.Open(c.Device())
	if err != nil {
		c.Close(ctx)
		return nil, nil, err
	}
	return c, &gpuRank{gpu: g, mem: devmem.NewMemory(0)}, nil
}

func (g *gpuRank) close() { g.mem.Arena.Free(); g.gpu.Close() }

// reset frees every buffer.
func (g *gpuRank) reset() { g.mem.Reset() }

// alloc returns n bytes of device memory; a rank that cannot have them
// has nothing to test.
func (g *gpuRank) alloc(n int) driver.DevicePtr {
	p, err := g.mem.Arena.Alloc(n)
	if err != nil {
		panic(err)
	}
	return p
}

func (g *gpuRank) put(p driver.DevicePtr, b []byte) error { return devmem.Put(p, b) }

func (g *gpuRank) get(p driver.DevicePtr, n int) ([]byte, error) { return devmem.Get(p, n) }

// devGuarded is a device buffer between guard bytes.
type devGuarded struct{ *devmem.Buffer }

func (g *gpuRank) guarded(n, off int) (*devGuarded, error) {
	b, err := g.mem.Alloc(n, off)
	if err != nil {
		return nil, err
	}
	return &devGuarded{b.(*devmem.Buffer)}, nil
}

func (d *devGuarded) ptr() detcoll.DevicePtr      { return d.Ptr() }
func (d *devGuarded) write(b []byte) error        { return d.Write(b) }
func (d *devGuarded) read() ([]byte, error)       { return d.Read() }
func devPtr(p detcoll.DevicePtr) driver.DevicePtr { return driver.DevicePtr(p) }

// checkDevice waits for the legacy stream, then compares out with want
// and checks its guards.
func checkDevice(c *detcoll.Comm, dt detcoll.DType, out *devGuarded, want []byte) error {
	if err := c.Synchronize(0); err != nil {
		return err
	}
	return check.Expect(dt, out.Buffer, want)
}
