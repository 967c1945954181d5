package detcoll_test

import (
	"context"
	"os"
	"strconv"
	"time"

	"github.com/detcoll/detcoll"
	"github.com/detcoll/detcoll/internal/check"
)

// Short names for the checking helpers the ranks use.
var (
	floatTypes        = check.FloatTypes
	inputBytes        = check.Input
	referenceSum      = check.ReferenceSum
	newGuarded        = check.NewGuarded
	firstDiff         = check.FirstDiff
	putBits           = check.PutBits
	allReduce         = check.AllReduce
	reduceScatter     = check.ReduceScatter
	reduceScatterMany = check.ReduceScatterMany
	stagedAllReduce   = check.StagedAllReduce
	allGather         = check.AllGather
)

func typed[T detcoll.Element](b []byte) []T    { return check.Typed[T](b) }
func rawBytes[T detcoll.Element](s []T) []byte { return check.RawBytes(s) }

// envInt reads an integer the parent test passed to the ranks.
func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil {
		return v
	}
	return def
}

// openRank opens the communicator of a test rank from the environment the
// parent set, with the options the parent passed.
func openRank(ctx context.Context) (*detcoll.Comm, error) {
	opts := detcoll.Options{Capacity: int64(envInt("TEST_CAPACITY", 8<<20))}
	if ms := envInt("TEST_TIMEOUT_MS", 0); ms > 0 {
		opts.Timeout = time.Duration(ms) * time.Millisecond
	}
	return detcoll.Open(ctx, opts)
}
