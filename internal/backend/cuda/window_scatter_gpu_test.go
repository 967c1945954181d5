package cuda_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/detcoll/detcoll"
	"github.com/detcoll/detcoll/internal/binding/driver"
	"github.com/detcoll/detcoll/internal/core/num"
	"github.com/detcoll/detcoll/internal/testkit/check"
	"github.com/detcoll/detcoll/internal/testkit/conformance"
	"github.com/detcoll/detcoll/internal/tools/devmem"
)

// The windows test's reduce-scatters (windowRank runs them): the
// registered path's second operation, and its mismatch.

// scatterCall is one reduce-scatter of the windows test: n elements of
// output per rank, W*n of input.
type scatterCall struct {
	dt  detcoll.DType
	red num.RedOp
	n   int
	off int // the buffers' offset past their aligned start: rank-dependent where a multiple of 16
}

// scatterCalls take every operator family above the LL threshold with
// outputs of whole 16-byte vectors (the registered path), at offsets that
// differ between ranks; then an output of 2 bytes past a vector, a
// misaligned pair of buffers (both the push path, same bits) and a call
// under the LL threshold, in windows.
func scatterCalls(rank int) []scatterCall {
	f := llMax / 2 // bf16 elements at the LL threshold: a 1 MiB output is half of it
	aligned := 16 * (rank + 1)
	return []scatterCall{
		{detcoll.TypeBFloat16, num.Sum, f/2 + 8, aligned},
		{detcoll.TypeFloat32, num.PreMulSum, f/4 + 4, aligned},
		{detcoll.TypeFloat64, num.Avg, f/8 + 2, 0},
		{detcoll.TypeFloat16, num.Max, f + 8, aligned},
		{detcoll.TypeInt32, num.Min, f/4 + 4, aligned},
		{detcoll.TypeBFloat16, num.Sum, f/2 + 1, aligned}, // 2 bytes past a vector: the push path
		{detcoll.TypeBFloat16, num.Sum, f/2 + 8, 2},       // misaligned: the push path
		{detcoll.TypeBFloat16, num.Sum, 1000, aligned},    // LL, in windows
	}
}

// bufPtr is the device address of a buffer of the windows test's memory.
func bufPtr(b check.Buffer) detcoll.DevicePtr {
	return b.(interface{ Ptr() detcoll.DevicePtr }).Ptr()
}

// scatterRound runs scatterCalls on c with their buffers from alloc (in
// the rank's window) and checks each output, its guards and the input
// (the peers read it in place: it must come back unchanged) against the
// reference tree over every rank's share. It returns the calls checked.
func scatterRound(c *detcoll.Comm, alloc func(n, off int) (check.Buffer, error), round int) (int, error) {
	w, rank := c.WorldSize(), c.Rank()
	checked := 0
	for i, call := range scatterCalls(rank) {
		size := call.dt.Size()
		all := make([][]byte, w)
		for p := range all {
			all[p] = check.Input(seed, 100*round+50+i, p, w*call.n, call.dt)
		}
		var factors []float64
		if call.red == num.PreMulSum {
			factors = check.PremulFactors(call.dt, w)
		}
		want := check.ReferenceReduce(call.dt, call.red, check.Shares(all, rank, call.n*size), factors)
		in, err := alloc(w*call.n*size, call.off)
		if err != nil {
			return checked, err
		}
		out, err := alloc(call.n*size, call.off)
		if err != nil {
			return checked, err
		}
		if err := in.Write(all[rank]); err != nil {
			return checked, err
		}
		err = c.ReduceScatterDevice(bufPtr(in), bufPtr(out), call.n, call.dt, 0, check.RedOpOf(call.red, rank))
		if err == nil {
			err = c.Synchronize(0)
		}
		if err == nil {
			err = check.Expect(call.dt, out, want)
		}
		if err == nil {
			err = check.Unchanged(in, all[rank])
		}
		if err != nil {
			return checked, fmt.Errorf("round %d, reduce-scatter %d (%+v): %w", round, i, call, err)
		}
		checked++
	}
	return checked, nil
}

// scatterMismatch opens a second communicator on g's (the first is
// poisoned by the all-reduce's mismatch that follows), registers a window
// on every rank and runs a reduce-scatter above the LL threshold whose
// buffers lie in it on rank 0 alone: every rank must fail with a mismatch
// whose signatures say that rank 0's buffers were registered and no
// other's. It returns that mismatch, or err where the call went
// otherwise.
func scatterMismatch(r *conformance.Rank, g *gpuRank) (mismatch, err error) {
	ctx := context.Background()
	c, rank, w := g.c, r.Rank, r.World
	o := c.Options()
	if o.Addr, err = secondAddr(c, g.mem); err != nil {
		return nil, err
	}
	c2, err := detcoll.Open(ctx, o)
	if err != nil {
		return nil, fmt.Errorf("open the second communicator: %w", err)
	}
	defer c2.Close(ctx)
	var wins []*detcoll.Window
	reg := devmem.NewMemory(0)
	reg.Arena.ChunkSize = 64 << 20
	reg.Arena.OnChunk = func(p driver.DevicePtr, n int) error {
		win, err := c2.RegisterDevice(ctx, detcoll.DevicePtr(p), n)
		if err == nil {
			wins = append(wins, win)
		}
		return err
	}
	defer reg.Arena.Free()
	defer func() {
		for _, win := range wins {
			win.Deregister(ctx) // before the memory goes (the defer above runs after)
		}
	}()
	if _, err := reg.Alloc(16, 0); err != nil { // every rank registers its window
		return nil, err
	}
	n := llMax / 4 // float32: a 2 MiB output, whole 16-byte vectors
	mem := check.Memory(g.mem)
	if rank == 0 {
		mem = reg
	}
	in, err := mem.Alloc(w*4*n, 0)
	if err != nil {
		return nil, err
	}
	out, err := mem.Alloc(4*n, 0)
	if err != nil {
		return nil, err
	}
	if err := in.Write(check.Input(seed, 998, rank, w*n, detcoll.TypeFloat32)); err != nil {
		return nil, err
	}
	err = c2.ReduceScatterDevice(bufPtr(in), bufPtr(out), n, detcoll.TypeFloat32, 0)
	if err == nil {
		err = c2.Synchronize(0)
	}
	var me *detcoll.MismatchError
	if !errors.Is(err, detcoll.ErrMismatch) || !errors.As(err, &me) || len(me.Signatures) != w {
		return nil, fmt.Errorf("reduce-scatter registered on rank 0 alone: %v, want a mismatch listing %d signatures", err, w)
	}
	for p, s := range me.Signatures {
		if s.Registered != (p == 0) {
			return nil, fmt.Errorf("reduce-scatter registered on rank 0 alone: rank %d's signature says registered=%v: %v", p, s.Registered, err)
		}
	}
	return err, nil
}
