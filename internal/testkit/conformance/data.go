package conformance

import (
	"context"
	"fmt"
	"time"

	"github.com/detcoll/detcoll"
	"github.com/detcoll/detcoll/internal/testkit/check"
)

// The data cases: every result bit for bit against the independent
// reference (check.ReferenceSum) or the exact concatenation, with guard
// bytes around every buffer, inputs checked unchanged.

// seed makes the inputs; every rank derives every peer's input from it.
const seed = 20261130

// offsets (in elements) at which the reductions' buffers start: aligned,
// odd, and off a 16-byte line.
var offsets = []int{0, 1, 3}

func dataCases() []Case {
	return []Case{
		{Name: "ReduceMatchesReference", Worlds: []int{1, 2, 3, 4, 5, 8}, ShortWorlds: []int{1, 2, 3},
			DeviceWorlds: []int{1, 2}, Limit: 5 * time.Minute, Rank: withMemory(reduceRank)},
		{Name: "Gather", Worlds: []int{1, 2, 3, 4, 5, 8}, ShortWorlds: []int{1, 2, 3},
			DeviceWorlds: []int{1, 2}, Limit: 5 * time.Minute, Rank: withMemory(gatherRank)},
		{Name: "SizeAndOffsetInvariance", Worlds: []int{1, 2, 3, 4}, Limit: 2 * time.Minute, Rank: withMemory(invarianceRank)},
		{Name: "TensorParallelNesting", Worlds: []int{1, 2, 4, 8}, Limit: 2 * time.Minute, Rank: withMemory(nestingRank)},
		{Name: "OneRankNaNsAreCanonical", Worlds: []int{1}, DeviceWorlds: []int{1}, Limit: 2 * time.Minute, Rank: withMemory(nanRank)},
	}
}

// reduceRank checks AllReduce (out of place twice, in place, staged),
// ReduceScatter (out of place, in place) and ReduceScatterMany against the
// reference tree for every float type, the backend's sizes and every
// offset.
func reduceRank(r *Rank, c *detcoll.Comm, m check.Memory) error {
	ctx := context.Background()
	// The first call of the communicator is a staged all-reduce small
	// enough for every one-shot path: on cuda its Stage launch refreshes
	// the flags of the receive slot that the call then uses, and the call
	// must not take those lines for data.
	f32 := detcoll.TypeFloat32
	first := check.NewReduceCase(seed, 0, r.World, r.Rank, 1000, f32)
	in, err := check.Alloc(m, 4000, 0, first.Ins[r.Rank])
	if err != nil {
		return err
	}
	out, err := m.Alloc(4000, 0)
	if err != nil {
		return err
	}
	if err := m.AllReduceStaged(c, f32, in, out); err != nil {
		return fmt.Errorf("first call, staged: %w", err)
	}
	if err := check.Expect(f32, out, first.Want); err != nil {
		return fmt.Errorf("first call, staged: %w", err)
	}
	calls, call := 1, 0
	for _, dt := range check.FloatTypes {
		for _, n := range r.Backend.ReduceCounts(dt, r.World, r.Short) {
			rc := check.NewReduceCase(seed, call+1, r.World, r.Rank, n, dt)
			call += 2
			for _, off := range offsets {
				m.Reset()
				k, err := reduceAt(c, m, dt, &rc, r.Rank, off*dt.Size())
				if err != nil {
					return fmt.Errorf("%v n=%d offset=%d: %w", dt, n, off, err)
				}
				calls += k
			}
		}
		// ReduceScatterMany equals one ReduceScatter per buffer: four
		// buffers (one call of the small path on cuda) and ten (chunked).
		for _, counts := range [][]int{{5, 0, 1000, 17}, {5, 0, 1000, 17, 1, 2, 3, 4, 5, 20001}} {
			m.Reset()
			if err := reduceScatterMany(c, m, dt, counts, r.World, r.Rank, call); err != nil {
				return fmt.Errorf("ReduceScatterMany %v %v: %w", dt, counts, err)
			}
			call += len(counts)
			calls += len(counts) + 1
		}
	}
	fmt.Printf("rank %d: %d reductions checked\n", r.Rank, calls)
	return c.Close(ctx)
}

