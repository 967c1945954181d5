package store

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

// wantPeerError checks that err is a *PeerError naming rank and matching ErrPeerLost.
func wantPeerError(t *testing.T, what string, err error, rank int) *PeerError {
	t.Helper()
	var pe *PeerError
	if !errors.As(err, &pe) || !errors.Is(err, ErrPeerLost) || pe.Rank != rank {
		t.Fatalf("%s = %v; want a *PeerError for rank %d matching ErrPeerLost", what, err, rank)
	}
	return pe
}

func TestAbruptDrop(t *testing.T) {
	const world, victim = 4, 2
	s, c := newJob(t, world)
	get := make(chan error, 1)
	barrier := make(chan error, 1)
	go func() { _, err := c[0].Get(t.Context(), "never"); get <- err }()
	go func() { barrier <- c[1].Barrier(t.Context(), "b") }()
	waitPending(t, s, 2)

	start := time.Now()
	crash(c[victim])
	var slowest time.Duration
	for r, cl := range c {
		if r != victim {
			slowest = max(slowest, waitDone(t, cl, start, time.Second))
			pe := wantPeerError(t, "Err()", cl.Err(), victim)
			if !strings.Contains(pe.Reason, "without goodbye") && !strings.Contains(pe.Reason, "connection lost") {
				t.Errorf("rank %d: reason %q; want a lost connection", r, pe.Reason)
			}
		}
	}
	t.Logf("connection drop seen by all %d other ranks after %v", world-1, slowest)
	wantPeerError(t, "pending get", <-get, victim)
	wantPeerError(t, "pending barrier", <-barrier, victim)
	wantPeerError(t, "later set", c[3].Set(t.Context(), "k", nil), victim)
	if err := c[0].Close(t.Context()); err != nil {
		t.Errorf("close after the failure = %v; want nil", err)
	}
}

func TestFailReason(t *testing.T) {
	s, c := newJob(t, 3)
	pending := make(chan error, 1)
	go func() { pending <- c[0].Barrier(t.Context(), "b") }()
	waitPending(t, s, 1)
	start := time.Now()
	c[1].Fail("cuda: out of memory")
	for _, cl := range c {
		waitDone(t, cl, start, time.Second)
		if pe := wantPeerError(t, "Err()", cl.Err(), 1); pe.Reason != "cuda: out of memory" {
			t.Errorf("rank %d: reason %q; want %q", cl.rank, pe.Reason, "cuda: out of memory")
		}
	}
	wantPeerError(t, "pending barrier", <-pending, 1)
	c[2].Fail("second failure") // the first cause stays
	if pe := wantPeerError(t, "Err()", c[0].Err(), 1); pe.Reason != "cuda: out of memory" {
		t.Errorf("after a second Fail, reason %q; want the first", pe.Reason)
	}
}

func TestFailLongReason(t *testing.T) {
	_, c := newJob(t, 2)
	c[0].Fail(strings.Repeat("x", 5000))
	waitDone(t, c[1], time.Now(), time.Second)
	if pe := wantPeerError(t, "Err()", c[1].Err(), 0); len(pe.Reason) != maxReason {
		t.Errorf("reason of %d bytes; want it cut to %d", len(pe.Reason), maxReason)
	}
}

func TestDialAfterFailure(t *testing.T) {
	checkLeaks(t)
	s := newServer(t, 3, defaultHandshakeTimeout)
	c0 := dialRank(t, s.Addr(), 0, 3)
	c0.Fail("broken")
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	_, err := Dial(ctx, s.Addr(), 2, 3, testSecret)
	if pe := wantPeerError(t, "dial after the failure", err, 0); pe.Reason != "broken" {
		t.Errorf("reason %q; want %q", pe.Reason, "broken")
	}
}

func TestServerClose(t *testing.T) {
	s, c := newJob(t, 3)
	pending := make(chan error, 1)
	go func() { _, err := c[2].Get(t.Context(), "never"); pending <- err }()
	waitPending(t, s, 1)
	start := time.Now()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	for _, cl := range c {
		waitDone(t, cl, start, time.Second)
		wantPeerError(t, "Err()", cl.Err(), 0)
	}
	wantPeerError(t, "pending get", <-pending, 0)
	if err := s.Close(); err != nil {
		t.Errorf("second server close = %v; want nil", err)
	}
}

func TestCleanCloseIsNoFailure(t *testing.T) {
	_, c := newJob(t, 3)
	for _, r := range []int{2, 0} {
		if err := c[r].Close(t.Context()); err != nil {
			t.Fatalf("rank %d close = %v", r, err)
		}
	}
	select {
	case <-c[1].Done():
		t.Fatalf("rank 1 saw a failure after clean closes: %v", c[1].Err())
	case <-time.After(200 * time.Millisecond):
	}
}

func TestProtocolErrorFails(t *testing.T) {
	_, c := newJob(t, 2)
	c[1].out.send(encode(msg{typ: tOK, id: 1})) // not a request
	waitDone(t, c[0], time.Now(), time.Second)
	if pe := wantPeerError(t, "Err()", c[0].Err(), 1); !strings.Contains(pe.Reason, "protocol error") {
		t.Errorf("reason %q; want a protocol error", pe.Reason)
	}
}
