// ops.h: what every kernel of the cuda backend shares: memory operations
// (inline PTX, so that the exact instructions the contract needs are
// pinned down: acquire/release at system scope, loads through L2 only
// where peers write). Every kernel file builds on it; the host puts it
// before them when it compiles them (kernels.go). The arithmetic is
// reduce.h's.

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

// T splits n leaves at the largest power of two below n.
__host__ __device__ constexpr int pow2below(int n) {
  int p = 1;
  while (p * 2 < n) p *= 2;
  return p;
}
