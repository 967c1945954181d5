package tree

import (
	"math/bits"

	"github.com/detcoll/detcoll/internal/core/num"
)

// chunkBytes is how much of each buffer Reduce handles at a time: small
// enough that a chunk of every intermediate stays in L1 while its sub-trees
// are added, large enough that the per-chunk recursion costs nothing. It is
// a multiple of every element size.
const chunkBytes = 4096

// A Reducer applies T elementwise to byte buffers. It owns the scratch space
// for T's intermediate nodes, allocated on first use and reused, so that
// Reduce does not allocate in steady state. The zero value is ready to use.
// A Reducer is not safe for concurrent use: give each goroutine its own.
type Reducer struct {
	scratch []byte // depth(W) chunks, 8-byte aligned; grown, never shrunk
}

// Reduce sets dst[i] = T(srcs[0][i], ..., srcs[W-1][i]) for every element i
// of type dt, W = len(srcs), each node one num.Combine of node (num.Sum, Max
// or Min: a RedOp's Node) — an add rounded once, or the larger or smaller
// operand — with NaNs canonical. W=1 is a copy with NaNs made canonical:
// every NaN result is canonical, whatever the world size.
//
// dst may be the very same memory as any one src (same start, same length):
// each chunk of dst is written only after every read of that chunk, sub-trees
// going to scratch and only the root add to dst. Partial overlaps between dst
// and a src are not supported and give wrong results.
//
// Preconditions, whose violation is internal misuse (the API layer rejects
// bad input first) and panics: node takes dt (num.RedOp.Supports); W >= 1; dst and every src
// have the same length, a multiple of dt.Size(); and dst and every src start
// at an address aligned to dt.Size() (the backends allocate them so).
func (r *Reducer) Reduce(dt num.DType, node num.RedOp, dst []byte, srcs [][]byte) {
	if node != node.Node() || !node.Supports(dt) {
		panic("tree: Reduce of " + dt.String() + " by " + node.String())
	}
	add := func(dst, a, b []byte) { num.Combine(dt, node, dst, a, b) }
	n := len(dst)
	if len(srcs) == 0 {
		panic("tree: Reduce of no sources")
	}
	if n%dt.Size() != 0 {
		panic("tree: Reduce of a partial element")
	}
	for _, s := range srcs {
		if len(s) != n {
			panic("tree: Reduce of unequal lengths")
		}
	}
	if len(srcs) == 1 {
		copy(dst, srcs[0])
		if dt.Reducible() {
			num.CanonicalizeNaNs(dt, dst)
		}
		return
	}
	// An internal node at depth k (the root is depth 0) writes slot k at
	// most, and internal nodes lie above depth ceil(log2 W).
	if need := bits.Len(uint(len(srcs)-1)) * chunkBytes; len(r.scratch) < need {
		r.scratch = num.AlignedBytes(need)
	}
	for off := 0; off < n; off += chunkBytes {
		end := min(off+chunkBytes, n)
		mid := Split(0, len(srcs))
		a := r.eval(add, srcs, 0, mid, 0, off, end)
		b := r.eval(add, srcs, mid, len(srcs), 1, off, end)
		add(dst[off:end], a, b)
	}
}

// eval returns T over srcs[lo:hi] for the bytes [off, end): a src itself for
// one leaf, otherwise scratch slot `slot`. The left child shares the node's
// slot and the right child starts one above, so the left result survives
// while the right sub-tree is evaluated; the add then writes in place over
// the left result, which the slice kernels allow.
func (r *Reducer) eval(add func(dst, a, b []byte), srcs [][]byte, lo, hi, slot, off, end int) []byte {
	if hi-lo == 1 {
		return srcs[lo][off:end]
	}
	mid := Split(lo, hi)
	a := r.eval(add, srcs, lo, mid, slot, off, end)
	b := r.eval(add, srcs, mid, hi, slot+1, off, end)
	out := r.scratch[slot*chunkBytes : slot*chunkBytes+end-off]
	add(out, a, b)
	return out
}
