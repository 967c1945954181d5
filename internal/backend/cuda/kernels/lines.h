// lines.h: LL lines, the unit the LL protocol sends (ll.h), and the
// receive slots they land in; the waits probe them too (wait.h).

// The LL area of a rank's buffer, at Args.ll: receive[2 slots][kWorld
// senders] of DC_LL_SLOT bytes, then scratch[kWorld] of DC_LL_MAX bytes. A
// receive slot holds the sender's signature (DC_LL_HDR bytes of lines), then
// the lines of its image: image byte x at line x/8. Must match layout.go.
#ifndef DC_LL_MAX
#error "compile with -DDC_LL_MAX=<largest LL image in bytes>"
#endif
#define DC_LL_SLOT (DC_LL_HDR + 2 * DC_LL_MAX)
static_assert(DC_LL_MAX % 64 == 0, "LL images must be whole 64-byte lines: slots and scratch stay 16-byte aligned");

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
__device__ bool ll_header_seen(const Args& a, State& s, int p, u64 seq) {
  const u64 src = ll_slot(a, a.self, seq, p);
  u64 v[DC_SIG_WORDS];
  bool all = true;
#pragma unroll
  for (int k = 0; k < DC_SIG_WORDS; k++) all = ld_line(src + 16 * k, (u32)seq, &v[k]) && all;
  if (!all) return false;
  for (int k = 0; k < DC_SIG_WORDS; k++) {
    s.sig[p * DC_SIG_WORDS + k] = v[k];
    s.sig_ok[p * DC_SIG_WORDS + k] = 1;
  }
  return true;
}
