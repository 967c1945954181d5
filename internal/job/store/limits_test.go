package store

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"
)

// What a peer that has not proved the secret may cost the server: tests of
// the limits in doc.go's Protocol section.

// readRawMsg reads and decodes one frame of up to maxFrame bytes. It is the
// tests' own view of the wire, independent of the readers under test.
func readRawMsg(r io.Reader) (msg, error) {
	var head [headLen]byte
	if _, err := io.ReadFull(r, head[:]); err != nil {
		return msg{}, err
	}
	n := binary.BigEndian.Uint32(head[:])
	if n > maxFrame {
		return msg{}, fmt.Errorf("%w: length %d", errMalformed, n)
	}
	b := make([]byte, headLen+int(n))
	copy(b, head[:])
	if _, err := io.ReadFull(r, b[headLen:]); err != nil {
		return msg{}, err
	}
	return decode(b)
}

// hungUp reports whether err is the server closing the connection.
func hungUp(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, syscall.ECONNRESET)
}

// TestPreAuthFrameLimit: a stranger announcing a 1 MiB frame instead of its
// hello is refused at once, from the length alone, and costs the server no
// buffer of that size. (Before the limit, each such connection allocated
// 1 MiB and held it until the handshake deadline.)
func TestPreAuthFrameLimit(t *testing.T) {
	checkLeaks(t)
	const world, n = 2, 32 // n is under the pending-handshake cap
	timeout := 2 * time.Second
	s := newServer(t, world, timeout)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	conns := make([]net.Conn, n)
	for i := range conns {
		conns[i] = rawDial(t, s.Addr())
		if m, err := readRawMsg(conns[i]); err != nil || m.typ != tChallenge {
			t.Fatalf("connection %d: got %v, %v; want a challenge", i, m.typ, err)
		}
		if _, err := conns[i].Write(binary.BigEndian.AppendUint32(nil, maxFrame)); err != nil {
			t.Fatalf("connection %d: %v", i, err)
		}
	}
	start := time.Now()
	for i, conn := range conns {
		if m, err := readRawMsg(conn); err != nil || m.typ != tRefuse {
			t.Errorf("connection %d: got %v, %v; want a refuse frame", i, m.typ, err)
			continue
		}
		if _, err := readRawMsg(conn); !hungUp(err) {
			t.Errorf("connection %d after the refusal: %v; want it closed", i, err)
		}
	}
	if d := time.Since(start); d > timeout/2 {
		t.Errorf("refusals took %v; want them at once, not at the %v handshake deadline", d, timeout)
	}
	runtime.ReadMemStats(&after)
	got, limit := after.TotalAlloc-before.TotalAlloc, uint64(n)*64<<10
	t.Logf("%d connections announcing %d-byte frames: %d bytes allocated in all (%d per connection)",
		n, maxFrame, got, got/n)
	if got > limit {
		t.Errorf("%d connections announcing %d-byte frames allocated %d bytes; want under %d",
			n, maxFrame, got, limit)
	}
}

// TestPendingHandshakeCap: connections over the cap on pending handshakes
// are closed at once, and ranks still join once the held ones reach the
// handshake deadline.
func TestPendingHandshakeCap(t *testing.T) {
	checkLeaks(t)
	const world = 2
	timeout := 500 * time.Millisecond
	s := newServer(t, world, timeout)
	held := make([]net.Conn, 2*world+pendingSlack)
	for i := range held {
		held[i] = rawDial(t, s.Addr())
		if m, err := readRawMsg(held[i]); err != nil || m.typ != tChallenge {
			t.Fatalf("connection %d of %d: got %v, %v; want a challenge", i, len(held), m.typ, err)
		}
	}
	heldAt := time.Now()
	for i := range 4 {
		conn := rawDial(t, s.Addr())
		start := time.Now()
		m, err := readRawMsg(conn)
		if !hungUp(err) {
			t.Errorf("connection %d over the cap: got %v, %v; want it closed", i, m.typ, err)
		} else if d := time.Since(start); d > timeout/2 {
			t.Errorf("connection %d over the cap closed after %v; want at once", i, d)
		}
	}
	c := make([]*Client, world)
	for r := range c {
		c[r] = dialRank(t, s.Addr(), r, world)
	}
	if d := time.Since(heldAt); d > timeout+2*time.Second {
		t.Errorf("ranks joined %v after the cap was reached; the handshake deadline is %v", d, timeout)
	}
	forRanks(t, c, func(c *Client) error { return c.Barrier(t.Context(), "after the flood") })
	for i, conn := range held {
		if _, err := readRawMsg(conn); !hungUp(err) {
			t.Errorf("held connection %d: %v; want it closed at the handshake deadline", i, err)
		}
	}
}

