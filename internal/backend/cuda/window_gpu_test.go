package cuda_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/detcoll/detcoll"
	"github.com/detcoll/detcoll/internal/binding/driver"
	"github.com/detcoll/detcoll/internal/core/num"
	"github.com/detcoll/detcoll/internal/testkit/check"
	"github.com/detcoll/detcoll/internal/testkit/conformance"
	"github.com/detcoll/detcoll/internal/tools/devmem"
)

var windowCase = conformance.Case{Name: "DeviceWindows", DeviceWorlds: []int{2, 3, 4, 8}, Limit: 4 * time.Minute, Rank: windowRank}

// TestDeviceWindowsGPU: all-reduces and reduce-scatters whose buffers lie
// in registered windows (the registered path) against the reference, at
// W=2, 3, 4 and 8.
// The windows are cuMemAlloc memory, shared over CUDA IPC.
func TestDeviceWindowsGPU(t *testing.T) { conformance.RunCase(t, backend, &windowCase) }

// TestDeviceWindowsCuMemGPU is TestDeviceWindowsGPU with windows of
// cuMemCreate memory, as NCCL's ncclMemAlloc makes it, shared as file
// descriptors (window_cumem_gpu_test.go); then it checks the failures
// such windows can meet, and that many registrations leak nothing.
func TestDeviceWindowsCuMemGPU(t *testing.T) {
	t.Setenv(windowMemoryEnv, "cumem") // the ranks inherit it
	conformance.RunCase(t, backend, &windowCase)
}

// windowMemoryEnv chooses the memory of windowRank's windows:
// "cumem" for cuMemCreate memory, else cuMemAlloc memory.
const windowMemoryEnv = "DETCOLL_TEST_WINDOW_MEMORY"

// windowMemory is where windowRank's buffers lie: Alloc carves them out
// of windows, registering a window where none has room.
type windowMemory interface {
	Alloc(n, off int) (check.Buffer, error)
	Reset()
}

// ptrOf is the device address of a buffer of a windowMemory.
func ptrOf(b check.Buffer) detcoll.DevicePtr {
	return b.(interface{ Ptr() detcoll.DevicePtr }).Ptr()
}

// windowCall is one all-reduce of the windows test.
type windowCall struct {
	dt      detcoll.DType
	red     num.RedOp
	n       int
	inPlace bool
	off     int // the buffers' offset past their aligned start: rank-dependent where a multiple of 16
}

// windowCalls straddle the LL threshold (registered only above it), take
// every operator family, odd counts, in and out of place, and offsets that
// differ between ranks (16-byte aligned: registered) or are misaligned
// within a window (the push path, same bits).
func windowCalls(rank int) []windowCall {
	f := llMax / 2 // bf16 elements at the LL threshold
	aligned := 16 * (rank + 1)
	return []windowCall{
		{detcoll.TypeBFloat16, num.Sum, f + 1, false, aligned},
		{detcoll.TypeBFloat16, num.Sum, 3*f + 5, true, aligned},
		{detcoll.TypeFloat32, num.Sum, f/2 + 7, false, 0},
		{detcoll.TypeFloat64, num.Sum, 2*f/8*3 + 1, true, aligned},
		{detcoll.TypeFloat16, num.Max, f + 33, false, aligned},
		{detcoll.TypeBFloat16, num.PreMulSum, f + 3, false, aligned},
		{detcoll.TypeFloat32, num.Avg, f + 1, true, 0},
		{detcoll.TypeInt32, num.Min, f/2 + 1, false, aligned},
		{detcoll.TypeBFloat16, num.Sum, 1000, false, aligned}, // LL, in windows
		{detcoll.TypeBFloat16, num.Sum, f + 1, false, 2},      // misaligned: the push path
	}
}

