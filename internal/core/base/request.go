package base

import (
	"hash/fnv"

	"github.com/detcoll/detcoll/internal/core/num"
)

// Request is one collective call on host memory, as the public API hands it
// to a backend after Validate accepted it. Buffers are raw bytes of elements
// of DType.
//
// Per operation (n = elements per rank, W = world size):
//
//	AllReduce          In[0] n, Out[0] n (may be In[0])
//	ReduceScatter      In[0] W*n, Out[0] n
//	AllGather          In[0] n, Out[0] W*n (In[0] may be Out[0]'s own slot)
//	Broadcast          In[0] == Out[0], n, on every rank
//	Barrier            no buffers
//	AllGatherMany      In[k], Out[k] as AllGather, k buffers
//	ReduceScatterMany  In[k], Out[k] as ReduceScatter
//	AllReduceStaged    Out[0] n; the input is already in the staging memory
type Request struct {
	Op    Op
	DType num.DType
	// Red is a reduction's operator; Scalar, for num.PreMulSum, is this
	// rank's factor: one element of DType.
	Red    num.RedOp
	Scalar []byte
	Root   int
	In     [][]byte
	Out    [][]byte
}

// StagingAlign is the alignment of every buffer inside the staging memory: a
// cache line, so that ranks writing neighbouring buffers share no line and
// vector loads are aligned.
const StagingAlign = 64

// StagingLayout returns where each input buffer goes in the staging memory
// and the bytes needed in all. Both sides of a call compute it from their
// own request; the signature check makes sure they agree.
func StagingLayout(sizes []int) (offsets []int, total int) {
	offsets = make([]int, len(sizes))
	for i, n := range sizes {
		offsets[i] = total
		total += roundUp(n, StagingAlign)
	}
	return offsets, total
}

func roundUp(n, a int) int { return (n + a - 1) / a * a }

// StagingCapacity is the staging a capacity of c bytes gives: c rounded up
// to StagingAlign, so that an input of exactly c bytes, which the layout
// rounds up, fits.
func StagingCapacity(c int64) int64 { return int64(roundUp(int(c), StagingAlign)) }

// Signature returns the signature that rank publishes for r (Seq is left
// for the caller to fill in).
func (r *Request) Signature() Signature {
	return signature(r.Op, r.Red, r.DType, r.Root, byteLens(r.In), byteLens(r.Out))
}

// InputSizes returns the byte sizes of the buffers this rank stages.
func (r *Request) InputSizes() []int {
	return inputSizes(r.Op, byteLens(r.In), byteLens(r.Out))
}

func byteLens(bs [][]byte) []int {
	n := make([]int, len(bs))
	for i, b := range bs {
		n[i] = len(b)
	}
	return n
}

// signature computes a call's signature from the byte lengths of its
// buffers, for host and device requests alike.
func signature(op Op, red num.RedOp, dt num.DType, root int, in, out []int) Signature {
	s := Signature{Op: op, DType: dt, Buffers: 1}
	if op.Reduces() {
		s.Red = red
	}
	size := uint64(dt.Size())
	switch op {
	case OpBarrier:
	case OpAllReduceStaged:
		s.Count = uint64(out[0]) / size
	case OpBroadcast:
		s.Root = uint32(root)
		s.Count = uint64(in[0]) / size
	case OpAllGatherMany, OpReduceScatterMany:
		h := fnv.New64a()
		var b [8]byte
		for _, n := range in {
			c := uint64(n) / size
			s.Count += c
			for i := range b {
				b[i] = byte(c >> (8 * i))
			}
			h.Write(b[:])
		}
		s.Buffers = uint32(len(in))
		s.Layout = h.Sum64()
	default:
		s.Count = uint64(in[0]) / size
	}
	return s
}

// inputSizes returns the byte sizes of the buffers a call stages, from the
// byte lengths of its buffers.
func inputSizes(op Op, in, out []int) []int {
	switch op {
	case OpBarrier:
		return nil
	case OpAllReduceStaged:
		return []int{out[0]}
	}
	return in
}
