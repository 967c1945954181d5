// reduce.h: the arithmetic of a reduction, per element type and operator
// (contract section 3, doc.go's "Reductions"): what a node of the tree
// does (add, max or min), what a leaf does to a rank's input first
// (premulsum: times that rank's scalar) and what the root does last (avg:
// divided by W). Every result is rounded once to nearest even (inline PTX:
// no FMA contraction, no flush to zero), every NaN is the canonical one.
// internal/core/num is the same arithmetic on the host, bit for bit.
//
// The reductions run in one kernel, dc_reduce, whose element type and
// operator are the launch's Args.calc (a few flags, Red): its loops over
// the elements are instantiated per (type, operator) (DC_WITH_TYPE,
// DC_WITH_CALC) and picked per launch. The sum of each floating type also
// has a kernel of its own (Sum, dc_sum_*), its type and operator constant,
// so that the most frequent call pays for no other (docs/perf-levers.md).
// Adding an operator: num, a function per type here, its case in
// DC_WITH_CALC and node, leaf or root below, and a flag (plan.go's
// calcOf, header.go).

// Red is the operator as the threads of a launch hold it.
struct Red {
  u32 calc;          // DC_CALC_* flags (header): the node, premulsum, avg, signed integers
  u32 world;         // avg: the divisor, every rank of the call
  const u64* scale;  // premulsum: rank p's scalar, as its element's bits, at scale[p]
};


// ---- floating point: one rounding per operation --------------------------

__device__ __forceinline__ float as_f32(u32 u) {
  float f;
  asm("mov.b32 %0, %1;" : "=f"(f) : "r"(u));
  return f;
}
__device__ __forceinline__ u32 f32_bits(float f) {
  u32 u;
  asm("mov.b32 %0, %1;" : "=r"(u) : "f"(f));
  return u;
}
__device__ __forceinline__ float add_f32(float a, float b) {
  float r;
  asm("add.rn.f32 %0, %1, %2;" : "=f"(r) : "f"(a), "f"(b));
  return r;
}
__device__ __forceinline__ float mul_f32(float a, float b) {
  float r;
  asm("mul.rn.f32 %0, %1, %2;" : "=f"(r) : "f"(a), "f"(b));
  return r;
}
__device__ __forceinline__ float div_f32(float a, float b) {
  float r;
  asm("div.rn.f32 %0, %1, %2;" : "=f"(r) : "f"(a), "f"(b));
  return r;
}
__device__ __forceinline__ u64 add_f64_bits(u64 a, u64 b) {
  u64 r;
  asm("{\n\t.reg .f64 fa, fb, fr;\n\t"
      "mov.b64 fa, %1;\n\tmov.b64 fb, %2;\n\t"
      "add.rn.f64 fr, fa, fb;\n\tmov.b64 %0, fr;\n\t}"
      : "=l"(r)
      : "l"(a), "l"(b));
  return r;
}
__device__ __forceinline__ u64 mul_f64_bits(u64 a, u64 b) {
  u64 r;
  asm("{\n\t.reg .f64 fa, fb, fr;\n\t"
      "mov.b64 fa, %1;\n\tmov.b64 fb, %2;\n\t"
      "mul.rn.f64 fr, fa, fb;\n\tmov.b64 %0, fr;\n\t}"
      : "=l"(r)
      : "l"(a), "l"(b));
  return r;
}
// div_f64_bits divides by the integer w, exact in float64.
__device__ __forceinline__ u64 div_f64_bits(u64 a, u32 w) {
  u64 r;
  asm("{\n\t.reg .f64 fa, fw, fr;\n\t"
      "mov.b64 fa, %1;\n\tcvt.rn.f64.u32 fw, %2;\n\t"
      "div.rn.f64 fr, fa, fw;\n\tmov.b64 %0, fr;\n\t}"
      : "=l"(r)
      : "l"(a), "r"(w));
  return r;
}

// Max and min of floats on their bits, N bits wide: a NaN operand gives
// nan; otherwise the operand larger (smaller) in the order of key, which
// is the values' order with -0 below +0. The result is an operand, so
// nothing rounds.
template <int N>
struct FloatOrder {
  static constexpr u64 sign = 1ull << (N - 1), mag = sign - 1, all = sign | mag;
  __device__ static __forceinline__ u64 key(u64 v) { return (v & sign) ? ~v & all : v | sign; }
  __device__ static __forceinline__ u64 pick(u64 x, u64 y, u64 inf, u64 nan, bool max) {
    if ((x & mag) > inf || (y & mag) > inf) return nan;
    return (key(x) > key(y)) == max ? x : y;
  }
};

