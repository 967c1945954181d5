// treesum.cu: T over the hosts' sums, for a call across hosts (internal/backend/hier).
//
// After the rail's all-gather a rank holds, for its shard, one array per
// host: that host's sum, T over its ranks. The flat tree over all ranks is
// T over those H arrays, element by element (internal/backend/hier's doc says why):
// split at the largest power of two below H, the lower hosts on the left,
// each node one add of reduce.h, rounded once, NaN canonical. H is fixed for
// a communicator, so, as collective.cu's tree over the ranks of a host, the
// tree unrolls at compile time (-DDC_LEAVES=H).

#ifndef DC_LEAVES
#error "compile with -DDC_LEAVES=<number of hosts>"
#endif
static_assert(DC_LEAVES >= 2 && DC_LEAVES <= DC_MAX_LEAVES, "hosts out of range");

// The kernel's one parameter. Must match treeSumArgs in treesum.go.
struct SumArgs {
  u64 dst, count;  // count elements
  u64 src[DC_MAX_LEAVES];
};

template <class E, int LO, int N>
struct Leaves {
  static constexpr int P = pow2below(N);
  __device__ static __forceinline__ u64 one(const Red& r, const SumArgs& a, u64 off) {
    return E::add(r, Leaves<E, LO, P>::one(r, a, off), Leaves<E, LO + P, N - P>::one(r, a, off));
  }
};
template <class E, int LO>
struct Leaves<E, LO, 1> {
  __device__ static __forceinline__ u64 one(const Red&, const SumArgs& a, u64 off) {
    return load_elem<E::size>(a.src[LO] + off);
  }
};

// One element per thread and step: the rail between hosts, not this
// kernel, bounds a call across hosts.
template <class E>
__device__ __forceinline__ void treesum(const SumArgs& a) {
  constexpr u64 size = E::size;
  const Red r{0, DC_LEAVES, nullptr};
  const u64 step = (u64)gridDim.x * blockDim.x;
  for (u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x; i < a.count; i += step) {
    store_elem<size>(a.dst + i * size, Leaves<E, 0, DC_LEAVES>::one(r, a, i * size));
  }
}

extern "C" __global__ void __launch_bounds__(DC_BLOCK) dc_treesum_bf16(SumArgs a) { treesum<BF16>(a); }
extern "C" __global__ void __launch_bounds__(DC_BLOCK) dc_treesum_f16(SumArgs a) { treesum<F16>(a); }
extern "C" __global__ void __launch_bounds__(DC_BLOCK) dc_treesum_f32(SumArgs a) { treesum<F32>(a); }
extern "C" __global__ void __launch_bounds__(DC_BLOCK) dc_treesum_f64(SumArgs a) { treesum<F64>(a); }
