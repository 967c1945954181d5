package detcoll_test

import (
	"bytes"
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/detcoll/detcoll"
	"github.com/detcoll/detcoll/internal/ranktest"
)

func init() {
	roles["gather"] = roleGather
}

// gatherSizes are the reference system's all-gather sweep in bytes per rank
// (T = its 64 KiB single-block threshold), which straddle 16-byte vectors
// and odd tails (and the cuda backend's 4 KiB LL windows).
func gatherSizes(w int) []int {
	const t = 64 << 10
	return []int{0, 1, 15, 16, 17, 4095, 32<<10 + 3, 96 << 10, t/w - 1, t / w, t/w + 1, t/w + 16, 1<<20 + 5}
}

// roleGather checks AllGather of bytes over the size sweep and offset
// pairs, typed gathers, in-place gathers, AllGatherMany against single
// calls and Broadcast from every root, with guard bytes.
func roleGather() error {
	ctx := context.Background()
	c, err := openRank(ctx)
	if err != nil {
		return err
	}
	defer c.Close(ctx)
	w, rank := c.WorldSize(), c.Rank()
	call := 0
	for _, n := range gatherSizes(w) {
		call++
		ins := make([][]byte, w)
		for p := range ins {
			ins[p] = inputBytes(testSeed, call, p, n, detcoll.TypeUint8)
		}
		want := bytes.Join(ins, nil)
		for _, offs := range [][2]int{{0, 0}, {1, 0}, {0, 3}, {5, 7}} {
			in := newGuarded(n, offs[0])
			copy(in.Bytes(), ins[rank])
			out := newGuarded(w*n, offs[1])
			if err := allGather(c, detcoll.TypeUint8, in.Bytes(), out.Bytes()); err != nil {
				return fmt.Errorf("AllGather %d bytes offsets %v: %w", n, offs, err)
			}
			if err := out.Holds(detcoll.TypeUint8, want); err != nil {
				return fmt.Errorf("AllGather %d bytes offsets %v: %w", n, offs, err)
			}
			if !bytes.Equal(in.Bytes(), ins[rank]) {
				return fmt.Errorf("AllGather %d bytes changed its input", n)
			}
			// In place: the input is the output's own slot.
			buf := newGuarded(w*n, offs[1])
			copy(buf.Bytes()[rank*n:], ins[rank])
			if err := allGather(c, detcoll.TypeUint8, buf.Bytes()[rank*n:(rank+1)*n], buf.Bytes()); err != nil {
				return fmt.Errorf("AllGather in place %d bytes: %w", n, err)
			}
			if !bytes.Equal(buf.Bytes(), want) || buf.Check() != nil {
				return fmt.Errorf("AllGather in place %d bytes: wrong result or guard", n)
			}
		}
	}
	// Typed gathers of every size class.
	for _, dt := range []detcoll.DType{detcoll.TypeBFloat16, detcoll.TypeUint16, detcoll.TypeFloat32, detcoll.TypeInt64} {
		for _, n := range []int{1, 13, 1001} {
			call++
			ins := make([][]byte, w)
			for p := range ins {
				ins[p] = inputBytes(testSeed, call, p, n, dt)
			}
			out := newGuarded(w*n*dt.Size(), dt.Size())
			if err := allGather(c, dt, ins[rank], out.Bytes()); err != nil {
				return fmt.Errorf("AllGather %v n=%d: %w", dt, n, err)
			}
			if !bytes.Equal(out.Bytes(), bytes.Join(ins, nil)) || out.Check() != nil {
				return fmt.Errorf("AllGather %v n=%d: wrong result or guard", dt, n)
			}
		}
	}
	// AllGatherMany equals one AllGather per buffer.
	var ins, outs, singles [][]float32
	for k, n := range []int{3, 0, 4097, 64} {
		call++
		ins = append(ins, typed[float32](inputBytes(testSeed, call, rank, n, detcoll.TypeFloat32)))
		outs = append(outs, make([]float32, w*n))
		singles = append(singles, make([]float32, w*n))
		if err := detcoll.AllGather(c, ins[k], singles[k]); err != nil {
			return err
		}
	}
	if err := detcoll.AllGatherMany(c, ins, outs); err != nil {
		return fmt.Errorf("AllGatherMany: %w", err)
	}
	for k := range outs {
		if !bytes.Equal(rawBytes(outs[k]), rawBytes(singles[k])) {
			return fmt.Errorf("AllGatherMany buffer %d differs from AllGather", k)
		}
	}
	// Broadcast from every root.
	for root := range w {
		call++
		src := inputBytes(testSeed, call, root, 777, detcoll.TypeInt32)
		buf := make([]int32, 777)
		if rank == root {
			copy(buf, typed[int32](src))
		}
		if err := detcoll.Broadcast(c, buf, root); err != nil {
			return fmt.Errorf("Broadcast from %d: %w", root, err)
		}
		if !bytes.Equal(rawBytes(buf), src) {
			return fmt.Errorf("Broadcast from %d: wrong data", root)
		}
	}
	if err := c.Barrier(); err != nil {
		return err
	}
	return c.Close(ctx)
}

func TestGather(t *testing.T) {
	for _, w := range worldSizes() {
		t.Run("W="+strconv.Itoa(w), func(t *testing.T) {
			ranktest.RequireOK(t, ranktest.Run(t, w, "gather", 5*time.Minute))
		})
	}
}
