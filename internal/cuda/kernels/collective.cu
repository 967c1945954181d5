// collective.cu: every kernel of detcoll's cuda backend.
//
// Compiled at run time by NVRTC for the device's architecture, once per
// world size (-DDC_WORLD=W), so that the tree over the ranks unrolls into
// registers. It includes no header: loads, stores, fences, atomics, adds and
// conversions are inline PTX, which pins down exactly the instructions the
// contract needs (acquire/release at system scope, round-to-nearest adds
// that no compiler can contract into an FMA, no flush to zero).
//
// One kernel body runs every step of the protocol of the contract's section
// 4; the flags of each launch say which steps it takes:
//   NEW       this launch belongs to the call that is not yet published:
//             seq = own stage + 1 (else seq = own stage, already published)
//   RESERVE   wait until every peer's done >= seq - 1
//   COPYIN    copy the inputs into this rank's staging
//   PUBLISH   write the signature, then stage = seq (release, system scope)
//   READY     wait until every peer's stage >= seq, compare signatures
//   WAIT_RED  wait until every peer's reduced >= seq (large all-reduce)
//   COMPUTE   produce the outputs from the staging (mode)
//   REDUCED   reduced = seq (this rank's shard is summed in place)
//   DONE      done = seq (this rank has finished reading its peers)
// Sequence values are read from device memory when the kernel runs, never
// passed by the host, so captured graphs replay correctly.
//
// A launch of several blocks publishes through its last block (an atomic
// count, reset for the next launch). No block ever waits for another block
// of its own launch: blocks wait only on words that earlier launches (here
// or on peers) publish, so a grid of any size makes progress whatever else
// occupies the GPU.
//
// Every wait is bounded by the timeout (%globaltimer), the host's abort word
// and the peers' status words. A failed wait or a signature mismatch is
// recorded once in host-mapped memory (the error record) and in this rank's
// status word, which peers read; every later launch sees the status and
// exits at once.

typedef unsigned long long u64;
typedef unsigned int u32;
typedef unsigned short u16;

#ifndef DC_WORLD
#error "compile with -DDC_WORLD=<world size>"
#endif
#define DC_MAX_WORLD 64
#define DC_MAX_WORK 8
#define DC_BLOCK 512  // threads per block of every launch

// Control block of a rank's buffer (bytes). Must match layout.go.
#define DC_OFF_STAGE 0
#define DC_OFF_DONE 128
#define DC_OFF_REDUCED 256
#define DC_OFF_STATUS 384
#define DC_OFF_SIG 512
#define DC_SIG_WORDS 8
#define DC_OFF_CLAIM 640
#define DC_OFF_COUNT_STAGE 768
#define DC_OFF_COUNT_REDUCED 832
#define DC_OFF_COUNT_DONE 896
#define DC_OFF_PEERS 1024
#define DC_CTRL_SIZE 4096

// Host-mapped error record (bytes). Must match layout.go.
#define DC_REC_ABORT 0
#define DC_REC_VALID 64
#define DC_REC_CODE 72
#define DC_REC_PHASE 80
#define DC_REC_OP 88
#define DC_REC_SEQ 96
#define DC_REC_MISSING 104
#define DC_REC_AUX 112
#define DC_REC_SIGS 128

#define DC_F_NEW 1
#define DC_F_RESERVE 2
#define DC_F_COPYIN 4
#define DC_F_PUBLISH 8
#define DC_F_READY 16
#define DC_F_WAIT_RED 32
#define DC_F_COMPUTE 64
#define DC_F_REDUCED 128
#define DC_F_DONE 256

#define DC_MODE_NONE 0
#define DC_MODE_REDUCE 1
#define DC_MODE_RSHARD 2
#define DC_MODE_RINPLACE 3
#define DC_MODE_GATHER 4
#define DC_MODE_GSHARDS 5
#define DC_MODE_BCAST 6

