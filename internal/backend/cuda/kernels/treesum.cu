// treesum.cu: T over the hosts' sums, for a call across hosts (internal/backend/hier).
//
// After the rail's all-gather a rank holds, for its shard, one array per
// host: that host's sum, T over its ranks. The flat tree over all ranks is
// T over those H arrays, element by element (internal/backend/hier's doc says why):
// split at the largest power of two below H, the lower hosts on the left,
// each node one operation of reduce.h (an add rounded once, NaN
// canonical; or max or min). H is fixed for
// a communicator, so, as collective.cu's tree over the ranks of a host, the
// tree unrolls at compile time (-DDC_LEAVES=H).

#ifndef DC_LEAVES
#error "compile with -DDC_LEAVES=<number of hosts>"
#endif
static_assert(DC_LEAVES >= 2 && DC_LEAVES <= DC_MAX_LEAVES, "hosts out of range");

// The kernel's one parameter. Must match treeSumArgs in treesum.go.
struct SumArgs {
  u64 dst, count;   // count elements
  u32 calc, world;  // the element type and node operator (DC_CALC_*); dc_average: the divisor
  u64 src[DC_MAX_LEAVES];
};

template <class E, u32 C, int LO, int N>
struct Leaves {
  static constexpr int P = pow2below(N);
  __device__ static __forceinline__ u64 one(const Red& r, const SumArgs& a, u64 off) {
    return node<E, C>(r, Leaves<E, C, LO, P>::one(r, a, off), Leaves<E, C, LO + P, N - P>::one(r, a, off));
  }
};
template <class E, u32 C, int LO>
struct Leaves<E, C, LO, 1> {
  __device__ static __forceinline__ u64 one(const Red&, const SumArgs& a, u64 off) {
    return load_elem<E::size>(a.src[LO] + off);
  }
};

// One element per thread and step: the rail between hosts, not this
// kernel, bounds a call across hosts.
template <class E, u32 C>
__device__ __forceinline__ void treesum(const SumArgs& a) {
  constexpr u64 size = E::size;
  const Red r{a.calc, a.world, nullptr};
  const u64 step = (u64)gridDim.x * blockDim.x;
  for (u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x; i < a.count; i += step) {
    store_elem<size>(a.dst + i * size, Leaves<E, C, 0, DC_LEAVES>::one(r, a, i * size));
  }
}

// dc_treesum is T over the leaves with the node operator of calc (a sum,
// max or min: premulsum scaled the leaves on their hosts, and avg divides
// once at the end, dc_average).
extern "C" __global__ void __launch_bounds__(DC_BLOCK) dc_treesum(SumArgs a) {
  switch (a.calc & DC_CALC_NODE) {
    case DC_CALC_MAX:
      DC_WITH_TYPE(a.calc, treesum<E, DC_CALC_MAX>(a));
      return;
    case DC_CALC_MIN:
      DC_WITH_TYPE(a.calc, treesum<E, DC_CALC_MIN>(a));
      return;
  }
  DC_WITH_TYPE(a.calc, treesum<E, 0>(a));
}

// dc_average divides the count elements at dst by world, in place: avg's
// one division of the flat tree's sum, rounded once (reduce.h).
template <class E>
__device__ __forceinline__ void average(const SumArgs& a) {
  constexpr u64 size = E::size;
  const Red r{a.calc, a.world, nullptr};
  const u64 step = (u64)gridDim.x * blockDim.x;
  for (u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x; i < a.count; i += step)
    store_elem<size>(a.dst + i * size, E::avg(r, load_elem<size>(a.dst + i * size)));
}
extern "C" __global__ void __launch_bounds__(DC_BLOCK) dc_average(SumArgs a) { DC_WITH_TYPE(a.calc, average<E>(a)); }

// ---- the signature check of a call across hosts --------------------------
//
// Every call across hosts first checks, on the device, that every host
// makes the same call (internal/backend/hier): dc_rail_sign writes this
// rank's signature, its sequence word drawn from a counter in device
// memory (so that a graph replay is a call of its own, as within a host);
// the rail gathers every host's, a fixed number of bytes that cannot
// differ between hosts; dc_rail_check compares them with this rank's. No
// host takes part, so the calls can be captured in a CUDA graph. A
// mismatch is written to the host-mapped record, which the host's monitor
// turns into the communicator's failure on every rank (railsig.go); the
// record's arrived and checked words let it tell a gather that never
// ends (a host skipped the call) from a busy stream.

// The kernels' one parameter. Must match railArgs in railsig.go.
struct RailArgs {
  u64 words[DC_SIG_CMP];  // the call's signature; the last word (the sequence) is the kernel's
  u64 dev;                // device: the counter, then this rank's signature, then every host's
  u64 rec;                // host-mapped: the record
  u32 hosts, pad;
};

// Offsets in dev and in the record (railsig.go has the same).
#define DC_RAIL_MINE 64
#define DC_RAIL_ALL 128
#define DC_RAIL_ARRIVED 0
#define DC_RAIL_CHECKED 8
#define DC_RAIL_CODE 16
#define DC_RAIL_SEQ 24
#define DC_RAIL_OP 32
#define DC_RAIL_SIGS 64

// One thread: a signature is a few words. The counter is read and written
// by this communicator's calls only, which are ordered.
extern "C" __global__ void dc_rail_sign(RailArgs a) {
  const u64 seq = ld_vol(a.dev) + 1;
  st_vol(a.dev, seq);
  for (int k = 0; k < DC_SIG_CMP - 1; k++) st_vol(a.dev + DC_RAIL_MINE + 8 * k, a.words[k]);
  st_vol(a.dev + DC_RAIL_MINE + 8 * (DC_SIG_CMP - 1), seq);
  st_vol(a.rec + DC_RAIL_OP, a.words[0]);
  st_release(a.rec + DC_RAIL_ARRIVED, seq);
}

// The record is written once, at the first mismatch: the signatures, then
// the call's sequence, then the code, each visible before the next. A
// gather that NCCL's abort ended early leaves an older call's signatures
// in place: every host's sequence word must be this call's (as the k-th
// gather on every host carries the k-th call's) before a difference counts
// as a mismatch; otherwise the failure that aborted the rail is the one
// to report, and the record stays as it is.
extern "C" __global__ void dc_rail_check(RailArgs a) {
  const u64 mine = a.dev + DC_RAIL_MINE, all = a.dev + DC_RAIL_ALL;
  const u64 seq = ld_vol(mine + 8 * (DC_SIG_CMP - 1));
  bool same = true, complete = true;
  for (u32 h = 0; h < a.hosts; h++) {
    for (int k = 0; k < DC_SIG_CMP; k++) same &= ld_vol(all + 8 * (h * DC_SIG_CMP + k)) == ld_vol(mine + 8 * k);
    complete &= ld_vol(all + 8 * (h * DC_SIG_CMP + DC_SIG_CMP - 1)) == seq;
  }
  if (!same && complete && ld_vol(a.rec + DC_RAIL_CODE) == 0) {
    for (u32 i = 0; i < a.hosts * DC_SIG_CMP; i++) st_vol(a.rec + DC_RAIL_SIGS + 8 * i, ld_vol(all + 8 * i));
    st_vol(a.rec + DC_RAIL_SEQ, seq);
    fence_sys();
    st_release(a.rec + DC_RAIL_CODE, 1);
  }
  st_release(a.rec + DC_RAIL_CHECKED, seq);
}
