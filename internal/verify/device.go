package verify

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/detcoll/detcoll"
	"github.com/detcoll/detcoll/internal/check"
)

// deviceCall runs one collective on device buffers: in holds the rank's
// input, out is where the result must land.
type deviceCall func(c *detcoll.Comm, dt detcoll.DType, in, out *devBuf, s detcoll.Stream) error

// deviceOp is one checked collective on device memory.
type deviceOp struct {
	name    string
	inScale func(w int) int
	// outBytes is the output bytes for an input of n bytes of elements of
	// size bytes.
	outBytes func(w, n, size int) int
	want     func(c *detcoll.Comm, dt detcoll.DType, ins [][]byte) []byte
	call     deviceCall
	// cross, when set, runs the same operation on a host communicator (the
	// cpu backend); the row then compares both backends' results.
	cross func(c *detcoll.Comm, dt detcoll.DType, in, out []byte) error
}

// deviceCalls are the device forms of the host operations, by name.
var deviceCalls = map[string]deviceCall{
	"AllReduce": func(c *detcoll.Comm, dt detcoll.DType, in, out *devBuf, s detcoll.Stream) error {
		return c.AllReduceDevice(in.ptr(0), out.ptr(0), in.n/dt.Size(), dt, s)
	},
	"AllReduce/inplace": func(c *detcoll.Comm, dt detcoll.DType, in, out *devBuf, s detcoll.Stream) error {
		if err := copyOn(out.ptr(0), in.ptr(0), in.n, s); err != nil {
			return err
		}
		return c.AllReduceDevice(out.ptr(0), out.ptr(0), in.n/dt.Size(), dt, s)
	},
	"AllReduceStaged": func(c *detcoll.Comm, dt detcoll.DType, in, out *devBuf, s detcoll.Stream) error {
		n := in.n / dt.Size()
		st, err := c.StageDevice(n, dt, s)
		if err != nil {
			return err
		}
		if err := copyOn(st, in.ptr(0), in.n, s); err != nil {
			return err
		}
		return c.AllReduceStagedDevice(out.ptr(0), n, dt, s)
	},
	"ReduceScatter": func(c *detcoll.Comm, dt detcoll.DType, in, out *devBuf, s detcoll.Stream) error {
		return c.ReduceScatterDevice(in.ptr(0), out.ptr(0), out.n/dt.Size(), dt, s)
	},
	"ReduceScatterMany": func(c *detcoll.Comm, dt detcoll.DType, in, out *devBuf, s detcoll.Stream) error {
		// The cut of splitScatter: two buffers of whole multiples of W.
		w, size := c.WorldSize(), dt.Size()
		cut := in.n / size / w / 2 * w * size
		ins := []detcoll.DevicePtr{in.ptr(0), in.ptr(cut)}
		outs := []detcoll.DevicePtr{out.ptr(0), out.ptr(cut / w)}
		return c.ReduceScatterManyDevice(ins, outs, []int{cut / w / size, (in.n - cut) / w / size}, dt, s)
	},
	"AllGather": func(c *detcoll.Comm, dt detcoll.DType, in, out *devBuf, s detcoll.Stream) error {
		return c.AllGatherDevice(in.ptr(0), out.ptr(0), in.n/dt.Size(), dt, s)
	},
	"AllGather/inplace": func(c *detcoll.Comm, dt detcoll.DType, in, out *devBuf, s detcoll.Stream) error {
		slot := out.ptr(c.Rank() * in.n)
		if err := copyOn(slot, in.ptr(0), in.n, s); err != nil {
			return err
		}
		return c.AllGatherDevice(slot, out.ptr(0), in.n/dt.Size(), dt, s)
	},
	"AllGatherMany": func(c *detcoll.Comm, dt detcoll.DType, in, out *devBuf, s detcoll.Stream) error {
		h, w := in.n/2, c.WorldSize()
		return c.AllGatherManyDevice([]detcoll.DevicePtr{in.ptr(0), in.ptr(h)}, []detcoll.DevicePtr{out.ptr(0), out.ptr(w * h)},
			[]int{h, in.n - h}, dt, s)
	},
	"Broadcast": func(c *detcoll.Comm, dt detcoll.DType, in, out *devBuf, s detcoll.Stream) error {
		root := c.WorldSize() - 1
		if c.Rank() == root {
			if err := copyOn(out.ptr(0), in.ptr(0), in.n, s); err != nil {
				return err
			}
		}
		return c.BroadcastDevice(out.ptr(0), in.n/dt.Size(), dt, root, s)
	},
}

// deviceOps returns the device forms of ops, then extra.
func deviceOps(ops []operation, extra ...deviceOp) []deviceOp {
	var out []deviceOp
	for _, op := range ops {
		call, ok := deviceCalls[op.name]
		if !ok {
			panic("verify: no device form of " + op.name)
		}
		outLen := op.outLen
		out = append(out, deviceOp{name: op.name, inScale: op.inScale, want: op.want, call: call,
			outBytes: func(w, n, _ int) int { return outLen(w, n) }})
	}
	return append(out, extra...)
}

// windowOp all-reduces elements [1, n) of the input, a buffer one element
// off its neighbour's alignment and one element shorter: its result must
// be the same elements of the full sum (a result depends only on the
// values at its index, never on the size or the alignment).
var windowOp = deviceOp{
	name: "AllReduce/window", inScale: one,
	outBytes: func(_, n, size int) int { return max(n-size, 0) },
	want: func(c *detcoll.Comm, dt detcoll.DType, ins [][]byte) []byte {
		s := check.ReferenceSum(dt, ins)
		return s[min(dt.Size(), len(s)):]
	},
	call: func(c *detcoll.Comm, dt detcoll.DType, in, out *devBuf, s detcoll.Stream) error {
		n := max(in.n/dt.Size()-1, 0)
		return c.AllReduceDevice(in.ptr(min(dt.Size(), in.n)), out.ptr(0), n, dt, s)
	},
}