// windowRank registers a 160 MiB window (each rank its own), runs
// windowCalls and scatterCalls with their buffers in it, five rounds with
// new inputs, and checks every output and its guards against the
// reference; then it calls with its buffers registered on rank 0 only and
// expects a mismatch on every rank: a reduce-scatter on a second
// communicator (scatterMismatch), then an all-reduce. Under
// windowMemoryEnv=cumem the window is cuMemCreate memory, and
// cuMemRank's checks come before the mismatch.
func windowRank(r *conformance.Rank) error {
	g, err := openRank(r)
	if err != nil {
		return err
	}
	defer g.close()
	c, w, rank := g.c, r.World, r.Rank
	ctx := context.Background()
	var wins []*detcoll.Window
	register := func(p driver.DevicePtr, n int) error {
		win, err := c.RegisterDevice(ctx, detcoll.DevicePtr(p), n)
		wins = append(wins, win)
		return err
	}
	const windowSize = 160 << 20
	cumem := os.Getenv(windowMemoryEnv) == "cumem"
	var reg windowMemory
	if cumem {
		m, err := newCuMemWindow(c, windowSize, register)
		if err != nil {
			return err
		}
		defer m.Free()
		reg = m
	} else {
		m := devmem.NewMemory(0)
		m.Arena.ChunkSize = windowSize
		m.Arena.OnChunk = register
		defer m.Arena.Free()
		reg = m
	}
	checked, scattered := 0, 0
	for round := range 5 {
		reg.Reset()
		for i, call := range windowCalls(rank) {
			size := call.dt.Size()
			all := make([][]byte, w)
			for p := range all {
				all[p] = check.Input(seed, 100*round+i, p, call.n, call.dt)
			}
			var factors []float64
			if call.red == num.PreMulSum {
				factors = check.PremulFactors(call.dt, w)
			}
			want := check.ReferenceReduce(call.dt, call.red, all, factors)
			in, err := reg.Alloc(call.n*size, call.off)
			if err != nil {
				return err
			}
			out := in
			if !call.inPlace {
				if out, err = reg.Alloc(call.n*size, call.off); err != nil {
					return err
				}
			}
			if err := in.Write(all[rank]); err != nil {
				return err
			}
			ip, op := ptrOf(in), ptrOf(out)
			if err := c.AllReduceDevice(ip, op, call.n, call.dt, 0, check.RedOpOf(call.red, rank)); err != nil {
				return fmt.Errorf("round %d, call %d (%+v): %w", round, i, call, err)
			}
			if err := c.Synchronize(0); err != nil {
				return fmt.Errorf("round %d, call %d (%+v): %w", round, i, call, err)
			}
			if err := check.Expect(call.dt, out, want); err != nil {
				return fmt.Errorf("round %d, call %d (%+v): %w", round, i, call, err)
			}
			checked++
		}
		k, err := scatterRound(c, reg.Alloc, round)
		scattered += k
		if err != nil {
			return err
		}
	}
	if len(wins) != 1 {
		return fmt.Errorf("%d windows registered, want 1", len(wins))
	}
	if cumem {
		// Before the mismatch below, which poisons the communicator.
		if err := cuMemRank(r, g); err != nil {
			return err
		}
	}
	// Registered on rank 0 alone: a mismatch on every rank, for a
	// reduce-scatter (on a communicator of its own: the all-reduce's
	// poisons this one), then for an all-reduce.
	rsMismatch, err := scatterMismatch(r, g)
	if err != nil {
		return err
	}
	n := llMax
	var in check.Buffer
	if rank == 0 {
		reg.Reset()
		in, err = reg.Alloc(4*n, 0)
	} else {
		in, err = g.mem.Alloc(4*n, 0)
	}
	if err != nil {
		return err
	}
	if err := in.Write(check.Input(seed, 999, rank, n, detcoll.TypeFloat32)); err != nil {
		return err
	}
	p := ptrOf(in)
	err = c.AllReduceDevice(p, p, n, detcoll.TypeFloat32, 0)
	if err == nil {
		err = c.Synchronize(0)
	}
	if !errors.Is(err, detcoll.ErrMismatch) {
		return fmt.Errorf("registered on rank 0 alone: %v, want a mismatch", err)
	}
	fmt.Printf("rank %d: %d all-reduces and %d reduce-scatters in a window checked; registered on rank 0 alone: %v; reduce-scatter: %v\n",
		rank, checked, scattered, err, rsMismatch)
	for _, win := range wins {
		win.Deregister(ctx)
	}
	return nil
}
