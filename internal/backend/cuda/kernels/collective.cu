// collective.cu: the entry points of detcoll's cuda backend, and the one
// body every launch runs (run).
//
// Compiled at run time by NVRTC for the device's architecture, once per
// world size (-DDC_WORLD=W), so that the tree over the ranks unrolls into
// registers. It includes no CUDA header: loads, stores, fences, atomics,
// adds and conversions are inline PTX, which pins down exactly the
// instructions the contract needs (acquire/release at system scope,
// operations rounded once to nearest that no compiler can contract into
// an FMA, no flush to zero). The host compiles one text (kernels.go,
// kernelFiles):
//   proto.h     the constants shared with Go, generated (header.go)
//   ops.h       memory operations
//   reduce.h    the element types and the operators: a node, a leaf, the root
//   launch.h    the launch's arguments and each block's state
//   profile.h   marks that time an LL launch's phases (DC_PROFILE only)
//   tree.h      T over the ranks
//   prims.h     reduce_range and copy_bytes, the loops that move data
//   lines.h     LL lines and receive slots
//   wait.h      bounded waits, the block's poller, the error record
//   staging.h   the staging path: stage, then read the peers' stagings
//   push.h      the push path: write parts to their reducers, sums back
//   registered.h  the registered path: read parts in place; sums to every output (all-reduce) or this rank's (reduce-scatter)
//   ll.h        the LL protocol: a small call in one launch
//   alone.h     W=1: the outputs straight from the inputs
//   then this file.
//
// One kernel body runs every step of the protocol of the contract's section
// 4. Each launch carries its steps as a table of primitives (Args.steps,
// DC_S_*), in the order of proto's schedule as proto.Launches cuts it
// (cuda/steptable.go), and run executes them in that order. Every launch of
// a call has seq = own done + 1 (done is the call's last step):
//   AWAIT_ACKS     wait until every peer's done >= seq - 1
//   COPY_IN        copy the inputs into this rank's staging
//   PUBLISH_STAGE  write the signature, then stage = seq (release, system scope)
//   AWAIT_STAGE    wait until every peer's stage >= seq; CHECK compares signatures
//   REDUCE ...     produce the outputs (staging.h, push.h: the primitives)
//   PUBLISH_DONE   done = seq (this rank has finished reading its peers)
// and the words of the two-phase and push paths (reduced, sent1, sent2).
// A call of more than DC_MAX_WORK buffers runs each launch once per
// DC_MAX_WORK: the first waits and checks, the last publishes.
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
// and the staging path's staged_compute. LL calls publish no stage, so stage >=
// seq tells a peer that this rank took the staging path for call seq.
//
// A launch of several blocks publishes through its last block (an atomic
// count, reset for the next launch). No block ever waits for another block
// of its own launch: blocks wait only on words that earlier launches (here
// or on peers) publish, or, in an LL launch, on the lines of the peers'
// same window, which the blocks take in the order they start (run_ll). So
// a launch makes progress whatever order its blocks start in and however
// few are resident. Waiting blocks do hold their multiprocessors, though:
// the host caps the grid of every launch that may wait at a few dozen
// blocks, so that the kernels of the other ranks and communicators that
// share the GPU find room (cuda/share.go says how many fit).
//
// Every wait is bounded by the timeout (%globaltimer), the host's abort word
// and the peers' status words. A failed wait or a signature mismatch is
// recorded once in host-mapped memory (the error record) and in this rank's
// status word, which peers read; every later launch sees the status and
// exits at once. (At W=1 nothing waits, so nothing fails on the GPU: an
// Alone launch reads no status and, replayed in a graph after the host
// poisoned the communicator, computes its outputs as it would have.)

// Every kernel keeps at least DC_MIN_BLOCKS blocks on a multiprocessor
// (its registers capped to fit), so that the launches of 8 ranks or
// communicators fit on one GPU at once (cuda/share.go).
#define DC_MIN_BLOCKS 2

template <class K>
__device__ void run_table(const Args& a, State& s, const u64 seq);

