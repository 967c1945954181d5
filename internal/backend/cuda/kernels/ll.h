// ll.h: the LL protocol: a whole small call in one launch (steptable.go,
// proto.LL).

// An LL launch's table is DC_S_LL, then the call's compute (op below):
// DC_S_REDUCE, DC_S_REDUCE_SHARD, DC_S_GATHER or DC_S_BROADCAST, which
// the LL protocol does as the lines arrive.

// ll_range returns the image bytes [lo, hi) of w that rank from sends to
// rank to in a call computed by op, widened to whole lines: the receiver's
// share of a reduce-scatter, nothing from a broadcast's other ranks, all of
// it otherwise. Sender and receiver evaluate it alike, so the receiver
// waits for exactly the lines the sender writes.
__device__ void ll_range(const Args& a, const Work& w, u32 op, int from, int to, u64* lo, u64* hi) {
  u64 b = w.off, e = w.off + w.bytes;
  if (op == DC_S_REDUCE_SHARD) {
    const u64 n = w.bytes / kWorld;
    b += to * n;
    e = b + n;
  } else if (op == DC_S_BROADCAST && from != (int)a.root) {
    e = b;
  }
  *lo = b & ~7ull;
  *hi = (e + 7) & ~7ull;
}

// ll_wait waits until the line at p, sent by peer, carries call seq's
// flag. false: the wait failed (s.fail is set, and s.code[peer] if this
// thread saw why).
__device__ bool ll_wait(const Args& a, State& s, u64 p, u64 seq, int peer, u64* v, u32 probe = DC_PROBE_NONE) {
  const u32 flag = (u32)seq;
  if (ld_line(p, flag, v)) return true;
  Waiter wt(peer, probe, seq);
  for (;;) {
    if (ld_line(p, flag, v)) return true;
    u64 aux = 0;
    const u32 code = wt.check(a, s, &aux);
    if (code == 0) continue;
    if (code != DC_STOP && ld_line(p, flag, v)) return true;
    if (code != DC_STOP) {
      s.code[peer] = code;
      s.aux[peer] = aux;
    }
    s.fail = 1;
    return false;
  }
}

// ll_refresh writes the flag of call seq - 2 (the slot's last call, which
// every peer has finished reading) into every line of call seq's slot at
// every peer that the call does not send (an LL call computed by op), or
// into every line of it, signature header included (op 0: the first
// launch of a call on another path, after its reserve). No reader takes such a line for its call: not
// this call's (a staged LL all-reduce follows its Stage launch's refresh),
// nor one of the next 2^32 - 2. Run whatever the path when the low 31 bits
// of seq are 0 or 1, it bounds the age of every flag in a slot to 2^31
// calls, so that a stale line can never carry the flag of the call reading
// it (flags are seq mod 2^32); it costs one slot's worth of writes every
// 2^31 calls. Open fills every line with the flag of s0 - 2, as a refresh
// of both slots would, whatever the first seq s0.
__device__ __forceinline__ bool ll_refresh_due(u64 seq) { return (seq & 0x7fffffffull) < 2; }

__device__ void ll_refresh(const Args& a, State& s, u64 seq, u32 op) {
  const bool ll = op != 0;
  const u32 flag = (u32)(seq - 2);
  for (int q = 0; q < kWorld; q++) {
    if (q == (int)a.rank) continue;
    const u64 slot = ll_slot(a, s.ctrl[q], seq, a.rank);
    if (!ll)
      for (u64 k = gtid(); k < DC_LL_HDR / 16; k += gstride()) st_line(slot + 16 * k, 0, flag);
    for (u64 x = 8 * gtid(); x < DC_LL_MAX; x += 8 * gstride()) {
      bool sent = false;
      for (u32 k = 0; ll && k < a.nwork; k++) {
        u64 b, e;
        ll_range(a, a.work[k], op, a.rank, q, &b, &e);
        sent = sent || (x >= b && x < e);
      }
      if (!sent) st_line(slot + DC_LL_HDR + 2 * x, 0, flag);
    }
  }
}

