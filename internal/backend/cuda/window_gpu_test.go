package cuda_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"testing"

	"github.com/detcoll/detcoll"
	"github.com/detcoll/detcoll/internal/binding/driver"
	"github.com/detcoll/detcoll/internal/core/num"
	"github.com/detcoll/detcoll/internal/testkit/check"
	"github.com/detcoll/detcoll/internal/testkit/conformance"
	"github.com/detcoll/detcoll/internal/tools/devmem"
)

var windowCase = conformance.Case{Name: "DeviceWindows", DeviceWorlds: []int{2, 3, 4, 8}, Limit: 4 * time.Minute, Rank: windowRank}

// TestDeviceWindowsGPU: all-reduces whose buffers lie in registered
// windows (the registered path) against the reference, at W=2, 3, 4 and 8.
func TestDeviceWindowsGPU(t *testing.T) { conformance.RunCase(t, backend, &windowCase) }

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
// windowCalls with their buffers in it, five rounds with new inputs, and
// checks every output and its guards against the reference; then it calls
// with its buffers registered on rank 0 only and expects a mismatch on
// every rank.
func windowRank(r *conformance.Rank) error {
	g, err := openRank(r)
	if err != nil {
		return err
	}
	defer g.close()
	c, w, rank := g.c, r.World, r.Rank
	ctx := context.Background()
	var wins []*detcoll.Window
	reg := devmem.NewMemory(0)
	reg.Arena.ChunkSize = 160 << 20
	reg.Arena.OnChunk = func(p driver.DevicePtr, n int) error {
		win, err := c.RegisterDevice(ctx, detcoll.DevicePtr(p), n)
		wins = append(wins, win)
		return err
	}
	defer reg.Arena.Free()
	checked := 0
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
			ip, op := in.(*devmem.Buffer).Ptr(), out.(*devmem.Buffer).Ptr()
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
	}
	if len(wins) != 1 {
		return fmt.Errorf("%d windows registered, want 1", len(wins))
	}
	// Registered on rank 0 alone: a mismatch on every rank.
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
	p := in.(*devmem.Buffer).Ptr()
	err = c.AllReduceDevice(p, p, n, detcoll.TypeFloat32, 0)
	if err == nil {
		err = c.Synchronize(0)
	}
	if !errors.Is(err, detcoll.ErrMismatch) {
		return fmt.Errorf("registered on rank 0 alone: %v, want a mismatch", err)
	}
	fmt.Printf("rank %d: %d all-reduces in a window checked; registered on rank 0 alone: %v\n", rank, checked, err)
	for _, win := range wins {
		win.Deregister(ctx)
	}
	return nil
}
