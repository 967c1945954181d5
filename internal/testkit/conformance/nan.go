package conformance

import (
	"context"
	"fmt"

	"github.com/detcoll/detcoll"
	"github.com/detcoll/detcoll/internal/testkit/check"
)

// nanVectors are inputs of one rank and their sums, bit patterns by hand:
// payloads and signs of NaNs do not survive, everything else does.
var nanVectors = []struct {
	dt       detcoll.DType
	in, want []uint64
}{
	{detcoll.TypeBFloat16, []uint64{0x7fc2, 0xffc1, 0x7f81, 0x3f80, 0x7f80, 0xff80, 0x8000},
		[]uint64{0x7fff, 0x7fff, 0x7fff, 0x3f80, 0x7f80, 0xff80, 0x8000}},
	{detcoll.TypeFloat16, []uint64{0x7e01, 0xfc01, 0x7c00, 0x3c00, 0x8000},
		[]uint64{0x7fff, 0x7fff, 0x7c00, 0x3c00, 0x8000}},
	{detcoll.TypeFloat32, []uint64{0x7fc00001, 0xff800001, 0x3f800000, 0xff800000, 0x80000000},
		[]uint64{0x7fffffff, 0x7fffffff, 0x3f800000, 0xff800000, 0x80000000}},
	{detcoll.TypeFloat64, []uint64{0x7ff8000000000001, 0xfff0000000000001, 0x4000000000000000, 0x8000000000000000},
		[]uint64{0x7fffffffffffffff, 0x7fffffffffffffff, 0x4000000000000000, 0x8000000000000000}},
}

func bits(dt detcoll.DType, v []uint64) []byte {
	b := make([]byte, len(v)*dt.Size())
	for i, x := range v {
		check.PutBits(b[i*dt.Size():], dt.Size(), x)
	}
	return b
}

// nanRank (W=1): at one rank a reduction is a copy, but every NaN result
// is still the canonical NaN of its type, as at any W, whichever call and
// path: AllReduce (out of place, in place), ReduceScatter and
// AllReduceStaged of the hand-written vectors, and of inputs with a NaN of
// random payload and sign in every third element, at sizes of the small
// paths and at 3 MiB (the cuda staging path), each against check.Canonical.
func nanRank(r *Rank, c *detcoll.Comm, m check.Memory) error {
	ctx := context.Background()
	if r.World != 1 {
		return fmt.Errorf("the NaN case runs at W=1, not %d", r.World)
	}
	checked := 0
	for _, v := range nanVectors {
		if err := canonicalCalls(c, m, v.dt, bits(v.dt, v.in), bits(v.dt, v.want)); err != nil {
			return fmt.Errorf("%v % x: %w", v.dt, bits(v.dt, v.in), err)
		}
		checked += 4
	}
	for _, dt := range check.FloatTypes {
		for _, n := range []int{1, 7, 1000, 3<<20/dt.Size() + 3} {
			in := check.NaNInput(dt, n, seed)
			if err := canonicalCalls(c, m, dt, in, check.Canonical(dt, in)); err != nil {
				return fmt.Errorf("%v n=%d: %w", dt, n, err)
			}
			checked += 4
		}
	}
	fmt.Printf("rank 0: %d calls with NaN payloads gave canonical NaNs\n", checked)
	return c.Close(ctx)
}

// canonicalCalls runs the four reductions of in at one rank and compares
// each with want.
func canonicalCalls(c *detcoll.Comm, m check.Memory, dt detcoll.DType, in, want []byte) error {
	m.Reset()
	src, err := check.Alloc(m, len(in), 0, in)
	if err != nil {
		return err
	}
	calls := []struct {
		name string
		call func(out check.Buffer) error
	}{
		{"AllReduce", func(out check.Buffer) error { return m.AllReduce(c, dt, src, out) }},
		{"AllReduce in place", func(out check.Buffer) error {
			if err := out.Write(in); err != nil {
				return err
			}
			return m.AllReduce(c, dt, out, out)
		}},
		{"ReduceScatter", func(out check.Buffer) error { return m.ReduceScatter(c, dt, src, out) }},
		{"AllReduceStaged", func(out check.Buffer) error { return m.AllReduceStaged(c, dt, src, out) }},
	}
	for _, call := range calls {
		out, err := m.Alloc(len(in), 0)
		if err != nil {
			return err
		}
		if err := call.call(out); err != nil {
			return fmt.Errorf("%s: %w", call.name, err)
		}
		if err := check.Expect(dt, out, want); err != nil {
			return fmt.Errorf("%s: %w", call.name, err)
		}
	}
	return nil
}