#define DC_CODE_TIMEOUT 1
#define DC_CODE_MISMATCH 2
#define DC_CODE_PEER 3
#define DC_CODE_ABORT 4

#define DC_PHASE_RESERVE 1
#define DC_PHASE_READY 2
#define DC_PHASE_REDUCED 3

// Status word: a failure kind (base.FailureKind) in the high half, the
// culprit rank + 1 in the low half.
#define DC_FAIL_LOST 1
#define DC_FAIL_TIMEOUT 2
#define DC_FAIL_MISMATCH 3

#define DC_SHARD_ALIGN 64

// A waiting thread polls its word over NVLink about once a microsecond.
// Every DC_CHECK_EVERY polls it also reads the peer's status word and the
// timer, and every DC_ABORT_EVERY polls the host's abort word, which lives
// in host memory: a read over PCIe. Those host reads must stay rare: with a
// poller in each of 264 blocks reading it every 8 polls, the reads queued
// behind each other at ~1 us each, and a wait that had already been
// satisfied ended only when its thread's read came back, ~1 us per waiting
// block later: the ~0.5 ms per call "stall" of back-to-back large calls,
// which fed itself (a late rank makes its peer wait long enough to start
// reading too). See docs/gpu-results.md.
#ifndef DC_CHECK_EVERY
#define DC_CHECK_EVERY 8
#endif
#define DC_ABORT_EVERY 1024

static_assert(DC_WORLD >= 1 && DC_WORLD <= DC_MAX_WORLD, "world size out of range");
constexpr int kWorld = DC_WORLD;

// One buffer of a call: bytes staged per rank from in (0: nothing to copy)
// at offset off of the staging, and the output.
struct Work {
  u64 in, out, bytes, off;
};

// The kernel's one parameter. Must match kernelArgs in launch.go.
struct Args {
  u64 self;     // this rank's buffer: control block, then staging
  u64 host;     // the host-mapped error record
  u64 timeout;  // ns
  u64 count, layout;
  u32 op, dtype, root, nbuf;  // with count and layout: the signature
  u32 rank, flags, mode, nwork;
  Work work[DC_MAX_WORK];
};

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
};

struct F32 {
  typedef u32 T;
  static constexpr bool reduces = true;
  __device__ static __forceinline__ u32 add(u32 a, u32 b) {
    u32 u = f32_bits(add_f32(as_f32(a), as_f32(b)));
    return (u & 0x7fffffffu) > 0x7f800000u ? 0x7fffffffu : u;
  }
};

