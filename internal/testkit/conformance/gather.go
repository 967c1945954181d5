package conformance

import (
	"bytes"
	"context"
	"fmt"
	"slices"

	"github.com/detcoll/detcoll"
	"github.com/detcoll/detcoll/internal/testkit/check"
)

// gatherOffsets are (input, output) byte offsets of the gathers.
var gatherOffsets = [][2]int{{0, 0}, {1, 0}, {0, 3}, {5, 7}}

// gatherRank checks AllGather over the backend's sizes and offset pairs
// (out of place and in place), typed gathers, AllGatherMany against the
// concatenations, and Broadcast from every root.
func gatherRank(r *Rank, c *detcoll.Comm, m check.Memory) error {
	ctx := context.Background()
	w, rank := r.World, r.Rank
	u8 := detcoll.TypeUint8
	call, calls := 0, 0
	sizes := r.Backend.GatherBytes(w)
	for _, n := range sizes {
		call++
		ins := inputs(call, w, n, u8)
		want := bytes.Join(ins, nil)
		for _, offs := range gatherOffsets {
			m.Reset()
			if err := gatherAt(c, m, u8, ins, want, rank, offs); err != nil {
				return fmt.Errorf("%d bytes, offsets %v: %w", n, offs, err)
			}
			calls += 2
		}
	}
	// Typed gathers of every size class.
	for _, dt := range []detcoll.DType{detcoll.TypeBFloat16, detcoll.TypeUint16, detcoll.TypeFloat32, detcoll.TypeInt64} {
		for _, n := range []int{1, 13, 1001} {
			call++
			m.Reset()
			ins := inputs(call, w, n, dt)
			if err := gatherAt(c, m, dt, ins, bytes.Join(ins, nil), rank, [2]int{0, dt.Size()}); err != nil {
				return fmt.Errorf("%v n=%d: %w", dt, n, err)
			}
			calls += 2
		}
	}
	// AllGatherMany: four buffers (one call on the small paths) and ten.
	for _, many := range []struct {
		dt     detcoll.DType
		counts []int
	}{
		{detcoll.TypeFloat32, []int{3, 0, 4097, 64}},
		{u8, []int{5, 0, 1000, 17}},
		{u8, []int{5, 0, 1000, 17, 1, 2, 3, 4, 5, 70001}},
	} {
		call++
		m.Reset()
		if err := allGatherMany(c, m, many.dt, many.counts, w, rank, call); err != nil {
			return fmt.Errorf("AllGatherMany %v %v: %w", many.dt, many.counts, err)
		}
		calls++
	}
	// Broadcast from every root, of every size up to past the largest
	// gather's, and of int32s.
	for root := range w {
		for _, n := range []int{0, 1, 1000, 100001, slices.Max(sizes) + 2} {
			call++
			m.Reset()
			if err := broadcast(c, m, u8, n, root, rank, call); err != nil {
				return fmt.Errorf("Broadcast of %d bytes from %d: %w", n, root, err)
			}
			calls++
		}
		call++
		if err := broadcast(c, m, detcoll.TypeInt32, 777, root, rank, call); err != nil {
			return fmt.Errorf("Broadcast of 777 int32 from %d: %w", root, err)
		}
		calls++
	}
	if err := c.Barrier(); err != nil {
		return err
	}
	fmt.Printf("rank %d: %d gathers and broadcasts checked\n", rank, calls)
	return c.Close(ctx)
}

// inputs returns every rank's input of n elements of dt for call.
func inputs(call, w, n int, dt detcoll.DType) [][]byte {
	ins := make([][]byte, w)
	for p := range ins {
		ins[p] = check.Input(seed, call, p, n, dt)
	}
	return ins
}

// gatherAt gathers ins, every rank's elements of dt, whose concatenation
// is want, at the byte offset pair offs: out of place and in place.
func gatherAt(c *detcoll.Comm, m check.Memory, dt detcoll.DType, ins [][]byte, want []byte, rank int, offs [2]int) error {
	mine := ins[rank]
	in, err := check.Alloc(m, len(mine), offs[0], mine)
	if err != nil {
		return err
	}
	out, err := m.Alloc(len(want), offs[1])
	if err != nil {
		return err
	}
	if err := m.AllGather(c, dt, in, out); err != nil {
		return fmt.Errorf("AllGather: %w", err)
	}
	if err := check.Expect(dt, out, want); err != nil {
		return fmt.Errorf("AllGather: %w", err)
	}
	if err := check.Unchanged(in, mine); err != nil {
		return fmt.Errorf("AllGather: %w", err)
	}
	// In place: the input is the output's own slot.
	buf, err := m.Alloc(len(want), offs[1])
	if err != nil {
		return err
	}
	slot := buf.Slice(rank*len(mine), (rank+1)*len(mine))
	if err := slot.Write(mine); err != nil {
		return err
	}
	if err := m.AllGather(c, dt, slot, buf); err != nil {
		return fmt.Errorf("AllGather in place: %w", err)
	}
	if err := check.Expect(dt, buf, want); err != nil {
		return fmt.Errorf("AllGather in place: %w", err)
	}
	return nil
}

// allGatherMany checks AllGatherMany of buffers of counts elements of dt
// per rank, inputs one element off and outputs three, against each
// buffer's concatenation.
func allGatherMany(c *detcoll.Comm, m check.Memory, dt detcoll.DType, counts []int, w, rank, call int) error {
	size := dt.Size()
	var ins, outs []check.Buffer
	var wants [][]byte
	for k, n := range counts {
		all := inputs(call+k, w, n, dt)
		in, err := check.Alloc(m, n*size, size, all[rank])
		if err != nil {
			return err
		}
		out, err := m.Alloc(w*n*size, 3*size)
		if err != nil {
			return err
		}
		ins, outs, wants = append(ins, in), append(outs, out), append(wants, bytes.Join(all, nil))
	}
	if err := m.AllGatherMany(c, dt, ins, outs); err != nil {
		return err
	}
	for k := range outs {
		if err := check.Expect(dt, outs[k], wants[k]); err != nil {
			return fmt.Errorf("buffer %d: %w", k, err)
		}
	}
	return nil
}

// broadcast checks a Broadcast of n elements of dt from root, the buffer
// three elements off.
func broadcast(c *detcoll.Comm, m check.Memory, dt detcoll.DType, n, root, rank, call int) error {
	data := check.Input(seed, call, root, n, dt)
	buf, err := m.Alloc(len(data), 3*dt.Size())
	if err != nil {
		return err
	}
	if rank == root {
		if err := buf.Write(data); err != nil {
			return err
		}
	}
	if err := m.Broadcast(c, dt, buf, root); err != nil {
		return err
	}
	return check.Expect(dt, buf, data)
}
