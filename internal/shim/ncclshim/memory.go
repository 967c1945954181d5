package ncclshim

import (
	"fmt"

	"github.com/detcoll/detcoll/internal/backend/cuda"
)

// The shim's device memory. A communicator holds none until its first
// served reduction sets detcoll up (SetupLazy); then its detcoll buffer
// (cuda.BufferBytes of the capacity) and, from its first reduce-scatter
// larger than the capacity, a gathering scratch of one capacity. The
// capacity is chosen so that the two fit Settings.Memory. Reduce's ranks
// other than the root write their results, which nobody reads, into one
// discard buffer per device that every communicator of the device shares:
// concurrent writes of garbage into it are harmless.

// capacityFor is the largest capacity, a whole number of MiB, whose
// detcoll buffer and reduce-scatter scratch together fit memory at world
// ranks (at least 1 MiB).
func capacityFor(memory int64, world int) int64 {
	const mib = 1 << 20
	fits := func(c int64) bool { return cuda.BufferBytes(c, world)+c <= memory }
	lo, hi := int64(1), memory/mib // lo fits or is the floor
	for lo < hi {
		mid := (lo + hi + 1) / 2
		if fits(mid * mib) {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	return lo * mib
}

// capacity is the piece size of c's calls, from the settings.
func (s *Shim) capacity(world int) int64 {
	if s.settings.Capacity > 0 {
		return s.settings.Capacity
	}
	return capacityFor(s.settings.Memory, world)
}

// discardOf returns the device's discard buffer, allocating it on first
// use (by a setup, which runs outside any capture). It holds a piece of
// any communicator's calls: the capacity of the smallest world, which is
// the largest. s.mu must not be held.
func (s *Shim) discardOf(device int) (region, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if d, ok := s.discard[device]; ok {
		return d, nil
	}
	n := s.capacity(1)
	p, err := s.dev.Alloc(int(n))
	if err != nil {
		return region{}, fmt.Errorf("detcoll: %s of discard memory for Reduce off the root: %w", formatBytes(n), err)
	}
	d := region{p, n}
	s.discard[device] = d
	return d, nil
}

// region is device memory the shim allocated.
type region struct {
	ptr  uintptr
	size int64
}
