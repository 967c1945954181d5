// ops.h: what every kernel of the cuda backend shares: element types,
// memory operations (inline PTX, so that the exact instructions the
// contract needs are pinned down: acquire/release at system scope,
// loads through L2 only where peers write) and the arithmetic of one tree
// node (IEEE adds rounded once to nearest even, no FMA contraction, no
// flush to zero, NaN canonical). Every kernel file builds on it;
// the host puts it before them when it compiles them (kernels.go).

#pragma once

typedef unsigned long long u64;
typedef unsigned int u32;
typedef unsigned short u16;

struct alignas(16) V4 {
  u32 x, y, z, w;
};

// ---- memory access -------------------------------------------------------

__device__ __forceinline__ u64 ld_acquire(u64 p) {
  u64 v;
  asm volatile("ld.acquire.sys.global.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
  return v;
}
__device__ __forceinline__ void st_release(u64 p, u64 v) {
  asm volatile("st.release.sys.global.u64 [%0], %1;" ::"l"(p), "l"(v) : "memory");
}
__device__ __forceinline__ u64 ld_vol(u64 p) {
  u64 v;
  asm volatile("ld.volatile.global.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
  return v;
}
__device__ __forceinline__ void ld_vol2(u64 p, u64* x, u64* y) {
  asm volatile("ld.volatile.global.v2.u64 {%0, %1}, [%2];" : "=l"(*x), "=l"(*y) : "l"(p) : "memory");
}
__device__ __forceinline__ void st_vol(u64 p, u64 v) {
  asm volatile("st.volatile.global.u64 [%0], %1;" ::"l"(p), "l"(v) : "memory");
}
__device__ __forceinline__ void fence_sys() { asm volatile("fence.sc.sys;" ::: "memory"); }
__device__ __forceinline__ void fence_gpu() { asm volatile("fence.acq_rel.gpu;" ::: "memory"); }
__device__ __forceinline__ void sync_block() { asm volatile("bar.sync 0;" ::: "memory"); }
__device__ __forceinline__ u64 now_ns() {
  u64 t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}
__device__ __forceinline__ void nap() { asm volatile("nanosleep.u32 32;"); }
__device__ __forceinline__ u32 atom_add(u64 p, u32 v) {
  u32 old;
  asm volatile("atom.global.add.u32 %0, [%1], %2;" : "=r"(old) : "l"(p), "r"(v) : "memory");
  return old;
}
// red_add adds v at p without returning the old value: nothing waits for
// the memory's answer.
__device__ __forceinline__ void red_add(u64 p, u64 v) {
  asm volatile("red.global.add.u64 [%0], %1;" ::"l"(p), "l"(v) : "memory");
}
__device__ __forceinline__ void atom_zero(u64 p) {
  u32 old;
  asm volatile("atom.global.exch.b32 %0, [%1], 0;" : "=r"(old) : "l"(p) : "memory");
  (void)old;
}
__device__ __forceinline__ u64 atom_cas(u64 p, u64 cmp, u64 v) {
  u64 old;
  asm volatile("atom.global.cas.b64 %0, [%1], %2, %3;" : "=l"(old) : "l"(p), "l"(cmp), "l"(v) : "memory");
  return old;
}

// Staging is read through L2 only (.cg): peers' memory must never be
// served from a stale L1 line.
__device__ __forceinline__ V4 ld_v4(u64 p) {
  V4 v;
  asm volatile("ld.global.cg.v4.u32 {%0, %1, %2, %3}, [%4];"
               : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
               : "l"(p));
  return v;
}
__device__ __forceinline__ void st_v4(u64 p, V4 v) {
  asm volatile("st.global.v4.u32 [%0], {%1, %2, %3, %4};" ::"l"(p), "r"(v.x), "r"(v.y), "r"(v.z), "r"(v.w)
               : "memory");
}
// An LL launch reads its inputs through L1 (see prefetch_lines).
__device__ __forceinline__ u64 ld_in8(u64 p) {
  u64 v;
  asm volatile("ld.global.u64 %0, [%1];" : "=l"(v) : "l"(p));
  return v;
}
__device__ __forceinline__ u32 ld_in1(u64 p) {
  u32 v;
  asm volatile("ld.global.u8 %0, [%1];" : "=r"(v) : "l"(p));
  return v;
}
__device__ __forceinline__ u32 ld_u8(u64 p) {
  u32 v;
  asm volatile("ld.global.cg.u8 %0, [%1];" : "=r"(v) : "l"(p));
  return v;
}
__device__ __forceinline__ void st_u8(u64 p, u32 v) {
  asm volatile("st.global.u8 [%0], %1;" ::"l"(p), "r"(v) : "memory");
}
__device__ __forceinline__ u16 ld_u16(u64 p) {
  u16 v;
  asm volatile("ld.global.cg.u16 %0, [%1];" : "=h"(v) : "l"(p));
  return v;
}
__device__ __forceinline__ void st_u16(u64 p, u16 v) {
  asm volatile("st.global.u16 [%0], %1;" ::"l"(p), "h"(v) : "memory");
}
__device__ __forceinline__ u32 ld_u32(u64 p) {
  u32 v;
  asm volatile("ld.global.cg.u32 %0, [%1];" : "=r"(v) : "l"(p));
  return v;
}
__device__ __forceinline__ void st_u32(u64 p, u32 v) {
  asm volatile("st.global.u32 [%0], %1;" ::"l"(p), "r"(v) : "memory");
}
__device__ __forceinline__ u64 ld_u64(u64 p) {
  u64 v;
  asm volatile("ld.global.cg.u64 %0, [%1];" : "=l"(v) : "l"(p));
  return v;
}
__device__ __forceinline__ void st_u64(u64 p, u64 v) {
  asm volatile("st.global.u64 [%0], %1;" ::"l"(p), "l"(v) : "memory");
}

// ---- arithmetic: one tree node, rounded once, NaN canonical ---------------

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
__device__ __forceinline__ u64 add_f64_bits(u64 a, u64 b) {
  u64 r;
  asm("{\n\t.reg .f64 fa, fb, fr;\n\t"
      "mov.b64 fa, %1;\n\tmov.b64 fb, %2;\n\t"
      "add.rn.f64 fr, fa, fb;\n\tmov.b64 %0, fr;\n\t}"
      : "=l"(r)
      : "l"(a), "l"(b));
  return r;
}

// bfloat16: add exactly in float32, round once to nearest even.
struct BF16 {
  typedef u16 T;
  static constexpr bool reduces = true;
  __device__ static __forceinline__ u32 add(u32 a, u32 b) {
    u32 u = f32_bits(add_f32(as_f32(a << 16), as_f32(b << 16)));
    if ((u & 0x7fffffffu) > 0x7f800000u) return 0x7fffu;
    u += 0x7fffu + ((u >> 16) & 1u);
    return u >> 16;
  }
  __device__ static __forceinline__ u32 add2(u32 a, u32 b) {
    return add(a & 0xffffu, b & 0xffffu) | (add(a >> 16, b >> 16) << 16);
  }
  __device__ static __forceinline__ u32 canon(u32 u) { return (u & 0x7fffu) > 0x7f80u ? 0x7fffu : u; }
  __device__ static __forceinline__ u32 canon2(u32 u) { return canon(u & 0xffffu) | (canon(u >> 16) << 16); }
};

// float16: add in float32 (exact enough: rounding twice is innocuous for
// 11-bit significands), round once to nearest even.
struct F16 {
  typedef u16 T;
  static constexpr bool reduces = true;
  __device__ static __forceinline__ u32 add(u32 a, u32 b) {
    u16 ha = (u16)a, hb = (u16)b, h;
    float fa, fb;
    asm("cvt.f32.f16 %0, %1;" : "=f"(fa) : "h"(ha));
    asm("cvt.f32.f16 %0, %1;" : "=f"(fb) : "h"(hb));
    float r = add_f32(fa, fb);
    if ((f32_bits(r) & 0x7fffffffu) > 0x7f800000u) return 0x7fffu;
    asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(r));
    return h;
  }
  __device__ static __forceinline__ u32 add2(u32 a, u32 b) {
    return add(a & 0xffffu, b & 0xffffu) | (add(a >> 16, b >> 16) << 16);
  }
  __device__ static __forceinline__ u32 canon(u32 u) { return (u & 0x7fffu) > 0x7c00u ? 0x7fffu : u; }
  __device__ static __forceinline__ u32 canon2(u32 u) { return canon(u & 0xffffu) | (canon(u >> 16) << 16); }
};

struct F32 {
  typedef u32 T;
  static constexpr bool reduces = true;
  __device__ static __forceinline__ u32 add(u32 a, u32 b) {
    return canon(f32_bits(add_f32(as_f32(a), as_f32(b))));
  }
  __device__ static __forceinline__ u32 canon(u32 u) { return (u & 0x7fffffffu) > 0x7f800000u ? 0x7fffffffu : u; }
};

struct F64 {
  typedef u64 T;
  static constexpr bool reduces = true;
  __device__ static __forceinline__ u64 add(u64 a, u64 b) {
    return canon(add_f64_bits(a, b));
  }
  __device__ static __forceinline__ u64 canon(u64 u) {
    return (u & 0x7fffffffffffffffull) > 0x7ff0000000000000ull ? 0x7fffffffffffffffull : u;
  }
};

// Bytes: the kernel of the operations that only copy.
struct Bytes {
  typedef unsigned char T;
  static constexpr bool reduces = false;
};

// Element loads and stores and the lane-wise vector add, by element size.
template <class E>
struct Elem;
template <>
struct Elem<BF16> {
  __device__ static u32 load(u64 p) { return ld_u16(p); }
  __device__ static void store(u64 p, u32 v) { st_u16(p, (u16)v); }
  __device__ static V4 add4(V4 a, V4 b) {
    return V4{BF16::add2(a.x, b.x), BF16::add2(a.y, b.y), BF16::add2(a.z, b.z), BF16::add2(a.w, b.w)};
  }
  __device__ static u64 add8(u64 a, u64 b) {
    return BF16::add2((u32)a, (u32)b) | (u64)BF16::add2((u32)(a >> 32), (u32)(b >> 32)) << 32;
  }
  __device__ static V4 canon4(V4 a) { return V4{BF16::canon2(a.x), BF16::canon2(a.y), BF16::canon2(a.z), BF16::canon2(a.w)}; }
  __device__ static u64 canon8(u64 a) { return BF16::canon2((u32)a) | (u64)BF16::canon2((u32)(a >> 32)) << 32; }
};
template <>
struct Elem<F16> {
  __device__ static u32 load(u64 p) { return ld_u16(p); }
  __device__ static void store(u64 p, u32 v) { st_u16(p, (u16)v); }
  __device__ static V4 add4(V4 a, V4 b) {
    return V4{F16::add2(a.x, b.x), F16::add2(a.y, b.y), F16::add2(a.z, b.z), F16::add2(a.w, b.w)};
  }
  __device__ static u64 add8(u64 a, u64 b) {
    return F16::add2((u32)a, (u32)b) | (u64)F16::add2((u32)(a >> 32), (u32)(b >> 32)) << 32;
  }
  __device__ static V4 canon4(V4 a) { return V4{F16::canon2(a.x), F16::canon2(a.y), F16::canon2(a.z), F16::canon2(a.w)}; }
  __device__ static u64 canon8(u64 a) { return F16::canon2((u32)a) | (u64)F16::canon2((u32)(a >> 32)) << 32; }
};
template <>
struct Elem<F32> {
  __device__ static u32 load(u64 p) { return ld_u32(p); }
  __device__ static void store(u64 p, u32 v) { st_u32(p, v); }
  __device__ static V4 add4(V4 a, V4 b) {
    return V4{F32::add(a.x, b.x), F32::add(a.y, b.y), F32::add(a.z, b.z), F32::add(a.w, b.w)};
  }
  __device__ static u64 add8(u64 a, u64 b) {
    return F32::add((u32)a, (u32)b) | (u64)F32::add((u32)(a >> 32), (u32)(b >> 32)) << 32;
  }
  __device__ static V4 canon4(V4 a) { return V4{F32::canon(a.x), F32::canon(a.y), F32::canon(a.z), F32::canon(a.w)}; }
  __device__ static u64 canon8(u64 a) { return F32::canon((u32)a) | (u64)F32::canon((u32)(a >> 32)) << 32; }
};
template <>
struct Elem<F64> {
  __device__ static u64 load(u64 p) { return ld_u64(p); }
  __device__ static void store(u64 p, u64 v) { st_u64(p, v); }
  __device__ static V4 add4(V4 a, V4 b) {
    u64 lo = F64::add((u64)a.x | ((u64)a.y << 32), (u64)b.x | ((u64)b.y << 32));
    u64 hi = F64::add((u64)a.z | ((u64)a.w << 32), (u64)b.z | ((u64)b.w << 32));
    return V4{(u32)lo, (u32)(lo >> 32), (u32)hi, (u32)(hi >> 32)};
  }
  __device__ static u64 add8(u64 a, u64 b) { return F64::add(a, b); }
  __device__ static V4 canon4(V4 a) {
    const u64 lo = F64::canon((u64)a.x | ((u64)a.y << 32)), hi = F64::canon((u64)a.z | ((u64)a.w << 32));
    return V4{(u32)lo, (u32)(lo >> 32), (u32)hi, (u32)(hi >> 32)};
  }
  __device__ static u64 canon8(u64 a) { return F64::canon(a); }
};

// T splits n leaves at the largest power of two below n.
__host__ __device__ constexpr int pow2below(int n) {
  int p = 1;
  while (p * 2 < n) p *= 2;
  return p;
}
