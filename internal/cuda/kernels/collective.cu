// collective.cu: every kernel of detcoll's cuda backend.
//
// Compiled at run time by NVRTC for the device's architecture, once per
// world size (-DDC_WORLD=W), so that the tree over the ranks unrolls into
// registers. It includes no CUDA header: loads, stores, fences, atomics, adds and
// conversions are inline PTX, which pins down exactly the instructions the
// contract needs (acquire/release at system scope, round-to-nearest adds
// that no compiler can contract into an FMA, no flush to zero).
//
// One kernel body runs every step of the protocol of the contract's section
// 4; every launch of a call has seq = own done + 1 (done is the call's last
// step), and the flags of each launch say which steps it takes:
//   RESERVE   wait until every peer's done >= seq - 1
//   COPYIN    copy the inputs into this rank's staging
//   PUBLISH   write the signature, then stage = seq (release, system scope)
//   READY     wait until every peer's stage >= seq, compare signatures
//   WAIT_RED  wait until every peer's reduced >= seq (large all-reduce)
//   COMPUTE   produce the outputs from the staging (mode)
//   REDUCED   reduced = seq (this rank's shard is summed in place)
//   DONE      done = seq (this rank has finished reading its peers)
// Sequence values are read from device memory when the kernel runs, never
// passed by the host, so captured graphs replay correctly. A communicator's
// first call has a random seq (2^32 <= s0 < 2^32 + 2^62, agreed at Open,
// which sets every word to s0 - 1 and every LL line's flag to s0 - 2), so
// that a late line of an earlier communicator's kernel in reused memory
// cannot carry the flag of a call of this one; seq never wraps.
//
// A rank's done is also pushed into every peer's control block (its ack
// array), so that RESERVE polls this rank's own memory, not a peer's over
// NVLink.
//
// Small calls take one launch of a different protocol (flag LL, run_ll):
// every rank pushes its input into each peer's memory as LL lines, 16 bytes
// holding 8 bytes of data and the call's flag twice (each 8-byte half is one
// single-copy-atomic access, so a line whose halves both carry the flag
// holds this call's data). A rank therefore polls only its own memory and
// the data arrives with its flag: one NVLink crossing on the critical path
// instead of a round trip per poll and per read, and no fences. The
// receive areas are double buffered (slot = seq & 1), so a rank may write
// slot s once every peer acked the call two back. Each thread sums or
// copies the lines it received in registers, with the same tree (same
// bits); lines that hold only part of an output go through scratch images
// and the staging path's compute. LL calls publish no stage, so stage >=
// seq tells a peer that this rank took the staging path for call seq.
//
// A launch of several blocks publishes through its last block (an atomic
// count, reset for the next launch). No block ever waits for another block
// of its own launch: blocks wait only on words that earlier launches (here
// or on peers) publish, or, in an LL launch, on the lines of the peers'
// same window, which the blocks take in the order they start (run_ll). So
// a launch makes progress whatever order its blocks start in and however
// few are resident. Waiting blocks do hold their multiprocessors, though:
// the host caps every grid at half the blocks the GPU holds at once, so
// that a launch of another communicator, on a stream not ordered with this
// one, always finds room (cuda/comm.go, setupDevice).
//
// Every wait is bounded by the timeout (%globaltimer), the host's abort word
// and the peers' status words. A failed wait or a signature mismatch is
// recorded once in host-mapped memory (the error record) and in this rank's
// status word, which peers read; every later launch sees the status and
// exits at once.

#ifndef DC_WORLD
#error "compile with -DDC_WORLD=<world size>"
#endif
// The constants shared with Go (limits, the control block's and the error
// record's layout, launch flags, modes, codes, phases, failure kinds) are
// in proto.h, generated from Go (internal/cuda/header.go), which the host
// puts before this file when it compiles it (nvcc: -include proto.h), and
// the element types, memory operations and arithmetic are in ops.h, which
// comes next (-include ops.h).

// The LL area of a rank's buffer, at Args.ll: receive[2 slots][kWorld
// senders] of DC_LL_SLOT bytes, then scratch[kWorld] of DC_LL_MAX bytes. A
// receive slot holds the sender's signature (DC_LL_HDR bytes of lines), then
// the lines of its image: image byte x at line x/8. Must match layout.go.
#ifndef DC_LL_MAX
#error "compile with -DDC_LL_MAX=<largest LL image in bytes>"
#endif
#define DC_LL_SLOT (DC_LL_HDR + 2 * DC_LL_MAX)
static_assert(DC_LL_MAX % 64 == 0, "LL images must be whole 64-byte lines: slots and scratch stay 16-byte aligned");

// A waiting thread polls its own word (local memory, or a peer's over
// NVLink for the staging path's words). What else ends a wait (the peers'
// status words, over NVLink; the host's abort word, in host memory: a read
// over PCIe; the probes for a peer on the other protocol) is read by one
// thread per block for the whole block, at most every DC_POLL_NS, and the
// abort word at most every DC_ABORT_NS (poll_block): with a reader in each
// waiting thread, those reads queued behind each other at ~1 us each, and a
// wait that had already been satisfied ended only when its thread's read
// came back, ~1 us per waiting reader later: the ~0.5 ms per call "stall"
// of back-to-back large calls, which fed itself (a late rank makes its peer
// wait long enough to start reading too). See docs/gpu-results.md. Every
// DC_CHECK_EVERY polls a thread reads the timer and the block's verdict.
#ifndef DC_CHECK_EVERY
#define DC_CHECK_EVERY 8
#endif
#define DC_POLL_NS 2000
#define DC_ABORT_NS 1000000
// Waits shorter than this read nothing but the awaited word: a poller that
// is waiting for a peer's status read over NVLink (~1 us) notices its own
// word late, and short waits are the common case.
#define DC_QUIET_NS 20000
// What a wait also looks for, after DC_QUIET_NS, to tell a peer that took
// the other protocol for this call (the protocol follows from the
// signature, so that is a mismatch) from a late one.
#define DC_PROBE_NONE 0
#define DC_PROBE_HEADER 1  // staging path: the peer's LL header for this call has arrived
#define DC_PROBE_STAGE 2   // LL: the peer published stage for this call, without an LL header
#define DC_PROBE_ANY 3     // push path: an LL header, or a stage for this call with another signature
// What a wait returns when it stops because this rank has already failed
// (another thread or block found why): nothing new to record.
#define DC_STOP 99
// fail_block's word for waits on LL lines: the missing ranks are those
// whose lines this block timed out on.
#define DC_WORD_LINES 0xffffffffffffffffull

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
  u64 ll;      // offset of the LL area in every rank's buffer
  u64 window;  // LL: bytes of the image each block handles
  u32 op, dtype, root, nbuf;  // with count and layout: the signature
  u32 rank, flags, mode, nwork;
  Work work[DC_MAX_WORK];
};