// crossOps run on both backends on the same inputs.
func crossOps() []deviceOp {
	ops := deviceOps([]operation{hostOp("AllReduce"), hostOp("ReduceScatter")})
	ar, rs := ops[0], ops[1]
	ar.name, ar.cross = "AllReduce/vs-cpu", check.AllReduce
	rs.name, rs.cross = "ReduceScatter/vs-cpu", check.ReduceScatter
	return []deviceOp{ar, rs}
}

// hostOp returns the host operation called name.
func hostOp(name string) operation {
	for _, op := range append(slices.Clone(reduceOps), gatherOps...) {
		if op.name == name {
			return op
		}
	}
	panic("verify: no operation " + name)
}

// run checks op on device memory, as operation.run does on host memory:
// n elements per rank (times inScale for the input), the output at every
// offset between guard bytes, the input unchanged, then timed repeats.
// host is the cpu communicator for cross-backend rows (nil: none). It
// returns the median time per call and the first check that failed; err
// is a call or driver failure, which ends the run.
func (op deviceOp) run(c, host *detcoll.Comm, g *gpu, dt detcoll.DType, n int, seed uint64, call int) (_ time.Duration, failed, err error) {
	w, size := c.WorldSize(), dt.Size()
	inN := n * op.inScale(w)
	ins := make([][]byte, w)
	for p := range ins {
		ins[p] = check.Input(seed, call, p, inN, dt)
	}
	in := ins[c.Rank()]
	outN := op.outBytes(w, inN*size, size)
	want := op.want(c, dt, ins)
	s := g.stream()

	// As on the host, every rank makes every call whatever its checks
	// find; only a failed call ends the run.
	var first error
	note := func(err error) {
		if first == nil {
			first = err
		}
	}
	// once runs one call at output offset off and checks it; it returns the
	// result.
	once := func(off int) ([]byte, error) {
		din, err := newDevInput(in)
		if err != nil {
			return nil, err
		}
		defer din.free()
		out, err := newDevBuf(outN, off*size)
		if err != nil {
			return nil, err
		}
		defer out.free()
		if err := op.call(c, dt, din, out, s); err != nil {
			return nil, err
		}
		if err := c.Synchronize(s); err != nil {
			return nil, err
		}
		got, gerr := out.read()
		if got == nil {
			return nil, gerr
		}
		if err := check.FirstDiff(dt, got, want); err != nil {
			note(fmt.Errorf("offset %d: %w", off, err))
		}
		if gerr != nil {
			note(fmt.Errorf("offset %d: %w", off, gerr))
		}
		if back, err := din.read(); err != nil {
			note(fmt.Errorf("offset %d: input buffer: %w", off, err))
		} else if !bytes.Equal(back, in) {
			note(fmt.Errorf("offset %d: the input changed", off))
		}
		return got, nil
	}
	if op.cross != nil {
		d, err := op.runCross(host, dt, in, want, once, note)
		return d, first, err
	}
	for _, off := range offsets {
		if _, err := once(off); err != nil {
			return 0, nil, fmt.Errorf("offset %d: %w", off, err)
		}
	}

	// Repeats, timed host to host (the call and a wait for it): every
	// result must still be the reference's.
	iters := min(max((8<<20)/max(outN, 1), 3), 100)
	times := make([]time.Duration, iters)
	din, err := newDevInput(in)
	if err != nil {
		return 0, nil, err
	}
	defer din.free()
	out, err := newDevBuf(outN, 0)
	if err != nil {
		return 0, nil, err
	}
	defer out.free()
	for i := range times {
		start := time.Now()
		if err := op.call(c, dt, din, out, s); err != nil {
			return 0, nil, fmt.Errorf("repeat %d: %w", i, err)
		}
		if err := c.Synchronize(s); err != nil {
			return 0, nil, fmt.Errorf("repeat %d: %w", i, err)
		}
		times[i] = time.Since(start)
		if i == 0 || i == iters-1 {
			got, err := out.read()
			if got == nil {
				return 0, nil, err
			}
			if err == nil {
				err = check.FirstDiff(dt, got, want)
			}
			if err != nil {
				note(fmt.Errorf("repeat %d: %w", i, err))
			}
		}
	}
	slices.Sort(times)
	return times[len(times)/2], first, nil
}

// runCross runs op once on the device (through once) and once on host, the
// cpu communicator, on the same input, and compares the two results with
// each other and with the reference. It returns the device call's time.
func (op deviceOp) runCross(host *detcoll.Comm, dt detcoll.DType, in, want []byte,
	once func(int) ([]byte, error), note func(error)) (time.Duration, error) {
	if host == nil {
		return 0, errors.New("no cpu communicator to compare with")
	}
	start := time.Now()
	got, err := once(0)
	if err != nil {
		return 0, err
	}
	d := time.Since(start)
	hostOut := make([]byte, len(want))
	if err := op.cross(host, dt, slices.Clone(in), hostOut); err != nil {
		return 0, fmt.Errorf("the cpu backend: %w", err)
	}
	if err := check.FirstDiff(dt, hostOut, want); err != nil {
		note(fmt.Errorf("the cpu backend against the reference: %w", err))
	}
	if err := check.FirstDiff(dt, got, hostOut); err != nil {
		note(fmt.Errorf("cuda against cpu: %w", err))
	}
	return d, nil
}
