package store

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"testing"
	"time"
)

// rawDial opens a plain TCP connection to addr, closed at cleanup.
func rawDial(t *testing.T, addr string) net.Conn {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	_ = conn.SetDeadline(time.Now().Add(5 * time.Second))
	return conn
}

// wantRefusedAndClosed reads from conn until the server closes it and
// reports whether a refuse frame came first. The close may be a reset: the
// server reads no more than a hello before it refuses, and closing a socket
// with unread bytes resets it (after the refusal, which arrives first).
func wantRefusedAndClosed(t *testing.T, conn net.Conn, r io.Reader) {
	t.Helper()
	m, err := readMsg(r, maxWelcomeBody)
	if err != nil || m.typ != tRefuse {
		t.Fatalf("got %v, %v; want a refuse frame", m.typ, err)
	}
	if _, err := readMsg(r, maxWelcomeBody); !hungUp(err) {
		t.Fatalf("after refuse: %v; want the connection closed", err)
	}
}

func TestRefused(t *testing.T) {
	const world = 2
	checkLeaks(t)
	s := newServer(t, world, 200*time.Millisecond)
	addr := s.Addr()
	dial := func(rank, world int, secret []byte) error {
		ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
		defer cancel()
		c, err := Dial(ctx, addr, rank, world, secret)
		if err == nil {
			_ = c.Close(ctx)
		}
		return err
	}
	if err := dial(0, world, []byte("another secret")); !errors.Is(err, ErrAuth) {
		t.Errorf("wrong secret: %v; want ErrAuth", err)
	}
	if err := dial(0, world+1, testSecret); !errors.Is(err, ErrAuth) {
		t.Errorf("wrong world: %v; want ErrAuth", err)
	}

	t.Run("rank out of range", func(t *testing.T) {
		conn := rawDial(t, addr)
		br := bufio.NewReader(conn)
		// The client side refuses rank >= world, so speak the protocol by hand.
		if _, err := clientHandshake(conn, br, testSecret, 5, world); !errors.Is(err, ErrAuth) {
			t.Fatalf("rank 5 of %d: %v; want ErrAuth", world, err)
		}
	})
	t.Run("garbage", func(t *testing.T) {
		conn := rawDial(t, addr)
		br := bufio.NewReader(conn)
		if m, err := readMsg(br, maxWelcomeBody); err != nil || m.typ != tChallenge {
			t.Fatalf("got %v, %v; want a challenge", m.typ, err)
		}
		_, _ = conn.Write([]byte("GET / HTTP/1.1\r\nHost: x\r\n\r\n"))
		wantRefusedAndClosed(t, conn, br)
	})
	t.Run("huge length", func(t *testing.T) {
		conn := rawDial(t, addr)
		br := bufio.NewReader(conn)
		_, _ = readMsg(br, maxWelcomeBody)
		_, _ = conn.Write([]byte{0xff, 0xff, 0xff, 0xff, 1})
		wantRefusedAndClosed(t, conn, br)
	})
	t.Run("wrong frame", func(t *testing.T) {
		conn := rawDial(t, addr)
		br := bufio.NewReader(conn)
		_, _ = readMsg(br, maxWelcomeBody)
		_, _ = conn.Write(encode(msg{typ: tSet, id: 1, key: "k"}))
		wantRefusedAndClosed(t, conn, br)
	})
	t.Run("silent", func(t *testing.T) {
		conn := rawDial(t, addr)
		start := time.Now()
		if _, err := io.Copy(io.Discard, conn); err != nil {
			t.Fatalf("reading until the server hangs up: %v", err)
		}
		if d := time.Since(start); d > 2*time.Second {
			t.Errorf("silent client held for %v; the handshake timeout is 200ms", d)
		}
	})
	t.Run("duplicate rank", func(t *testing.T) {
		c0 := dialRank(t, addr, 0, world)
		if err := dial(0, world, testSecret); !errors.Is(err, ErrAuth) {
			t.Errorf("second rank 0: %v; want ErrAuth", err)
		}
		// Refusals are not failures, and the job goes on.
		c1 := dialRank(t, addr, 1, world)
		forRanks(t, []*Client{c0, c1}, func(c *Client) error { return c.Barrier(t.Context(), "after refusals") })
	})
}