// run executes a launch: the whole call by LL (in the LL kernels, whose
// tables are DC_S_LL and the compute) or, at W=1, Alone (the table's
// first entry says), else its steps in order (run_table).
//
// LL is true in the LL kernels (dc_ll_*, plan.go's llKernel), which run
// only LL launches: their body is that protocol's alone, a short run of
// instructions where every launch starts with a cold instruction cache
// (docs/perf-levers.md, lever 0); the other kernels run every other table.
template <class K, bool LL>
__device__ void run(const Args& a, State& s) {
  if constexpr (!LL && kWorld == 1)
    if (a.steps[0] == DC_S_ALONE) {
      run_alone<K>(a, s);
      return;
    }
  DC_MARK(s, 0);
  const u32 t = threadIdx.x, nt = blockDim.x;
  constexpr bool ll = LL;
  const u64 scratch = a.self + a.ll + 2ull * kWorld * DC_LL_SLOT;  // LL: the scratch images
  for (u32 p = t; p < kWorld; p += nt) {
    s.ctrl[p] = ld_u64(a.self + DC_OFF_PEERS + 8 * p);
    s.pay[p] = ll ? scratch + (u64)p * DC_LL_MAX : s.ctrl[p] + DC_CTRL_SIZE;
    s.code[p] = 0;
    s.aux[p] = 0;
    s.scale[p] = p == a.rank ? own_scalar(a) : 0;
    // LL checks the acks of its slot without a wait of its own: the
    // loads overlap the stage's.
    if (ll && p != a.rank) s.ack[p] = ld_acquire(a.self + DC_OFF_ACK + 8 * p);
  }
  for (u32 i = t; i < kWorld * DC_SIG_WORDS; i += nt) s.sig_ok[i] = 0;
  for (u32 p = t; p < kWorld; p += nt) {
    s.pcode[p] = 0;
    s.paux[p] = 0;
  }
  if (t == 0) {
    s.poll_lock = 0;
    s.polled = 0;
    s.abort_polled = 0;
    s.pabort = 0;
    s.pown = 0;
    // An LL block's window is its place in the order the launch's blocks
    // start, not its index (run_ll); the last to take one resets the
    // count for the next launch of the stream. Taken before anything can
    // end the block, so that every block takes one.
    s.win = 0;
    if (ll && gridDim.x > 1) {
      s.win = atom_add(a.self + DC_OFF_TICKET, 1);
      if (s.win == gridDim.x - 1) atom_zero(a.self + DC_OFF_TICKET);
    }
    s.remote = 0;
    for (int i = 0; i < DC_MAX_STEPS; i++) s.remote |= push_path(a.steps[i]) || registered_path(a.steps[i]);
  }
  if (t == nt - 1) {
    // Both words were last written by this rank's earlier launches, which
    // the stream ordered before this one: plain loads, issued together.
    const u64 status = ld_vol(a.self + DC_OFF_STATUS), done = ld_vol(a.self + DC_OFF_DONE);
    s.fail = status != 0;  // poisoned: do nothing
    s.seq = done + 1;
  }
  sync_block();
  DC_MARK(s, 1);
  if constexpr (ll) prefetch_lines(a, s);
  if (s.fail) return;
  const u64 seq = s.seq;
  if constexpr (ll) {
    // The slot this call writes at each peer was last read for seq - 2.
    bool acked = true;
    for (int p = 0; p < kWorld; p++) acked = acked && (p == (int)a.rank || s.ack[p] + 2 >= seq);
    if (!acked && !wait_all(a, s, DC_OFF_ACK, seq - 2, DC_PHASE_RESERVE)) return;
    DC_MARK(s, 2);
    run_ll<K>(a, s, seq, a.steps[1]);
#ifdef DC_PROFILE
    prof_flush(a, s);
#endif
    return;
  } else {
    run_table<K>(a, s, seq);
  }
}