// ---- per-launch state in shared memory -----------------------------------

__shared__ u64 s_ctrl[kWorld];  // every rank's buffer, as mapped here
__shared__ u64 s_pay[kWorld];   // every rank's staging
__shared__ u64 s_seq;
__shared__ volatile int s_fail;
__shared__ u32 s_code[kWorld];
__shared__ u64 s_aux[kWorld];
__shared__ u64 s_ack[kWorld];     // LL: the peers' acks as the launch began
__shared__ u64 s_mirror[kWorld];  // push path: where reduce_range also stores, per peer (0: none)
// The peers' signatures as their LL headers brought them (word k of rank p
// at p * DC_SIG_WORDS + k, valid where s_sig_ok is set): what record
// reports for a peer whose control block holds an older signature.
__shared__ u64 s_sig[kWorld * DC_SIG_WORDS];
__shared__ unsigned char s_sig_ok[kWorld * DC_SIG_WORDS];
__shared__ int s_last;
__shared__ u32 s_win;  // LL: the window this block handles (its ticket)
// The block's poller (poll_block) and what it found, for every waiter of
// the block: per peer a code to record and its aux word, the abort word,
// and whether this rank's own status is set.
__shared__ u32 s_poll_lock;
__shared__ volatile u64 s_polled, s_abort_polled;  // %globaltimer of the last poll, abort read
__shared__ volatile u32 s_pcode[kWorld];
__shared__ volatile u64 s_paux[kWorld];
__shared__ volatile u64 s_pabort;
__shared__ volatile int s_pown;

// ---- the tree T --------------------------------------------------------

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
__device__ __forceinline__ auto tree_one(u64 off) {
  auto v = Tree<E, 0, kWorld>::one(off);
  if constexpr (kWorld == 1) v = E::canon(v);
  return v;
}
template <class E>
__device__ __forceinline__ V4 tree_vec(u64 off) {
  V4 v = Tree<E, 0, kWorld>::vec(off);
  if constexpr (kWorld == 1) v = Elem<E>::canon4(v);
  return v;
}
template <class E>
__device__ __forceinline__ u64 tree_regs(const u64* v) {
  u64 r = TreeR<E, 0, kWorld>::eval(v);
  if constexpr (kWorld == 1) r = Elem<E>::canon8(r);
  return r;
}

__device__ __forceinline__ u64 gtid() { return (u64)blockIdx.x * blockDim.x + threadIdx.x; }
__device__ __forceinline__ u64 gstride() { return (u64)gridDim.x * blockDim.x; }

