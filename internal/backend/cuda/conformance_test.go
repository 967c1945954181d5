package cuda_test

import (
	"context"
	"errors"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/detcoll/detcoll"
	"github.com/detcoll/detcoll/internal/binding/driver"
	"github.com/detcoll/detcoll/internal/testkit/check"
	"github.com/detcoll/detcoll/internal/testkit/conformance"
	"github.com/detcoll/detcoll/internal/testkit/gputest"
	"github.com/detcoll/detcoll/internal/testkit/ranktest"
	"github.com/detcoll/detcoll/internal/tools/devmem"
)

// The GPU tests of the backend through the public API: the conformance
// suite on device memory, and the tests of what only this backend does
// (CUDA graphs, streams, capture; the other files). Each parent test ends
// with "cuda: ..." where no GPU is here (skips; fails under
// DETCOLL_REQUIRE_GPU=1, gputest) and otherwise starts its ranks through
// ranktest: one per GPU (device = LOCAL_RANK), or, with fewer GPUs than
// ranks, time-sliced on those there are (DETCOLL_CUDA_SHARE_DEVICES=1:
// rank r on GPU r mod their count), which checks correctness only.

// llMax is the backend's default LL threshold at W <= 2 (bytes of input),
// which the sweeps straddle; they span many of its 4 KiB windows.
const llMax = 2 << 20

var backend = conformance.Backend{
	Name:   "cuda",
	Device: true,
	Memory: func(c *detcoll.Comm) (check.Memory, func(), error) {
		g, m, err := openGPU(c)
		if err != nil {
			return nil, nil, err
		}
		return m, func() { m.Arena.Free(); g.Close() }, nil
	},
	Env: gpuEnv,
	Capacity: func(world int) int64 {
		switch {
		case world <= 2:
			return 16 << 20
		case world <= 4:
			return 32 << 20
		}
		return 64 << 20 // the sweep's largest reduce-scatter input at W=8
	},
	Timeout:      20 * time.Second,
	ReduceCounts: reduceCounts,
	GatherBytes:  func(world int) []int { return append(conformance.GatherBytes(world), llMax+5) },
	Paths:        []int{100, 600000}, // LL; 2.4 MB: the push path
}

// reduceCounts are element counts around the paths' thresholds
// (all-reduce: llMax of input; reduce-scatter: of W*n input) with odd
// tails, tiny sizes and a large odd one.
func reduceCounts(dt detcoll.DType, world int, short bool) []int {
	f, w := llMax/dt.Size(), world
	if short {
		return []int{0, 1, 7, f/w + 1, f + 1, 3*f + 5}
	}
	return []int{0, 1, 2, 3, 7, 31, 33, 1000, f/w - 1, f / w, f/w + 1, f - 1, f, f + 1, 3*f + 5, 100003}
}

// openGPU opens the GPU of c, a cuda communicator, on the calling
// goroutine's thread (a rank is a process of its own), and a Memory on
// the legacy default stream.
func openGPU(c *detcoll.Comm) (*devmem.GPU, *devmem.Memory, error) {
	g, err := devmem.Open(c.Device())
	if err != nil {
		return nil, nil, err
	}
	return g, devmem.NewMemory(0), nil
}

// gpuRank is a rank of a test of this package: its communicator, its
// GPU, the memory of its buffers on the legacy default stream, and
// streams of its own.
type gpuRank struct {
	c       *detcoll.Comm
	gpu     *devmem.GPU
	mem     *devmem.Memory
	streams []driver.Stream
}

// openRank opens r's communicator and GPU, and a stream of each of flags.
func openRank(r *conformance.Rank, flags ...driver.StreamFlags) (*gpuRank, error) {
	c, err := r.Open(context.Background())
	if err != nil {
		return nil, err
	}
	g := &gpuRank{c: c}
	if g.gpu, g.mem, err = openGPU(c); err != nil {
		c.Close(context.Background())
		return nil, err
	}
	for _, f := range flags {
		s, err := driver.StreamCreate(f)
		if err != nil {
			g.close()
			return nil, err
		}
		g.streams = append(g.streams, s)
	}
	return g, nil
}

// close destroys the streams, closes the communicator and releases the
// GPU.
func (g *gpuRank) close() {
	for _, s := range g.streams {
		s.Destroy()
	}
	g.c.Close(context.Background())
	g.mem.Arena.Free()
	g.gpu.Close()
}

// gpuEnv ends t where case c cannot run at world ranks here, and makes
// ranks share the GPUs where there are fewer than ranks.
func gpuEnv(t *testing.T, c *conformance.Case, world int) []string {
	t.Helper()
	have, err := devmem.Count()
	if err != nil {
		gputest.Missing(t, "cuda: no CUDA driver: %v", err)
		return nil
	}
	need := 1
	if c.OwnDevices {
		need = world
	}
	gputest.Need(t, need, have, nil)
	if have < world {
		t.Logf("%d ranks share %d GPUs (under MPS where it runs, else time-sliced)", world, have)
		return []string{"DETCOLL_CUDA_SHARE_DEVICES=1"}
	}
	return nil
}

// requireOKAndLog is the Case.Check of a case whose ranks report what
// they measured: every rank must pass, and what each said is logged.
func requireOKAndLog(t *testing.T, world int, res []ranktest.Result) {
	ranktest.RequireOK(t, res)
	for _, r := range res {
		t.Log(strings.TrimSpace(r.Output))
	}
}

// wider is case c at W=3, 4 and 8 on the GPUs there are (on fewer,
// ranks share them): the kernels' code for more than two ranks (trees
// over 3, 4 and 8 leaves, LL with several peers, the push path's slots),
// and, where ranks share a GPU under MPS, eight kernels that must all be
// resident at once (issue 22). Time-sliced, it is slow: the short sweep
// only, and nothing here is a timing.
func wider(c conformance.Case) conformance.Case {
	c.Name = "Wider/" + c.Name
	c.DeviceWorlds = []int{3, 4, 8}
	c.Short = true
	c.Timeout = time.Minute
	c.Limit = 4 * time.Minute
	return c
}

var widerCases = []conformance.Case{wider(conformance.Find("ReduceMatchesReference")), wider(conformance.Find("Gather"))}

func TestMain(m *testing.M) {
	conformance.Main(backend, slices.Concat(conformance.Cases(), widerCases, deviceCases))
	os.Exit(m.Run())
}

// TestConformanceGPU runs the suite's cases that run on device memory:
// reductions and gathers against the reference at W=1 and 2, NaN at W=1,
// mismatch, skipped call, kill and abort at W=2.
func TestConformanceGPU(t *testing.T) { conformance.Run(t, backend, conformance.Cases()) }

// TestDeviceWiderWorldsGPU runs the reductions and gathers at W=3, 4 and 8.
func TestDeviceWiderWorldsGPU(t *testing.T) { conformance.Run(t, backend, widerCases) }

// TestCudaUnavailable: where there is no CUDA driver or device, opening
// the cuda backend fails with ErrUnavailable (on a GPU machine it is
// skipped).
func TestCudaUnavailable(t *testing.T) {
	if n, _ := devmem.Count(); n > 0 {
		t.Skip("cuda: a GPU is here")
	}
	_, err := detcoll.Open(context.Background(), detcoll.Options{Backend: "cuda", WorldSize: 1})
	if !errors.Is(err, detcoll.ErrUnavailable) {
		t.Fatalf("got %v, want ErrUnavailable", err)
	}
	t.Logf("as expected: %v", err)
}
