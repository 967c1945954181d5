// prims.h: the two loops that move data: T over the leaves into an
// output (reduce_range), and a copy (copy_bytes).

// reduce_range writes nb bytes of elements (of r's type) to dst: element i is T over every leaf
// (a rank's staging or scratch image, or the input alone) at byte offset
// off + i*size. Every leaf is 16-byte aligned; where dst and off agree
// modulo 16 the body moves 16-byte vectors, with scalar head and tail;
// otherwise it is all scalar. Each element is the same expression either way. Thread g
// of st threads takes every st-th vector (the grid, or one block).
//
// With mirrored set, each result is also stored at mirror[p] + its offset
// for every peer p with a mirror (the push path's all-reduce sends its
// sums on as it makes them); the mirrors are aligned like off.
//
// reduce_body is the loop for one type E and operator C; M says whether
// it mirrors: never (0), always (1) or where mirrored says (2). A Sum
// kernel inlines it, the mirror a constant, as it did before the
// operators came. Any calls reduce_loop, the body per (type, operator)
// not inlined and the mirror a uniform branch: one copy of each, whatever
// the number of callers, which keeps dc_reduce's code in bounds.
template <class E, u32 C, int M>
__device__ __forceinline__ void reduce_body(const Red& r, const u64* leaf, const u64* mirror, bool mirrored,
                                            u64 dst, u64 off, u64 nb, u64 g, u64 st) {
  constexpr u64 S = E::size, V = 16 / S;
  const bool mir = M == 2 ? mirrored : M == 1;
  const u64 n = nb / S;
  u64 head = n, nv = 0;
  if (((dst - off) & 15) == 0) {
    head = ((16 - (dst & 15)) & 15) / S;
    if (head > n) head = n;
    nv = (n - head) / V;
  }
  auto one = [&](u64 i) {
    const u64 v = tree_one<E, C>(r, leaf, off + i * S);
    store_elem<S>(dst + i * S, v);
    if (mir)
      for (int p = 0; p < kWorld; p++)
        if (mirror[p] != 0) store_elem<S>(mirror[p] + off + i * S, v);
  };
  for (u64 i = g; i < head; i += st) one(i);
  const u64 vd = dst + head * S, vo = off + head * S;
  // Two vectors per thread in flight, as in copy_bytes.
  constexpr int U = 2;
  u64 i = g;
  for (; i + (U - 1) * st < nv; i += U * st) {
    V4 v[U];
#pragma unroll
    for (int j = 0; j < U; j++) v[j] = tree_vec<E, C>(r, leaf, vo + 16 * (i + j * st));
#pragma unroll
    for (int j = 0; j < U; j++) {
      st_v4(vd + 16 * (i + j * st), v[j]);
      if (mir)
        for (int p = 0; p < kWorld; p++)
          if (mirror[p] != 0) st_v4(mirror[p] + vo + 16 * (i + j * st), v[j]);
    }
  }
  for (; i < nv; i += st) {
    const V4 v = tree_vec<E, C>(r, leaf, vo + 16 * i);
    st_v4(vd + 16 * i, v);
    if (mir)
      for (int p = 0; p < kWorld; p++)
        if (mirror[p] != 0) st_v4(mirror[p] + vo + 16 * i, v);
  }
  for (u64 i = head + nv * V + g; i < n; i += st) one(i);
}

template <class E, u32 C>
__device__ __noinline__ void reduce_loop(const Red r, const u64* leaf, const u64* mirror, bool mirrored, u64 dst,
                                         u64 off, u64 nb, u64 g, u64 st) {
  reduce_body<E, C, 2>(r, leaf, mirror, mirrored, dst, off, nb, g, st);
}

// reduce_range is the loop of kernel kind K (reduce.h).
template <class K>
__device__ __forceinline__ void reduce_range(const Red& r, const u64* leaf, const u64* mirror, bool mirrored, u64 dst,
                                             u64 off, u64 nb, u64 g, u64 st) {
  if constexpr (K::fixed) {
    using E = typename K::E;
    if (mirrored)
      reduce_body<E, 0, 1>(r, leaf, mirror, true, dst, off, nb, g, st);
    else
      reduce_body<E, 0, 0>(r, leaf, mirror, false, dst, off, nb, g, st);
  } else {
    DC_WITH_TYPE(r.calc, DC_WITH_CALC(E, r.calc, reduce_loop<E, C>(r, leaf, mirror, mirrored, dst, off, nb, g, st)));
  }
}

// copy_bytes copies n bytes: 16-byte stores to dst wherever dst is aligned,
// loading src in the widest unit its alignment relative to dst allows.
// Thread g of st threads takes every st-th vector.
__device__ void copy_bytes(u64 dst, u64 src, u64 n, u64 g, u64 st) {
  u64 head = (16 - (dst & 15)) & 15;
  if (head > n) head = n;
  const u64 nv = (n - head) / 16;
  for (u64 i = g; i < head; i += st) st_u8(dst + i, ld_u8(src + i));
  const u64 d = dst + head, s = src + head, rel = (dst ^ src) & 15;
  if (rel == 0) {
    // Several loads in flight per thread before their stores: what keeps
    // NVLink busy when dst is a peer's memory.
    constexpr int U = 4;
    u64 i = g;
    for (; i + (U - 1) * st < nv; i += U * st) {
      V4 v[U];
#pragma unroll
      for (int j = 0; j < U; j++) v[j] = ld_v4(s + 16 * (i + j * st));
#pragma unroll
      for (int j = 0; j < U; j++) st_v4(d + 16 * (i + j * st), v[j]);
    }
    for (; i < nv; i += st) st_v4(d + 16 * i, ld_v4(s + 16 * i));
  } else if ((rel & 3) == 0) {
    for (u64 i = g; i < nv; i += st) {
      u64 p = s + 16 * i;
      st_v4(d + 16 * i, V4{ld_u32(p), ld_u32(p + 4), ld_u32(p + 8), ld_u32(p + 12)});
    }
  } else if ((rel & 1) == 0) {
    for (u64 i = g; i < nv; i += st) {
      u64 p = s + 16 * i;
      u32 w[4];
#pragma unroll
      for (int k = 0; k < 4; k++) w[k] = (u32)ld_u16(p + 4 * k) | ((u32)ld_u16(p + 4 * k + 2) << 16);
      st_v4(d + 16 * i, V4{w[0], w[1], w[2], w[3]});
    }
  } else {
    for (u64 i = g; i < nv; i += st) {
      u64 p = s + 16 * i;
      u32 w[4];
#pragma unroll
      for (int k = 0; k < 4; k++)
        w[k] = ld_u8(p + 4 * k) | (ld_u8(p + 4 * k + 1) << 8) | (ld_u8(p + 4 * k + 2) << 16) |
               (ld_u8(p + 4 * k + 3) << 24);
      st_v4(d + 16 * i, V4{w[0], w[1], w[2], w[3]});
    }
  }
  for (u64 i = head + 16 * nv + g; i < n; i += st) st_u8(dst + i, ld_u8(src + i));
}
