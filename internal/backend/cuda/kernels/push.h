// push.h: the push path (steptable.go, proto.Push and proto.PushScatter).

// Large all-reduces and reduce-scatters of one buffer move each byte over
// NVLink by writes, never reads, and never copy their input whole. The
// primitives (DC_S_*, launches as proto.Launches cuts them):
//   PUSH           every rank copies its input's part p into rank p's
//                  staging (its own part into its own), then sends sent1
//   REDUCE_PUSH    after sent1: sum this rank's part from its staging,
//                  store the sums to the output and into every peer's
//                  staging, then send sent2 (all-reduce)
//   GATHER_PUSHED  after sent2: copy the peers' sums into the output
//   PUSH_SCATTER, REDUCE_PUSH_SCATTER: a reduce-scatter's PUSH and
//                  REDUCE_PUSH, which store the sums to the output only.
// A rank's staging holds its own part at 0, then the part each peer sent
// (slot recv_slot), then the sums each peer sent: (2W-1) part strides.

__device__ __forceinline__ bool scatters(u32 op) { return op == DC_S_PUSH_SCATTER || op == DC_S_REDUCE_PUSH_SCATTER; }

// push_path reports whether op is one of the push path's primitives.
__device__ __forceinline__ bool push_path(u32 op) { return op >= DC_S_PUSH && op <= DC_S_GATHER_PUSHED; }

// part returns the bytes [lo, hi) of w that rank p sums: a shard of an
// all-reduce, the p-th W-th of a reduce-scatter's input (op scatters).
__device__ __forceinline__ void part(u32 op, const Work& w, int p, u64* lo, u64* hi) {
  if (scatters(op)) {
    const u64 n = w.bytes / kWorld;
    *lo = p * n;
    *hi = *lo + n;
  } else {
    shard(p, w.bytes, lo, hi);
  }
}

// part_stride is the staging bytes of one part: the largest, in whole
// 64-byte lines.
__device__ __forceinline__ u64 part_stride(u32 op, const Work& w) {
  u64 lo, hi;
  part(op, w, 0, &lo, &hi);
  return (hi - lo + 63) & ~63ull;
}

// recv_slot is the slot, among rank q's W-1, that rank p writes.
__device__ __forceinline__ u64 recv_slot(int q, int p) { return (u64)((p - q - 1 + kWorld) % kWorld); }

// push_setup points the leaves of a REDUCE_PUSH(_SCATTER) launch's tree
// at this rank's staging (its own part at 0, peer p's in its slot) and the
// mirrors at the peers' stagings, so that reduce_range finds element i of
// the part of every rank at offset i*size, 16-byte aligned. Thread p sets
// entry p; the caller syncs the block before the tree reads them.
__device__ void push_setup(const Args& a, State& s, int p, u32 op) {
  const Work& w = a.work[0];
  const u64 stride = part_stride(op, w);
  u64 lo, hi;
  part(op, w, a.rank, &lo, &hi);
  const u64 own = a.self + DC_CTRL_SIZE;
  s.pay[p] = own + (p == (int)a.rank ? 0 : (1 + recv_slot(a.rank, p)) * stride);
  s.mirror[p] = 0;
  if (op == DC_S_REDUCE_PUSH && p != (int)a.rank)
    s.mirror[p] = s.ctrl[p] + DC_CTRL_SIZE + (kWorld + recv_slot(p, a.rank)) * stride;
}

// push_compute runs the push path's primitive op over w.
template <class K>
__device__ void push_compute(const Args& a, State& s, const Work& w, u32 op) {
  const u64 g = gtid(), st = gstride(), stride = part_stride(op, w), own = a.self + DC_CTRL_SIZE;
  u64 lo, hi;
  switch (op) {
    case DC_S_PUSH:
    case DC_S_PUSH_SCATTER:
      for (int q = 0; q < kWorld; q++) {
        part(op, w, q, &lo, &hi);
        const u64 dst = q == (int)a.rank ? own : s.ctrl[q] + DC_CTRL_SIZE + (1 + recv_slot(q, a.rank)) * stride;
        copy_bytes(dst, w.in + lo, hi - lo, g, st);
      }
      break;
    case DC_S_GATHER_PUSHED:
      for (int p = 0; p < kWorld; p++) {
        part(op, w, p, &lo, &hi);
        if (p != (int)a.rank)
          copy_bytes(w.out + lo, own + (kWorld + recv_slot(a.rank, p)) * stride, hi - lo, g, st);
        else if ((w.out & 15) != 0)  // RPUSH left the sums in place
          copy_bytes(w.out + lo, own, hi - lo, g, st);
      }
      break;
    default:
      if constexpr (K::reduces) {
        const Red r = red_of(a, s);
        part(op, w, a.rank, &lo, &hi);
        if (op == DC_S_REDUCE_PUSH_SCATTER) {
          // All scalar where the output is not 16-byte aligned.
          reduce_range<K>(r, s.pay, s.mirror, false, w.out, 0, hi - lo, g, st);
        } else {
          // Sums go straight to an output aligned for 16-byte stores,
          // else in place, for GPUSHED to copy: vectors either way.
          const u64 dst = (w.out & 15) == 0 ? w.out + lo : own;
          reduce_range<K>(r, s.pay, s.mirror, true, dst, 0, hi - lo, g, st);
        }
      }
  }
}

// push_word pushes word = seq into every peer's control block (entry
// rank). Called by every thread of the last block, after last_block.
__device__ void push_word(const Args& a, State& s, u64 word, u64 seq) {
  const u32 t = threadIdx.x;
  if (t < kWorld && t != a.rank) st_release(s.ctrl[t] + word + 8 * a.rank, seq);
}

