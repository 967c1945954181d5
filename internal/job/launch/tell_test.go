package launch

import (
	"context"
	"errors"
	"syscall"
	"testing"
	"time"

	"github.com/detcoll/detcoll/internal/job/store"
)

// TestTellStoreRetriesWhenRankZeroComesUp: the report finds nothing
// listening, but by the time the launcher would host the failed store,
// rank 0 listens at the address. The report must then reach rank 0's store.
func TestTellStoreRetriesWhenRankZeroComesUp(t *testing.T) {
	reports := 0
	report := func(context.Context) error {
		reports++
		if reports == 1 {
			return store.ErrNoServer
		}
		return nil
	}
	tombstone := func() (*store.Server, error) { return nil, syscall.EADDRINUSE }
	s, err := tellStore(t.Context(), report, tombstone)
	if err != nil || s != nil || reports != 2 {
		t.Errorf("tellStore = %v, %v after %d reports; want the second report to succeed", s, err, reports)
	}
}

// TestTellStoreGivesUp: with neither a store nor the address free, it
// stops at ctx's deadline.
func TestTellStoreGivesUp(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancel()
	report := func(context.Context) error { return store.ErrNoServer }
	tombstone := func() (*store.Server, error) { return nil, syscall.EADDRINUSE }
	if _, err := tellStore(ctx, report, tombstone); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("tellStore = %v; want the deadline", err)
	}
}
