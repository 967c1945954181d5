package store

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"sync"
	"time"

	"github.com/detcoll/detcoll/internal/job/proc"
)

const (
	maxWorld = 1 << 16

	// closeFlushTimeout bounds how long Close waits to push its failure
	// notice to a rank that does not read.
	closeFlushTimeout = time.Second

	// pendingSlack is what the cap on pending handshakes, 2*world +
	// pendingSlack, allows beyond the ranks themselves (every rank at once,
	// twice over for a retry overlapping a dying attempt): room for a port
	// scan or a stale job's rank, so that a few strangers cannot fill a small
	// job's slots.
	pendingSlack = 32
)

// aLongTimeAgo is a deadline in the past: setting it wakes a blocked Read.
var aLongTimeAgo = time.Unix(1, 0)

// Server is the store of one job of world ranks, run by rank 0's process.
// Every rank, rank 0 included, talks to it through a Client. Its methods are
// safe for concurrent use.
//
// The Server owns one goroutine that accepts connections and, per
// connection, one that reads it and one that writes it; Close stops and
// waits for all of them.
type Server struct {
	ln               net.Listener
	world            int
	secret           []byte
	handshakeTimeout time.Duration
	maxPending       int            // the cap on pending handshakes: 2*world + pendingSlack
	quit             chan struct{}  // closed by Close: ends the accept loop's back-off
	wg               sync.WaitGroup // the accept loop and the connection goroutines

	mu      sync.Mutex
	closed  bool                        // guarded by mu
	conns   map[net.Conn]struct{}       // guarded by mu; every open connection, in handshake or joined
	pending int                         // guarded by mu; connections whose hello is not yet verified
	peers   []*peer                     // guarded by mu; by rank: the connected ranks, nil otherwise
	joined  []bool                      // guarded by mu; a rank joins once per job
	told    []bool                      // guarded by mu; ranks that joined, or were told the cause when they tried
	left    int                         // guarded by mu; how many ranks said goodbye
	leaver  int                         // guarded by mu; a rank that said goodbye, or -1
	cause   *PeerError                  // guarded by mu; the job's first failure, or nil
	changed chan struct{}               // guarded by mu; closed and replaced when left, cause or closed change
	kv      map[string][]byte           // guarded by mu
	waiters map[string]map[ref]struct{} // guarded by mu; Gets waiting for a key
	rounds  map[string]*round           // guarded by mu; gathers in progress, by name
	procs   map[int]proc.Identity       // guarded by mu; the processes of this machine's ranks, watched (procwatch.go)
}

// peer is a joined rank's connection.
type peer struct {
	rank    int
	out     *outbox
	pending map[uint64]pendingOp // guarded by Server.mu; its waiting Gets and gathers, by request id
}

type pendingOp struct {
	key    string
	gather bool
}

// ref names one waiting request.
type ref struct {
	rank int
	id   uint64
}

// Listen starts the store of a job of world ranks on addr ("host:port"; port
// 0 picks a free one, see Addr). Only clients that know secret, claim this
// world size and a rank not yet joined get in; an empty secret is refused. It
// returns once the socket listens; the server runs until Close.
func Listen(addr string, world int, secret []byte) (*Server, error) {
	return listen(addr, world, secret, defaultHandshakeTimeout)
}

// listen is Listen with the handshake timeout as a parameter, for tests.
func listen(addr string, world int, secret []byte, handshakeTimeout time.Duration) (*Server, error) {
	if err := checkJob(world, secret); err != nil {
		return nil, err
	}
	lc := net.ListenConfig{KeepAliveConfig: keepAlive}
	ln, err := lc.Listen(context.Background(), "tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("detcoll/store: listen on %s: %w", addr, err)
	}
	s := &Server{
		ln:               ln,
		world:            world,
		secret:           bytes.Clone(secret),
		handshakeTimeout: handshakeTimeout,
		maxPending:       2*world + pendingSlack,
		quit:             make(chan struct{}),
		conns:            make(map[net.Conn]struct{}),
		peers:            make([]*peer, world),
		joined:           make([]bool, world),
		told:             make([]bool, world),
		leaver:           -1,
		changed:          make(chan struct{}),
		kv:               make(map[string][]byte),
		waiters:          make(map[string]map[ref]struct{}),
		rounds:           make(map[string]*round),
	}
	s.wg.Add(1)
	go s.accept()
	return s, nil
}

func checkJob(world int, secret []byte) error {
	if world < 1 || world > maxWorld {
		return fmt.Errorf("%w: world size %d, want 1 to %d", ErrInvalid, world, maxWorld)
	}
	if len(secret) == 0 {
		return fmt.Errorf("%w: empty secret", ErrInvalid)
	}
	return nil
}

// Addr returns the address the server listens on, as "host:port".
func (s *Server) Addr() string { return s.ln.Addr().String() }

