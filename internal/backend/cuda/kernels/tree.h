// tree.h: the tree T over the ranks (contract section 2), unrolled at
// compile time for the world size.

// Tree<E, LO, N> evaluates T over ranks [LO, LO+N) at byte offset off of
// every leaf (leaf[p]: rank p's staging or scratch image, State::pay):
// the left operand is always the lower ranks, split at the largest power
// of two below N.
template <class E, int LO, int N>
struct Tree {
  static constexpr int P = pow2below(N);
  __device__ static __forceinline__ auto one(const u64* leaf, u64 off) {
    return E::add(Tree<E, LO, P>::one(leaf, off), Tree<E, LO + P, N - P>::one(leaf, off));
  }
  __device__ static __forceinline__ V4 vec(const u64* leaf, u64 off) {
    return Elem<E>::add4(Tree<E, LO, P>::vec(leaf, off), Tree<E, LO + P, N - P>::vec(leaf, off));
  }
};
template <class E, int LO>
struct Tree<E, LO, 1> {
  __device__ static __forceinline__ auto one(const u64* leaf, u64 off) { return Elem<E>::load(leaf[LO] + off); }
  __device__ static __forceinline__ V4 vec(const u64* leaf, u64 off) { return ld_v4(leaf[LO] + off); }
};

// TreeR is T over values in registers: v[p] holds 8 bytes of rank p's
// input, and the result is the 8 bytes of sums, lane by lane, each the
// same expression as Tree's.
template <class E, int LO, int N>
struct TreeR {
  static constexpr int P = pow2below(N);
  __device__ static __forceinline__ u64 eval(const u64* v) {
    return Elem<E>::add8(TreeR<E, LO, P>::eval(v), TreeR<E, LO + P, N - P>::eval(v));
  }
};
template <class E, int LO>
struct TreeR<E, LO, 1> {
  __device__ static __forceinline__ u64 eval(const u64* v) { return v[LO]; }
};

// T over every rank, as Tree::one, Tree::vec and TreeR::eval. At W=1 the
// tree is a single leaf and adds nothing, so a NaN input would come out
// with its payload: every NaN result must be the canonical one (contract
// section 3), as an add makes it at W > 1.
template <class E>
__device__ __forceinline__ auto tree_one(const u64* leaf, u64 off) {
  auto v = Tree<E, 0, kWorld>::one(leaf, off);
  if constexpr (kWorld == 1) v = E::canon(v);
  return v;
}
template <class E>
__device__ __forceinline__ V4 tree_vec(const u64* leaf, u64 off) {
  V4 v = Tree<E, 0, kWorld>::vec(leaf, off);
  if constexpr (kWorld == 1) v = Elem<E>::canon4(v);
  return v;
}
template <class E>
__device__ __forceinline__ u64 tree_regs(const u64* v) {
  u64 r = TreeR<E, 0, kWorld>::eval(v);
  if constexpr (kWorld == 1) r = Elem<E>::canon8(r);
  return r;
}
