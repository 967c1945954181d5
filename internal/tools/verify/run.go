package verify

import (
	"fmt"
	"slices"
	"time"

	"github.com/detcoll/detcoll"
	"github.com/detcoll/detcoll/internal/testkit/check"
)

// offsets (in elements) at which outputs are placed: aligned, odd and off
// a 16-byte line.
var offsets = []int{0, 1, 3}

// rowRun is what one row runs on: the communicator under test, the memory
// of its buffers, and, for the cross-backend rows, a cpu communicator of
// the same ranks (nil: none).
type rowRun struct {
	c, host *detcoll.Comm
	m       check.Memory
	seed    uint64
}

// callErr sorts a failed call: one that left the communicator failed ends
// the run (err), any other is the row's failed check.
func (r *rowRun) callErr(what string, err error) (failed, end error) {
	err = fmt.Errorf("%s: %w", what, err)
	if r.c.Err() != nil {
		return nil, err
	}
	return err, nil
}

// run checks op on n elements per rank (times inScale for the input):
// at every offset, the output between guard bytes and the input checked
// unchanged, then timed repeats whose first and last results are checked
// too. It returns the median time per call, the first check that failed,
// and an error that ends the run (a failed communicator or driver).
//
// Every rank makes every call whatever its checks find: a rank that
// stopped early would pair its next call with a peer's leftover one.
func (r *rowRun) run(op operation, dt detcoll.DType, n, call int) (_ time.Duration, failed, err error) {
	r.m.Reset()
	w, rank, size := r.c.WorldSize(), r.c.Rank(), dt.Size()
	inN := n * op.inScale(w)
	ins := make([][]byte, w)
	for p := range ins {
		ins[p] = check.Input(r.seed, call, p, inN, dt)
	}
	mine := ins[rank]
	outN := op.outLen(w, inN*size, size)
	want := op.want(w, rank, dt, ins)
	note := func(err error) {
		if failed == nil {
			failed = err
		}
	}
	// once runs one call at output offset off and checks it; it returns
	// the result.
	once := func(off int) ([]byte, error) {
		in, err := check.Alloc(r.m, len(mine), 0, mine)
		if err != nil {
			return nil, err
		}
		out, err := r.m.Alloc(outN, off*size)
		if err != nil {
			return nil, err
		}
		if err := op.call(r.m, r.c, dt, in, out); err != nil {
			f, end := r.callErr(fmt.Sprintf("offset %d", off), err)
			note(f)
			return nil, end
		}
		got, gerr := out.Read()
		if got == nil {
			return nil, gerr
		}
		if err := check.FirstDiff(dt, got, want); err != nil {
			note(fmt.Errorf("offset %d: %w", off, err))
		} else if gerr != nil {
			note(fmt.Errorf("offset %d: %w", off, gerr))
		}
		if err := check.Unchanged(in, mine); err != nil {
			note(fmt.Errorf("offset %d: %w", off, err))
		}
		return got, nil
	}
	if op.cross {
		d, err := r.cross(op, dt, mine, want, once, note)
		return d, failed, err
	}
	for _, off := range offsets {
		if _, err := once(off); err != nil {
			return 0, nil, err
		}
	}

	// Repeats, timed host to host (the call and, on a device, the wait
	// for it): every result must still be the reference's.
	iters := min(max((8<<20)/max(outN, 1), 3), 100)
	times := make([]time.Duration, iters)
	in, err := check.Alloc(r.m, len(mine), 0, mine)
	if err != nil {
		return 0, nil, err
	}
	out, err := r.m.Alloc(outN, 0)
	if err != nil {
		return 0, nil, err
	}
	for i := range times {
		start := time.Now()
		if err := op.call(r.m, r.c, dt, in, out); err != nil {
			f, end := r.callErr(fmt.Sprintf("repeat %d", i), err)
			if end != nil {
				return 0, failed, end
			}
			note(f)
			continue // the peers make the other repeats: so does this rank
		}
		times[i] = time.Since(start)
		if i == 0 || i == iters-1 {
			if err := check.Expect(dt, out, want); err != nil {
				note(fmt.Errorf("repeat %d: %w", i, err))
			}
		}
	}
	slices.Sort(times)
	return times[len(times)/2], failed, nil
}