// reduceAt runs the reductions of rc at byte offset off and returns how
// many calls it checked.
func reduceAt(c *detcoll.Comm, m check.Memory, dt detcoll.DType, rc *check.ReduceCase, rank, off int) (int, error) {
	mine, rsMine := rc.Ins[rank], rc.ScatterIns[rank]
	in, err := check.Alloc(m, len(mine), off, mine)
	if err != nil {
		return 0, err
	}
	// Out of place, twice: the same bits again.
	for rep := range 2 {
		out, err := m.Alloc(len(mine), off)
		if err != nil {
			return 0, err
		}
		if err := m.AllReduce(c, dt, in, out); err != nil {
			return 0, fmt.Errorf("AllReduce: %w", err)
		}
		if err := check.Expect(dt, out, rc.Want); err != nil {
			return 0, fmt.Errorf("AllReduce, repeat %d: %w", rep, err)
		}
	}
	if err := check.Unchanged(in, mine); err != nil {
		return 0, fmt.Errorf("AllReduce: %w", err)
	}
	buf, err := check.Alloc(m, len(mine), off, mine)
	if err != nil {
		return 0, err
	}
	if err := m.AllReduce(c, dt, buf, buf); err != nil {
		return 0, fmt.Errorf("AllReduce in place: %w", err)
	}
	if err := check.Expect(dt, buf, rc.Want); err != nil {
		return 0, fmt.Errorf("AllReduce in place: %w", err)
	}
	// Staged: the input copied into the staging, then reduced from there.
	out, err := m.Alloc(len(mine), off)
	if err != nil {
		return 0, err
	}
	if err := m.AllReduceStaged(c, dt, in, out); err != nil {
		return 0, fmt.Errorf("AllReduceStaged: %w", err)
	}
	if err := check.Expect(dt, out, rc.Want); err != nil {
		return 0, fmt.Errorf("AllReduceStaged: %w", err)
	}
	// ReduceScatter of W*n elements: this rank's n of the sum.
	rsIn, err := check.Alloc(m, len(rsMine), off, rsMine)
	if err != nil {
		return 0, err
	}
	rsOut, err := m.Alloc(len(mine), off)
	if err != nil {
		return 0, err
	}
	if err := m.ReduceScatter(c, dt, rsIn, rsOut); err != nil {
		return 0, fmt.Errorf("ReduceScatter: %w", err)
	}
	if err := check.Expect(dt, rsOut, rc.ScatterWant); err != nil {
		return 0, fmt.Errorf("ReduceScatter: %w", err)
	}
	if err := check.Unchanged(rsIn, rsMine); err != nil {
		return 0, fmt.Errorf("ReduceScatter: %w", err)
	}
	// In place: the output is this rank's share of the input.
	share := rsIn.Slice(rank*len(mine), (rank+1)*len(mine))
	if err := m.ReduceScatter(c, dt, rsIn, share); err != nil {
		return 0, fmt.Errorf("ReduceScatter in place: %w", err)
	}
	if err := check.Expect(dt, share, rc.ScatterWant); err != nil {
		return 0, fmt.Errorf("ReduceScatter in place: %w", err)
	}
	return 5, nil
}

