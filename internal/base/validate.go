package base

import (
	"unsafe"
)

// Validate checks a request before any work, so that a bad call changes
// nothing: no buffer is touched and the protocol does not advance. It
// returns an error matching ErrInvalid naming what is wrong.
func Validate(r *Request, rank, world int, capacity int64) error {
	if r.Op == OpInvalid || r.Op >= numOps || r.Op == OpClose {
		return Invalidf("unknown operation %v", r.Op)
	}
	if r.Op != OpBarrier {
		if !r.DType.Valid() {
			return Invalidf("%v: unknown element type %v", r.Op, r.DType)
		}
		if r.Op.Reduces() && !r.DType.Reducible() {
			return Invalidf("%v: element type %v cannot be summed (want bfloat16, float16, float32 or float64)", r.Op, r.DType)
		}
	}
	if err := validateShapes(r, rank, world); err != nil {
		return err
	}
	_, need := StagingLayout(r.InputSizes())
	if int64(need) > capacity {
		return Invalidf("%v: needs %d bytes of staging, over the communicator's capacity of %d bytes", r.Op, need, capacity)
	}
	return nil
}

func validateShapes(r *Request, rank, world int) error {
	switch r.Op {
	case OpBarrier:
		if len(r.In) != 0 || len(r.Out) != 0 {
			return Invalidf("Barrier takes no buffers")
		}
		return nil
	case OpAllGatherMany, OpReduceScatterMany:
		if len(r.In) == 0 {
			return Invalidf("%v: no buffers", r.Op)
		}
		if len(r.Out) != len(r.In) {
			return Invalidf("%v: %d inputs but %d outputs", r.Op, len(r.In), len(r.Out))
		}
	case OpAllReduceStaged:
		if len(r.In) != 0 || len(r.Out) != 1 {
			return Invalidf("%v: want one output and no input", r.Op)
		}
		if r.Out[0] == nil {
			return Invalidf("%v: nil output", r.Op)
		}
		return nil
	default:
		if len(r.In) != 1 || len(r.Out) != 1 {
			return Invalidf("%v: want one input and one output", r.Op)
		}
	}
	size := r.DType.Size()
	for k := range r.In {
		in, out := r.In[k], r.Out[k]
		if in == nil {
			return Invalidf("%v: nil input", r.Op)
		}
		if out == nil {
			return Invalidf("%v: nil output", r.Op)
		}
		if len(in)%size != 0 || len(out)%size != 0 {
			return Invalidf("%v: buffer lengths %d and %d are not whole %v elements", r.Op, len(in), len(out), r.DType)
		}
		n := len(in) / size
		switch r.Op {
		case OpAllReduce:
			if len(out) != len(in) {
				return Invalidf("%v: input has %d elements, output %d", r.Op, n, len(out)/size)
			}
			if overlap(in, out) && !same(in, out) {
				return Invalidf("%v: input and output overlap (only out == in is allowed)", r.Op)
			}
		case OpReduceScatter, OpReduceScatterMany:
			if n%world != 0 {
				return Invalidf("%v: input of %d elements is not a multiple of the world size %d", r.Op, n, world)
			}
			if len(out)*world != len(in) {
				return Invalidf("%v: output has %d elements, want input/%d = %d", r.Op, len(out)/size, world, n/world)
			}
			if overlap(in, out) {
				return Invalidf("%v: input and output overlap", r.Op)
			}
		case OpAllGather, OpAllGatherMany:
			if len(out) != len(in)*world {
				return Invalidf("%v: output has %d elements, want %d x %d = %d", r.Op, len(out)/size, world, n, world*n)
			}
			if overlap(in, out) && !same(in, out[rank*len(in):(rank+1)*len(in)]) {
				return Invalidf("%v: input overlaps the output other than as its own slot [%d, %d)", r.Op, rank*n, (rank+1)*n)
			}
		case OpBroadcast:
			if !same(in, out) {
				return Invalidf("%v: one buffer", r.Op)
			}
			if r.Root < 0 || r.Root >= world {
				return Invalidf("%v: root %d out of range [0, %d)", r.Op, r.Root, world)
			}
		}
	}
	if len(r.Out) > 1 {
		for i := range r.Out {
			for j := range r.Out {
				if i != j && overlap(r.Out[i], r.Out[j]) {
					return Invalidf("%v: outputs %d and %d overlap", r.Op, i, j)
				}
				if i != j && overlap(r.In[i], r.Out[j]) {
					return Invalidf("%v: input %d overlaps output %d", r.Op, i, j)
				}
			}
		}
	}
	return nil
}

// overlap reports whether two byte slices share memory. Empty slices share
// nothing.
func overlap(a, b []byte) bool {
	if len(a) == 0 || len(b) == 0 {
		return false
	}
	pa, pb := uintptr(unsafe.Pointer(unsafe.SliceData(a))), uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	return pa < pb+uintptr(len(b)) && pb < pa+uintptr(len(a))
}

// same reports whether a and b are the same memory (same start and length).
func same(a, b []byte) bool {
	return len(a) == len(b) && unsafe.SliceData(a) == unsafe.SliceData(b)
}
