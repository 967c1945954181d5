// tree.h: the tree T over the ranks (contract section 2), unrolled at
// compile time for the world size; its operator is reduce.h's.

// Tree<E, C, LO, N> evaluates T over ranks [LO, LO+N), with the node
// operator C (reduce.h), at byte offset off of
// every leaf (leaf[p]: rank p's staging or scratch image, State::pay):
// the left operand is always the lower ranks, split at the largest power
// of two below N.
template <class E, u32 C, int LO, int N>
struct Tree {
  static constexpr int P = pow2below(N);
  __device__ static __forceinline__ u64 one(const Red& r, const u64* leaf, u64 off) {
    return node<E, C>(r, Tree<E, C, LO, P>::one(r, leaf, off), Tree<E, C, LO + P, N - P>::one(r, leaf, off));
  }
  __device__ static __forceinline__ V4 vec(const Red& r, const u64* leaf, u64 off) {
    return node16<E, C>(r, Tree<E, C, LO, P>::vec(r, leaf, off), Tree<E, C, LO + P, N - P>::vec(r, leaf, off));
  }
};
template <class E, u32 C, int LO>
struct Tree<E, C, LO, 1> {
  __device__ static __forceinline__ u64 one(const Red& r, const u64* leaf, u64 off) {
    return ::leaf<E, C>(r, LO, load_elem<E::size>(leaf[LO] + off));
  }
  __device__ static __forceinline__ V4 vec(const Red& r, const u64* leaf, u64 off) {
    return leaf16<E, C>(r, LO, ld_v4(leaf[LO] + off));
  }
};

// TreeR is T over values in registers: v[p] holds 8 bytes of rank p's
// input, and the result is the 8 bytes of results, lane by lane, each the
// same expression as Tree's.
template <class E, u32 C, int LO, int N>
struct TreeR {
  static constexpr int P = pow2below(N);
  __device__ static __forceinline__ u64 eval(const Red& r, const u64* v) {
    return node8<E, C>(r, TreeR<E, C, LO, P>::eval(r, v), TreeR<E, C, LO + P, N - P>::eval(r, v));
  }
};
template <class E, u32 C, int LO>
struct TreeR<E, C, LO, 1> {
  __device__ static __forceinline__ u64 eval(const Red& r, const u64* v) { return leaf8<E, C>(r, LO, v[LO]); }
};

// T over every rank, then the root's step, as Tree::one, Tree::vec and
// TreeR::eval. At W=1 the tree is a single leaf and no node rounds, so a
// NaN input would come out with its payload: every NaN result must be the
// canonical one (contract section 3), as a node makes it at W > 1.
template <class E, u32 C>
__device__ __forceinline__ u64 tree_one(const Red& r, const u64* leaf, u64 off) {
  u64 v = root<E, C>(r, Tree<E, C, 0, kWorld>::one(r, leaf, off));
  if constexpr (kWorld == 1) v = E::canon(v);
  return v;
}
template <class E, u32 C>
__device__ __forceinline__ V4 tree_vec(const Red& r, const u64* leaf, u64 off) {
  V4 v = root16<E, C>(r, Tree<E, C, 0, kWorld>::vec(r, leaf, off));
  if constexpr (kWorld == 1) v = canon16<E>(v);
  return v;
}
template <class E, u32 C>
__device__ __forceinline__ u64 tree_regs(const Red& r, const u64* v) {
  u64 x = root8<E, C>(r, TreeR<E, C, 0, kWorld>::eval(r, v));
  if constexpr (kWorld == 1) x = canon8<E>(x);
  return x;
}

// tree_regs_of is tree_regs with kernel kind K's type and operator: a
// sum inline, in the LL launch's registers; under Any another operator
// through a call (its values through memory), so that dc_reduce's LL code
// holds one unrolled tree, not five.
template <class E, u32 C>
__device__ __noinline__ u64 tree_regs_call(const Red r, const u64* v) {
  return tree_regs<E, C>(r, v);
}
template <class K>
__device__ __forceinline__ u64 tree_regs_of(const Red& r, const u64* v) {
  u64 x = 0;
  if constexpr (K::fixed) {
    x = tree_regs<typename K::E, 0>(r, v);
  } else if ((r.calc & kCalcOps) == 0) {
    DC_WITH_TYPE(r.calc, x = tree_regs<E, 0>(r, v));
  } else {
    DC_WITH_TYPE(r.calc, DC_WITH_CALC(E, r.calc, x = tree_regs_call<E, C>(r, v)));
  }
  return x;
}
