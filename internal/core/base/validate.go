package base

import (
	"unsafe"

	"github.com/detcoll/detcoll/internal/core/num"
)

// Validate checks a request before any work, so that a bad call changes
// nothing: no buffer is touched and the protocol does not advance. It
// returns an error matching ErrInvalid naming what is wrong.
func (b Bounds) Validate(r *Request) error {
	return b.validate(r.Op, r.Red, r.DType, r.Root, len(r.Scalar), hostSpans(r.In), hostSpans(r.Out))
}

// validate holds the rules every request shares, host or device: the
// operation and element type, the shapes and overlaps of the buffers, the
// staging capacity and the backend's reserved memory.
func (b Bounds) validate(op Op, red num.RedOp, dt num.DType, root, scalar int, in, out []span) error {
	rank, world, capacity := b.Rank, b.World, b.Capacity
	if op == OpInvalid || op >= numOps || op == OpClose {
		return Invalidf("unknown operation %v", op)
	}
	if op != OpBarrier {
		if !dt.Valid() {
			return Invalidf("%v: unknown element type %v", op, dt)
		}
		if err := validateRed(op, red, dt, scalar); err != nil {
			return err
		}
	}
	if err := validateShapes(op, dt, root, in, out, rank, world); err != nil {
		return err
	}
	_, need := StagingLayout(inputSizes(op, spanLens(in), spanLens(out)))
	if int64(need) > StagingCapacity(capacity) {
		return Invalidf("%v: needs %d bytes of staging, over the communicator's capacity of %d bytes", op, need, capacity)
	}
	for _, bufs := range [][]span{in, out} {
		for _, s := range bufs {
			if s.overlaps(b.Reserved.span()) {
				return Invalidf("%v: a buffer lies in the communicator's staging memory (a Stage view may only be written, then passed to nothing but AllReduceStaged's input)", op)
			}
		}
	}
	return nil
}

// validateRed checks a reduction's operator against its element type, and
// that PreMulSum, and it alone, brings one element of scalar.
func validateRed(op Op, red num.RedOp, dt num.DType, scalar int) error {
	if !op.Reduces() {
		if red != num.Sum || scalar != 0 {
			return Invalidf("%v: not a reduction: no operator (%v) or scalar", op, red)
		}
		return nil
	}
	switch {
	case !red.Valid():
		return Invalidf("%v: unknown reduction %v", op, red)
	case !red.Supports(dt):
		return Invalidf("%v: %v of %v is not defined (sum, avg, max and min take every element type; premulsum bfloat16, float16, float32 and float64)", op, red, dt)
	case red == num.PreMulSum && scalar != dt.Size():
		return Invalidf("%v: premulsum needs one %v scalar, got %d bytes", op, dt, scalar)
	case red != num.PreMulSum && scalar != 0:
		return Invalidf("%v: a scalar is for premulsum, not %v", op, red)
	}
	return nil
}

func validateShapes(op Op, dt num.DType, root int, ins, outs []span, rank, world int) error {
	switch op {
	case OpBarrier:
		if len(ins) != 0 || len(outs) != 0 {
			return Invalidf("Barrier takes no buffers")
		}
		return nil
	case OpAllGatherMany, OpReduceScatterMany:
		if len(ins) == 0 {
			return Invalidf("%v: no buffers", op)
		}
		if len(outs) != len(ins) {
			return Invalidf("%v: %d inputs but %d outputs", op, len(ins), len(outs))
		}
	case OpAllReduceStaged:
		if len(ins) != 0 || len(outs) != 1 {
			return Invalidf("%v: want one output and no input", op)
		}
		if outs[0].missing {
			return Invalidf("%v: nil output", op)
		}
		return nil
	default:
		if len(ins) != 1 || len(outs) != 1 {
			return Invalidf("%v: want one input and one output", op)
		}
	}
	size := dt.Size()
	for k := range ins {
		in, out := ins[k], outs[k]
		if in.missing {
			return Invalidf("%v: nil input", op)
		}
		if out.missing {
			return Invalidf("%v: nil output", op)
		}
		if in.n%size != 0 || out.n%size != 0 {
			return Invalidf("%v: buffer lengths %d and %d are not whole %v elements", op, in.n, out.n, dt)
		}
		n := in.n / size
		switch op {
		case OpAllReduce:
			if out.n != in.n {
				return Invalidf("%v: input has %d elements, output %d", op, n, out.n/size)
			}
			if in.overlaps(out) && in != out {
				return Invalidf("%v: input and output overlap (only out == in is allowed)", op)
			}
		case OpReduceScatter, OpReduceScatterMany:
			if n%world != 0 {
				return Invalidf("%v: input of %d elements is not a multiple of the world size %d", op, n, world)
			}
			if out.n*world != in.n {
				return Invalidf("%v: output has %d elements, want input/%d = %d", op, out.n/size, world, n/world)
			}
			// In place, as NCCL allows: the output may be the input's own
			// share (the input is staged before the output is written).
			if in.overlaps(out) && out != in.sub(rank*out.n, (rank+1)*out.n) {
				return Invalidf("%v: input and output overlap other than as the output being the input's share [%d, %d)", op, rank*n/world, (rank+1)*n/world)
			}
		case OpAllGather, OpAllGatherMany:
			if out.n != in.n*world {
				return Invalidf("%v: output has %d elements, want %d x %d = %d", op, out.n/size, world, n, world*n)
			}
			if in.overlaps(out) && in != out.sub(rank*in.n, (rank+1)*in.n) {
				return Invalidf("%v: input overlaps the output other than as its own slot [%d, %d)", op, rank*n, (rank+1)*n)
			}
		case OpBroadcast:
			if in != out {
				return Invalidf("%v: one buffer", op)
			}
			if root < 0 || root >= world {
				return Invalidf("%v: root %d out of range [0, %d)", op, root, world)
			}
		}
	}
	if len(outs) > 1 {
		for i := range outs {
			for j := range outs {
				if i != j && outs[i].overlaps(outs[j]) {
					return Invalidf("%v: outputs %d and %d overlap", op, i, j)
				}
				if i != j && ins[i].overlaps(outs[j]) {
					return Invalidf("%v: input %d overlaps output %d", op, i, j)
				}
			}
		}
	}
	return nil
}

// span is a buffer as the shape rules see it: n bytes from addr, in host or
// device memory (never both in one request). missing marks a nil buffer,
// which is an error even when empty.
type span struct {
	addr    uint64
	n       int
	missing bool
}

func hostSpan(b []byte) span {
	if b == nil {
		return span{missing: true}
	}
	return span{addr: uint64(uintptr(unsafe.Pointer(unsafe.SliceData(b)))), n: len(b)}
}

func hostSpans(bs [][]byte) []span {
	s := make([]span, len(bs))
	for i, b := range bs {
		s[i] = hostSpan(b)
	}
	return s
}

func spanLens(s []span) []int {
	n := make([]int, len(s))
	for i := range s {
		n[i] = s[i].n
	}
	return n
}

// overlaps reports whether two spans share memory. Empty spans share
// nothing.
func (a span) overlaps(b span) bool {
	if a.n == 0 || b.n == 0 {
		return false
	}
	return a.addr < b.addr+uint64(b.n) && b.addr < a.addr+uint64(a.n)
}

// sub returns bytes [lo, hi) of s.
func (s span) sub(lo, hi int) span {
	return span{addr: s.addr + uint64(lo), n: hi - lo, missing: s.missing}
}