// round_bf16 rounds a float32 to bfloat16, to nearest even; NaN canonical.
__device__ __forceinline__ u64 round_bf16(float f) {
  u32 u = f32_bits(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return 0x7fffu;
  u += 0x7fffu + ((u >> 16) & 1u);
  return u >> 16;
}
__device__ __forceinline__ float bf16_f32(u64 v) { return as_f32((u32)v << 16); }

// round_f16 rounds a float32 to float16, to nearest even; NaN canonical.
__device__ __forceinline__ u64 round_f16(float f) {
  if ((f32_bits(f) & 0x7fffffffu) > 0x7f800000u) return 0x7fffu;
  u16 h;
  asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(f));
  return h;
}
__device__ __forceinline__ float f16_f32(u64 v) {
  float f;
  asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"((u16)v));
  return f;
}

// Each element type: its size, and its operations on one element's bits
// (in the low bits of a u64). add: the sum, rounded once. max, min.
// scale: premulsum's product with the scalar s (an element of the type),
// rounded once. avg: the sum divided by W, rounded once (integers:
// truncated toward zero). canon: the canonical NaN for any NaN.

// bfloat16: add and multiply exactly in float32 (8-bit significands),
// round once; divide in float32 (at least 2p+2 bits: the double rounding
// is innocuous), round once.
struct BF16 {
  static constexpr int size = 2;
  static constexpr bool reduces = true, floating = true;
  __device__ static __forceinline__ u64 add(const Red&, u64 a, u64 b) {
    return round_bf16(add_f32(bf16_f32(a), bf16_f32(b)));
  }
  __device__ static __forceinline__ u64 max(const Red&, u64 a, u64 b) {
    return FloatOrder<16>::pick(a, b, 0x7f80, 0x7fff, true);
  }
  __device__ static __forceinline__ u64 min(const Red&, u64 a, u64 b) {
    return FloatOrder<16>::pick(a, b, 0x7f80, 0x7fff, false);
  }
  __device__ static __forceinline__ u64 scale(const Red&, u64 a, u64 s) {
    return round_bf16(mul_f32(bf16_f32(a), bf16_f32(s)));
  }
  __device__ static __forceinline__ u64 avg(const Red& r, u64 a) {
    return round_bf16(div_f32(bf16_f32(a), (float)r.world));
  }
  __device__ static __forceinline__ u64 canon(u64 u) { return (u & 0x7fffu) > 0x7f80u ? 0x7fffu : u; }
};

// float16: as bfloat16 (11-bit significands: products are exact in float32
// and sums round innocuously twice).
struct F16 {
  static constexpr int size = 2;
  static constexpr bool reduces = true, floating = true;
  __device__ static __forceinline__ u64 add(const Red&, u64 a, u64 b) {
    return round_f16(add_f32(f16_f32(a), f16_f32(b)));
  }
  __device__ static __forceinline__ u64 max(const Red&, u64 a, u64 b) {
    return FloatOrder<16>::pick(a, b, 0x7c00, 0x7fff, true);
  }
  __device__ static __forceinline__ u64 min(const Red&, u64 a, u64 b) {
    return FloatOrder<16>::pick(a, b, 0x7c00, 0x7fff, false);
  }
  __device__ static __forceinline__ u64 scale(const Red&, u64 a, u64 s) {
    return round_f16(mul_f32(f16_f32(a), f16_f32(s)));
  }
  __device__ static __forceinline__ u64 avg(const Red& r, u64 a) {
    return round_f16(div_f32(f16_f32(a), (float)r.world));
  }
  __device__ static __forceinline__ u64 canon(u64 u) { return (u & 0x7fffu) > 0x7c00u ? 0x7fffu : u; }
};

