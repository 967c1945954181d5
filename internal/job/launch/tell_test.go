package launch

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
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

// TestRunLateRankLearnsTheFailure: rank 2 dies after rank 0 hosts the
// store; rank 0 learns of it (from the launcher's report), closes its store
// and exits; rank 1, slow to start, joins only then. The launcher hosts the
// failed store in rank 0's place, so rank 1 learns that rank 2 died at
// once, instead of dialling a closed address until its timeout (seen in
// CI's soak kill smoke test).
func TestRunLateRankLearnsTheFailure(t *testing.T) {
	h := newHarness(t)
	cfg := h.config(3, "0=store-host,1=late-join,2=kill-after-host")
	if err := Run(testContext(t), cfg); err == nil {
		t.Fatalf("Run succeeded; want rank 2's death")
	}
	got, err := os.ReadFile(filepath.Join(h.dir, "join-1"))
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("rank 1: %s", got)
	if !strings.Contains(string(got), "rank 2") || strings.Contains(string(got), "deadline") {
		t.Errorf("rank 1 joined the store to %q; want the failure naming rank 2, at once", got)
	}
}
