package store

import (
	"context"
	"errors"
	"net"
	"testing"
	"time"
)

// TestReportFailsTheJob: a rank that never joined dies; its launcher's
// report fails the job at once for the rank that did join, naming the dead
// one.
func TestReportFailsTheJob(t *testing.T) {
	secret := []byte("secret")
	s, err := Listen("127.0.0.1:0", 3, secret)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	c, err := Dial(t.Context(), s.Addr(), 0, 3, secret)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(t.Context())
	got := make(chan error, 1)
	go func() { got <- c.Barrier(t.Context(), "open") }()
	start := time.Now()
	if err := Report(t.Context(), s.Addr(), 3, secret, 2, "killed by signal 9"); err != nil {
		t.Fatalf("Report: %v", err)
	}
	var pe *PeerError
	if err := <-got; !errors.As(err, &pe) || pe.Rank != 2 || pe.Reason != "killed by signal 9" {
		t.Fatalf("barrier after the report = %v; want rank 2's death", err)
	}
	if d := time.Since(start); d > time.Second {
		t.Errorf("the barrier failed %v after the report", d)
	}
	// A second report changes nothing: the first cause stands.
	if err := Report(t.Context(), s.Addr(), 3, secret, 1, "later"); err != nil {
		t.Errorf("second Report: %v", err)
	}
	if err := c.Err(); !errors.As(err, &pe) || pe.Rank != 2 {
		t.Errorf("cause after a second report = %v; want rank 2's still", err)
	}
}

// TestShutdownAfterReport: the launcher reported a rank that never joined
// as dead; rank 0, the only other, fails and leaves. Its server's Shutdown
// must not wait for the dead rank to come and hear why (seen: a survivor
// of a kill during Open hung in Shutdown until Open's deadline).
func TestShutdownAfterReport(t *testing.T) {
	secret := []byte("secret")
	s, err := Listen("127.0.0.1:0", 2, secret)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	c, err := Dial(t.Context(), s.Addr(), 0, 2, secret)
	if err != nil {
		t.Fatal(err)
	}
	if err := Report(t.Context(), s.Addr(), 2, secret, 1, "killed by signal 9"); err != nil {
		t.Fatalf("Report: %v", err)
	}
	waitDone(t, c, time.Now(), time.Second)
	c.Close(t.Context())
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	start := time.Now()
	if err := s.Shutdown(ctx); err != nil {
		t.Errorf("Shutdown = %v after %v; want nil at once", err, time.Since(start))
	}
	if d := time.Since(start); d > time.Second {
		t.Errorf("Shutdown took %v: it waited for the dead rank", d)
	}
}

// TestReportNeedsTheSecret: a stranger cannot fail a job.
func TestReportNeedsTheSecret(t *testing.T) {
	s, err := Listen("127.0.0.1:0", 2, []byte("secret"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := Report(t.Context(), s.Addr(), 2, []byte("guess"), 1, "x"); !errors.Is(err, ErrAuth) {
		t.Errorf("Report with a wrong secret = %v; want ErrAuth", err)
	}
	for _, rank := range []int{-1, 2} {
		if err := Report(t.Context(), s.Addr(), 2, []byte("secret"), rank, "x"); !errors.Is(err, ErrInvalid) {
			t.Errorf("Report of rank %d = %v; want ErrInvalid", rank, err)
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cause != nil {
		t.Errorf("the job failed: %v", s.cause)
	}
}

// TestTombstone: with nothing listening (rank 0 died before it hosted the
// store), Report says so, and a tombstone at the address tells every rank
// that comes why the job failed.
func TestTombstone(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	secret := []byte("secret")
	if err := Report(t.Context(), addr, 2, secret, 0, "killed"); !errors.Is(err, ErrNoServer) {
		t.Fatalf("Report with nothing listening = %v; want ErrNoServer", err)
	}
	s, err := Tombstone(addr, 2, secret, 0, "killed")
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	var pe *PeerError
	if _, err := Dial(ctx, addr, 1, 2, secret); !errors.As(err, &pe) || pe.Rank != 0 || pe.Reason != "killed" {
		t.Errorf("Dial to a tombstone = %v; want rank 0's death", err)
	}
}