struct F32 {
  static constexpr int size = 4;
  static constexpr bool reduces = true, floating = true;
  __device__ static __forceinline__ u64 canon(u64 u) {
    return (u & 0x7fffffffu) > 0x7f800000u ? 0x7fffffffu : u;
  }
  __device__ static __forceinline__ u64 add(const Red&, u64 a, u64 b) {
    return canon(f32_bits(add_f32(as_f32((u32)a), as_f32((u32)b))));
  }
  __device__ static __forceinline__ u64 max(const Red&, u64 a, u64 b) {
    return FloatOrder<32>::pick(a, b, 0x7f800000u, 0x7fffffffu, true);
  }
  __device__ static __forceinline__ u64 min(const Red&, u64 a, u64 b) {
    return FloatOrder<32>::pick(a, b, 0x7f800000u, 0x7fffffffu, false);
  }
  __device__ static __forceinline__ u64 scale(const Red&, u64 a, u64 s) {
    return canon(f32_bits(mul_f32(as_f32((u32)a), as_f32((u32)s))));
  }
  __device__ static __forceinline__ u64 avg(const Red& r, u64 a) {
    return canon(f32_bits(div_f32(as_f32((u32)a), (float)r.world)));
  }
};

struct F64 {
  static constexpr int size = 8;
  static constexpr bool reduces = true, floating = true;
  static constexpr u64 kNaN = 0x7fffffffffffffffull, kInf = 0x7ff0000000000000ull;
  __device__ static __forceinline__ u64 canon(u64 u) { return (u & kNaN) > kInf ? kNaN : u; }
  __device__ static __forceinline__ u64 add(const Red&, u64 a, u64 b) { return canon(add_f64_bits(a, b)); }
  __device__ static __forceinline__ u64 max(const Red&, u64 a, u64 b) {
    return FloatOrder<64>::pick(a, b, kInf, kNaN, true);
  }
  __device__ static __forceinline__ u64 min(const Red&, u64 a, u64 b) {
    return FloatOrder<64>::pick(a, b, kInf, kNaN, false);
  }
  __device__ static __forceinline__ u64 scale(const Red&, u64 a, u64 s) { return canon(mul_f64_bits(a, s)); }
  __device__ static __forceinline__ u64 avg(const Red& r, u64 a) { return canon(div_f64_bits(a, r.world)); }
};

// Integers of N bytes, signed where the launch says so (DC_CALC_SIGNED):
// the sum wraps (one kernel for both signs), max and min compare by sign,
// avg truncates the quotient toward zero. Exact in any order.
template <int N>
struct Int {
  static constexpr int size = N;
  static constexpr bool reduces = true, floating = false;
  static constexpr u64 mask = N == 8 ? ~0ull : (1ull << (8 * N)) - 1;
  __device__ static __forceinline__ long long sext(u64 v) {
    return (long long)(v << (64 - 8 * N)) >> (64 - 8 * N);
  }
  __device__ static __forceinline__ bool less(const Red& r, u64 a, u64 b) {
    return (r.calc & DC_CALC_SIGNED) ? sext(a) < sext(b) : (a & mask) < (b & mask);
  }
  __device__ static __forceinline__ u64 add(const Red&, u64 a, u64 b) { return (a + b) & mask; }
  __device__ static __forceinline__ u64 max(const Red& r, u64 a, u64 b) { return less(r, a, b) ? b : a; }
  __device__ static __forceinline__ u64 min(const Red& r, u64 a, u64 b) { return less(r, a, b) ? a : b; }
  __device__ static __forceinline__ u64 scale(const Red&, u64 a, u64) { return a; }  // refused by the host
  __device__ static __forceinline__ u64 avg(const Red& r, u64 a) {
    if constexpr (N < 8) {  // 32-bit division: the quotient of a narrower integer
      if (r.calc & DC_CALC_SIGNED) return (u64)(u32)((int)sext(a) / (int)r.world) & mask;
      return (u32)(a & mask) / r.world;
    }
    if (r.calc & DC_CALC_SIGNED) return (u64)(sext(a) / (long long)r.world);
    return a / (u64)r.world;
  }
  __device__ static __forceinline__ u64 canon(u64 u) { return u; }
};
typedef Int<1> I8;
typedef Int<2> I16;
typedef Int<4> I32;
typedef Int<8> I64;

// The kinds of kernel (collective.cu), the template parameter K of the
// protocol's code: Bytes, of the operations that only copy; Any, of every
// reduction, whose element type and operator are the launch's; Sum<E>, of
// E's sum alone (prims.h's reduce_range and tree.h's tree_regs_of take
// the type and operator of a kind).
struct Bytes {
  static constexpr bool reduces = false, fixed = false;
};
struct Any {
  static constexpr bool reduces = true, fixed = false;
};
template <class T>
struct Sum {
  static constexpr bool reduces = true, fixed = true;
  using E = T;
};

