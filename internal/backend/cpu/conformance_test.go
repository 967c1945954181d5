package cpu_test

import (
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/detcoll/detcoll"
	"github.com/detcoll/detcoll/internal/testkit/check"
	"github.com/detcoll/detcoll/internal/testkit/conformance"
	"github.com/detcoll/detcoll/internal/testkit/ranktest"
)

// The conformance suite on the cpu backend: every case of
// internal/testkit/conformance, ranks as processes sharing memory, buffers in host
// memory.

var backend = conformance.Backend{
	Name:         "cpu",
	Memory:       conformance.HostMemory,
	Capacity:     func(int) int64 { return 8 << 20 },
	ReduceCounts: reduceCounts,
	GatherBytes:  conformance.GatherBytes,
	Paths:        []int{16, 50000}, // 64 bytes: one-shot; 200 KB: reduce-scatter then all-gather
}

// reduceCounts are element counts that straddle the backend's one-shot
// thresholds (256 bytes and 8 KiB, the latter when ranks outnumber cores)
// with odd tails, plus tiny and larger sizes. The sweep is cheap on the
// host: -short keeps it whole.
func reduceCounts(dt detcoll.DType, world int, _ bool) []int {
	s, t := 256/dt.Size(), (8<<10)/dt.Size()
	return []int{0, 1, 2, 3, 7, 31, 33, s - 1, s, s + 1, 1000, t - 1, t, t + 1, t + 8*world + 3, 9*t + 5}
}

func TestMain(m *testing.M) {
	conformance.Main(backend, slices.Concat(conformance.Cases(), []conformance.Case{corruptCase}))
	os.Exit(m.Run())
}

// TestConformance runs the suite: results bit for bit against the
// reference at W=1..5 and 8 (1..3 under -short), gathers, invariance,
// nesting, NaN, and every failure's story on every rank.
func TestConformance(t *testing.T) { conformance.Run(t, backend, conformance.Cases()) }

// corruptCase runs the suite's reductions on a memory whose first
// all-reduce with a result flips a bit of it, on rank 0: the suite must
// catch it (a check that cannot fail is no check).
var corruptCase = conformance.Case{
	Name: "CorruptResultFails", Worlds: []int{2}, Limit: time.Minute,
	Rank: func(r *conformance.Rank) error {
		b := *r.Backend
		if r.Rank == 0 {
			b.Memory = func(*detcoll.Comm) (check.Memory, func(), error) { return &check.Corrupt{}, func() {}, nil }
		}
		r.Backend = &b
		return conformance.Find("ReduceMatchesReference").Rank(r)
	},
	Check: func(t *testing.T, world int, res []ranktest.Result) {
		if !res[0].Failed() || !strings.Contains(res[0].Output, "AllReduce, repeat 0: element 0 of") {
			t.Errorf("rank 0 (its result corrupted) exited %d; want a failure naming the element:\n%s", res[0].ExitCode, res[0].Output)
		}
	},
}

func TestConformanceCanFail(t *testing.T) { conformance.RunCase(t, backend, &corruptCase) }
