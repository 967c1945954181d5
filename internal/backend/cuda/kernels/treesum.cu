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
