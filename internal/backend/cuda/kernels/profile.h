// profile.h: where an LL launch's time goes, for measuring lever 0
// (DETCOLL_CUDA_PROFILE=1 compiles with -DDC_PROFILE; never in the kernels
// built ahead of time). Thread 0 of block 0 reads clock64 at the marks of
// run and run_ll, and at the end adds each span between two marks (SM
// cycles), its time inside the kernel and the gap since this rank's last
// LL launch ended (%globaltimer, ns) into the control block at
// DC_OFF_PROF, which the host prints at Close (profile.go). Without
// DC_PROFILE the marks compile to nothing.
//
// The marks: 0 entry, 1 set-up done (State, seq), 2 the LL protocol
// starts (acks checked), 3 the lines sent, 4 the signatures agree, 5 the
// lines received and summed, 6 the outputs of partial lines, 7 done and
// the acks stored.
#define DC_PROF_MARKS 8

#ifdef DC_PROFILE
__device__ __forceinline__ long long clock_now() {
  long long c;
  asm volatile("mov.u64 %0, %%clock64;" : "=l"(c)::"memory");
  return c;
}
#define DC_MARK(s, k)                                    \
  do {                                                   \
    if (threadIdx.x == 0 && blockIdx.x == 0) {           \
      (s).prof[k] = clock_now();                         \
      if ((k) == 0) (s).prof_t0 = now_ns();              \
    }                                                    \
  } while (0)

// prof_flush adds this launch's spans into the control block: [0] the
// launches, [k] the cycles from mark k-1 to mark k, [8] the ns inside the
// kernel, [9] when the last one ended, [10] the sum of the gaps between
// one's end and the next one's start, [11] how many gaps (the first
// launch has none).
__device__ void prof_flush(const Args& a, const State& s) {
  if (threadIdx.x != 0 || blockIdx.x != 0) return;
  const u64 base = a.self + DC_OFF_PROF, end = now_ns();
  red_add(base, 1);
  for (int k = 1; k < DC_PROF_MARKS; k++) red_add(base + 8 * k, (u64)(s.prof[k] - s.prof[k - 1]));
  red_add(base + 64, end - s.prof_t0);
  const u64 last = ld_vol(base + 72);
  if (last != 0 && s.prof_t0 > last) {
    red_add(base + 80, s.prof_t0 - last);
    red_add(base + 88, 1);
  }
  st_vol(base + 72, end);
}
#else
#define DC_MARK(s, k) \
  do {                \
  } while (0)
#endif
