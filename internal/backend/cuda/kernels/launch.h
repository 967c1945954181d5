// launch.h: what one launch of collective.cu's kernel is given (Args) and
// what each of its blocks keeps while it runs (State), for every protocol.

#ifndef DC_WORLD
#error "compile with -DDC_WORLD=<world size>"
#endif
static_assert(DC_WORLD >= 1 && DC_WORLD <= DC_MAX_WORLD, "world size out of range");
constexpr int kWorld = DC_WORLD;

// One buffer of a call: bytes staged per rank from in (0: nothing to copy)
// at offset off of the staging, and the output.
struct Work {
  u64 in, out, bytes, off;
};

// The kernel's one parameter. Must match kernelArgs in layout.go.
struct Args {
  u64 self;     // this rank's buffer: control block, then staging
  u64 host;     // the host-mapped error record
  u64 timeout;  // ns
  u64 count, layout;
  u64 ll;      // offset of the LL area in every rank's buffer
  u64 window;  // LL: bytes of the image each block handles
  u64 scalar;      // premulsum: this rank's scalar, as its element's bits, unless scalar_at
  u64 scalar_at;   // premulsum: the device address of this rank's scalar (read as the launch runs), or 0
  u64 wins;            // the windows' table: a row per window, a column per rank (registered.h)
  u64 reg_in, reg_out;  // a registered call's input and output (window.go's regWord), else 0
  u32 op, dtype, root, nbuf;  // with count and layout: the signature
  u32 red;                    // the reduction's operator (num.RedOp): in the signature
  u32 calc;                   // what the kernel computes of it: DC_CALC_* (Red)
  u32 rank, nwork;
  unsigned char steps[DC_MAX_STEPS];  // the launch's steps (DC_S_*), run in order; DC_S_END after the last
  Work work[DC_MAX_WORK];
};

// State is what a block of a launch keeps in shared memory for all its
// threads: set up by run (collective.cu) and passed to every function that
// reads or writes it, so that nothing reaches it but through its
// parameters.
struct State {
  u64 ctrl[kWorld];    // every rank's buffer, as mapped here
  u64 pay[kWorld];     // every rank's staging (LL: scratch image): the leaves of the tree
  u64 seq;             // this call's sequence value
  volatile int fail;   // a thread of this block found a failure (or the rank was poisoned)
  u32 code[kWorld];    // per peer: what a failed wait on it records, with aux
  u64 aux[kWorld];
  u64 ack[kWorld];     // LL: the peers' acks as the launch began
  u64 mirror[kWorld];  // push and registered paths: where reduce_range also stores, per peer (0: none)
  u64 scale[kWorld];   // premulsum: rank p's scalar (its signature slot's last word)
  // The peers' signatures as their LL headers brought them (word k of rank
  // p at p * DC_SIG_WORDS + k, valid where sig_ok is set): what record
  // reports for a peer whose control block holds an older signature.
  u64 sig[kWorld * DC_SIG_WORDS];
  unsigned char sig_ok[kWorld * DC_SIG_WORDS];
  int last;  // last_block's verdict
  int remote;  // the launch's blocks write or read peers' memory (push, registered): each fences at system scope
  u32 win;   // LL: the window this block handles (its ticket)
  // The block's poller (poll_block) and what it found, for every waiter of
  // the block: per peer a code to record and its aux word, the abort word,
  // and whether this rank's own status is set.
  u32 poll_lock;
  volatile u64 polled, abort_polled;  // %globaltimer of the last poll, abort read
  volatile u32 pcode[kWorld];
  volatile u64 paux[kWorld];
  volatile u64 pabort;
  volatile int pown;
#ifdef DC_PROFILE
  long long prof[8];  // profile.h: clock64 at each mark
  u64 prof_t0;        // %globaltimer at entry
#endif
};

__device__ __forceinline__ u64 gtid() { return (u64)blockIdx.x * blockDim.x + threadIdx.x; }
__device__ __forceinline__ u64 gstride() { return (u64)gridDim.x * blockDim.x; }

// shard returns the bytes [lo, hi) of an n-byte all-reduce that rank p sums
// in place: equal whole 64-byte lines, the last shard shorter. It must
// agree with every rank; any split gives the same bits.
__device__ __forceinline__ void shard(int p, u64 n, u64* lo, u64* hi) {
  u64 per = (n + kWorld - 1) / kWorld;
  per = (per + DC_SHARD_ALIGN - 1) / DC_SHARD_ALIGN * DC_SHARD_ALIGN;
  *lo = p * per < n ? p * per : n;
  *hi = *lo + per < n ? *lo + per : n;
}

// own_signature writes this rank's signature slot of call seq: the
// signature (proto.EncodeSignature), what every peer must agree with
// before any output is written (contract section 5), in its first
// DC_SIG_CMP words, then this rank's premulsum scalar, which its peers
// read with it and do not compare.
__device__ void own_signature(const Args& a, const State& s, u64 seq, u64* w) {
  w[0] = a.op | (u64)a.red << 32;
  w[1] = a.dtype;
  w[2] = a.count;
  w[3] = a.root;
  w[4] = a.nbuf | (a.reg_in != 0 ? (u64)DC_SIG_REGISTERED : 0);
  w[5] = a.layout;
  w[6] = seq;
  w[7] = s.scale[a.rank];
}
static_assert(DC_SIG_CMP == 7 && DC_SIG_WORDS == 8, "own_signature: 7 words compared, then the scalar");

// red_of is the launch's operator (reduce.h) over its world.
__device__ __forceinline__ Red red_of(const Args& a, const State& s) { return Red{a.calc, (u32)kWorld, s.scale}; }

// own_scalar is this rank's premulsum scalar, as its element's bits: from
// the arguments, or read from device memory as the launch runs (NCCL's
// ncclScalarDevice), so that a replayed graph reads it anew.
__device__ u64 own_scalar(const Args& a) {
  if (!(a.calc & DC_CALC_PRE)) return 0;
  if (a.scalar_at == 0) return a.scalar;
  u64 v = 0;
  DC_WITH_TYPE(a.calc, v = load_elem<E::size>(a.scalar_at));
  return v;
}
