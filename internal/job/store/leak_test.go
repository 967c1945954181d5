package store

import (
	"context"
	"runtime"
	"strings"
	"testing"
	"time"
)

var testSecret = []byte("detcoll test secret")

// checkLeaks fails the test if, after its other cleanups, a goroutine
// started by the package (not by a test) is still running. Register it
// first, so that it runs last.
func checkLeaks(t *testing.T) {
	t.Helper()
	t.Cleanup(func() {
		deadline := time.Now().Add(5 * time.Second)
		for {
			leaked := storeGoroutines()
			if len(leaked) == 0 {
				return
			}
			if time.Now().After(deadline) {
				t.Errorf("%d goroutines leaked:\n\n%s", len(leaked), strings.Join(leaked, "\n\n"))
				return
			}
			time.Sleep(10 * time.Millisecond)
		}
	})
}

// storeGoroutines returns the stacks of goroutines running package code
// with no test frame: the server's, clients' and outboxes' own goroutines.
// context.AfterFunc goroutines count when they run our code.
func storeGoroutines() []string {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	var leaked []string
	for g := range strings.SplitSeq(string(buf), "\n\n") {
		if strings.Contains(g, "detcoll/internal/store.") && !strings.Contains(g, "_test.go") {
			leaked = append(leaked, g)
		}
	}
	return leaked
}

// newJob starts a server for world ranks and dials every rank. Cleanup
// closes them all and checks for leaks.
func newJob(t *testing.T, world int) (*Server, []*Client) {
	t.Helper()
	checkLeaks(t)
	s := newServer(t, world, defaultHandshakeTimeout)
	return s, dialAll(t, s, world)
}

func newServer(t *testing.T, world int, handshakeTimeout time.Duration) *Server {
	t.Helper()
	s, err := listen("127.0.0.1:0", world, testSecret, handshakeTimeout)
	if err != nil {
		t.Fatalf("listen: %v", err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func dialAll(t *testing.T, s *Server, world int) []*Client {
	t.Helper()
	clients := make([]*Client, world)
	for r := range clients {
		clients[r] = dialRank(t, s.Addr(), r, world)
	}
	return clients
}

func dialRank(t *testing.T, addr string, rank, world int) *Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	c, err := Dial(ctx, addr, rank, world, testSecret)
	if err != nil {
		t.Fatalf("dial rank %d: %v", rank, err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = c.Close(ctx)
	})
	return c
}

// crash closes c's connection without a goodbye, as a dying process would.
func crash(c *Client) { _ = c.conn.Close() }

// waitPending waits until the server holds n requests waiting for a reply.
func waitPending(t *testing.T, s *Server, n int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		s.mu.Lock()
		got := 0
		for _, p := range s.peers {
			if p != nil {
				got += len(p.pending)
			}
		}
		s.mu.Unlock()
		if got == n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("server holds %d pending requests; want %d", got, n)
		}
		time.Sleep(time.Millisecond)
	}
}

// waitDone waits up to limit for c's Done and returns how long it took.
func waitDone(t *testing.T, c *Client, start time.Time, limit time.Duration) time.Duration {
	t.Helper()
	select {
	case <-c.Done():
		return time.Since(start)
	case <-time.After(limit - time.Since(start)):
		t.Fatalf("rank %d: Done not closed %v after the failure", c.rank, limit)
		return 0
	}
}