// Shutdown waits until every rank has joined and said goodbye (Client.Close),
// or the job has failed and every rank has joined or been told why when it
// tried, or ctx is done, and then calls Close. Calling it on rank 0 after its
// own Client.Close keeps a slower rank's goodbye from being cut off and
// reported as a failure of rank 0, and a rank that comes late to a failed
// job from finding no server (and blaming rank 0) instead of the cause. It
// returns ctx's error if ctx ended first, and nil otherwise; the job's
// failure is the clients' to report.
func (s *Server) Shutdown(ctx context.Context) error {
	var err error
	for err == nil {
		s.mu.Lock()
		finished := s.closed || s.left == s.world || s.cause != nil && !slices.Contains(s.told, false)
		changed := s.changed
		s.mu.Unlock()
		if finished {
			break
		}
		select {
		case <-changed:
		case <-ctx.Done():
			err = fmt.Errorf("detcoll/store: shutdown: %w", ctx.Err())
		}
	}
	_ = s.Close()
	return err
}

// Close stops accepting, tells every connected rank that the job failed
// (rank 0 lost: the store is gone), closes every connection and waits for
// the server's goroutines to exit; pushing the notice to a rank that does not
// read is given up after a second. Ranks that said goodbye are not affected.
// Close is idempotent and returns nil.
func (s *Server) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		s.wg.Wait()
		return nil
	}
	s.closed = true
	close(s.quit)
	for _, p := range s.peers {
		if p != nil {
			s.failLocked(&PeerError{Rank: 0, Reason: "the store server closed"})
			break
		}
	}
	for _, p := range s.peers {
		if p != nil {
			p.out.stop()
		}
	}
	// The deadlines end every read now (a joined rank's and a handshake's)
	// and give the queued notices a second to leave.
	flush := time.Now().Add(closeFlushTimeout)
	for c := range s.conns {
		_ = c.SetWriteDeadline(flush)
		_ = c.SetReadDeadline(aLongTimeAgo)
	}
	s.signalLocked()
	s.mu.Unlock()
	_ = s.ln.Close()
	s.wg.Wait()
	return nil
}

func (s *Server) accept() {
	defer s.wg.Done()
	delay := 5 * time.Millisecond
	for {
		conn, err := s.ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			// Out of file descriptors or the like: wait, as net/http does.
			select {
			case <-s.quit:
				return
			case <-time.After(delay):
			}
			delay = min(2*delay, time.Second)
			continue
		}
		delay = 5 * time.Millisecond
		// Set before the connection is visible to Close, so that Close's
		// deadlines come later and win. It bounds the whole handshake,
		// however slowly the peer sends, and so how long a stranger holds
		// a pending slot.
		_ = conn.SetDeadline(time.Now().Add(s.handshakeTimeout))
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			_ = conn.Close()
			return
		}
		if s.pending >= s.maxPending {
			// Closed before the challenge: a rank's Dial retries, and
			// gets in once a stranger's slot reaches its deadline.
			// (Waiting for a slot instead would let strangers pile up
			// unbounded, in goroutines or in the kernel's backlog.)
			s.mu.Unlock()
			_ = conn.Close()
			continue
		}
		s.pending++
		s.conns[conn] = struct{}{}
		s.wg.Add(1)
		s.mu.Unlock()
		tune(conn)
		go s.serveConn(conn)
	}
}

// serveConn runs one connection: the handshake, then requests until the
// goodbye or an error. It owns the connection's outbox goroutine.
//
// Until the hello is verified the connection holds a pending slot, and all
// it may cost is this goroutine, the challenge and one hello-sized frame:
// the hello is read unbuffered, and the buffered reader comes after.
func (s *Server) serveConn(conn net.Conn) {
	defer s.wg.Done()
	pending := true // holds a pending slot; admit releases it
	defer func() {
		_ = conn.Close()
		s.mu.Lock()
		delete(s.conns, conn)
		if pending {
			s.pending--
		}
		s.mu.Unlock()
	}()
	g, err := serverHello(conn, conn, s.secret, s.world)
	if err != nil {
		return
	}
	if g.rank == launcherRank(s.world) {
		s.serveLauncher(conn, g) // the pending slot is released on return
		return
	}
	p, cause, reason := s.admit(g.rank, conn)
	pending = false
	if reason != "" {
		_ = refuse(conn, reason)
		return
	}
	err = serverWelcome(conn, s.secret, g, s.world, cause)
	if p == nil {
		return // the job had failed; the welcome said so
	}
	go p.out.run()
	p.out.send(procFrame())
	stopPings := make(chan struct{})
	go pinging(p.out, stopPings)
	defer close(stopPings)
	if err == nil {
		err = s.startServing(conn)
	}
	bye := false
	if err == nil {
		bye, err = s.serve(p, conn, bufio.NewReader(conn))
	}
	s.end(p, bye, err)
	p.out.stop()
	<-p.out.done
}