// reduce_range writes n elements to dst: element i is T over every rank's
// staging at byte offset off + i*size. Where dst and off agree modulo 16
// the body moves 16-byte vectors, with scalar head and tail; otherwise it
// is all scalar. Each element is the same expression either way. Thread g
// of st threads takes every st-th vector (the grid, or one block).
//
// With MIRROR each result is also stored at s_mirror[p] + its offset for
// every peer p (the push path's all-reduce sends its sums on as it makes
// them); the mirrors are aligned like off.
template <class E, bool MIRROR = false>
__device__ void reduce_range(u64 dst, u64 off, u64 n, u64 g, u64 st) {
  constexpr u64 S = sizeof(typename E::T), V = 16 / S;
  u64 head = n, nv = 0;
  if (((dst - off) & 15) == 0) {
    head = ((16 - (dst & 15)) & 15) / S;
    if (head > n) head = n;
    nv = (n - head) / V;
  }
  auto one = [&](u64 i) {
    const auto v = tree_one<E>(off + i * S);
    Elem<E>::store(dst + i * S, v);
    if constexpr (MIRROR)
      for (int p = 0; p < kWorld; p++)
        if (s_mirror[p] != 0) Elem<E>::store(s_mirror[p] + off + i * S, v);
  };
  for (u64 i = g; i < head; i += st) one(i);
  const u64 vd = dst + head * S, vo = off + head * S;
  // Two vectors per thread in flight, as in copy_bytes.
  constexpr int U = 2;
  u64 i = g;
  for (; i + (U - 1) * st < nv; i += U * st) {
    V4 v[U];
#pragma unroll
    for (int j = 0; j < U; j++) v[j] = tree_vec<E>(vo + 16 * (i + j * st));
#pragma unroll
    for (int j = 0; j < U; j++) {
      st_v4(vd + 16 * (i + j * st), v[j]);
      if constexpr (MIRROR)
        for (int p = 0; p < kWorld; p++)
          if (s_mirror[p] != 0) st_v4(s_mirror[p] + vo + 16 * (i + j * st), v[j]);
    }
  }
  for (; i < nv; i += st) {
    const V4 v = tree_vec<E>(vo + 16 * i);
    st_v4(vd + 16 * i, v);
    if constexpr (MIRROR)
      for (int p = 0; p < kWorld; p++)
        if (s_mirror[p] != 0) st_v4(s_mirror[p] + vo + 16 * i, v);
  }
  for (u64 i = head + nv * V + g; i < n; i += st) one(i);
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

// shard returns the bytes [lo, hi) of an n-byte all-reduce that rank p sums
// in place: equal whole 64-byte lines, the last shard shorter. It must
// agree with every rank; any split gives the same bits.
__device__ __forceinline__ void shard(int p, u64 n, u64* lo, u64* hi) {
  u64 per = (n + kWorld - 1) / kWorld;
  per = (per + DC_SHARD_ALIGN - 1) / DC_SHARD_ALIGN * DC_SHARD_ALIGN;
  *lo = p * per < n ? p * per : n;
  *hi = *lo + per < n ? *lo + per : n;
}

__device__ __forceinline__ u64 status_word(u64 kind, u32 culprit) { return kind << DC_STATUS_KIND_SHIFT | (u64)(culprit + 1); }

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
  for (int p = 0; p < kWorld; p++) {
    bool header = true;
    for (int k = 0; k < DC_SIG_WORDS; k++) header = header && s_sig_ok[p * DC_SIG_WORDS + k];
    for (int k = 0; k < DC_SIG_WORDS; k++) {
      u64 v = p == (int)a.rank ? mine[k] : header ? s_sig[p * DC_SIG_WORDS + k] : ld_vol(s_ctrl[p] + DC_OFF_SIG + 8 * k);
      st_vol(a.host + DC_REC_SIGS + 8 * (p * DC_SIG_WORDS + k), v);
    }
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

// ---- LL lines --------------------------------------------------------------

// st_line writes 8 data bytes as one LL line: two 8-byte halves, each 4
// data bytes and the flag, each half one single-copy-atomic access.
__device__ __forceinline__ void st_line(u64 p, u64 v, u32 flag) {
  const u64 f = (u64)flag << 32;
  asm volatile("st.volatile.global.v2.u64 [%0], {%1, %2};" ::"l"(p), "l"((v & 0xffffffffull) | f), "l"((v >> 32) | f)
               : "memory");
}

// ld_line reads the line at p into *v and reports whether both halves
// carry flag, i.e. whether *v is this call's data.
__device__ __forceinline__ bool ld_line(u64 p, u32 flag, u64* v) {
  u64 x, y;
  ld_vol2(p, &x, &y);
  *v = (x & 0xffffffffull) | (y << 32);
  return (u32)(x >> 32) == flag && (u32)(y >> 32) == flag;
}

// ll_slot returns the receive slot, in the buffer at base, that rank from
// writes for call seq.
__device__ __forceinline__ u64 ll_slot(const Args& a, u64 base, u64 seq, int from) {
  return base + a.ll + ((seq & 1) * kWorld + from) * (u64)DC_LL_SLOT;
}

// ll_header_seen reports whether peer p's LL header for call seq has
// arrived here whole, and keeps its signature for record.
__device__ bool ll_header_seen(const Args& a, int p, u64 seq) {
  const u64 src = ll_slot(a, a.self, seq, p);
  u64 v[DC_SIG_WORDS];
  bool all = true;
#pragma unroll
  for (int k = 0; k < DC_SIG_WORDS; k++) all = ld_line(src + 16 * k, (u32)seq, &v[k]) && all;
  if (!all) return false;
  for (int k = 0; k < DC_SIG_WORDS; k++) {
    s_sig[p * DC_SIG_WORDS + k] = v[k];
    s_sig_ok[p * DC_SIG_WORDS + k] = 1;
  }
  return true;
}

// ---- waits -------------------------------------------------------------------

// watched returns the address of the word a thread of this rank polls
// for peer p: one that peers push here (DC_OFF_ACK and after), or a word
// of the peer's own control block, read over NVLink.
__device__ __forceinline__ u64 watched(const Args& a, int p, u64 word) {
  return word >= DC_OFF_ACK && word != DC_WORD_LINES ? a.self + word + 8 * p : s_ctrl[p] + word;
}

// other_call reports whether peer p is running another call than this
// one as call seq: its LL header for seq is here, or it published stage
// >= seq with a signature other than this rank's.
__device__ bool other_call(const Args& a, int p, u64 seq) {
  if (ll_header_seen(a, p, seq)) return true;
  if (ld_acquire(s_ctrl[p] + DC_OFF_STAGE) < seq) return false;
  u64 mine[DC_SIG_WORDS], theirs[DC_SIG_WORDS];
  own_signature(a, seq, mine);
  for (int k = 0; k < DC_SIG_WORDS; k += 2) ld_vol2(s_ctrl[p] + DC_OFF_SIG + 8 * k, &theirs[k], &theirs[k + 1]);
  bool same = true;
  for (int k = 0; k < DC_SIG_WORDS; k++) same = same && theirs[k] == mine[k];
  return !same;
}

// fail_block ends a block whose threads set s_code/s_aux: thread 0 records
// the most telling cause (a peer's own report, then an abort, then a
// mismatch, then a timeout with every rank still missing). For a timeout
// the missing ranks are those whose word is below target, or, for waits on
// LL lines (DC_WORD_LINES), those a thread of this block timed out on.
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
    for (int p = 0; p < kWorld; p++) {
      if (p == (int)a.rank) continue;
      const bool late = word == DC_WORD_LINES ? s_code[p] == DC_CODE_TIMEOUT : ld_acquire(watched(a, p, word)) < target;
      if (late) missing |= 1ull << p;
    }
  if (code != 0) record(a, code, phase, aux, missing);
}

// poll_claim makes the calling thread the block's poller if no other
// thread is; poll_release ends that.
__device__ __forceinline__ bool poll_claim() {
  u32 old;
  asm volatile("atom.cas.b32 %0, [%1], %2, %3;" : "=r"(old) : "l"(&s_poll_lock), "r"(0u), "r"(1u) : "memory");
  return old == 0;
}
__device__ __forceinline__ void poll_release() {
  asm volatile("membar.cta;" ::: "memory");
  asm volatile("st.volatile.u32 [%0], %1;" ::"l"(&s_poll_lock), "r"(0u) : "memory");
}

// poll_block reads, for every waiter of the block, what else ends a wait:
// every peer's status word, this rank's, the host's abort word (at most
// every DC_ABORT_NS), and with a probe, whether a peer runs the other
// protocol for call seq (every waiter of a block waits with the same probe
// at a time: the waits are separated by bar.sync). It leaves its findings
// in shared memory (s_pcode and s_paux by peer, s_pabort, s_pown). Called
// by the poller only.
__device__ void poll_block(const Args& a, u32 probe, u64 seq, u64 now) {
  s_polled = now;
  const bool abort_due = (long long)(now - s_abort_polled) >= DC_ABORT_NS;
  // The loads in flight together (NVLink, local, PCIe), then checked.
  u64 vs[kWorld];
#pragma unroll
  for (int p = 0; p < kWorld; p++) vs[p] = p == (int)a.rank ? 0 : ld_vol(s_ctrl[p] + DC_OFF_STATUS);
  const u64 own = ld_vol(a.self + DC_OFF_STATUS), va = abort_due ? ld_vol(a.host + DC_REC_ABORT) : 0;
  if (abort_due) s_abort_polled = now;
  if (va != 0) s_pabort = va;
  if (own != 0) s_pown = 1;
  for (int p = 0; p < kWorld; p++) {
    if (p == (int)a.rank || s_pcode[p] != 0) continue;
    u32 code = 0;
    if (vs[p] != 0)
      code = DC_CODE_PEER;
    else if (s_pabort != 0 || s_pown)
      continue;
    else if (probe == DC_PROBE_HEADER && ll_header_seen(a, p, seq))
      code = DC_CODE_MISMATCH;
    else if (probe == DC_PROBE_STAGE && ld_acquire(s_ctrl[p] + DC_OFF_STAGE) >= seq && !ll_header_seen(a, p, seq))
      code = DC_CODE_MISMATCH;
    else if (probe == DC_PROBE_ANY && other_call(a, p, seq))
      code = DC_CODE_MISMATCH;
    if (code == 0) continue;
    s_paux[p] = vs[p];
    asm volatile("membar.cta;" ::: "memory");
    s_pcode[p] = code;
  }
}

// Waiter bounds one thread's wait on peer p: every wait ends at the
// timeout, at the peer's failure (its status word), at the host's abort
// word, when this rank failed elsewhere, or, with a probe, when the peer
// is found to run another protocol for call seq. Call check once per poll.
// Only the timeout is the thread's own; the rest is the block's poller's
// verdict (poll_block).
struct Waiter {
  u64 t0, seq;
  u32 i, probe;
  int peer;
  __device__ Waiter(int p, u32 probe_ = DC_PROBE_NONE, u64 seq_ = 0)
      : t0(now_ns()), seq(seq_), i(0), probe(probe_), peer(p) {}

  // check returns 0 to keep waiting, DC_STOP when this rank has failed
  // already, or the code to record (with *aux) for this wait.
  __device__ u32 check(const Args& a, u64* aux) {
    nap();
    if ((++i & (DC_CHECK_EVERY - 1)) != 0) return 0;
    if (s_fail) return DC_STOP;
    const u64 now = now_ns(), waited = now - t0;
    if (waited < DC_QUIET_NS) return 0;
    if ((long long)(now - s_polled) >= DC_POLL_NS && poll_claim()) {
      if ((long long)(now - s_polled) >= DC_POLL_NS) poll_block(a, probe, seq, now);
      poll_release();
    }
    const u32 code = s_pcode[peer];
    if (code != 0) {
      asm volatile("membar.cta;" ::: "memory");
      *aux = s_paux[peer];
      return code;
    }
    if (s_pabort != 0) {
      *aux = s_pabort;
      return DC_CODE_ABORT;
    }
    if (s_pown) return DC_STOP;
    return waited > a.timeout ? DC_CODE_TIMEOUT : 0;
  }
};

// wait_all waits until, for every peer p, the word watched(a, p, word) is
// at least target; thread p polls for peer p. It returns false, after
// recording why, if the wait failed. probe: see Waiter (target is the
// call's seq then).
__device__ bool wait_all(const Args& a, u64 word, u64 target, u32 phase, u32 probe = DC_PROBE_NONE) {
  const u32 t = threadIdx.x;
  if (t < kWorld && t != a.rank) {
    const u64 w = watched(a, t, word);
    Waiter wt(t, probe, target);
    while (ld_acquire(w) < target) {
      u64 aux = 0;
      const u32 code = wt.check(a, &aux);
      if (code == 0) continue;
      // A peer that failed after publishing what we wait for (it found a
      // mismatch, say) must not hide it: progress wins.
      if (code != DC_STOP && ld_acquire(w) >= target) break;
      if (code != DC_STOP) {
        s_code[t] = code;
        s_aux[t] = aux;
      }
      s_fail = 1;
      break;
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
// next launch. Without release it only counts (LL). With it, everything the
// launch wrote before is visible to whoever sees what the last block
// publishes next: every caller publishes with st.release.sys (a
// fence.acq_rel.sys and the store), after the bar.sync here.
//
// Where a block's writes went to this GPU's memory, a GPU-scope release
// (fence.acq_rel.gpu before the count) is enough for the last block to see
// them; only the last block fences at system scope, once per launch, and
// its st.release.sys passes them on (cumulativity). The push path's blocks
// write into peers' memory: each of them fences at system scope itself,
// rather than lean on cumulativity across scopes (once per block of a call
// of megabytes).
__device__ bool last_block(const Args& a, u64 counter, bool release = true) {
  sync_block();
  if (gridDim.x == 1) return true;  // the st.release.sys that follows releases the block's writes
  if (threadIdx.x == 0) {
    if (release && a.mode >= DC_MODE_PUSH)
      fence_sys();
    else if (release)
      fence_gpu();
    s_last = atom_add(a.self + counter, 1) == gridDim.x - 1;
    if (s_last) {
      atom_zero(a.self + counter);
      if (release) fence_sys();
    }
  }
  sync_block();
  return s_last;
}

// ---- the push path ---------------------------------------------------------
//
// Large all-reduces and reduce-scatters of one buffer move each byte over
// NVLink by writes, never reads, and never copy their input whole:
//   PUSH      every rank copies its input's part p into rank p's staging
//             (its own part into its own), then sends sent1
//   RPUSH     wait for sent1, sum this rank's part from its staging, store
//             the sums to the output and into every peer's staging, send
//             sent2 (all-reduce)
//   GPUSHED   wait for sent2, copy the peers' sums into the output
//   PUSH_RS, RPUSH_RS: the reduce-scatter's PUSH and RPUSH, which store the
//             sums to the output only.
// A rank's staging holds its own part at 0, then the part each peer sent
// (slot recv_slot), then the sums each peer sent: (2W-1) part strides.

__device__ __forceinline__ bool rs_mode(const Args& a) {
  return a.mode == DC_MODE_PUSH_RS || a.mode == DC_MODE_RPUSH_RS;
}

// part returns the bytes [lo, hi) of w that rank p sums: a shard of an
// all-reduce, the p-th W-th of a reduce-scatter's input.
__device__ __forceinline__ void part(const Args& a, const Work& w, int p, u64* lo, u64* hi) {
  if (rs_mode(a)) {
    const u64 n = w.bytes / kWorld;
    *lo = p * n;
    *hi = *lo + n;
  } else {
    shard(p, w.bytes, lo, hi);
  }
}

// part_stride is the staging bytes of one part: the largest, in whole
// 64-byte lines.
__device__ __forceinline__ u64 part_stride(const Args& a, const Work& w) {
  u64 lo, hi;
  part(a, w, 0, &lo, &hi);
  return (hi - lo + 63) & ~63ull;
}

// recv_slot is the slot, among rank q's W-1, that rank p writes.
__device__ __forceinline__ u64 recv_slot(int q, int p) { return (u64)((p - q - 1 + kWorld) % kWorld); }

// push_setup points the leaves of an RPUSH launch's tree at this rank's
// staging (its own part at 0, peer p's in its slot) and the mirrors at the
// peers' stagings, so that reduce_range finds element i of the part of
// every rank at offset i*size, 16-byte aligned. Thread p sets entry p.
__device__ void push_setup(const Args& a, int p) {
  const Work& w = a.work[0];
  const u64 stride = part_stride(a, w);
  u64 lo, hi;
  part(a, w, a.rank, &lo, &hi);
  const u64 own = a.self + DC_CTRL_SIZE;
  s_pay[p] = own + (p == (int)a.rank ? 0 : (1 + recv_slot(a.rank, p)) * stride);
  s_mirror[p] = 0;
  if (a.mode == DC_MODE_RPUSH && p != (int)a.rank)
    s_mirror[p] = s_ctrl[p] + DC_CTRL_SIZE + (kWorld + recv_slot(p, a.rank)) * stride;
}

template <class E>
__device__ void push_compute(const Args& a, const Work& w) {
  const u64 g = gtid(), st = gstride(), stride = part_stride(a, w), own = a.self + DC_CTRL_SIZE;
  u64 lo, hi;
  switch (a.mode) {
    case DC_MODE_PUSH:
    case DC_MODE_PUSH_RS:
      for (int q = 0; q < kWorld; q++) {
        part(a, w, q, &lo, &hi);
        const u64 dst = q == (int)a.rank ? own : s_ctrl[q] + DC_CTRL_SIZE + (1 + recv_slot(q, a.rank)) * stride;
        copy_bytes(dst, w.in + lo, hi - lo, g, st);
      }
      break;
    case DC_MODE_GPUSHED:
      for (int p = 0; p < kWorld; p++) {
        part(a, w, p, &lo, &hi);
        if (p != (int)a.rank)
          copy_bytes(w.out + lo, own + (kWorld + recv_slot(a.rank, p)) * stride, hi - lo, g, st);
        else if ((w.out & 15) != 0)  // RPUSH left the sums in place
          copy_bytes(w.out + lo, own, hi - lo, g, st);
      }
      break;
    default:
      if constexpr (E::reduces) {
        constexpr u64 S = sizeof(typename E::T);
        part(a, w, a.rank, &lo, &hi);
        if (a.mode == DC_MODE_RPUSH_RS) {
          // All scalar where the output is not 16-byte aligned.
          reduce_range<E>(w.out, 0, (hi - lo) / S, g, st);
        } else {
          // Sums go straight to an output aligned for 16-byte stores,
          // else in place, for GPUSHED to copy: vectors either way.
          const u64 dst = (w.out & 15) == 0 ? w.out + lo : own;
          reduce_range<E, true>(dst, 0, (hi - lo) / S, g, st);
        }
      }
  }
}

// push_word pushes word = seq into every peer's control block (entry
// rank). Called by every thread of the last block, after last_block.
__device__ void push_word(const Args& a, u64 word, u64 seq) {
  const u32 t = threadIdx.x;
  if (t < kWorld && t != a.rank) st_release(s_ctrl[t] + word + 8 * a.rank, seq);
}

template <class E>
__device__ void compute(const Args& a, const Work& w) {
  const u64 own = s_pay[a.rank], g = gtid(), st = gstride();
  if (a.mode >= DC_MODE_PUSH) {
    push_compute<E>(a, w);
    return;
  }
  switch (a.mode) {
    case DC_MODE_GATHER:
      for (int p = 0; p < kWorld; p++) copy_bytes(w.out + p * w.bytes, s_pay[p] + w.off, w.bytes, g, st);
      break;
    case DC_MODE_GSHARDS:
      for (int p = 0; p < kWorld; p++) {
        u64 lo, hi;
        shard(p, w.bytes, &lo, &hi);
        copy_bytes(w.out + lo, s_pay[p] + w.off + lo, hi - lo, g, st);
      }
      break;
    case DC_MODE_BCAST:
      if (a.rank != a.root) copy_bytes(w.out, s_pay[a.root] + w.off, w.bytes, g, st);
      break;
    default:
      if constexpr (E::reduces) {
        constexpr u64 S = sizeof(typename E::T);
        if (a.mode == DC_MODE_REDUCE) {
          reduce_range<E>(w.out, w.off, w.bytes / S, g, st);
        } else if (a.mode == DC_MODE_RSHARD) {
          const u64 n = w.bytes / kWorld;
          reduce_range<E>(w.out, w.off + a.rank * n, n / S, g, st);
        } else if (a.mode == DC_MODE_RINPLACE) {
          u64 lo, hi;
          shard(a.rank, w.bytes, &lo, &hi);
          reduce_range<E>(own + w.off + lo, w.off + lo, (hi - lo) / S, g, st);
        }
      }
  }
}

// publish_stage writes this call's signature, then stage = seq: the
// release orders the signature before it for a peer that acquires stage.
__device__ void publish_stage(const Args& a, u64 seq) {
  u64 mine[DC_SIG_WORDS];
  own_signature(a, seq, mine);
  for (int k = 0; k < DC_SIG_WORDS; k++) st_vol(a.self + DC_OFF_SIG + 8 * k, mine[k]);
  st_release(a.self + DC_OFF_STAGE, seq);
}

// publish_done sets done = seq here and pushes it into every peer's ack
// array. Called by every thread of the last block, after last_block.
__device__ void publish_done(const Args& a, u64 seq) {
  const u32 t = threadIdx.x;
  if (t < kWorld) st_release(t == a.rank ? a.self + DC_OFF_DONE : s_ctrl[t] + DC_OFF_ACK + 8 * a.rank, seq);
}

// ---- the LL protocol -----------------------------------------------------

// ll_range returns the image bytes [lo, hi) of w that rank from sends to
// rank to, widened to whole lines: the receiver's share of a reduce-scatter,
// nothing from a broadcast's other ranks, all of it otherwise. Sender and
// receiver evaluate it alike, so the receiver waits for exactly the lines
// the sender writes.
__device__ void ll_range(const Args& a, const Work& w, int from, int to, u64* lo, u64* hi) {
  u64 b = w.off, e = w.off + w.bytes;
  if (a.mode == DC_MODE_RSHARD) {
    const u64 n = w.bytes / kWorld;
    b += to * n;
    e = b + n;
  } else if (a.mode == DC_MODE_BCAST && from != (int)a.root) {
    e = b;
  }
  *lo = b & ~7ull;
  *hi = (e + 7) & ~7ull;
}

// ll_wait waits until the line at p, sent by peer, carries call seq's
// flag. false: the wait failed (s_fail is set, and s_code[peer] if this
// thread saw why).
__device__ bool ll_wait(const Args& a, u64 p, u64 seq, int peer, u64* v, u32 probe = DC_PROBE_NONE) {
  const u32 flag = (u32)seq;
  if (ld_line(p, flag, v)) return true;
  Waiter wt(peer, probe, seq);
  for (;;) {
    if (ld_line(p, flag, v)) return true;
    u64 aux = 0;
    const u32 code = wt.check(a, &aux);
    if (code == 0) continue;
    if (code != DC_STOP && ld_line(p, flag, v)) return true;
    if (code != DC_STOP) {
      s_code[peer] = code;
      s_aux[peer] = aux;
    }
    s_fail = 1;
    return false;
  }
}

// ll_refresh writes the flag of call seq - 2 (the slot's last call, which
// every peer has finished reading) into every line of call seq's slot at
// every peer that the call does not send (an LL call), or into every line
// of it, signature header included (the first launch of a call on another
// path, after its reserve). No reader takes such a line for its call: not
// this call's (a staged LL all-reduce follows its Stage launch's refresh),
// nor one of the next 2^32 - 2. Run whatever the path when the low 31 bits
// of seq are 0 or 1, it bounds the age of every flag in a slot to 2^31
// calls, so that a stale line can never carry the flag of the call reading
// it (flags are seq mod 2^32); it costs one slot's worth of writes every
// 2^31 calls. Open fills every line with the flag of s0 - 2, as a refresh
// of both slots would, whatever the first seq s0.
__device__ __forceinline__ bool ll_refresh_due(u64 seq) { return (seq & 0x7fffffffull) < 2; }

__device__ void ll_refresh(const Args& a, u64 seq, bool ll) {
  const u32 flag = (u32)(seq - 2);
  for (int q = 0; q < kWorld; q++) {
    if (q == (int)a.rank) continue;
    const u64 slot = ll_slot(a, s_ctrl[q], seq, a.rank);
    if (!ll)
      for (u64 k = gtid(); k < DC_LL_HDR / 16; k += gstride()) st_line(slot + 16 * k, 0, flag);
    for (u64 x = 8 * gtid(); x < DC_LL_MAX; x += 8 * gstride()) {
      bool sent = false;
      for (u32 k = 0; ll && k < a.nwork; k++) {
        u64 b, e;
        ll_range(a, a.work[k], a.rank, q, &b, &e);
        sent = sent || (x >= b && x < e);
      }
      if (!sent) st_line(slot + DC_LL_HDR + 2 * x, 0, flag);
    }
  }
}

// compute_window is compute for the LL protocol: this block produces the
// outputs whose image bytes lie in [lo, hi) (window bounds are multiples of
// 64, so no element straddles two windows), from the scratch images.
template <class E>
__device__ void compute_window(const Args& a, const Work& w, u64 lo, u64 hi) {
  const u64 g = threadIdx.x, st = blockDim.x;
  u64 b = w.off, e = w.off + w.bytes;  // image bytes [b, e) make the output
  if (a.mode == DC_MODE_RSHARD) {
    b += a.rank * (w.bytes / kWorld);
    e = b + w.bytes / kWorld;
  }
  const u64 x = b > lo ? b : lo, y = e < hi ? e : hi;
  if (x >= y) return;
  const u64 out = w.out + (x - b);
  if (a.mode == DC_MODE_GATHER) {
    for (int p = 0; p < kWorld; p++) copy_bytes(out + p * w.bytes, s_pay[p] + x, y - x, g, st);
  } else if (a.mode == DC_MODE_BCAST) {
    if (a.rank != a.root) copy_bytes(out, s_pay[a.root] + x, y - x, g, st);
  } else if constexpr (E::reduces) {
    reduce_range<E>(out, x, (y - x) / sizeof(typename E::T), g, st);
  }
}

// ld_image8 returns the 8 bytes of this rank's image at x (a multiple of
// 8) from the input of w: one load where the input is aligned for it, else
// byte by byte; bytes past the input are 0.
__device__ __forceinline__ u64 ld_image8(const Work& w, u64 x) {
  const u64 end = w.off + w.bytes, src = w.in + (x - w.off);
  if (x + 8 <= end && (src & 7) == 0) return ld_in8(src);
  u64 v = 0;
  for (u32 i = 0; i < 8 && x + i < end; i++) v |= (u64)ld_in1(src + i) << (8 * i);
  return v;
}

// prefetch_lines starts loading, into L1, the first input line of each
// buffer that this thread of an LL launch sends, so that the loads
// overlap the launch's first reads of its words. Every line an LL launch
// reads of its inputs is read by the thread that writes it (in place).
__device__ void prefetch_lines(const Args& a) {
  const u64 lo = (u64)s_win * a.window;
  for (u32 k = 0; k < a.nwork; k++) {
    const Work& w = a.work[k];
    const u64 x = (w.off > lo ? w.off : lo) + 8 * threadIdx.x;
    if (w.in != 0 && x < w.off + w.bytes && x < lo + a.window)
      asm volatile("prefetch.global.L1 [%0];" ::"l"(w.in + (x - w.off)));
  }
}

// out_range returns the image bytes [b, e) of w whose values make this
// rank's output, and where that output starts: the rank's share of a
// reduce-scatter, all of it otherwise.
__device__ __forceinline__ void out_range(const Args& a, const Work& w, u64* b, u64* e) {
  *b = w.off;
  *e = w.off + w.bytes;
  if (a.mode == DC_MODE_RSHARD) {
    *b += a.rank * (w.bytes / kWorld);
    *e = *b + w.bytes / kWorld;
  }
}

// direct reports whether the outputs of w can be stored 8 bytes at a time
// straight from the lines (every output line 8-byte aligned); the lines
// that only partly hold outputs still go through the scratch images.
__device__ __forceinline__ bool direct(const Args& a, const Work& w, u64 b) {
  if (((w.out - b) & 7) != 0) return false;
  return a.mode != DC_MODE_GATHER || (w.bytes & 7) == 0;
}

// run_ll runs a whole call by the LL protocol. The block with ticket b
// (s_win: the b-th block of the launch to start) handles the image bytes
// [b*window, (b+1)*window), each thread one 8-byte line of each buffer (or
// every nt-th): it sends the line, waits for the peers' lines, and stores
// the outputs they make; no block waits for another. Window b waits only
// for the peers' window b, which the b-th of their blocks to start sends
// (and window 0 sends the signature header), so the blocks that run make
// progress in whatever order the GPU starts them and however few of them
// are resident at once. Lines
// that only partly hold outputs (an unaligned output, a reduce-scatter
// share that starts inside a line, a buffer's last bytes) are unpacked
// into the scratch images and computed from there, by compute_window.
template <class E>
__device__ void run_ll(const Args& a, u64 seq) {
  const u32 t = threadIdx.x, nt = blockDim.x, flag = (u32)seq;
  const u64 lo = (u64)s_win * a.window, hi = lo + a.window;

  // Push this rank's lines, and (window 0, the first block to start) its
  // signature, to every peer.
  u64 mine[DC_SIG_WORDS];
  own_signature(a, seq, mine);
  if (s_win == 0)
    for (u32 i = t; i < kWorld * DC_SIG_WORDS; i += nt)
      if (i / DC_SIG_WORDS != a.rank)
        st_line(ll_slot(a, s_ctrl[i / DC_SIG_WORDS], seq, a.rank) + 16 * (i % DC_SIG_WORDS), mine[i % DC_SIG_WORDS],
                flag);
  for (int q = 0; q < kWorld; q++) {
    if (q == (int)a.rank) continue;
    const u64 dst = ll_slot(a, s_ctrl[q], seq, a.rank) + DC_LL_HDR;
    for (u32 k = 0; k < a.nwork; k++) {
      u64 b, e;
      ll_range(a, a.work[k], a.rank, q, &b, &e);
      if (b < lo) b = lo;
      if (e > hi) e = hi;
      for (u64 x = b + 8 * t; x < e; x += 8 * nt) st_line(dst + 2 * x, ld_image8(a.work[k], x), flag);
    }
  }
  if (ll_refresh_due(seq)) ll_refresh(a, seq, true);

  // Check every peer's signature (thread i: word i % 8 of rank i / 8).
  for (u32 i = t; i < kWorld * DC_SIG_WORDS; i += nt) {
    const int p = i / DC_SIG_WORDS;
    u64 v;
    if (p == (int)a.rank || !ll_wait(a, ll_slot(a, a.self, seq, p) + 16 * (i % DC_SIG_WORDS), seq, p, &v, DC_PROBE_STAGE))
      continue;
    s_sig[i] = v;
    s_sig_ok[i] = 1;
    if (v != mine[i % DC_SIG_WORDS]) {
      s_code[p] = DC_CODE_MISMATCH;
      s_fail = 1;
    }
  }
  // No output is written before every signature is known to agree
  // (contract section 5: a mismatch changes nothing).
  sync_block();
  if (s_fail) {
    fail_block(a, DC_WORD_LINES, 0, DC_PHASE_READY);
    return;
  }

  // Receive: every line's values from every rank that sends it, then the
  // outputs, or the scratch images.
  const bool bcast = a.mode == DC_MODE_BCAST;
  for (u32 k = 0; k < a.nwork && !s_fail; k++) {
    const Work& w = a.work[k];
    if (bcast && a.rank == a.root) break;
    u64 ob, oe, b, e;
    out_range(a, w, &ob, &oe);
    ll_range(a, w, bcast ? a.root : a.rank, a.rank, &b, &e);
    if (b < lo) b = lo;
    if (e > hi) e = hi;
    const bool fast = direct(a, w, ob);
    for (u64 x = b + 8 * t; x < e && !s_fail; x += 8 * nt) {
      u64 v[kWorld];
      bool ok[kWorld];
#pragma unroll
      for (int p = 0; p < kWorld; p++) {
        u64 got = 0;
        ok[p] = true;
        if (p == (int)a.rank)
          got = bcast ? 0 : ld_image8(w, x);
        else if (!bcast || p == (int)a.root)
          ok[p] = ld_line(ll_slot(a, a.self, seq, p) + DC_LL_HDR + 2 * x, flag, &got);
        v[p] = got;
      }
      bool failed = false;
#pragma unroll
      for (int p = 0; p < kWorld; p++)
        if (!ok[p] && !failed) {
          u64 got = 0;
          failed = !ll_wait(a, ll_slot(a, a.self, seq, p) + DC_LL_HDR + 2 * x, seq, p, &got);
          v[p] = got;
        }
      if (failed) break;
      if (fast && x >= ob && x + 8 <= oe) {
        if (a.mode == DC_MODE_GATHER) {
#pragma unroll
          for (int p = 0; p < kWorld; p++) st_u64(w.out + p * w.bytes + (x - ob), v[p]);
        } else if (bcast) {
#pragma unroll
          for (int p = 0; p < kWorld; p++)
            if (p == (int)a.root) st_u64(w.out + (x - ob), v[p]);
        } else if constexpr (E::reduces) {
          st_u64(w.out + (x - ob), tree_regs<E>(v));
        }
      } else {
#pragma unroll
        for (int p = 0; p < kWorld; p++) st_u64(s_pay[p] + x, v[p]);
      }
    }
  }
  sync_block();
  if (s_fail) {
    fail_block(a, DC_WORD_LINES, 0, DC_PHASE_READY);
    return;
  }
  // The outputs of the lines that went through the scratch images.
  for (u32 k = 0; k < a.nwork; k++) {
    const Work& w = a.work[k];
    u64 ob, oe;
    out_range(a, w, &ob, &oe);
    if (!direct(a, w, ob)) {
      compute_window<E>(a, w, lo, hi);
      continue;
    }
    u64 head = (ob + 7) & ~7ull, tail = oe & ~7ull;  // [head, tail): the whole lines
    if (head > oe) head = oe;
    if (tail < head) tail = head;
    if (ob < head) compute_window<E>(a, w, ob > lo ? ob : lo, head < hi ? head : hi);
    if (tail < oe) compute_window<E>(a, w, tail > lo ? tail : lo, oe < hi ? oe : hi);
  }
  // done and the acks need no fence: the peers write nothing here that
  // this rank's writes must precede, and every read of the receive slot
  // (and, for a staged all-reduce, of this rank's staging, which a peer's
  // next call may write) has returned its value (it was stored) before
  // the count.
  if (last_block(a, DC_OFF_COUNT_DONE, false) && t < kWorld)
    st_vol(t == a.rank ? a.self + DC_OFF_DONE : s_ctrl[t] + DC_OFF_ACK + 8 * a.rank, seq);
}

// ---- entry ---------------------------------------------------------------

template <class E>
__device__ void run(const Args& a) {
  const u32 t = threadIdx.x, nt = blockDim.x;
  const bool ll = a.flags & DC_F_LL;
  const u64 scratch = a.self + a.ll + 2ull * kWorld * DC_LL_SLOT;  // LL: the scratch images
  for (u32 p = t; p < kWorld; p += nt) {
    s_ctrl[p] = ld_u64(a.self + DC_OFF_PEERS + 8 * p);
    s_pay[p] = ll ? scratch + (u64)p * DC_LL_MAX : s_ctrl[p] + DC_CTRL_SIZE;
    s_code[p] = 0;
    s_aux[p] = 0;
    // LL checks the acks of its slot without a wait of its own: the
    // loads overlap the stage's.
    if (ll && p != a.rank) s_ack[p] = ld_acquire(a.self + DC_OFF_ACK + 8 * p);
    if (a.mode == DC_MODE_RPUSH || a.mode == DC_MODE_RPUSH_RS) push_setup(a, p);
  }
  for (u32 i = t; i < kWorld * DC_SIG_WORDS; i += nt) s_sig_ok[i] = 0;
  for (u32 p = t; p < kWorld; p += nt) {
    s_pcode[p] = 0;
    s_paux[p] = 0;
  }
  if (t == 0) {
    s_poll_lock = 0;
    s_polled = 0;
    s_abort_polled = 0;
    s_pabort = 0;
    s_pown = 0;
    // An LL block's window is its place in the order the launch's blocks
    // start, not its index (run_ll); the last to take one resets the
    // count for the next launch of the stream. Taken before anything can
    // end the block, so that every block takes one.
    s_win = 0;
    if (ll && gridDim.x > 1) {
      s_win = atom_add(a.self + DC_OFF_TICKET, 1);
      if (s_win == gridDim.x - 1) atom_zero(a.self + DC_OFF_TICKET);
    }
  }
  if (t == nt - 1) {
    // Both words were last written by this rank's earlier launches, which
    // the stream ordered before this one: plain loads, issued together.
    const u64 status = ld_vol(a.self + DC_OFF_STATUS), done = ld_vol(a.self + DC_OFF_DONE);
    s_fail = status != 0;  // poisoned: do nothing
    s_seq = done + 1;
  }
  sync_block();
  if (ll) prefetch_lines(a);
  if (s_fail) return;
  const u64 seq = s_seq;
  if (ll) {
    // The slot this call writes at each peer was last read for seq - 2.
    bool acked = true;
    for (int p = 0; p < kWorld; p++) acked = acked && (p == (int)a.rank || s_ack[p] + 2 >= seq);
    if (!acked && !wait_all(a, DC_OFF_ACK, seq - 2, DC_PHASE_RESERVE)) return;
    run_ll<E>(a, seq);
    return;
  }

  if ((a.flags & DC_F_RESERVE) && !wait_all(a, DC_OFF_ACK, seq - 1, DC_PHASE_RESERVE)) return;
  if ((a.flags & DC_F_RESERVE) && ll_refresh_due(seq)) ll_refresh(a, seq, false);
  if (a.flags & DC_F_COPYIN)
    for (u32 k = 0; k < a.nwork; k++)
      if (a.work[k].in != 0) copy_bytes(s_pay[a.rank] + a.work[k].off, a.work[k].in, a.work[k].bytes, gtid(), gstride());
  if ((a.flags & DC_F_PUBLISH) && last_block(a, DC_OFF_COUNT_STAGE) && t == 0) publish_stage(a, seq);
  if (a.flags & DC_F_READY) {
    if (!wait_all(a, DC_OFF_STAGE, seq, DC_PHASE_READY, DC_PROBE_HEADER)) return;
    if (!check_signatures(a)) return;
  }
  if ((a.flags & DC_F_WAIT_RED) && !wait_all(a, DC_OFF_REDUCED, seq, DC_PHASE_REDUCED)) return;
  const bool first = a.mode == DC_MODE_RPUSH || a.mode == DC_MODE_RPUSH_RS;  // waits for sent1
  if (a.flags & DC_F_WAIT_SENT) {
    if (!wait_all(a, first ? DC_OFF_SENT1 : DC_OFF_SENT2, seq, first ? DC_PHASE_READY : DC_PHASE_REDUCED,
                  first ? DC_PROBE_ANY : DC_PROBE_NONE))
      return;
    if (first && !check_signatures(a)) return;
  }
  if (a.flags & DC_F_COMPUTE)
    for (u32 k = 0; k < a.nwork; k++) compute<E>(a, a.work[k]);
  if ((a.flags & DC_F_SENT) && last_block(a, DC_OFF_COUNT_REDUCED))
    push_word(a, first ? DC_OFF_SENT2 : DC_OFF_SENT1, seq);
  if ((a.flags & DC_F_REDUCED) && last_block(a, DC_OFF_COUNT_REDUCED) && t == 0)
    st_release(a.self + DC_OFF_REDUCED, seq);
  if ((a.flags & DC_F_DONE) && last_block(a, DC_OFF_COUNT_DONE)) publish_done(a, seq);
}

extern "C" __global__ void __launch_bounds__(DC_BLOCK) dc_bf16(Args a) { run<BF16>(a); }
extern "C" __global__ void __launch_bounds__(DC_BLOCK) dc_f16(Args a) { run<F16>(a); }
extern "C" __global__ void __launch_bounds__(DC_BLOCK) dc_f32(Args a) { run<F32>(a); }
extern "C" __global__ void __launch_bounds__(DC_BLOCK) dc_f64(Args a) { run<F64>(a); }
extern "C" __global__ void __launch_bounds__(DC_BLOCK) dc_copy(Args a) { run<Bytes>(a); }
