package cpu

import (
	"github.com/detcoll/detcoll/internal/core/base"

	"github.com/detcoll/detcoll/internal/core/settings"
)

// Go's copy on amd64 switches to non-temporal stores (VMOVNTDQ, which
// bypass the caches and go to memory) for any single copy of 1 MiB or
// more. That suits a copy whose destination is not read again soon, but
// here the destination is usually read at once: a rank's staging by every
// peer, a gathered output by the caller. At 1 MiB per rank a whole call
// fits in the last-level cache, and the non-temporal stores send every
// staged byte to memory only for a peer to fetch it back. Measured on the
// 2-vCPU development VM (AMD EPYC, 32 MiB L3; docs/perf-cpu.md): a 1-4 MiB
// copy between cached buffers runs at 28-37 GB/s in pieces under 1 MiB
// against 23 GB/s in one piece; from 16 MiB up the non-temporal copy wins
// (22 against 14-17 GB/s at 16 MiB, 14 against 8 GB/s at 64 MiB), since the
// data no longer fits and ordinary stores must first read every
// destination line.

// cachedPiece is the length of each piece of a cached copy: under the
// 1 MiB at which copy turns non-temporal.
const cachedPiece = 512 << 10

// defaultCachedMax is the largest call footprint (see footprint) whose
// copies go through the cache: half the development VM's 32 MiB L3, since
// the peers' data share it.
const defaultCachedMax = 16 << 20

// envCachedMax overrides defaultCachedMax, for measuring it. It is a tuning
// knob, not API, and changes only speed: it may differ between ranks.
const envCachedMax = settings.CPUCachedMax

func cachedMaxFromEnv() (int, error) { return base.TuningKnob(envCachedMax, defaultCachedMax, 0, 1) }

// copyCached copies src into dst (copy's semantics; no overlap) through
// the cache when cached is true: in pieces short enough that copy keeps to
// ordinary stores. Otherwise it is copy.
func copyCached(dst, src []byte, cached bool) {
	n := min(len(dst), len(src))
	if !cached || n < 1<<20 {
		copy(dst, src)
		return
	}
	for off := 0; off < n; off += cachedPiece {
		end := min(off+cachedPiece, n)
		copy(dst[off:end], src[off:end])
	}
}
