package store

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"
)

// forRanks runs f for every client concurrently and reports each error.
func forRanks(t *testing.T, clients []*Client, f func(c *Client) error) {
	t.Helper()
	errs := make([]error, len(clients))
	var wg sync.WaitGroup
	for r, c := range clients {
		wg.Go(func() { errs[r] = f(c) })
	}
	wg.Wait()
	for r, err := range errs {
		if err != nil {
			t.Errorf("rank %d: %v", r, err)
		}
	}
}

func TestOps(t *testing.T) {
	for _, world := range []int{1, 2, 5} {
		t.Run(fmt.Sprintf("W=%d", world), func(t *testing.T) {
			_, clients := newJob(t, world)
			ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
			defer cancel()
			forRanks(t, clients, func(c *Client) error {
				me := fmt.Appendf(nil, "value of rank %d", c.rank)
				if err := c.Set(ctx, fmt.Sprintf("k%d", c.rank), me); err != nil {
					return err
				}
				for r := range world {
					// No barrier: Get waits for ranks that have not set yet.
					got, err := c.Get(ctx, fmt.Sprintf("k%d", r))
					if want := fmt.Sprintf("value of rank %d", r); err != nil || string(got) != want {
						return fmt.Errorf("get k%d = %q, %v; want %q", r, got, err, want)
					}
				}
				for i := range 3 { // a name is reusable once passed
					if err := c.Barrier(ctx, "b"); err != nil {
						return fmt.Errorf("barrier %d: %v", i, err)
					}
					all, err := c.AllGather(ctx, "g", append(me, byte(i)))
					if err != nil {
						return fmt.Errorf("allgather %d: %v", i, err)
					}
					if len(all) != world {
						return fmt.Errorf("allgather %d: %d values; want %d", i, len(all), world)
					}
					for r, v := range all {
						if want := fmt.Sprintf("value of rank %d%c", r, byte(i)); string(v) != want {
							return fmt.Errorf("allgather %d: value %d = %q; want %q", i, r, v, want)
						}
					}
				}
				empty, err := c.AllGather(ctx, "empty", nil)
				if err != nil || len(empty) != world {
					return fmt.Errorf("allgather of empty values = %q, %v; want %d nil values", empty, err, world)
				}
				return nil
			})
			for r, c := range clients {
				if err := c.Err(); err != nil {
					t.Errorf("rank %d: Err() = %v after healthy ops; want nil", r, err)
				}
			}
		})
	}
}

func TestSetOverwritesAndCopies(t *testing.T) {
	_, c := newJob(t, 1)
	ctx := t.Context()
	v := []byte("one")
	if err := c[0].Set(ctx, "k", v); err != nil {
		t.Fatal(err)
	}
	copy(v, "xxx") // Set has copied it
	if got, err := c[0].Get(ctx, "k"); err != nil || string(got) != "one" {
		t.Fatalf("get = %q, %v; want %q", got, err, "one")
	}
	if err := c[0].Set(ctx, "k", []byte("two")); err != nil {
		t.Fatal(err)
	}
	if got, err := c[0].Get(ctx, "k"); err != nil || string(got) != "two" {
		t.Fatalf("get after overwrite = %q, %v; want %q", got, err, "two")
	}
	big := bytes.Repeat([]byte{7}, maxValue)
	if err := c[0].Set(ctx, "big", big); err != nil {
		t.Fatal(err)
	}
	if got, err := c[0].Get(ctx, "big"); err != nil || !bytes.Equal(got, big) {
		t.Fatalf("get of a %d-byte value: %d bytes, %v", len(big), len(got), err)
	}
}

func TestGetWaitsForLaterSet(t *testing.T) {
	s, c := newJob(t, 2)
	ctx := t.Context()
	type result struct {
		v   []byte
		err error
	}
	got := make(chan result, 1)
	go func() {
		v, err := c[1].Get(ctx, "late")
		got <- result{v, err}
	}()
	waitPending(t, s, 1)
	select {
	case r := <-got:
		t.Fatalf("get returned %q, %v before the set", r.v, r.err)
	case <-time.After(50 * time.Millisecond):
	}
	if err := c[0].Set(ctx, "late", []byte("here")); err != nil {
		t.Fatal(err)
	}
	if r := <-got; r.err != nil || string(r.v) != "here" {
		t.Fatalf("get = %q, %v; want %q", r.v, r.err, "here")
	}
	waitPending(t, s, 0)
}

