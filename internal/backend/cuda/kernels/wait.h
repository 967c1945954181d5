// wait.h: every wait of every protocol, and what ends one that fails:
// the bounds (timeout, abort, a peer's failure, a peer on the other
// protocol), the block's one poller, and the error record.

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

// status_word is what this rank's status word says when it fails: the
// failure's kind and its culprit (proto.StatusWord).
__device__ __forceinline__ u64 status_word(u64 kind, u32 culprit) { return kind << DC_STATUS_KIND_SHIFT | (u64)(culprit + 1); }

// record writes the first failure of this communicator into the host's
// error record and this rank's status word (thread 0 of a failing block;
// the first claim wins, later failures only exit).
__device__ void record(const Args& a, State& s, u32 code, u32 phase, u64 aux, u64 missing) {
  if (atom_cas(a.self + DC_OFF_CLAIM, 0, 1) != 0) return;
  const u64 seq = s.seq;
  st_vol(a.host + DC_REC_CODE, code);
  st_vol(a.host + DC_REC_PHASE, phase);
  st_vol(a.host + DC_REC_OP, a.op);
  st_vol(a.host + DC_REC_SEQ, seq);
  st_vol(a.host + DC_REC_MISSING, missing);
  st_vol(a.host + DC_REC_AUX, aux);
  u64 mine[DC_SIG_WORDS];
  own_signature(a, s, seq, mine);
  for (int p = 0; p < kWorld; p++) {
    bool header = true;
    for (int k = 0; k < DC_SIG_WORDS; k++) header = header && s.sig_ok[p * DC_SIG_WORDS + k];
    for (int k = 0; k < DC_SIG_WORDS; k++) {
      u64 v = p == (int)a.rank ? mine[k] : header ? s.sig[p * DC_SIG_WORDS + k] : ld_vol(s.ctrl[p] + DC_OFF_SIG + 8 * k);
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

// watched returns the address of the word a thread of this rank polls
// for peer p: one that peers push here (DC_OFF_ACK and after), or a word
// of the peer's own control block, read over NVLink.
__device__ __forceinline__ u64 watched(const Args& a, State& s, int p, u64 word) {
  return word >= DC_OFF_ACK && word != DC_WORD_LINES ? a.self + word + 8 * p : s.ctrl[p] + word;
}

// other_call reports whether peer p is running another call than this
// one as call seq: its LL header for seq is here, or it published stage
// >= seq with a signature other than this rank's.
__device__ bool other_call(const Args& a, State& s, int p, u64 seq) {
  if (ll_header_seen(a, s, p, seq)) return true;
  if (ld_acquire(s.ctrl[p] + DC_OFF_STAGE) < seq) return false;
  u64 mine[DC_SIG_WORDS], theirs[DC_SIG_WORDS];
  own_signature(a, s, seq, mine);
  for (int k = 0; k < DC_SIG_WORDS; k += 2) ld_vol2(s.ctrl[p] + DC_OFF_SIG + 8 * k, &theirs[k], &theirs[k + 1]);
  bool same = true;
  for (int k = 0; k < DC_SIG_CMP; k++) same = same && theirs[k] == mine[k];
  return !same;
}

// fail_block ends a block whose threads set s.code/s.aux: thread 0 records
// the most telling cause (a peer's own report, then an abort, then a
// mismatch, then a timeout with every rank still missing). For a timeout
// the missing ranks are those whose word is below target, or, for waits on
// LL lines (DC_WORD_LINES), those a thread of this block timed out on.
__device__ void fail_block(const Args& a, State& s, u64 word, u64 target, u32 phase) {
  if (threadIdx.x != 0) return;
  u32 code = 0;
  u64 aux = 0;
  const u32 order[4] = {DC_CODE_PEER, DC_CODE_ABORT, DC_CODE_MISMATCH, DC_CODE_TIMEOUT};
  for (int k = 0; k < 4 && code == 0; k++)
    for (int p = 0; p < kWorld; p++)
      if (s.code[p] == order[k]) {
        code = order[k];
        aux = s.aux[p];
        break;
      }
  u64 missing = 0;
  if (code == DC_CODE_TIMEOUT)
    for (int p = 0; p < kWorld; p++) {
      if (p == (int)a.rank) continue;
      const bool late = word == DC_WORD_LINES ? s.code[p] == DC_CODE_TIMEOUT : ld_acquire(watched(a, s, p, word)) < target;
      if (late) missing |= 1ull << p;
    }
  if (code != 0) record(a, s, code, phase, aux, missing);
}

// poll_claim makes the calling thread the block's poller if no other
// thread is; poll_release ends that.
__device__ __forceinline__ bool poll_claim(State& s) {
  u32 old;
  asm volatile("atom.cas.b32 %0, [%1], %2, %3;" : "=r"(old) : "l"(&s.poll_lock), "r"(0u), "r"(1u) : "memory");
  return old == 0;
}
__device__ __forceinline__ void poll_release(State& s) {
  asm volatile("membar.cta;" ::: "memory");
  asm volatile("st.volatile.u32 [%0], %1;" ::"l"(&s.poll_lock), "r"(0u) : "memory");
}

// poll_block reads, for every waiter of the block, what else ends a wait:
// every peer's status word, this rank's, the host's abort word (at most
// every DC_ABORT_NS), and with a probe, whether a peer runs the other
// protocol for call seq (every waiter of a block waits with the same probe
// at a time: the waits are separated by bar.sync). It leaves its findings
// in shared memory (s.pcode and s.paux by peer, s.pabort, s.pown). Called
// by the poller only.
__device__ void poll_block(const Args& a, State& s, u32 probe, u64 seq, u64 now) {
  s.polled = now;
  const bool abort_due = (long long)(now - s.abort_polled) >= DC_ABORT_NS;
  // The loads in flight together (NVLink, local, PCIe), then checked.
  u64 vs[kWorld];
#pragma unroll
  for (int p = 0; p < kWorld; p++) vs[p] = p == (int)a.rank ? 0 : ld_vol(s.ctrl[p] + DC_OFF_STATUS);
  const u64 own = ld_vol(a.self + DC_OFF_STATUS), va = abort_due ? ld_vol(a.host + DC_REC_ABORT) : 0;
  if (abort_due) s.abort_polled = now;
  if (va != 0) s.pabort = va;
  if (own != 0) s.pown = 1;
  for (int p = 0; p < kWorld; p++) {
    if (p == (int)a.rank || s.pcode[p] != 0) continue;
    u32 code = 0;
    if (vs[p] != 0)
      code = DC_CODE_PEER;
    else if (s.pabort != 0 || s.pown)
      continue;
    else if (probe == DC_PROBE_HEADER && ll_header_seen(a, s, p, seq))
      code = DC_CODE_MISMATCH;
    else if (probe == DC_PROBE_STAGE && ld_acquire(s.ctrl[p] + DC_OFF_STAGE) >= seq && !ll_header_seen(a, s, p, seq))
      code = DC_CODE_MISMATCH;
    else if (probe == DC_PROBE_ANY && other_call(a, s, p, seq))
      code = DC_CODE_MISMATCH;
    if (code == 0) continue;
    s.paux[p] = vs[p];
    asm volatile("membar.cta;" ::: "memory");
    s.pcode[p] = code;
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
  __device__ u32 check(const Args& a, State& s, u64* aux) {
    nap();
    if ((++i & (DC_CHECK_EVERY - 1)) != 0) return 0;
    if (s.fail) return DC_STOP;
    const u64 now = now_ns(), waited = now - t0;
    if (waited < DC_QUIET_NS) return 0;
    if ((long long)(now - s.polled) >= DC_POLL_NS && poll_claim(s)) {
      if ((long long)(now - s.polled) >= DC_POLL_NS) poll_block(a, s, probe, seq, now);
      poll_release(s);
    }
    const u32 code = s.pcode[peer];
    if (code != 0) {
      asm volatile("membar.cta;" ::: "memory");
      *aux = s.paux[peer];
      return code;
    }
    if (s.pabort != 0) {
      *aux = s.pabort;
      return DC_CODE_ABORT;
    }
    if (s.pown) return DC_STOP;
    return waited > a.timeout ? DC_CODE_TIMEOUT : 0;
  }
};

// wait_all waits until, for every peer p, the word watched(a, s, p, word) is
// at least target; thread p polls for peer p. It returns false, after
// recording why, if the wait failed. probe: see Waiter (target is the
// call's seq then).
__device__ bool wait_all(const Args& a, State& s, u64 word, u64 target, u32 phase, u32 probe = DC_PROBE_NONE) {
  const u32 t = threadIdx.x;
  if (t < kWorld && t != a.rank) {
    const u64 w = watched(a, s, t, word);
    Waiter wt(t, probe, target);
    while (ld_acquire(w) < target) {
      u64 aux = 0;
      const u32 code = wt.check(a, s, &aux);
      if (code == 0) continue;
      // A peer that failed after publishing what we wait for (it found a
      // mismatch, say) must not hide it: progress wins.
      if (code != DC_STOP && ld_acquire(w) >= target) break;
      if (code != DC_STOP) {
        s.code[t] = code;
        s.aux[t] = aux;
      }
      s.fail = 1;
      break;
    }
  }
  sync_block();
  if (s.fail) {
    fail_block(a, s, word, target, phase);
    return false;
  }
  return true;
}

// check_signatures compares every peer's signature with this call's.
// Thread p, which acquired peer p's stage, reads the peer's words in
// 16-byte loads issued together: one NVLink round trip, not one per word.
__device__ bool check_signatures(const Args& a, State& s) {
  const u32 t = threadIdx.x;
  if (t < kWorld && t != a.rank) {
    u64 mine[DC_SIG_WORDS], theirs[DC_SIG_WORDS];
    own_signature(a, s, s.seq, mine);
#pragma unroll
    for (int k = 0; k < DC_SIG_WORDS; k += 2) ld_vol2(s.ctrl[t] + DC_OFF_SIG + 8 * k, &theirs[k], &theirs[k + 1]);
    bool same = true;
#pragma unroll
    for (int k = 0; k < DC_SIG_CMP; k++) same = same && theirs[k] == mine[k];
    s.scale[t] = theirs[DC_SIG_CMP];
    if (!same) {
      s.code[t] = DC_CODE_MISMATCH;
      s.fail = 1;
    }
  }
  sync_block();
  if (s.fail) {
    fail_block(a, s, DC_OFF_STAGE, s.seq, DC_PHASE_READY);
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
__device__ bool last_block(const Args& a, State& s, u64 counter, bool release = true) {
  sync_block();
  if (gridDim.x == 1) return true;  // the st.release.sys that follows releases the block's writes
  if (threadIdx.x == 0) {
    if (release && s.remote)
      fence_sys();
    else if (release)
      fence_gpu();
    s.last = atom_add(a.self + counter, 1) == gridDim.x - 1;
    if (s.last) {
      atom_zero(a.self + counter);
      if (release) fence_sys();
    }
  }
  sync_block();
  return s.last;
}