// run_table executes the steps of a launch that is not LL's.
template <class K>
__device__ void run_table(const Args& a, State& s, const u64 seq) {
  const u32 t = threadIdx.x, nt = blockDim.x;

  // The peers' premulsum scalars come with their signatures (CHECK); a
  // launch that computes without a CHECK of its own (a later chunk, a
  // later launch of the call) reads them from the peers' slots, which
  // they rewrite only after this rank's done.
  bool scaled = false;
#pragma unroll 1  // one copy of each primitive's code, not one per entry
  for (int i = 0; i < DC_MAX_STEPS; i++) {
    const u32 op = a.steps[i];
    switch (op) {
      case DC_S_END:
        return;
      case DC_S_LL:  // the LL kernels' table, never this kernel's (plan.go's llKernel): a fault, not a hang
        asm volatile("trap;");
      case DC_S_AWAIT_ACKS:
        if (!wait_all(a, s, DC_OFF_ACK, seq - 1, DC_PHASE_RESERVE)) return;
        if (ll_refresh_due(seq)) ll_refresh(a, s, seq, 0);
        break;
      case DC_S_AWAIT_STAGE:
        if (!wait_all(a, s, DC_OFF_STAGE, seq, DC_PHASE_READY, DC_PROBE_HEADER)) return;
        break;
      case DC_S_AWAIT_REDUCED:
        if (!wait_all(a, s, DC_OFF_REDUCED, seq, DC_PHASE_REDUCED)) return;
        break;
      case DC_S_AWAIT_SENT1:  // the peers' first pushes come after their stage: it meets
        if (!wait_all(a, s, DC_OFF_SENT1, seq, DC_PHASE_READY, DC_PROBE_ANY)) return;
        break;
      case DC_S_AWAIT_SENT2:
        if (!wait_all(a, s, DC_OFF_SENT2, seq, DC_PHASE_REDUCED)) return;
        break;
      case DC_S_CHECK:
        if (!check_signatures(a, s)) return;
        scaled = true;
        break;
      case DC_S_COPY_IN:
        for (u32 k = 0; k < a.nwork; k++)
          if (a.work[k].in != 0)
            copy_bytes(s.pay[a.rank] + a.work[k].off, a.work[k].in, a.work[k].bytes, gtid(), gstride());
        break;
      case DC_S_PUBLISH_STAGE:
        if (last_block(a, s, DC_OFF_COUNT_STAGE) && t == 0) publish_stage(a, s, seq);
        break;
      case DC_S_PUBLISH_REDUCED:
        if (last_block(a, s, DC_OFF_COUNT_REDUCED) && t == 0) st_release(a.self + DC_OFF_REDUCED, seq);
        break;
      case DC_S_PUBLISH_SENT1:
      case DC_S_PUBLISH_SENT2:
        if (last_block(a, s, DC_OFF_COUNT_REDUCED))
          push_word(a, s, op == DC_S_PUBLISH_SENT1 ? DC_OFF_SENT1 : DC_OFF_SENT2, seq);
        break;
      case DC_S_PUBLISH_DONE:
        if (last_block(a, s, DC_OFF_COUNT_DONE)) publish_done(a, s, seq);
        break;
      default:  // a primitive that moves data
        if (K::reduces && !K::fixed && (a.calc & DC_CALC_PRE) && !scaled) {
          for (u32 p = t; p < kWorld; p += nt)
            if (p != a.rank) s.scale[p] = ld_vol(s.ctrl[p] + DC_OFF_SIG + 8 * DC_SIG_CMP);
          sync_block();
          scaled = true;
        }
        if (op == DC_S_REDUCE_PUSH || op == DC_S_REDUCE_PUSH_SCATTER) {
          for (u32 p = t; p < kWorld; p += nt) push_setup(a, s, p, op);
          sync_block();
        }
        if (registered_path(op)) {
          for (u32 p = t; p < kWorld; p += nt) reg_setup(a, s, p, op);
          sync_block();
          reg_compute<K>(a, s, a.work[0], op);
          break;
        }
        for (u32 k = 0; k < a.nwork; k++) {
          if (push_path(op))
            push_compute<K>(a, s, a.work[k], op);
          else
            staged_compute<K>(a, s, a.work[k], op);
        }
    }
  }
}

// The entry points (plan.go's kernels): the operations that only copy;
// every reduction, whatever its type and operator (reduce.h's Any); and
// the sum of each floating type (Sum), the calls most jobs make.
#define DC_KERNEL(name, K, LL)                                                       \
  extern "C" __global__ void __launch_bounds__(DC_BLOCK, DC_MIN_BLOCKS) name(Args a) { \
    __shared__ State s;                                                              \
    run<K, LL>(a, s);                                                                \
  }
DC_KERNEL(dc_copy, Bytes, false)
DC_KERNEL(dc_reduce, Any, false)
DC_KERNEL(dc_sum_bf16, Sum<BF16>, false)
DC_KERNEL(dc_sum_f16, Sum<F16>, false)
DC_KERNEL(dc_sum_f32, Sum<F32>, false)
DC_KERNEL(dc_sum_f64, Sum<F64>, false)
DC_KERNEL(dc_ll_copy, Bytes, true)
DC_KERNEL(dc_ll_reduce, Any, true)
DC_KERNEL(dc_ll_sum_bf16, Sum<BF16>, true)
DC_KERNEL(dc_ll_sum_f16, Sum<F16>, true)
DC_KERNEL(dc_ll_sum_f32, Sum<F32>, true)
DC_KERNEL(dc_ll_sum_f64, Sum<F64>, true)
