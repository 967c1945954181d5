// staging.h: the staging path (steptable.go, proto.OneShot and
// proto.TwoPhase): every rank copies its inputs into its staging, and every
// rank reads the peers' stagings.

// staged_compute produces the outputs of w by the staging path's
// primitive op (DC_S_REDUCE ... DC_S_BROADCAST) from the stagings, or,
// from_input (W=1, DC_S_ALONE), straight from the input: the one leaf is
// then the input's 16-byte line, with the input at off in it, so that the
// vector loads stay aligned wherever the output and the input agree
// modulo 16.
template <class K>
__device__ void staged_compute(const Args& a, State& s, const Work& w, u32 op, bool from_input = false) {
  u64 input[1], off = w.off;
  const u64* leaf = s.pay;
  if constexpr (kWorld == 1)
    if (from_input) {
      input[0] = w.in & ~15ull;
      off = w.in & 15;
      leaf = input;
    }
  const u64 own = leaf[a.rank], g = gtid(), st = gstride();
  switch (op) {
    case DC_S_GATHER:
      for (int p = 0; p < kWorld; p++) copy_bytes(w.out + p * w.bytes, leaf[p] + off, w.bytes, g, st);
      break;
    case DC_S_GATHER_SHARDS:
      for (int p = 0; p < kWorld; p++) {
        u64 lo, hi;
        shard(p, w.bytes, &lo, &hi);
        copy_bytes(w.out + lo, leaf[p] + off + lo, hi - lo, g, st);
      }
      break;
    case DC_S_BROADCAST:
      if (a.rank != a.root) copy_bytes(w.out, leaf[a.root] + off, w.bytes, g, st);
      break;
    default:
      if constexpr (K::reduces) {
        const Red r = red_of(a, s);
        if (op == DC_S_REDUCE) {
          reduce_range<K>(r, leaf, s.mirror, false, w.out, off, w.bytes, g, st);
        } else if (op == DC_S_REDUCE_SHARD) {
          const u64 n = w.bytes / kWorld;
          reduce_range<K>(r, leaf, s.mirror, false, w.out, off + a.rank * n, n, g, st);
        } else if (op == DC_S_REDUCE_IN_PLACE) {
          u64 lo, hi;
          shard(a.rank, w.bytes, &lo, &hi);
          reduce_range<K>(r, leaf, s.mirror, false, own + off + lo, off + lo, hi - lo, g, st);
        }
      }
  }
}

// publish_stage writes this call's signature (and a registered call's
// buffers), then stage = seq: the release orders them before it for a
// peer that acquires stage.
__device__ void publish_stage(const Args& a, const State& s, u64 seq) {
  u64 mine[DC_SIG_WORDS];
  own_signature(a, s, seq, mine);
  for (int k = 0; k < DC_SIG_WORDS; k++) st_vol(a.self + DC_OFF_SIG + 8 * k, mine[k]);
  if (a.reg_in != 0) {
    st_vol(a.self + DC_OFF_REG, a.reg_in);
    st_vol(a.self + DC_OFF_REG + 8, a.reg_out);
  }
  st_release(a.self + DC_OFF_STAGE, seq);
}

// publish_done sets done = seq here and pushes it into every peer's ack
// array. Called by every thread of the last block, after last_block.
__device__ void publish_done(const Args& a, State& s, u64 seq) {
  const u32 t = threadIdx.x;
  if (t < kWorld) st_release(t == a.rank ? a.self + DC_OFF_DONE : s.ctrl[t] + DC_OFF_ACK + 8 * a.rank, seq);
}
