// registered.h: the registered path (steptable.go, proto.Registered): an
// all-reduce or a reduce-scatter whose input and output every rank
// registered (window.go), with no staging. After the meet (AWAIT_STAGE,
// CHECK):
//   REDUCE_REG          an all-reduce (a two-shot): sum this rank's part of
//                       every rank's input, read where it lies, and store
//                       each sum into every rank's output
//   REDUCE_REG_SCATTER  a reduce-scatter: sum this rank's W-th of every
//                       rank's input, read where it lies, into its own
//                       output; nothing is written into a peer's memory
// sent2 then tells each peer that this rank has read its input (and, an
// all-reduce, written its part of its output). The blocks fence at system
// scope before it (run's remote), for reads as for writes: a peer reuses
// its input once it has every sent2.
//
// In place is safe (an all-reduce's output is its input; a
// reduce-scatter's output may be its input's own part): part p of every
// rank's buffer is read and written by rank p alone, each element read
// from every rank and then stored by the same thread.

// registered_path reports whether op is one of the registered path's
// primitives.
__device__ __forceinline__ bool registered_path(u32 op) {
  return op == DC_S_REDUCE_REG || op == DC_S_REDUCE_REG_SCATTER;
}

// reg_addr is the buffer a regWord names, as mapped here: its window's row
// of the table (Args.wins, a column per rank), plus its offset.
__device__ __forceinline__ u64 reg_addr(const Args& a, int p, u64 reg) {
  const u64 row = (reg >> DC_REG_OFF_BITS) - 1, off = reg & ((1ull << DC_REG_OFF_BITS) - 1);
  return ld_u64(a.wins + 8 * (row * kWorld + p)) + off;
}

// reg_setup points leaf p of the tree at rank p's input and, for
// REDUCE_REG, mirror p at its output (none for this rank: its sums go to
// its own output directly; none at all for REDUCE_REG_SCATTER). The
// peers' regWords come from their control blocks, which they wrote with
// their signatures: thread p, which acquired peer p's stage in this
// launch, reads them. The caller syncs the block.
__device__ void reg_setup(const Args& a, State& s, int p, u32 op) {
  const bool self = p == (int)a.rank;
  const u64 in = self ? a.reg_in : ld_vol(s.ctrl[p] + DC_OFF_REG);
  s.pay[p] = reg_addr(a, p, in);
  s.mirror[p] = self || op == DC_S_REDUCE_REG_SCATTER ? 0 : reg_addr(a, p, ld_vol(s.ctrl[p] + DC_OFF_REG + 8));
}

// reg_compute is op over w (w.bytes: a reduce-scatter's whole input).
// Every buffer is 16-byte aligned (planner.registration), and so is every
// part: an all-reduce's shards are whole lines, a reduce-scatter's parts
// multiples of 16 bytes; so the whole part moves in vectors.
template <class K>
__device__ void reg_compute(const Args& a, State& s, const Work& w, u32 op) {
  if constexpr (K::reduces) {
    if (op == DC_S_REDUCE_REG_SCATTER) {
      const u64 n = w.bytes / kWorld;
      reduce_range<K>(red_of(a, s), s.pay, s.mirror, false, w.out, a.rank * n, n, gtid(), gstride());
      return;
    }
    u64 lo, hi;
    shard(a.rank, w.bytes, &lo, &hi);
    reduce_range<K>(red_of(a, s), s.pay, s.mirror, true, w.out + lo, lo, hi - lo, gtid(), gstride());
  }
}