// TestFakeServer: a server that does not know the secret cannot pass as one.
func TestFakeServer(t *testing.T) {
	checkLeaks(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	tests := []struct {
		name string
		fake func(conn net.Conn, r io.Reader)
	}{
		{"wrong secret", func(conn net.Conn, r io.Reader) {
			// Play the server with another secret, accepting any hello.
			g := greeting{serverNonce: nonce()}
			_, _ = conn.Write(encode(msg{typ: tChallenge, version: protoVersion, nonce: g.serverNonce}))
			hello, err := readMsg(r, maxHelloBody)
			if err != nil {
				return
			}
			g.rank, g.clientNonce = int(hello.rank), hello.nonce
			_ = serverWelcome(conn, []byte("not the secret"), g, int(hello.world), nil)
		}},
		{"replayed client proof", func(conn net.Conn, r io.Reader) {
			g := greeting{serverNonce: nonce()}
			_, _ = conn.Write(encode(msg{typ: tChallenge, version: protoVersion, nonce: g.serverNonce}))
			hello, err := readMsg(r, maxHelloBody)
			if err != nil {
				return
			}
			_, _ = conn.Write(encode(msg{typ: tWelcome, mac: hello.mac}))
		}},
		{"garbage", func(conn net.Conn, r io.Reader) {
			_, _ = conn.Write([]byte("SSH-2.0-OpenSSH_9.6\r\n"))
		}},
		{"version", func(conn net.Conn, r io.Reader) {
			_, _ = conn.Write(encode(msg{typ: tChallenge, version: protoVersion + 1}))
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			served := serveOnce(ln, tt.fake)
			ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
			defer cancel()
			c, err := Dial(ctx, ln.Addr().String(), 0, 2, testSecret)
			if !errors.Is(err, ErrAuth) {
				t.Errorf("dial = %v; want ErrAuth", err)
			}
			if c != nil {
				_ = c.Close(ctx)
			}
			<-served
		})
	}
}

// serveOnce accepts one connection on ln, plays fake's part of the
// handshake on it, then reads until the client hangs up; the channel is
// closed when it is done.
func serveOnce(ln net.Listener, fake func(conn net.Conn, r io.Reader)) <-chan struct{} {
	served := make(chan struct{})
	go func() {
		defer close(served)
		conn, err := ln.Accept()
		if err != nil {
			return
		}
		defer conn.Close()
		fake(conn, bufio.NewReader(conn))
		_, _ = io.Copy(io.Discard, conn)
	}()
	return served
}

func TestDialRetriesUntilServerStarts(t *testing.T) {
	checkLeaks(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens: connections are refused
	dialed := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
		defer cancel()
		c, err := Dial(ctx, addr, 0, 1, testSecret)
		if err == nil {
			err = c.Close(ctx)
		}
		dialed <- err
	}()
	time.Sleep(100 * time.Millisecond)
	s, err := Listen(addr, 1, testSecret)
	if err != nil {
		t.Skipf("port %s was taken meanwhile: %v", addr, err)
	}
	defer s.Close()
	if err := <-dialed; err != nil {
		t.Fatalf("dial before the server started: %v", err)
	}
}

func TestDialTimeouts(t *testing.T) {
	checkLeaks(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	silent := ln.Addr().String() // accepts (in the kernel backlog) and never speaks
	defer ln.Close()
	refused, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := refused.Addr().String()
	refused.Close()
	for _, addr := range []string{silent, closed} {
		ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
		start := time.Now()
		_, err := Dial(ctx, addr, 0, 1, testSecret)
		cancel()
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("dial %s = %v; want context.DeadlineExceeded", addr, err)
		}
		if d := time.Since(start); d > time.Second {
			t.Errorf("dial %s took %v with a 100ms deadline", addr, d)
		}
	}
}