func TestGetTimeout(t *testing.T) {
	s, c := newJob(t, 2)
	ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := c[0].Get(ctx, "never")
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("get = %v; want an error matching context.DeadlineExceeded", err)
	}
	if d := time.Since(start); d > time.Second {
		t.Errorf("get returned %v after its 50ms deadline", d)
	}
	waitPending(t, s, 0) // the server forgot the waiter
	if err := c[0].Err(); err != nil {
		t.Errorf("Err() = %v after a timeout; want nil", err)
	}
	// A timed-out barrier withdraws the arrival: the name works afterwards.
	ctx, cancel = context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancel()
	if err := c[0].Barrier(ctx, "b"); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("barrier = %v; want an error matching context.DeadlineExceeded", err)
	}
	waitPending(t, s, 0)
	forRanks(t, c, func(c *Client) error { return c.Barrier(t.Context(), "b") })
}

func TestDuplicateArrival(t *testing.T) {
	s, c := newJob(t, 2)
	first := make(chan error, 1)
	go func() { first <- c[0].Barrier(t.Context(), "b") }()
	waitPending(t, s, 1)
	if err := c[0].Barrier(t.Context(), "b"); !errors.Is(err, ErrInvalid) {
		t.Fatalf("second concurrent barrier of rank 0 = %v; want ErrInvalid", err)
	}
	if err := c[1].Barrier(t.Context(), "b"); err != nil {
		t.Fatal(err)
	}
	if err := <-first; err != nil {
		t.Fatal(err)
	}
}

func TestAllGatherTooLarge(t *testing.T) {
	const world = 17 // 17 * 64 KiB is over the 1 MiB frame
	_, c := newJob(t, world)
	v := make([]byte, maxValue)
	forRanks(t, c, func(c *Client) error {
		if _, err := c.AllGather(t.Context(), "big", v); !errors.Is(err, ErrInvalid) {
			return fmt.Errorf("allgather of %d x %d bytes = %v; want ErrInvalid", world, len(v), err)
		}
		return nil
	})
}

func TestBadArguments(t *testing.T) {
	_, c := newJob(t, 1)
	ctx := t.Context()
	long := strings.Repeat("k", maxKey+1)
	tests := []struct {
		name string
		err  error
	}{
		{"listen empty secret", func() error { _, err := Listen("127.0.0.1:0", 1, nil); return err }()},
		{"listen world 0", func() error { _, err := Listen("127.0.0.1:0", 0, testSecret); return err }()},
		{"listen huge world", func() error { _, err := Listen("127.0.0.1:0", maxWorld+1, testSecret); return err }()},
		{"dial empty secret", func() error { _, err := Dial(ctx, "127.0.0.1:1", 0, 1, []byte{}); return err }()},
		{"dial rank -1", func() error { _, err := Dial(ctx, "127.0.0.1:1", -1, 2, testSecret); return err }()},
		{"dial rank = world", func() error { _, err := Dial(ctx, "127.0.0.1:1", 2, 2, testSecret); return err }()},
		{"set empty key", c[0].Set(ctx, "", nil)},
		{"set long key", c[0].Set(ctx, long, nil)},
		{"set long value", c[0].Set(ctx, "k", make([]byte, maxValue+1))},
		{"get empty key", func() error { _, err := c[0].Get(ctx, ""); return err }()},
		{"barrier long name", c[0].Barrier(ctx, long)},
		{"allgather long value", func() error { _, err := c[0].AllGather(ctx, "g", make([]byte, maxValue+1)); return err }()},
	}
	for _, tt := range tests {
		if !errors.Is(tt.err, ErrInvalid) {
			t.Errorf("%s: got %v; want ErrInvalid", tt.name, tt.err)
		}
	}
}

