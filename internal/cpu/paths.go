package cpu

import (
	"fmt"
	"os"
	"strconv"
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
}

// defaultPaths picks the thresholds measured in docs/thresholds.md. With a
// core per rank, summing only a shard wins from 1 KiB up (the 16-bit adds
// are compute bound, and one-shot makes every rank sum everything), so only
// tiny messages go one-shot, saving the second synchronisation. When ranks
// outnumber cores every synchronisation costs a trip through the
// scheduler, and one-shot wins up to a few KiB.
func defaultPaths(world int) paths {
	if world > hostCPUs() {
		return paths{allReduceOneShotMax: 8 << 10}
	}
	return paths{allReduceOneShotMax: 256}
}

// envOneShotMax overrides the all-reduce threshold, for measuring it. It is
// a tuning knob, not API.
const envOneShotMax = "DETCOLL_CPU_ALLREDUCE_ONESHOT_MAX"

func (p *paths) fromEnv() error {
	v := os.Getenv(envOneShotMax)
	if v == "" {
		return nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		return fmt.Errorf("%s=%q: want a byte count >= 0", envOneShotMax, v)
	}
	p.allReduceOneShotMax = n
	return nil
}
