package detcoll_test

import (
	"bytes"
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/detcoll/detcoll"
	"github.com/detcoll/detcoll/internal/check"
	"github.com/detcoll/detcoll/internal/ranktest"
)

func init() {
	roles["reduce"] = roleReduce
	roles["invariance"] = roleInvariance
	roles["nesting"] = roleNesting
}

const testSeed = 20261130

// reduceCounts are element counts that straddle the cpu backend's one-shot
// thresholds (256 bytes and 8 KiB) with odd tails, plus tiny and larger
// sizes.
func reduceCounts(dt detcoll.DType, world int) []int {
	s, t := 256/dt.Size(), (8<<10)/dt.Size()
	return []int{0, 1, 2, 3, 7, 31, 33, s - 1, s, s + 1, 1000, t - 1, t, t + 1, t + 8*world + 3, 9*t + 5}
}

// roleReduce checks AllReduce (out of place, in place, staged),
// ReduceScatter and ReduceScatterMany against the reference tree for every
// float type, many sizes and output offsets, with guard bytes.
func roleReduce() error {
	ctx := context.Background()
	c, err := openRank(ctx)
	if err != nil {
		return err
	}
	defer c.Close(ctx)
	w, rank := c.WorldSize(), c.Rank()
	call := 0
	for _, dt := range floatTypes {
		size := dt.Size()
		for _, n := range reduceCounts(dt, w) {
			rc := check.NewReduceCase(testSeed, call+1, w, rank, n, dt)
			call += 2
			ins, want, rsIns, rsWant := rc.Ins, rc.Want, rc.ScatterIns, rc.ScatterWant
			for _, off := range []int{0, 1, 3} {
				what := fmt.Sprintf("%v n=%d offset=%d", dt, n, off)

				// Out of place, twice (repeat invariance), input untouched.
				in := newGuarded(n*size, off*size)
				copy(in.Bytes(), ins[rank])
				for rep := range 2 {
					out := newGuarded(n*size, off*size)
					if err := allReduce(c, dt, in.Bytes(), out.Bytes()); err != nil {
						return fmt.Errorf("AllReduce %s: %w", what, err)
					}
					if err := out.Holds(dt, want); err != nil {
						return fmt.Errorf("AllReduce %s repeat %d: %w", what, rep, err)
					}
				}
				if !bytes.Equal(in.Bytes(), ins[rank]) || in.Check() != nil {
					return fmt.Errorf("AllReduce %s changed its input", what)
				}

				// In place.
				buf := newGuarded(n*size, off*size)
				copy(buf.Bytes(), ins[rank])
				if err := allReduce(c, dt, buf.Bytes(), buf.Bytes()); err != nil {
					return fmt.Errorf("AllReduce in place %s: %w", what, err)
				}
				if err := buf.Holds(dt, want); err != nil {
					return fmt.Errorf("AllReduce in place %s: %w", what, err)
				}

				// Staged: the input written straight into the staging view.
				out := newGuarded(n*size, off*size)
				if err := stagedAllReduce(c, dt, ins[rank], out.Bytes()); err != nil {
					return fmt.Errorf("staged AllReduce %s: %w", what, err)
				}
				if err := out.Holds(dt, want); err != nil {
					return fmt.Errorf("staged AllReduce %s: %w", what, err)
				}

				// ReduceScatter of W*n elements: this rank's n of the sum.
				rsIn := newGuarded(w*n*size, off*size)
				copy(rsIn.Bytes(), rsIns[rank])
				rsOut := newGuarded(n*size, off*size)
				if err := reduceScatter(c, dt, rsIn.Bytes(), rsOut.Bytes()); err != nil {
					return fmt.Errorf("ReduceScatter %s: %w", what, err)
				}
				if err := rsOut.Holds(dt, rsWant); err != nil {
					return fmt.Errorf("ReduceScatter %s: %w", what, err)
				}
				if !bytes.Equal(rsIn.Bytes(), rsIns[rank]) {
					return fmt.Errorf("ReduceScatter %s changed its input", what)
				}
			}
		}
		// ReduceScatterMany equals one ReduceScatter per buffer.
		counts := []int{5, 0, 1000, 17}
		var ins, outs, singles [][]byte
		for k, n := range counts {
			call++
			ins = append(ins, inputBytes(testSeed, call, rank, w*n, dt))
			outs = append(outs, make([]byte, n*size))
			single := make([]byte, n*size)
			if err := reduceScatter(c, dt, ins[k], single); err != nil {
				return fmt.Errorf("ReduceScatter %v n=%d: %w", dt, n, err)
			}
			singles = append(singles, single)
		}
		if err := reduceScatterMany(c, dt, ins, outs); err != nil {
			return fmt.Errorf("ReduceScatterMany %v: %w", dt, err)
		}
		for k := range outs {
			if err := firstDiff(dt, outs[k], singles[k]); err != nil {
				return fmt.Errorf("ReduceScatterMany %v buffer %d differs from ReduceScatter: %w", dt, k, err)
			}
		}
	}
	fmt.Printf("rank %d: %d calls checked\n", rank, call)
	return c.Close(ctx)
}

