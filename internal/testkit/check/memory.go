package check

import (
	"fmt"

	"github.com/detcoll/detcoll"
)

// Buffer is a rank's buffer in some Memory: Len bytes between guard bytes.
type Buffer interface {
	Len() int
	// Write copies b, at most Len bytes, to the start of the buffer.
	Write(b []byte) error
	// Read returns a copy of the buffer's bytes, and an error naming a
	// guard byte that changed; the bytes come back with it.
	Read() ([]byte, error)
	// Slice returns bytes [lo, hi) of the buffer, the same memory (an
	// in-place call's input); its Read checks the whole buffer's guards.
	Slice(lo, hi int) Buffer
}

// Memory is where a rank's buffers live, and the collectives of c on
// them, with element type dt: host memory and the typed API (Host), or
// device memory and the device API (internal/tools/devmem). Counts come from
// the buffers' lengths. Every call returns once its results can be read
// and reports its failure, so that a check reads the same on any memory.
//
// A Memory is used by one goroutine.
type Memory interface {
	// Alloc returns n bytes at off bytes past an aligned start, between
	// guard bytes, every byte GuardByte.
	Alloc(n, off int) (Buffer, error)
	// Reset frees every buffer that Alloc returned.
	Reset()
	// Copy copies src into dst, of the same length, in the memory (a
	// tool times an in-place call with the copy that refills its input).
	Copy(dst, src Buffer) error

	AllReduce(c *detcoll.Comm, dt detcoll.DType, in, out Buffer) error
	// AllReduceStaged copies in into c's staging (Stage), then reduces
	// the staging into out (AllReduceStaged).
	AllReduceStaged(c *detcoll.Comm, dt detcoll.DType, in, out Buffer) error
	ReduceScatter(c *detcoll.Comm, dt detcoll.DType, in, out Buffer) error
	ReduceScatterMany(c *detcoll.Comm, dt detcoll.DType, ins, outs []Buffer) error
	AllGather(c *detcoll.Comm, dt detcoll.DType, in, out Buffer) error
	AllGatherMany(c *detcoll.Comm, dt detcoll.DType, ins, outs []Buffer) error
	Broadcast(c *detcoll.Comm, dt detcoll.DType, buf Buffer, root int) error

	// Reduce makes reduction k (ins[0] into outs[0], or every buffer for
	// the Many calls) with operator op.
	Reduce(c *detcoll.Comm, k Reduction, dt detcoll.DType, op detcoll.RedOp, ins, outs []Buffer) error
	// PreMulSum returns PreMulSum with factor f (rounded to dt), its
	// scalar in this memory where inMemory is set (on a device: in device
	// memory, PreMulSumDevice), else in the call (PreMulSum).
	PreMulSum(dt detcoll.DType, f float64, inMemory bool) (detcoll.RedOp, error)
}

// Alloc allocates n bytes of m at off and writes b into them.
func Alloc(m Memory, n, off int, b []byte) (Buffer, error) {
	buf, err := m.Alloc(n, off)
	if err == nil && len(b) > 0 {
		err = buf.Write(b)
	}
	return buf, err
}

// AllocAll allocates every buffer of lens in m at off, each holding only
// guard bytes.
func AllocAll(m Memory, lens []int, off int) ([]Buffer, error) {
	bufs := make([]Buffer, len(lens))
	for i, n := range lens {
		var err error
		if bufs[i], err = m.Alloc(n, off); err != nil {
			return nil, err
		}
	}
	return bufs, nil
}

// Host is host memory: buffers are Guarded and the calls the typed API
// (on the cpu backend; a cuda communicator refuses them).
type Host struct{}

// Alloc returns a NewGuarded.
func (Host) Alloc(n, off int) (Buffer, error) { return NewGuarded(n, off), nil }

// Reset does nothing: the garbage collector frees host buffers.
func (Host) Reset() {}

func (Host) Copy(dst, src Buffer) error {
	copy(hostBytes(dst), hostBytes(src))
	return nil
}

// hostBytes returns a Host buffer's bytes.
func hostBytes(b Buffer) []byte {
	g, ok := b.(*Guarded)
	if !ok {
		panic(fmt.Sprintf("check: a %T in host memory", b))
	}
	return g.Bytes()
}

func hostEach(bs []Buffer) [][]byte {
	out := make([][]byte, len(bs))
	for i, b := range bs {
		out[i] = hostBytes(b)
	}
	return out
}

func (Host) AllReduce(c *detcoll.Comm, dt detcoll.DType, in, out Buffer) error {
	return AllReduce(c, dt, hostBytes(in), hostBytes(out))
}

func (Host) AllReduceStaged(c *detcoll.Comm, dt detcoll.DType, in, out Buffer) error {
	return StagedAllReduce(c, dt, hostBytes(in), hostBytes(out))
}

func (Host) ReduceScatter(c *detcoll.Comm, dt detcoll.DType, in, out Buffer) error {
	return ReduceScatter(c, dt, hostBytes(in), hostBytes(out))
}

func (Host) ReduceScatterMany(c *detcoll.Comm, dt detcoll.DType, ins, outs []Buffer) error {
	return ReduceScatterMany(c, dt, hostEach(ins), hostEach(outs))
}

func (Host) AllGather(c *detcoll.Comm, dt detcoll.DType, in, out Buffer) error {
	return AllGather(c, dt, hostBytes(in), hostBytes(out))
}

func (Host) AllGatherMany(c *detcoll.Comm, dt detcoll.DType, ins, outs []Buffer) error {
	return AllGatherMany(c, dt, hostEach(ins), hostEach(outs))
}

func (Host) Broadcast(c *detcoll.Comm, dt detcoll.DType, buf Buffer, root int) error {
	return Broadcast(c, dt, hostBytes(buf), root)
}

func (Host) Reduce(c *detcoll.Comm, k Reduction, dt detcoll.DType, op detcoll.RedOp, ins, outs []Buffer) error {
	return Reduce(c, k, dt, op, hostEach(ins), hostEach(outs))
}

// PreMulSum is detcoll.PreMulSum(f): host memory has no other residence.
func (Host) PreMulSum(dt detcoll.DType, f float64, inMemory bool) (detcoll.RedOp, error) {
	return detcoll.PreMulSum(f), nil
}
