package cpu

import (
	"math"

	"github.com/detcoll/detcoll/internal/core/base"
	"github.com/detcoll/detcoll/internal/core/settings"
)

// paths holds the size thresholds that choose between execution paths.
// Every path gives the same bits; the thresholds only trade speed, and must
// be equal on every rank (Open checks), since ranks on different paths of
// one call would wait for words the others never publish.
type paths struct {
	// allReduceOneShotMax is the largest all-reduce input, in bytes, that
	// every rank reduces whole from every peer's staging. Larger inputs are
	// reduce-scattered into place, then all-gathered, so each rank sums
	// only its shard. See docs/thresholds.md for the measurement.
	allReduceOneShotMax int
	// streamMin is the smallest input, in bytes per rank, from which an
	// all-gather or broadcast streams its staging (stream.go): peers copy
	// each chunk as soon as it is staged. The ranks must agree on it, as
	// a streamed call publishes its stage word before its data.
	streamMin int
}

// defaultPaths picks the thresholds measured in docs/thresholds.md. With a
// core per rank, summing only a shard wins from 1 KiB up (the 16-bit adds
// are compute bound, and one-shot makes every rank sum everything), so only
// tiny messages go one-shot, saving the second synchronisation. When ranks
// outnumber cores every synchronisation costs a trip through the
// scheduler, and one-shot wins up to a few KiB.
func defaultPaths(world int) paths {
	if world > hostCPUs() {
		// Streaming waits once per chunk, which costs a trip through the
		// scheduler when ranks share cores; not measured there, so off.
		return paths{allReduceOneShotMax: 8 << 10, streamMin: math.MaxInt}
	}
	return paths{allReduceOneShotMax: 256, streamMin: defaultStreamMin}
}

// envOneShotMax overrides the all-reduce threshold, for measuring it. It is
// a tuning knob, not API.
const envOneShotMax = settings.CPUOneShotMax

// envStreamMin overrides streamMin, likewise.
const envStreamMin = settings.CPUStreamMin

func (p *paths) fromEnv() error {
	var err error
	if p.allReduceOneShotMax, err = base.TuningKnob(envOneShotMax, p.allReduceOneShotMax, 0, 1); err != nil {
		return err
	}
	p.streamMin, err = base.TuningKnob(envStreamMin, p.streamMin, 0, 1)
	return err
}

// defaultStreamMin is streamMin with a core per rank. See docs/thresholds.md.
const defaultStreamMin = 4 << 20
