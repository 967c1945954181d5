// alone.h: a rank with no peers (W=1, proto.Alone): the outputs straight
// from the inputs, in one launch.

// run_alone is run for an Alone launch: its table is DC_S_ALONE, the
// compute, then DC_S_PUBLISH_DONE (in the last chunk). With no one to meet and nothing
// to wait for, the launch reads neither its control block nor the peer
// table: done, which only this rank's later launches read (the stream
// orders them after this one), is counted up in place rather than read
// and written, and the status word is never set at W=1 (only waits and
// signature checks set it, and an Alone call has neither). The launch's
// only trip to memory and back is its data's.
template <class K>
__device__ void run_alone(const Args& a, State& s) {
  if (a.calc & DC_CALC_PRE) {  // the one leaf's scalar
    if (threadIdx.x == 0) s.scale[0] = own_scalar(a);
    sync_block();
  }
  for (u32 k = 0; k < a.nwork; k++) staged_compute<K>(a, s, a.work[k], a.steps[1], true);
  if (a.steps[2] == DC_S_PUBLISH_DONE && blockIdx.x == 0 && threadIdx.x == 0) red_add(a.self + DC_OFF_DONE, 1);
}
