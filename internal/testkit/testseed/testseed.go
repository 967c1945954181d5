// Package testseed gives tests a seeded random generator whose seed they
// log and that DETCOLL_TEST_SEED replays. It has no dependencies, so the
// lowest packages' tests can use it; only tests import it, never the
// library or the tools.
package testseed

import (
	"math/rand/v2"
	"strconv"
	"testing"

	"github.com/detcoll/detcoll/internal/core/settings"
)

// Rand returns a generator seeded from DETCOLL_TEST_SEED, or from a fresh
// random seed, and logs the seed so that a failure can be replayed.
func Rand(t testing.TB) *rand.Rand {
	t.Helper()
	seed := rand.Uint64()
	if s := settings.Get(settings.TestSeed); s != "" {
		var err error
		if seed, err = strconv.ParseUint(s, 0, 64); err != nil {
			t.Fatalf("DETCOLL_TEST_SEED=%q: %v", s, err)
		}
	}
	t.Logf("seed %d (set DETCOLL_TEST_SEED to replay)", seed)
	return rand.New(rand.NewPCG(seed, seed^0x9E3779B97F4A7C15))
}