// reduceScatterMany checks ReduceScatterMany of buffers of counts
// elements per rank against one ReduceScatter per buffer.
func reduceScatterMany(c *detcoll.Comm, m check.Memory, dt detcoll.DType, counts []int, w, rank, call int) error {
	size := dt.Size()
	var ins, outs []check.Buffer
	var singles [][]byte
	for k, n := range counts {
		in, err := check.Alloc(m, w*n*size, size, check.Input(seed, call+k, rank, w*n, dt))
		if err != nil {
			return err
		}
		single, err := m.Alloc(n*size, 0)
		if err != nil {
			return err
		}
		if err := m.ReduceScatter(c, dt, in, single); err != nil {
			return err
		}
		s, err := single.Read()
		if err != nil {
			return err
		}
		out, err := m.Alloc(n*size, 0)
		if err != nil {
			return err
		}
		ins, outs, singles = append(ins, in), append(outs, out), append(singles, s)
	}
	if err := m.ReduceScatterMany(c, dt, ins, outs); err != nil {
		return err
	}
	for k := range outs {
		if err := check.Expect(dt, outs[k], singles[k]); err != nil {
			return fmt.Errorf("buffer %d differs from ReduceScatter: %w", k, err)
		}
	}
	return nil
}

// invarianceRank checks that an element's sum does not depend on the
// buffer around it: sums of windows of a large input, at many offsets
// and lengths across the cpu paths' thresholds, equal the same elements
// of the whole sum. This holds without any reference.
func invarianceRank(r *Rank, c *detcoll.Comm, m check.Memory) error {
	ctx := context.Background()
	for _, dt := range check.FloatTypes {
		m.Reset()
		size := dt.Size()
		s, t := 256/size, (8<<10)/size
		total := 3*t + 101
		in, err := check.Alloc(m, total*size, 0, check.Input(seed, 1, r.Rank, total, dt))
		if err != nil {
			return err
		}
		whole, err := m.Alloc(total*size, 0)
		if err != nil {
			return err
		}
		if err := m.AllReduce(c, dt, in, whole); err != nil {
			return err
		}
		sums, err := whole.Read()
		if err != nil {
			return err
		}
		windows := [][2]int{{0, 1}, {1, 1}, {3, 7}, {2, s - 1}, {5, s}, {1, s + 1}, {5, t - 1}, {1, t}, {7, t + 1},
			{t - 3, t + 5}, {2*t + 1, t + 99}, {13, 2*t + 3}}
		for _, win := range windows {
			lo, n := win[0], win[1]
			out, err := m.Alloc(n*size, 0)
			if err != nil {
				return err
			}
			if err := m.AllReduce(c, dt, in.Slice(lo*size, (lo+n)*size), out); err != nil {
				return err
			}
			if err := check.Expect(dt, out, sums[lo*size:(lo+n)*size]); err != nil {
				return fmt.Errorf("%v window [%d, %d) of %d: %w", dt, lo, lo+n, total, err)
			}
		}
	}
	return c.Close(ctx)
}

// nestingRank is the tensor-parallel check of the contract: 8 leaves per
// element; at world size k, rank r holds the tree of its contiguous block
// of 8/k leaves (its local partial sum, by the reference adds); the
// all-reduce must equal the tree of all 8 leaves.
func nestingRank(r *Rank, c *detcoll.Comm, m check.Memory) error {
	ctx := context.Background()
	const n = 4099
	per := 8 / r.World
	for _, dt := range check.FloatTypes {
		m.Reset()
		leaves := make([][]byte, 8)
		for l := range leaves {
			leaves[l] = check.Input(seed, 7, l, n, dt)
		}
		mine := check.ReferenceSum(dt, leaves[r.Rank*per:(r.Rank+1)*per])
		in, err := check.Alloc(m, len(mine), 0, mine)
		if err != nil {
			return err
		}
		out, err := m.Alloc(len(mine), 0)
		if err != nil {
			return err
		}
		if err := m.AllReduce(c, dt, in, out); err != nil {
			return err
		}
		if err := check.Expect(dt, out, check.ReferenceSum(dt, leaves)); err != nil {
			return fmt.Errorf("%v at W=%d differs from the 8-leaf tree: %w", dt, r.World, err)
		}
	}
	return c.Close(ctx)
}
