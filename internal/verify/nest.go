package verify

import (
	"fmt"
	"time"

	"github.com/detcoll/detcoll"
	"github.com/detcoll/detcoll/internal/check"
)

// nestLeaves is the number of leaves per element of the tensor-parallel
// check.
const nestLeaves = 8

// Nestable reports whether the tensor-parallel check runs at world size w:
// a power of two that divides nestLeaves.
func Nestable(w int) bool { return w >= 1 && w <= nestLeaves && w&(w-1) == 0 }

// runNested checks tensor-parallel size invariance (contract, section 3):
// each element has nestLeaves leaves, the same on every rank; rank r holds
// the tree of its contiguous block of nestLeaves/W of them (computed here
// with the reference adds, as a tensor-parallel rank's local partial sum)
// and passes it to an all-reduce (or a reduce-scatter of W*n elements),
// whose result must equal the tree of all the leaves bit for bit. It
// returns the call's time and, as deviceOp.run, a failed check or an
// error that ends the run.
func runNested(c *detcoll.Comm, g *gpu, scatter bool, dt detcoll.DType, n int, seed uint64, call int) (_ time.Duration, failed, err error) {
	w, r, size := c.WorldSize(), c.Rank(), dt.Size()
	k := nestLeaves / w
	inN := n
	if scatter {
		inN = w * n
	}
	leaves := make([][]byte, nestLeaves)
	for l := range leaves {
		leaves[l] = check.Input(seed, call, l, inN, dt)
	}
	local := check.ReferenceSum(dt, leaves[r*k:(r+1)*k])
	want := check.ReferenceSum(dt, leaves)
	if scatter {
		want = want[r*n*size : (r+1)*n*size]
	}
	din, err := newDevInput(local)
	if err != nil {
		return 0, nil, err
	}
	defer din.free()
	out, err := newDevBuf(len(want), 0)
	if err != nil {
		return 0, nil, err
	}
	defer out.free()
	s := g.stream()
	start := time.Now()
	if scatter {
		err = c.ReduceScatterDevice(din.ptr(0), out.ptr(0), n, dt, s)
	} else {
		err = c.AllReduceDevice(din.ptr(0), out.ptr(0), n, dt, s)
	}
	if err == nil {
		err = c.Synchronize(s)
	}
	if err != nil {
		return 0, nil, err
	}
	d := time.Since(start)
	got, gerr := out.read()
	if got == nil {
		return 0, nil, gerr
	}
	if err := check.FirstDiff(dt, got, want); err != nil {
		return d, fmt.Errorf("W=%d ranks of %d leaves each against the %d-leaf tree: %w", w, k, nestLeaves, err), nil
	}
	return d, gerr, nil
}
