package base

import (
	"hash/fnv"

	"github.com/detcoll/detcoll/internal/num"
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
	Root  int
	In    [][]byte
	Out   [][]byte
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

// Signature returns the signature that rank publishes for r (Seq is left
// for the caller to fill in).
func (r *Request) Signature() Signature {
	s := Signature{Op: r.Op, DType: r.DType, Buffers: 1}
	size := uint64(r.DType.Size())
	switch r.Op {
	case OpBarrier:
	case OpAllReduceStaged:
		s.Count = uint64(len(r.Out[0])) / size
	case OpBroadcast:
		s.Root = uint32(r.Root)
		s.Count = uint64(len(r.In[0])) / size
	case OpAllGatherMany, OpReduceScatterMany:
		h := fnv.New64a()
		var b [8]byte
		for _, in := range r.In {
			c := uint64(len(in)) / size
			s.Count += c
			for i := range b {
				b[i] = byte(c >> (8 * i))
			}
			h.Write(b[:])
		}
		s.Buffers = uint32(len(r.In))
		s.Layout = h.Sum64()
	default:
		s.Count = uint64(len(r.In[0])) / size
	}
	return s
}

// InputSizes returns the byte sizes of the buffers this rank stages.
func (r *Request) InputSizes() []int {
	switch r.Op {
	case OpBarrier:
		return nil
	case OpAllReduceStaged:
		return []int{len(r.Out[0])}
	}
	sizes := make([]int, len(r.In))
	for i, in := range r.In {
		sizes[i] = len(in)
	}
	return sizes
}