// compute_window is staged_compute for the LL protocol: this block produces the
// outputs whose image bytes lie in [lo, hi) (window bounds are multiples of
// 64, so no element straddles two windows), from the scratch images.
template <class K>
__device__ void compute_window(const Args& a, State& s, const Work& w, u32 op, u64 lo, u64 hi) {
  const u64 g = threadIdx.x, st = blockDim.x;
  u64 b = w.off, e = w.off + w.bytes;  // image bytes [b, e) make the output
  if (op == DC_S_REDUCE_SHARD) {
    b += a.rank * (w.bytes / kWorld);
    e = b + w.bytes / kWorld;
  }
  const u64 x = b > lo ? b : lo, y = e < hi ? e : hi;
  if (x >= y) return;
  const u64 out = w.out + (x - b);
  if (op == DC_S_GATHER) {
    for (int p = 0; p < kWorld; p++) copy_bytes(out + p * w.bytes, s.pay[p] + x, y - x, g, st);
  } else if (op == DC_S_BROADCAST) {
    if (a.rank != a.root) copy_bytes(out, s.pay[a.root] + x, y - x, g, st);
  } else if constexpr (K::reduces) {
    reduce_range<K>(red_of(a, s), s.pay, s.mirror, false, out, x, y - x, g, st);
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
__device__ void prefetch_lines(const Args& a, State& s) {
  const u64 lo = (u64)s.win * a.window;
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
__device__ __forceinline__ void out_range(const Args& a, const Work& w, u32 op, u64* b, u64* e) {
  *b = w.off;
  *e = w.off + w.bytes;
  if (op == DC_S_REDUCE_SHARD) {
    *b += a.rank * (w.bytes / kWorld);
    *e = *b + w.bytes / kWorld;
  }
}

// direct reports whether the outputs of w can be stored 8 bytes at a time
// straight from the lines (every output line 8-byte aligned); the lines
// that only partly hold outputs still go through the scratch images.
__device__ __forceinline__ bool direct(const Work& w, u32 op, u64 b) {
  if (((w.out - b) & 7) != 0) return false;
  return op != DC_S_GATHER || (w.bytes & 7) == 0;
}

// run_ll runs a whole call by the LL protocol. The block with ticket b
// (s.win: the b-th block of the launch to start) handles the image bytes
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
template <class K>
__device__ void run_ll(const Args& a, State& s, u64 seq, u32 op) {
  const u32 t = threadIdx.x, nt = blockDim.x, flag = (u32)seq;
  const u64 lo = (u64)s.win * a.window, hi = lo + a.window;

  // Push this rank's lines, and (window 0, the first block to start) its
  // signature, to every peer.
  u64 mine[DC_SIG_WORDS];
  own_signature(a, s, seq, mine);
  if (s.win == 0)
    for (u32 i = t; i < kWorld * DC_SIG_WORDS; i += nt)
      if (i / DC_SIG_WORDS != a.rank)
        st_line(ll_slot(a, s.ctrl[i / DC_SIG_WORDS], seq, a.rank) + 16 * (i % DC_SIG_WORDS), mine[i % DC_SIG_WORDS],
                flag);
  for (int q = 0; q < kWorld; q++) {
    if (q == (int)a.rank) continue;
    const u64 dst = ll_slot(a, s.ctrl[q], seq, a.rank) + DC_LL_HDR;
    for (u32 k = 0; k < a.nwork; k++) {
      u64 b, e;
      ll_range(a, a.work[k], op, a.rank, q, &b, &e);
      if (b < lo) b = lo;
      if (e > hi) e = hi;
      for (u64 x = b + 8 * t; x < e; x += 8 * nt) st_line(dst + 2 * x, ld_image8(a.work[k], x), flag);
    }
  }
  DC_MARK(s, 3);
  if (ll_refresh_due(seq)) ll_refresh(a, s, seq, op);

  // Check every peer's signature (thread i: word i % 8 of rank i / 8).
  for (u32 i = t; i < kWorld * DC_SIG_WORDS; i += nt) {
    const int p = i / DC_SIG_WORDS;
    u64 v;
    if (p == (int)a.rank || !ll_wait(a, s, ll_slot(a, a.self, seq, p) + 16 * (i % DC_SIG_WORDS), seq, p, &v, DC_PROBE_STAGE))
      continue;
    s.sig[i] = v;
    s.sig_ok[i] = 1;
    if (i % DC_SIG_WORDS == DC_SIG_CMP) {
      s.scale[p] = v;  // the peer's scalar, not compared
    } else if (v != mine[i % DC_SIG_WORDS]) {
      s.code[p] = DC_CODE_MISMATCH;
      s.fail = 1;
    }
  }
  // No output is written before every signature is known to agree
  // (contract section 5: a mismatch changes nothing).
  sync_block();
  DC_MARK(s, 4);
  if (s.fail) {
    fail_block(a, s, DC_WORD_LINES, 0, DC_PHASE_READY);
    return;
  }

  // Receive: every line's values from every rank that sends it, then the
  // outputs, or the scratch images.
  const bool bcast = op == DC_S_BROADCAST;
  for (u32 k = 0; k < a.nwork && !s.fail; k++) {
    const Work& w = a.work[k];
    if (bcast && a.rank == a.root) break;
    u64 ob, oe, b, e;
    out_range(a, w, op, &ob, &oe);
    ll_range(a, w, op, bcast ? a.root : a.rank, a.rank, &b, &e);
    if (b < lo) b = lo;
    if (e > hi) e = hi;
    const bool fast = direct(w, op, ob);
    for (u64 x = b + 8 * t; x < e && !s.fail; x += 8 * nt) {
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
          failed = !ll_wait(a, s, ll_slot(a, a.self, seq, p) + DC_LL_HDR + 2 * x, seq, p, &got);
          v[p] = got;
        }
      if (failed) break;
      if (fast && x >= ob && x + 8 <= oe) {
        if (op == DC_S_GATHER) {
#pragma unroll
          for (int p = 0; p < kWorld; p++) st_u64(w.out + p * w.bytes + (x - ob), v[p]);
        } else if (bcast) {
#pragma unroll
          for (int p = 0; p < kWorld; p++)
            if (p == (int)a.root) st_u64(w.out + (x - ob), v[p]);
        } else if constexpr (K::reduces) {
          st_u64(w.out + (x - ob), tree_regs_of<K>(red_of(a, s), v));
        }
      } else {
#pragma unroll
        for (int p = 0; p < kWorld; p++) st_u64(s.pay[p] + x, v[p]);
      }
    }
  }
  sync_block();
  DC_MARK(s, 5);
  if (s.fail) {
    fail_block(a, s, DC_WORD_LINES, 0, DC_PHASE_READY);
    return;
  }
  // The outputs of the lines that went through the scratch images.
  for (u32 k = 0; k < a.nwork; k++) {
    const Work& w = a.work[k];
    u64 ob, oe;
    out_range(a, w, op, &ob, &oe);
    if (!direct(w, op, ob)) {
      compute_window<K>(a, s, w, op, lo, hi);
      continue;
    }
    u64 head = (ob + 7) & ~7ull, tail = oe & ~7ull;  // [head, tail): the whole lines
    if (head > oe) head = oe;
    if (tail < head) tail = head;
    if (ob < head) compute_window<K>(a, s, w, op, ob > lo ? ob : lo, head < hi ? head : hi);
    if (tail < oe) compute_window<K>(a, s, w, op, tail > lo ? tail : lo, oe < hi ? oe : hi);
  }
  // done and the acks need no fence: the peers write nothing here that
  // this rank's writes must precede, and every read of the receive slot
  // (and, for a staged all-reduce, of this rank's staging, which a peer's
  // next call may write) has returned its value (it was stored) before
  // the count.
  DC_MARK(s, 6);
  if (last_block(a, s, DC_OFF_COUNT_DONE, false) && t < kWorld)
    st_vol(t == a.rank ? a.self + DC_OFF_DONE : s.ctrl[t] + DC_OFF_ACK + 8 * a.rank, seq);
  DC_MARK(s, 7);
}