// shares returns every rank's bytes [r*k, (r+1)*k): what rank r reduces in
// a reduce-scatter.
func shares(ins [][]byte, r, k int) [][]byte {
	out := make([][]byte, len(ins))
	for p, in := range ins {
		out[p] = in[r*k : (r+1)*k]
	}
	return out
}

// roleInvariance checks that an element's sum does not depend on the
// buffer around it: sums of windows of a large input, at many offsets and
// lengths across the paths' thresholds, equal the same elements of the
// whole sum. This holds without any reference.
func roleInvariance() error {
	ctx := context.Background()
	c, err := openRank(ctx)
	if err != nil {
		return err
	}
	defer c.Close(ctx)
	for _, dt := range floatTypes {
		size := dt.Size()
		s, t := 256/size, (8<<10)/size
		total := 3*t + 101
		in := inputBytes(testSeed, 1, c.Rank(), total, dt)
		whole := make([]byte, len(in))
		if err := allReduce(c, dt, in, whole); err != nil {
			return err
		}
		windows := [][2]int{{0, 1}, {1, 1}, {3, 7}, {2, s - 1}, {5, s}, {1, s + 1}, {5, t - 1}, {1, t}, {7, t + 1}, {t - 3, t + 5}, {2*t + 1, t + 99}, {13, 2*t + 3}}
		for _, win := range windows {
			lo, n := win[0], win[1]
			out := make([]byte, n*size)
			if err := allReduce(c, dt, in[lo*size:(lo+n)*size], out); err != nil {
				return err
			}
			if err := firstDiff(dt, out, whole[lo*size:(lo+n)*size]); err != nil {
				return fmt.Errorf("%v window [%d, %d) of %d: %w", dt, lo, lo+n, total, err)
			}
		}
	}
	return c.Close(ctx)
}

// roleNesting is the tensor-parallel check of the contract: 8 leaves per
// element; at world size k, rank r holds the tree of its contiguous block
// of 8/k leaves; the all-reduce must equal the tree of all 8 leaves.
func roleNesting() error {
	ctx := context.Background()
	c, err := openRank(ctx)
	if err != nil {
		return err
	}
	defer c.Close(ctx)
	w, rank := c.WorldSize(), c.Rank()
	const n = 4099
	for _, dt := range floatTypes {
		leaves := make([][]byte, 8)
		for l := range leaves {
			leaves[l] = inputBytes(testSeed, 7, l, n, dt)
		}
		per := 8 / w
		mine := referenceSum(dt, leaves[rank*per:(rank+1)*per])
		out := make([]byte, len(mine))
		if err := allReduce(c, dt, mine, out); err != nil {
			return err
		}
		if err := firstDiff(dt, out, referenceSum(dt, leaves)); err != nil {
			return fmt.Errorf("%v at W=%d differs from the 8-leaf tree: %w", dt, w, err)
		}
	}
	return c.Close(ctx)
}

// worldSizes are the world sizes of the full checks; -short (which the
// race-detector run of the test command uses) keeps the first three.
func worldSizes() []int {
	if testing.Short() {
		return []int{1, 2, 3}
	}
	return []int{1, 2, 3, 4, 5, 8}
}

func TestReduceMatchesReference(t *testing.T) {
	for _, w := range worldSizes() {
		t.Run("W="+strconv.Itoa(w), func(t *testing.T) {
			ranktest.RequireOK(t, ranktest.Run(t, w, "reduce", 5*time.Minute))
		})
	}
}

func TestSizeAndOffsetInvariance(t *testing.T) {
	for _, w := range []int{1, 2, 3, 4} {
		t.Run("W="+strconv.Itoa(w), func(t *testing.T) {
			ranktest.RequireOK(t, ranktest.Run(t, w, "invariance", 2*time.Minute))
		})
	}
}

func TestTensorParallelNesting(t *testing.T) {
	for _, w := range []int{1, 2, 4, 8} {
		t.Run("W="+strconv.Itoa(w), func(t *testing.T) {
			ranktest.RequireOK(t, ranktest.Run(t, w, "nesting", 2*time.Minute))
		})
	}
}