// DC_WITH_TYPE(calc, ...) runs the statements ... with the type E the
// element type of calc (DC_CALC_TYPE_*). A macro, not a function taking a
// generic lambda: NVRTC takes a generic lambda for a host function.
#define DC_TYPE_CASE(T, K, ...) \
  case K: {                     \
    using E = T;                \
    __VA_ARGS__;                \
  } break;
#define DC_WITH_TYPE(calc, ...)                           \
  switch (((calc) >> DC_CALC_TYPE_SHIFT) & 15) {          \
    DC_TYPE_CASE(BF16, DC_TYPE_BF16, __VA_ARGS__)         \
    DC_TYPE_CASE(F16, DC_TYPE_F16, __VA_ARGS__)           \
    DC_TYPE_CASE(F32, DC_TYPE_F32, __VA_ARGS__)           \
    DC_TYPE_CASE(F64, DC_TYPE_F64, __VA_ARGS__)           \
    DC_TYPE_CASE(I8, DC_TYPE_I8, __VA_ARGS__)             \
    DC_TYPE_CASE(I16, DC_TYPE_I16, __VA_ARGS__)           \
    DC_TYPE_CASE(I32, DC_TYPE_I32, __VA_ARGS__)           \
    DC_TYPE_CASE(I64, DC_TYPE_I64, __VA_ARGS__)           \
  }

// ---- the operator over the lanes of 8 and 16 bytes ------------------------

// lanes applies f to each element of a and b, 8 bytes of E's elements;
// elements narrower than 8 bytes in two 32-bit words (lanes32), since a
// GPU's integer unit is 32 bits wide.
template <class E, class F>
__device__ __forceinline__ u32 lanes32(u32 a, u32 b, F f) {
  constexpr int S = E::size;
  if constexpr (S == 4) {
    return (u32)f(a, b);
  } else {
    constexpr int B = 8 * S;
    constexpr u32 M = (1u << B) - 1;
    u32 r = 0;
#pragma unroll
    for (int i = 0; i < 4 / S; i++) r |= ((u32)f((a >> (B * i)) & M, (b >> (B * i)) & M) & M) << (B * i);
    return r;
  }
}
template <class E, class F>
__device__ __forceinline__ u64 lanes(u64 a, u64 b, F f) {
  if constexpr (E::size == 8) {
    return f(a, b);
  } else {
    return lanes32<E>((u32)a, (u32)b, f) | (u64)lanes32<E>((u32)(a >> 32), (u32)(b >> 32), f) << 32;
  }
}

// A launch's operator as a compile-time constant C: its node bits, and
// DC_CALC_PRE or DC_CALC_POST (the signedness stays a runtime flag). The
// loops over the elements (prims.h, the LL tree) are instantiated per C,
// each without a branch on the operator, and DC_WITH_CALC picks one per
// launch.
constexpr u32 kCalcOps = DC_CALC_NODE | DC_CALC_PRE | DC_CALC_POST;

// DC_WITH_CALC(E, calc, ...) runs the statements ... with the constant C
// the operator of calc: sum (0), max, min, avg (DC_CALC_POST) or, for
// floating types, premulsum (DC_CALC_PRE; integers take no scalar, and
// the host refuses it).
#define DC_CALC_CASE(K, V, ...) \
  case K: {                     \
    constexpr u32 C = V;        \
    __VA_ARGS__;                \
  } break;
#define DC_WITH_CALC(E, calc, ...)                                           \
  switch ((calc) & kCalcOps) {                                               \
    DC_CALC_CASE(DC_CALC_MAX, DC_CALC_MAX, __VA_ARGS__)                      \
    DC_CALC_CASE(DC_CALC_MIN, DC_CALC_MIN, __VA_ARGS__)                      \
    DC_CALC_CASE(DC_CALC_POST, DC_CALC_POST, __VA_ARGS__)                    \
    DC_CALC_CASE(DC_CALC_PRE, E::floating ? DC_CALC_PRE : 0u, __VA_ARGS__)   \
    default: {                                                               \
      constexpr u32 C = 0;                                                   \
      __VA_ARGS__;                                                           \
    } break;                                                                 \
  }