// admit decides whether an authenticated rank may join, and releases the
// connection's pending slot. It returns the new peer; or, if the job has
// failed, no peer and the cause; or a reason to refuse.
func (s *Server) admit(rank int, conn net.Conn) (*peer, *PeerError, string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.pending--
	switch {
	case s.closed:
		return nil, nil, "the store server is closing"
	case s.cause != nil:
		// Told the cause in its welcome: it has heard the job's story,
		// which is what Shutdown waits for after a failure.
		if !s.told[rank] {
			s.told[rank] = true
			s.signalLocked()
		}
		return nil, s.cause, ""
	case s.joined[rank]:
		return nil, nil, fmt.Sprintf("rank %d has already joined", rank)
	}
	p := &peer{rank: rank, out: newOutbox(conn), pending: make(map[uint64]pendingOp)}
	s.peers[rank], s.joined[rank], s.told[rank] = p, true, true
	s.signalLocked()
	if !slices.Contains(s.joined, false) {
		// Everyone is in and nobody may join twice: stop listening, so
		// that the address is free at once for the job's next store (a
		// new communicator after this one) and a rank dialing it cannot
		// reach this one by mistake.
		_ = s.ln.Close()
	}
	return p, nil, ""
}

// startServing lifts the handshake deadline, unless Close has set its own.
func (s *Server) startServing(conn net.Conn) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return ErrClosed
	}
	return conn.SetDeadline(time.Time{})
}

// serve handles requests until the goodbye (bye is true) or an error; a
// rank silent for the silence limit is an error (liveness.go).
func (s *Server) serve(p *peer, conn net.Conn, r *bufio.Reader) (bye bool, err error) {
	limit := silenceLimit()
	long := limit // a frame's once it has begun: the limit before the peer said where it runs
	deadline := func(d time.Duration) error {
		// Under mu: Close's deadline, set under mu, must not be replaced.
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.closed {
			return nil
		}
		return expectWord(conn, d)
	}
	for {
		if err := deadline(limit); err != nil {
			return false, err
		}
		// The limit is on silence between frames; a frame that has begun
		// gets the long one (a large frame over a slow network is not
		// silence).
		_, err := r.Peek(1)
		if err == nil {
			err = deadline(long)
		}
		var m msg
		if err == nil {
			m, err = readMsg(r, maxFrame)
		}
		if err != nil {
			if silent(err) {
				return false, &silenceError{silence(fmt.Sprintf("rank %d", p.rank), limit)}
			}
			return false, err
		}
		switch m.typ {
		case tBye:
			return true, nil
		case tPing:
			continue
		case tProc:
			limit = peerLimit(m.value)
			s.mu.Lock()
			s.watchLocked(p.rank, m.value)
			s.mu.Unlock()
			continue
		}
		s.mu.Lock()
		err = s.handleLocked(p, m)
		s.mu.Unlock()
		if err != nil {
			return false, err
		}
	}
}

// silenceError is a rank that said nothing for the silence limit.
type silenceError struct{ reason string }

func (e *silenceError) Error() string { return e.reason }

// end removes a rank whose connection ended: a goodbye is acknowledged; any
// other end fails the job, unless the server itself is closing.
func (s *Server) end(p *peer, bye bool, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.peers[p.rank] = nil
	delete(s.procs, p.rank) // gone by goodbye, or its loss is told below
	s.forgetLocked(p)
	switch {
	case bye:
		s.left++
		s.leaver = p.rank
		s.abortRoundsLocked(fmt.Sprintf("rank %d has closed its store client", p.rank))
		p.out.send(encode(msg{typ: tByeAck}))
		s.signalLocked()
	case s.closed:
	default:
		s.failLocked(&PeerError{Rank: p.rank, Reason: lostReason(err)})
	}
}

func lostReason(err error) string {
	var se *silenceError
	switch {
	case errors.As(err, &se):
		return se.reason
	case errors.Is(err, io.EOF):
		return "connection closed without goodbye"
	case errors.Is(err, errMalformed):
		return "protocol error: " + err.Error()
	}
	return "connection lost: " + err.Error()
}

// failLocked records the job's first failure and pushes it to every
// connected rank at once. Later failures are not pushed: clients keep the
// first cause only. The reason is cut to maxReason (a broken client may send
// more than Fail does), so that the cause fits the welcome a rank reads
// before it trusts the server.
func (s *Server) failLocked(cause *PeerError) {
	if s.cause != nil {
		return
	}
	cause = &PeerError{Rank: cause.Rank, Reason: cutReason(cause.Reason)}
	s.cause = cause
	frame := encode(msg{typ: tFailed, rank: uint32(cause.Rank), reason: cause.Reason})
	for _, p := range s.peers {
		if p != nil {
			p.out.send(frame)
		}
	}
	s.signalLocked()
}

func (s *Server) signalLocked() {
	close(s.changed)
	s.changed = make(chan struct{})
}