// cross runs op once on the device (through once) and once on the cpu
// communicator on the same input, and compares the two results with each
// other and with the reference. It returns the device call's time.
func (r *rowRun) cross(op operation, dt detcoll.DType, in, want []byte, once func(int) ([]byte, error), note func(error)) (time.Duration, error) {
	if r.host == nil {
		return 0, fmt.Errorf("no cpu communicator to compare with")
	}
	start := time.Now()
	got, err := once(0)
	if err != nil {
		return 0, err
	}
	d := time.Since(start)
	// A call that failed (got is nil, noted) still leaves the cpu call to
	// make, which the peers make.
	var host check.Host
	hin, _ := check.Alloc(host, len(in), 0, in)
	hout, _ := host.Alloc(len(want), 0)
	if err := op.call(host, r.host, dt, hin, hout); err != nil {
		return 0, fmt.Errorf("the cpu backend: %w", err)
	}
	hostGot, _ := hout.Read()
	if err := check.FirstDiff(dt, hostGot, want); err != nil {
		note(fmt.Errorf("the cpu backend against the reference: %w", err))
	}
	if got == nil {
		return d, nil
	}
	if err := check.FirstDiff(dt, got, hostGot); err != nil {
		note(fmt.Errorf("cuda against cpu: %w", err))
	}
	return d, nil
}

// nestLeaves is the number of leaves per element of the tensor-parallel
// check.
const nestLeaves = 8

// nestable reports whether the tensor-parallel check runs at world size
// w: a power of two that divides nestLeaves.
func nestable(w int) bool { return w >= 1 && w <= nestLeaves && w&(w-1) == 0 }

// nested checks tensor-parallel size invariance (contract, section 3):
// each element has nestLeaves leaves, the same on every rank; rank r
// holds the tree of its contiguous block of nestLeaves/W of them
// (computed here with the reference adds, as a tensor-parallel rank's
// local partial sum) and passes it to an all-reduce (or a reduce-scatter
// of W*n elements), whose result must equal the tree of all the leaves
// bit for bit. It returns as run does.
func (r *rowRun) nested(scatter bool, dt detcoll.DType, n, call int) (_ time.Duration, failed, err error) {
	r.m.Reset()
	w, rank, size := r.c.WorldSize(), r.c.Rank(), dt.Size()
	k := nestLeaves / w
	inN := n
	if scatter {
		inN = w * n
	}
	leaves := make([][]byte, nestLeaves)
	for l := range leaves {
		leaves[l] = check.Input(r.seed, call, l, inN, dt)
	}
	local := check.ReferenceSum(dt, leaves[rank*k:(rank+1)*k])
	want := check.ReferenceSum(dt, leaves)
	if scatter {
		want = want[rank*n*size : (rank+1)*n*size]
	}
	in, err := check.Alloc(r.m, len(local), 0, local)
	if err != nil {
		return 0, nil, err
	}
	out, err := r.m.Alloc(len(want), 0)
	if err != nil {
		return 0, nil, err
	}
	start := time.Now()
	if scatter {
		err = r.m.ReduceScatter(r.c, dt, in, out)
	} else {
		err = r.m.AllReduce(r.c, dt, in, out)
	}
	if err != nil {
		f, end := r.callErr("call", err)
		return 0, f, end
	}
	d := time.Since(start)
	if err := check.Expect(dt, out, want); err != nil {
		return d, fmt.Errorf("W=%d ranks of %d leaves each against the %d-leaf tree: %w", w, k, nestLeaves, err), nil
	}
	return d, nil, nil
}