// node is the operator at one node of the tree, on one element; node8 on
// 8 bytes of elements, node16 on 16.
template <class E, u32 C>
__device__ __forceinline__ u64 node(const Red& r, u64 a, u64 b) {
  if constexpr ((C & DC_CALC_NODE) == DC_CALC_MAX) return E::max(r, a, b);
  if constexpr ((C & DC_CALC_NODE) == DC_CALC_MIN) return E::min(r, a, b);
  if constexpr ((C & DC_CALC_NODE) == 0) return E::add(r, a, b);
}
template <class E, u32 C>
__device__ __forceinline__ u64 node8(const Red& r, u64 a, u64 b) {
  return lanes<E>(a, b, [&](u64 x, u64 y) { return node<E, C>(r, x, y); });
}

__device__ __forceinline__ u64 lo64(V4 v) { return v.x | (u64)v.y << 32; }
__device__ __forceinline__ u64 hi64(V4 v) { return v.z | (u64)v.w << 32; }
__device__ __forceinline__ V4 v4(u64 lo, u64 hi) { return V4{(u32)lo, (u32)(lo >> 32), (u32)hi, (u32)(hi >> 32)}; }

template <class E, u32 C>
__device__ __forceinline__ V4 node16(const Red& r, V4 a, V4 b) {
  if constexpr (E::size == 8) {
    return v4(node8<E, C>(r, lo64(a), lo64(b)), node8<E, C>(r, hi64(a), hi64(b)));
  } else {
    auto f = [&](u64 x, u64 y) { return node<E, C>(r, x, y); };
    return V4{lanes32<E>(a.x, b.x, f), lanes32<E>(a.y, b.y, f), lanes32<E>(a.z, b.z, f), lanes32<E>(a.w, b.w, f)};
  }
}

// leaf is what a leaf of the tree holds of rank p's element v: v, or
// under premulsum v times rank p's scalar.
template <class E, u32 C>
__device__ __forceinline__ u64 leaf(const Red& r, int p, u64 v) {
  if constexpr (C & DC_CALC_PRE) return E::scale(r, v, r.scale[p]);
  return v;
}
template <class E, u32 C>
__device__ __forceinline__ u64 leaf8(const Red& r, int p, u64 v) {
  if constexpr (C & DC_CALC_PRE) {
    const u64 s = r.scale[p];
    return lanes<E>(v, 0, [&](u64 x, u64) { return E::scale(r, x, s); });
  }
  return v;
}
template <class E, u32 C>
__device__ __forceinline__ V4 leaf16(const Red& r, int p, V4 v) {
  if constexpr (C & DC_CALC_PRE) return v4(leaf8<E, C>(r, p, lo64(v)), leaf8<E, C>(r, p, hi64(v)));
  return v;
}

// root is the last step at the root of the tree: avg's division by
// r.world; otherwise nothing.
template <class E, u32 C>
__device__ __forceinline__ u64 root(const Red& r, u64 v) {
  if constexpr (C & DC_CALC_POST) return E::avg(r, v);
  return v;
}
template <class E, u32 C>
__device__ __forceinline__ u64 root8(const Red& r, u64 v) {
  if constexpr (C & DC_CALC_POST) return lanes<E>(v, 0, [&](u64 x, u64) { return E::avg(r, x); });
  return v;
}
template <class E, u32 C>
__device__ __forceinline__ V4 root16(const Red& r, V4 v) {
  if constexpr (C & DC_CALC_POST) return v4(root8<E, C>(r, lo64(v)), root8<E, C>(r, hi64(v)));
  return v;
}

// canon8 and canon16 make every NaN of 8 and 16 bytes of elements the
// canonical one.
template <class E>
__device__ __forceinline__ u64 canon8(u64 v) {
  return lanes<E>(v, 0, [&](u64 x, u64) { return E::canon(x); });
}
template <class E>
__device__ __forceinline__ V4 canon16(V4 v) {
  return v4(canon8<E>(lo64(v)), canon8<E>(hi64(v)));
}

// Element loads and stores by size (staging is read through L2, ops.h).
template <int S>
__device__ __forceinline__ u64 load_elem(u64 p) {
  if constexpr (S == 1) return ld_u8(p);
  if constexpr (S == 2) return ld_u16(p);
  if constexpr (S == 4) return ld_u32(p);
  if constexpr (S == 8) return ld_u64(p);
}
template <int S>
__device__ __forceinline__ void store_elem(u64 p, u64 v) {
  if constexpr (S == 1) st_u8(p, (u32)v);
  if constexpr (S == 2) st_u16(p, (u16)v);
  if constexpr (S == 4) st_u32(p, (u32)v);
  if constexpr (S == 8) st_u64(p, v);
}