// TestSlowHello: the handshake deadline is one deadline for the whole
// handshake, so a hello sent a byte at a time does not extend it.
func TestSlowHello(t *testing.T) {
	checkLeaks(t)
	timeout := 300 * time.Millisecond
	s := newServer(t, 2, timeout)
	conn := rawDial(t, s.Addr())
	start := time.Now()
	if m, err := readRawMsg(conn); err != nil || m.typ != tChallenge {
		t.Fatalf("got %v, %v; want a challenge", m.typ, err)
	}
	hello := encode(msg{typ: tHello, version: protoVersion, world: 2})
	for _, b := range hello {
		if _, err := conn.Write([]byte{b}); err != nil {
			break // closed: the deadline has passed
		}
		time.Sleep(50 * time.Millisecond)
	}
	if _, err := readRawMsg(conn); !hungUp(err) {
		t.Errorf("slow hello: %v; want the connection closed", err)
	}
	if d := time.Since(start); d > timeout+time.Second {
		t.Errorf("slow hello held the connection %v; the handshake deadline is %v", d, timeout)
	}
}

// TestHugeChallenge: a client reading from a server that has not proved
// the secret holds it to the handshake frames' size, too.
func TestHugeChallenge(t *testing.T) {
	checkLeaks(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	served := serveOnce(ln, func(conn net.Conn, _ io.Reader) {
		_, _ = conn.Write(binary.BigEndian.AppendUint32(nil, maxFrame))
	})
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	start := time.Now()
	c, err := dial(ctx, ln.Addr().String(), 0, 2, testSecret, 2*time.Second)
	if !errors.Is(err, ErrAuth) {
		t.Errorf("dial = %v; want ErrAuth", err)
	}
	if d := time.Since(start); d > time.Second {
		t.Errorf("dial took %v; want the refusal from the length alone", d)
	}
	if c != nil {
		_ = c.Close(ctx)
	}
	<-served
}

// TestLateRankGetsLongCause: a failure reason longer than the limit (sent
// by a broken client; Fail itself cuts it) is cut on the server, so that it
// still fits the welcome of a rank that joins after the failure.
func TestLateRankGetsLongCause(t *testing.T) {
	checkLeaks(t)
	s := newServer(t, 3, defaultHandshakeTimeout)
	c0 := dialRank(t, s.Addr(), 0, 3)
	long := strings.Repeat("x", 4*maxReason)
	c0.out.send(encode(msg{typ: tFail, id: 1, reason: long}))
	waitDone(t, c0, time.Now(), time.Second)
	if pe := wantPeerError(t, "Err()", c0.Err(), 0); len(pe.Reason) > maxReason {
		t.Errorf("pushed reason of %d bytes; want at most %d", len(pe.Reason), maxReason)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	_, err := Dial(ctx, s.Addr(), 2, 3, testSecret)
	if pe := wantPeerError(t, "dial after the failure", err, 0); pe.Reason != long[:maxReason] {
		t.Errorf("reason of %d bytes; want the first %d", len(pe.Reason), maxReason)
	}
}