struct F64 {
  typedef u64 T;
  static constexpr bool reduces = true;
  __device__ static __forceinline__ u64 add(u64 a, u64 b) {
    u64 u = add_f64_bits(a, b);
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
};
template <>
struct Elem<F16> {
  __device__ static u32 load(u64 p) { return ld_u16(p); }
  __device__ static void store(u64 p, u32 v) { st_u16(p, (u16)v); }
  __device__ static V4 add4(V4 a, V4 b) {
    return V4{F16::add2(a.x, b.x), F16::add2(a.y, b.y), F16::add2(a.z, b.z), F16::add2(a.w, b.w)};
  }
};
template <>
struct Elem<F32> {
  __device__ static u32 load(u64 p) { return ld_u32(p); }
  __device__ static void store(u64 p, u32 v) { st_u32(p, v); }
  __device__ static V4 add4(V4 a, V4 b) {
    return V4{F32::add(a.x, b.x), F32::add(a.y, b.y), F32::add(a.z, b.z), F32::add(a.w, b.w)};
  }
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
};

// ---- per-launch state in shared memory -----------------------------------

__shared__ u64 s_ctrl[kWorld];  // every rank's buffer, as mapped here
__shared__ u64 s_pay[kWorld];   // every rank's staging
__shared__ u64 s_seq;
__shared__ volatile int s_fail;
__shared__ u32 s_code[kWorld];
__shared__ u64 s_aux[kWorld];
__shared__ int s_last;

// ---- the tree T --------------------------------------------------------

__host__ __device__ constexpr int pow2below(int n) {
  int p = 1;
  while (p * 2 < n) p *= 2;
  return p;
}

// Tree<E, LO, N> evaluates T over ranks [LO, LO+N) at byte offset off of
// every staging: the left operand is always the lower ranks, split at the
// largest power of two below N.
template <class E, int LO, int N>
struct Tree {
  static constexpr int P = pow2below(N);
  __device__ static __forceinline__ auto one(u64 off) {
    return E::add(Tree<E, LO, P>::one(off), Tree<E, LO + P, N - P>::one(off));
  }
  __device__ static __forceinline__ V4 vec(u64 off) {
    return Elem<E>::add4(Tree<E, LO, P>::vec(off), Tree<E, LO + P, N - P>::vec(off));
  }
};
template <class E, int LO>
struct Tree<E, LO, 1> {
  __device__ static __forceinline__ auto one(u64 off) { return Elem<E>::load(s_pay[LO] + off); }
  __device__ static __forceinline__ V4 vec(u64 off) { return ld_v4(s_pay[LO] + off); }
};

__device__ __forceinline__ u64 gtid() { return (u64)blockIdx.x * blockDim.x + threadIdx.x; }
__device__ __forceinline__ u64 gstride() { return (u64)gridDim.x * blockDim.x; }

// reduce_range writes n elements to dst: element i is T over every rank's
// staging at byte offset off + i*size. Where dst and off agree modulo 16
// the body moves 16-byte vectors, with scalar head and tail; otherwise it
// is all scalar. Each element is the same expression either way.
template <class E>
__device__ void reduce_range(u64 dst, u64 off, u64 n) {
  constexpr u64 S = sizeof(typename E::T), V = 16 / S;
  u64 head = n, nv = 0;
  if (((dst - off) & 15) == 0) {
    head = ((16 - (dst & 15)) & 15) / S;
    if (head > n) head = n;
    nv = (n - head) / V;
  }
  const u64 g = gtid(), st = gstride();
  for (u64 i = g; i < head; i += st) Elem<E>::store(dst + i * S, Tree<E, 0, kWorld>::one(off + i * S));
  const u64 vd = dst + head * S, vo = off + head * S;
  for (u64 i = g; i < nv; i += st) st_v4(vd + 16 * i, Tree<E, 0, kWorld>::vec(vo + 16 * i));
  for (u64 i = head + nv * V + g; i < n; i += st) Elem<E>::store(dst + i * S, Tree<E, 0, kWorld>::one(off + i * S));
}

// copy_bytes copies n bytes: 16-byte stores to dst wherever dst is aligned,
// loading src in the widest unit its alignment relative to dst allows.
__device__ void copy_bytes(u64 dst, u64 src, u64 n) {
  u64 head = (16 - (dst & 15)) & 15;
  if (head > n) head = n;
  const u64 nv = (n - head) / 16, g = gtid(), st = gstride();
  for (u64 i = g; i < head; i += st) st_u8(dst + i, ld_u8(src + i));
  const u64 d = dst + head, s = src + head, rel = (dst ^ src) & 15;
  if (rel == 0) {
    for (u64 i = g; i < nv; i += st) st_v4(d + 16 * i, ld_v4(s + 16 * i));
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

// shard returns the bytes [lo, hi) of an n-byte all-reduce that rank p sums
// in place: equal whole 64-byte lines, the last shard shorter. It must
// agree with every rank; any split gives the same bits.
__device__ __forceinline__ void shard(int p, u64 n, u64* lo, u64* hi) {
  u64 per = (n + kWorld - 1) / kWorld;
  per = (per + DC_SHARD_ALIGN - 1) / DC_SHARD_ALIGN * DC_SHARD_ALIGN;
  *lo = p * per < n ? p * per : n;
  *hi = *lo + per < n ? *lo + per : n;
}

__device__ __forceinline__ u64 status_word(u64 kind, u32 culprit) { return kind << 32 | (u64)(culprit + 1); }

// ---- failure ---------------------------------------------------------------

__device__ void own_signature(const Args& a, u64 seq, u64* w) {
  w[0] = a.op;
  w[1] = a.dtype;
  w[2] = a.count;
  w[3] = a.root;
  w[4] = a.nbuf;
  w[5] = a.layout;
  w[6] = seq;
  w[7] = 0;
}

// record writes the first failure of this communicator into the host's
// error record and this rank's status word (thread 0 of a failing block;
// the first claim wins, later failures only exit).
__device__ void record(const Args& a, u32 code, u32 phase, u64 aux, u64 missing) {
  if (atom_cas(a.self + DC_OFF_CLAIM, 0, 1) != 0) return;
  const u64 seq = s_seq;
  st_vol(a.host + DC_REC_CODE, code);
  st_vol(a.host + DC_REC_PHASE, phase);
  st_vol(a.host + DC_REC_OP, a.op);
  st_vol(a.host + DC_REC_SEQ, seq);
  st_vol(a.host + DC_REC_MISSING, missing);
  st_vol(a.host + DC_REC_AUX, aux);
  u64 mine[DC_SIG_WORDS];
  own_signature(a, seq, mine);
  for (int p = 0; p < kWorld; p++)
    for (int k = 0; k < DC_SIG_WORDS; k++) {
      u64 v = p == (int)a.rank ? mine[k] : ld_vol(s_ctrl[p] + DC_OFF_SIG + 8 * k);
      st_vol(a.host + DC_REC_SIGS + 8 * (p * DC_SIG_WORDS + k), v);
    }
  // What the peers learn: a peer's failure or the host's abort is passed
  // on as it is (kind and culprit); a timeout names the first missing rank.
  u64 status = aux;
  if (code == DC_CODE_MISMATCH) status = status_word(DC_FAIL_MISMATCH, a.rank);
  if (code == DC_CODE_TIMEOUT) {
    u32 first = a.rank;
    for (int p = kWorld - 1; p >= 0; p--)
      if (missing >> p & 1) first = p;
    status = status_word(DC_FAIL_TIMEOUT, first);
  }
  fence_sys();
  st_vol(a.host + DC_REC_VALID, 1);
  st_release(a.self + DC_OFF_STATUS, status);
}

// fail_block ends a block whose threads set s_code/s_aux: thread 0 records
// the most telling cause (a peer's own report, then an abort, then a
// mismatch, then a timeout with every rank still missing).
__device__ void fail_block(const Args& a, u64 word, u64 target, u32 phase) {
  if (threadIdx.x != 0) return;
  u32 code = 0;
  u64 aux = 0;
  const u32 order[4] = {DC_CODE_PEER, DC_CODE_ABORT, DC_CODE_MISMATCH, DC_CODE_TIMEOUT};
  for (int k = 0; k < 4 && code == 0; k++)
    for (int p = 0; p < kWorld; p++)
      if (s_code[p] == order[k]) {
        code = order[k];
        aux = s_aux[p];
        break;
      }
  u64 missing = 0;
  if (code == DC_CODE_TIMEOUT)
    for (int p = 0; p < kWorld; p++)
      if (p != (int)a.rank && ld_acquire(s_ctrl[p] + word) < target) missing |= 1ull << p;
  if (code != 0) record(a, code, phase, aux, missing);
}

// wait_all waits until the word at byte offset word of every peer's
// control block is at least target; thread p polls peer p. It returns
// false, after recording why, if the wait failed.
__device__ bool wait_all(const Args& a, u64 word, u64 target, u32 phase) {
  const u32 t = threadIdx.x;
  if (t < kWorld && t != a.rank) {
    const u64 w = s_ctrl[t] + word, status = s_ctrl[t] + DC_OFF_STATUS, abort = a.host + DC_REC_ABORT;
    const u64 t0 = now_ns();
    for (u32 i = 1; ld_acquire(w) < target; i++) {
      if (s_fail) break;
      if ((i & (DC_CHECK_EVERY - 1)) == 0) {
        // Both loads in flight at once (NVLink and PCIe), then checked.
        const u64 vs = ld_vol(status), va = (i & (DC_ABORT_EVERY - 1)) == 0 ? ld_vol(abort) : 0;
        u64 v = 0;
        u32 code = 0;
        if (vs != 0) {
          code = DC_CODE_PEER;
          v = vs;
        } else if (va != 0) {
          code = DC_CODE_ABORT;
          v = va;
        } else if (now_ns() - t0 > a.timeout) {
          code = DC_CODE_TIMEOUT;
        }
        if (code != 0) {
          // A peer that failed after publishing what we wait for (it
          // found a mismatch, say) must not hide it: progress wins.
          if (ld_acquire(w) >= target) break;
          s_code[t] = code;
          s_aux[t] = v;
          s_fail = 1;
          break;
        }
      }
      nap();
    }
  }
  sync_block();
  if (s_fail) {
    fail_block(a, word, target, phase);
    return false;
  }
  return true;
}

// check_signatures compares every peer's signature with this call's.
// Thread p, which acquired peer p's stage, reads the peer's words in
// 16-byte loads issued together: one NVLink round trip, not one per word.
__device__ bool check_signatures(const Args& a) {
  const u32 t = threadIdx.x;
  if (t < kWorld && t != a.rank) {
    u64 mine[DC_SIG_WORDS], theirs[DC_SIG_WORDS];
    own_signature(a, s_seq, mine);
#pragma unroll
    for (int k = 0; k < DC_SIG_WORDS; k += 2) ld_vol2(s_ctrl[t] + DC_OFF_SIG + 8 * k, &theirs[k], &theirs[k + 1]);
    bool same = true;
#pragma unroll
    for (int k = 0; k < DC_SIG_WORDS; k++) same = same && theirs[k] == mine[k];
    if (!same) {
      s_code[t] = DC_CODE_MISMATCH;
      s_fail = 1;
    }
  }
  sync_block();
  if (s_fail) {
    fail_block(a, DC_OFF_STAGE, s_seq, DC_PHASE_READY);
    return false;
  }
  return true;
}

// last_block reports, to every thread of the block, whether this block is
// the last of its launch to get here; the last one resets the count for the
// next launch. Everything the launch wrote before is visible to whoever
// sees what the last block publishes next: every caller publishes with
// st.release.sys from thread 0 (a fence.acq_rel.sys and the store), after
// the bar.sync here.
//
// Every block's writes go to this GPU's memory, so a GPU-scope release
// (fence.acq_rel.gpu before the count) is enough for the last block to see
// them; only the last block fences at system scope, once per launch, and
// its st.release.sys passes them on (cumulativity).
__device__ bool last_block(const Args& a, u64 counter) {
  sync_block();
  if (gridDim.x == 1) return true;  // thread 0's st.release.sys that follows releases the block's writes
  if (threadIdx.x == 0) {
    fence_gpu();
    s_last = atom_add(a.self + counter, 1) == gridDim.x - 1;
    if (s_last) {
      atom_zero(a.self + counter);
      fence_sys();
    }
  }
  sync_block();
  return s_last;
}

template <class E>
__device__ void compute(const Args& a, const Work& w) {
  const u64 own = s_pay[a.rank];
  switch (a.mode) {
    case DC_MODE_GATHER:
      for (int p = 0; p < kWorld; p++) copy_bytes(w.out + p * w.bytes, s_pay[p] + w.off, w.bytes);
      break;
    case DC_MODE_GSHARDS:
      for (int p = 0; p < kWorld; p++) {
        u64 lo, hi;
        shard(p, w.bytes, &lo, &hi);
        copy_bytes(w.out + lo, s_pay[p] + w.off + lo, hi - lo);
      }
      break;
    case DC_MODE_BCAST:
      if (a.rank != a.root) copy_bytes(w.out, s_pay[a.root] + w.off, w.bytes);
      break;
    default:
      if constexpr (E::reduces) {
        constexpr u64 S = sizeof(typename E::T);
        if (a.mode == DC_MODE_REDUCE) {
          reduce_range<E>(w.out, w.off, w.bytes / S);
        } else if (a.mode == DC_MODE_RSHARD) {
          const u64 n = w.bytes / kWorld;
          reduce_range<E>(w.out, w.off + a.rank * n, n / S);
        } else if (a.mode == DC_MODE_RINPLACE) {
          u64 lo, hi;
          shard(a.rank, w.bytes, &lo, &hi);
          reduce_range<E>(own + w.off + lo, w.off + lo, (hi - lo) / S);
        }
      }
  }
}

template <class E>
__device__ void run(const Args& a) {
  const u32 t = threadIdx.x;
  for (u32 p = t; p < kWorld; p += blockDim.x) {
    s_ctrl[p] = ld_u64(a.self + DC_OFF_PEERS + 8 * p);
    s_pay[p] = s_ctrl[p] + DC_CTRL_SIZE;
    s_code[p] = 0;
    s_aux[p] = 0;
  }
  if (t == 0) {
    s_fail = ld_vol(a.self + DC_OFF_STATUS) != 0;  // poisoned: do nothing
    const u64 stage = ld_acquire(a.self + DC_OFF_STAGE);
    s_seq = (a.flags & DC_F_NEW) ? stage + 1 : stage;
  }
  sync_block();
  if (s_fail) return;
  const u64 seq = s_seq;

  if ((a.flags & DC_F_RESERVE) && !wait_all(a, DC_OFF_DONE, seq - 1, DC_PHASE_RESERVE)) return;
  if (a.flags & DC_F_COPYIN)
    for (u32 k = 0; k < a.nwork; k++)
      if (a.work[k].in != 0) copy_bytes(s_pay[a.rank] + a.work[k].off, a.work[k].in, a.work[k].bytes);
  if ((a.flags & DC_F_PUBLISH) && last_block(a, DC_OFF_COUNT_STAGE) && t == 0) {
    u64 mine[DC_SIG_WORDS];
    own_signature(a, seq, mine);
    for (int k = 0; k < DC_SIG_WORDS; k++) st_vol(a.self + DC_OFF_SIG + 8 * k, mine[k]);
    st_release(a.self + DC_OFF_STAGE, seq);  // orders the signature before it
  }
  if (a.flags & DC_F_READY) {
    if (!wait_all(a, DC_OFF_STAGE, seq, DC_PHASE_READY)) return;
    if (!check_signatures(a)) return;
  }
  if ((a.flags & DC_F_WAIT_RED) && !wait_all(a, DC_OFF_REDUCED, seq, DC_PHASE_REDUCED)) return;
  if (a.flags & DC_F_COMPUTE)
    for (u32 k = 0; k < a.nwork; k++) compute<E>(a, a.work[k]);
  if ((a.flags & DC_F_REDUCED) && last_block(a, DC_OFF_COUNT_REDUCED) && t == 0)
    st_release(a.self + DC_OFF_REDUCED, seq);
  if ((a.flags & DC_F_DONE) && last_block(a, DC_OFF_COUNT_DONE) && t == 0) st_release(a.self + DC_OFF_DONE, seq);
}

extern "C" __global__ void __launch_bounds__(DC_BLOCK) dc_bf16(Args a) { run<BF16>(a); }
extern "C" __global__ void __launch_bounds__(DC_BLOCK) dc_f16(Args a) { run<F16>(a); }
extern "C" __global__ void __launch_bounds__(DC_BLOCK) dc_f32(Args a) { run<F32>(a); }
extern "C" __global__ void __launch_bounds__(DC_BLOCK) dc_f64(Args a) { run<F64>(a); }
extern "C" __global__ void __launch_bounds__(DC_BLOCK) dc_copy(Args a) { run<Bytes>(a); }