func TestCloseClient(t *testing.T) {
	s, c := newJob(t, 2)
	pending := make(chan error, 1)
	go func() { _, err := c[0].Get(t.Context(), "never"); pending <- err }()
	waitPending(t, s, 1)
	if err := c[0].Close(t.Context()); err != nil {
		t.Fatalf("close = %v; want nil", err)
	}
	if err := <-pending; !errors.Is(err, ErrClosed) {
		t.Errorf("get pending during close = %v; want ErrClosed", err)
	}
	if err := c[0].Set(t.Context(), "k", nil); !errors.Is(err, ErrClosed) {
		t.Errorf("set after close = %v; want ErrClosed", err)
	}
	if err := c[0].Close(t.Context()); err != nil {
		t.Errorf("second close = %v; want nil", err)
	}
	// The clean goodbye is no failure for the others...
	select {
	case <-c[1].Done():
		t.Fatalf("rank 1 saw a failure after rank 0's clean close: %v", c[1].Err())
	case <-time.After(100 * time.Millisecond):
	}
	if err := c[1].Set(t.Context(), "k", []byte("v")); err != nil {
		t.Errorf("set by rank 1 after rank 0 left: %v", err)
	}
	// ...but a barrier can no longer complete.
	if err := c[1].Barrier(t.Context(), "b"); !errors.Is(err, ErrClosed) {
		t.Errorf("barrier after rank 0 left = %v; want ErrClosed", err)
	}
	// A rank joins once: once all have joined the server stops listening,
	// so dialing again finds nobody.
	ctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
	defer cancel()
	if _, err := Dial(ctx, s.Addr(), 0, 2, testSecret); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("rank 0 dialing again = %v; want no server (deadline exceeded)", err)
	}
}

func TestCloseAbortsPendingBarrier(t *testing.T) {
	s, c := newJob(t, 3)
	pending := make(chan error, 1)
	go func() { pending <- c[0].Barrier(t.Context(), "b") }()
	waitPending(t, s, 1)
	if err := c[2].Close(t.Context()); err != nil {
		t.Fatal(err)
	}
	if err := <-pending; !errors.Is(err, ErrClosed) {
		t.Errorf("barrier pending while rank 2 left = %v; want ErrClosed", err)
	}
}

func TestShutdown(t *testing.T) {
	s, c := newJob(t, 2)
	if err := c[0].Close(t.Context()); err != nil {
		t.Fatal(err)
	}
	shut := make(chan error, 1)
	go func() { shut <- s.Shutdown(t.Context()) }()
	select {
	case err := <-shut:
		t.Fatalf("shutdown returned %v with rank 1 still connected", err)
	case <-time.After(50 * time.Millisecond):
	}
	if err := c[1].Close(t.Context()); err != nil {
		t.Fatalf("rank 1 close = %v; want nil", err)
	}
	if err := <-shut; err != nil {
		t.Fatalf("shutdown = %v; want nil", err)
	}
	if err := c[1].Err(); err != nil {
		t.Errorf("rank 1 Err() = %v after a clean shutdown; want nil", err)
	}

	s2, c2 := newJob(t, 2)
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Millisecond)
	defer cancel()
	if err := s2.Shutdown(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("shutdown with ranks connected = %v; want context.DeadlineExceeded", err)
	}
	waitDone(t, c2[0], time.Now(), time.Second)
}

// TestMissing: after a barrier timed out on some ranks, each can ask who
// never arrived; a rank that came and withdrew (timed out too) is not
// missing, so the ranks that time out blame the same ranks.
func TestMissing(t *testing.T) {
	_, c := newJob(t, 4)
	var wg sync.WaitGroup
	for _, r := range []int{0, 2} {
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
			defer cancel()
			if err := c[r].Barrier(ctx, "open"); !errors.Is(err, context.DeadlineExceeded) {
				t.Errorf("rank %d: barrier = %v; want a timeout", r, err)
			}
		})
	}
	// Rank 3 arrives and stays; rank 1 never comes.
	go c[3].Barrier(t.Context(), "open")
	time.Sleep(50 * time.Millisecond)
	wg.Wait()
	for r, want := range map[int][]int{0: {1}, 2: {1}} {
		got, err := c[r].BarrierMissing(t.Context(), "open")
		if err != nil || fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("rank %d: BarrierMissing = %v, %v; want %v", r, got, err, want)
		}
	}
	got, err := c[0].AllGatherMissing(t.Context(), "never")
	if err != nil || fmt.Sprint(got) != "[1 2 3]" {
		t.Errorf("AllGatherMissing of a gather nobody reached = %v, %v; want [1 2 3]", got, err)
	}
}
