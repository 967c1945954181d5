package cuda

import (
	"fmt"

	"github.com/detcoll/detcoll/internal/core/settings"
)

// The push path's first copies by the copy engines
// (DETCOLL_CUDA_PUSH_COPY=engine): the PUSH primitive, each input part
// copied into the staging of the rank that sums it, becomes W copies
// queued on the call's stream (cuMemcpyDtoDAsync) between two kernel
// launches, instead of a kernel's stores. The copy engines then move
// those bytes and the SMs are free for the caller's kernels; on two H200s
// a copy engine moved 395 GB/s one way against ~300 GB/s for SM stores
// (docs/goals.md). The launch that carried PUSH is cut around it: the
// steps before it (the reserve and the stage), the copies, then a launch
// of the steps after it (publish sent1), which the stream starts only once
// the copies are done. The bits are the same: copies are exact, and the
// sums are the same kernels'.
//
// Experimental (docs/perf-levers.md), for two reasons besides the stalls
// measured on one GPU:
//   - Nothing gates the copies. The kernel's PUSH runs only after the
//     reserve's wait succeeded, on a rank not yet failed. The copies run
//     whatever the launch before them found: a rank that failed after a
//     call's sent2 (a timeout, an abort) still writes the next call's
//     parts into a slow peer's staging while that peer sums the last
//     call's, and the peers that had every sent2 can finish with wrong
//     sums. A stream wait on a word the first launch writes cannot help:
//     its value is fixed when it is queued (a graph replays it), and it
//     cannot skip the copies, only wait.
//   - Sent1 is released by a kernel that the stream starts after the
//     copies: their writes are complete then, but no rule of the PTX
//     memory model orders the copy engines' writes before its release.

// peerCopy is one copy of a launch that the copy engines carry, not a
// kernel: n bytes from src to dst, device addresses as mapped here.
type peerCopy struct {
	dst, src uint64
	n        int
}

// envPushCopy picks who makes the push path's first copies.
const envPushCopy = settings.CUDAPushCopy

// pushEngineFromEnv reads envPushCopy: true for "engine".
func pushEngineFromEnv() (bool, error) {
	switch v := settings.Get(envPushCopy); v {
	case "", "sm":
		return false, nil
	case "engine":
		return true, nil
	default:
		return false, fmt.Errorf("%s=%q: want sm or engine", envPushCopy, v)
	}
}

// pushPart returns the bytes [lo, hi) of an n-byte buffer that rank q of
// world sums on the push path: kernels/push.h's part (the q-th W-th of a
// reduce-scatter's input; an all-reduce's shard of launch.h's shard).
func pushPart(n uint64, world, q int, scatter bool) (lo, hi uint64) {
	w := uint64(world)
	if scatter {
		per := n / w
		return uint64(q) * per, uint64(q+1) * per
	}
	per := (n + w - 1) / w
	per = (per + shardAlign - 1) / shardAlign * shardAlign
	lo = min(uint64(q)*per, n)
	return lo, min(lo+per, n)
}

// recvSlot is the slot, among rank q's W-1, that rank p writes
// (kernels/push.h's recv_slot).
func recvSlot(q, p, world int) uint64 { return uint64((p - q - 1 + world) % world) }

// pushCopies are PUSH's copies of w at this rank, as push_compute makes
// them: part q of the input into rank q's staging, this rank's own part
// at the start of its own, a peer's in slot 1 + recvSlot(q, rank) of
// parts of the largest part's size in whole 64-byte lines.
func (p planner) pushCopies(w work, scatter bool) []peerCopy {
	lo0, hi0 := pushPart(w.Bytes, p.world, 0, scatter)
	stride := (hi0 - lo0 + 63) &^ 63
	var cs []peerCopy
	for q := range p.world {
		lo, hi := pushPart(w.Bytes, p.world, q, scatter)
		if hi == lo {
			continue
		}
		dst := p.peerStaging[q]
		if q != p.rank {
			dst += (1 + recvSlot(q, p.rank, p.world)) * stride
		}
		cs = append(cs, peerCopy{dst: dst, src: w.In + lo, n: int(hi - lo)})
	}
	return cs
}

// withEngineCopies cuts every launch of ls that carries PUSH or
// PUSH_SCATTER around it: a launch of the steps before it, PUSH's copies,
// a launch of the steps after it. A launch whose copies are not all
// 16-byte aligned keeps the kernel's stores: a guess at why the soak,
// whose buffers include misaligned ones, ran 40 times slower with the
// engines (run 4 of results/gpu/steptable-2026-12-02); neither the cause
// nor this fall-back has been tested on a GPU.
//
// Every rank decides alone, on its own input's address: ranks may differ,
// which the protocol allows, since the launches they share publish the
// same words in the same order either way.
func (p planner) withEngineCopies(ls []launch) []launch {
	out := make([]launch, 0, len(ls)+2)
	for _, l := range ls {
		i := -1
		for k, o := range l.table {
			if o == opPush || o == opPushScatter {
				i = k
				break
			}
		}
		if i < 0 {
			out = append(out, l)
			continue
		}
		cs := p.pushCopies(l.work[0], l.table[i] == opPushScatter)
		if !aligned(cs) {
			out = append(out, l) // the kernel's stores, as without the engines
			continue
		}
		var before, after stepTable
		copy(before[:], l.table[:i])
		copy(after[:], l.table[i+1:])
		out = append(out, launch{kernel: kernelCopy, grid: 1, table: before, work: l.work})
		if len(cs) > 0 {
			out = append(out, launch{copies: cs})
		}
		out = append(out, launch{kernel: kernelCopy, grid: 1, table: after, work: l.work})
	}
	return out
}

// aligned reports whether every copy of cs starts on a 16-byte boundary
// at both ends.
func aligned(cs []peerCopy) bool {
	for _, c := range cs {
		if (c.src|c.dst)&15 != 0 {
			return false
		}
	}
	return true
}
