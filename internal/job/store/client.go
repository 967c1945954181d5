package store

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// failAckTimeout bounds how long Fail waits for the server to confirm that
// the failure was broadcast.
const failAckTimeout = time.Second

// Client is one rank's connection to the store. Its methods are safe for
// concurrent use.
//
// The Client owns two goroutines, the connection's only reader and its only
// writer; Close stops and waits for both. The reader delivers replies and
// watches for the job's failure, which closes Done.
type Client struct {
	rank, world int
	conn        net.Conn
	out         *outbox
	nextID      atomic.Uint64

	readerDone chan struct{} // closed when the reader returns
	done       chan struct{} // closed once, when err is set
	closing    chan struct{} // closed once, when Close starts
	closed     chan struct{} // closed once, when Close has finished
	byeAcked   chan struct{} // closed by the reader on the goodbye's acknowledgement

	mu           sync.Mutex
	err          *PeerError          // guarded by mu; the job's failure, set once
	pending      map[uint64]chan msg // guarded by mu; requests waiting for a reply, by id
	closeStarted bool                // guarded by mu
	acked        bool                // guarded by mu; byeAcked is closed
	shut         bool                // guarded by mu; Close closed the connection: read errors are expected

	watchOnce sync.Once      // the server's process is watched once (procwatch.go)
	watching  sync.WaitGroup // that watcher, which Close waits for
}

// Dial connects rank of a job of world ranks to the store at addr and
// authenticates both ways with secret. It retries a refused connection until
// ctx is done, so ranks may start before the server, and likewise one the
// server closes before its challenge (it has too many handshakes pending,
// see the package doc); each handshake is bounded by ctx and by 10 s. It
// fails with an error matching ErrAuth when either side cannot prove the
// secret or the server refuses the rank, with ctx's error (matching
// context.DeadlineExceeded on timeout), or, if the job has already failed,
// with that failure's *PeerError.
func Dial(ctx context.Context, addr string, rank, world int, secret []byte) (*Client, error) {
	return dial(ctx, addr, rank, world, secret, defaultHandshakeTimeout)
}

func dial(ctx context.Context, addr string, rank, world int, secret []byte, handshakeTimeout time.Duration) (*Client, error) {
	if err := checkJob(world, secret); err != nil {
		return nil, err
	}
	if rank < 0 || rank >= world {
		return nil, fmt.Errorf("%w: rank %d out of range [0, %d)", ErrInvalid, rank, world)
	}
	delay := 5 * time.Millisecond
	for {
		conn, br, err := handshake(ctx, addr, rank, world, secret, handshakeTimeout)
		if err == nil {
			return newClient(conn, br, rank, world), nil
		}
		if !errors.Is(err, errTurnedAway) {
			return nil, err
		}
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, fmt.Errorf("detcoll/store: handshake with %s: %w (last attempt: %v)", addr, ctx.Err(), err)
		case <-t.C:
		}
		delay = min(2*delay, 200*time.Millisecond)
	}
}

// handshake connects and authenticates once. It returns the connection,
// its deadline cleared, and the reader that holds what the server sent
// after its welcome; or the job's *PeerError if it has failed, or an error.
func handshake(ctx context.Context, addr string, rank, world int, secret []byte, handshakeTimeout time.Duration) (net.Conn, *bufio.Reader, error) {
	conn, err := connect(ctx, addr)
	if err != nil {
		return nil, nil, err
	}
	tune(conn)
	// The handshake ends at its own timeout, or when ctx ends: then the
	// AfterFunc moves the deadline into the past, and ctx's error is the
	// result. (Setting ctx's deadline on the connection instead would race
	// with ctx's own timer and report an i/o timeout.)
	_ = conn.SetDeadline(time.Now().Add(handshakeTimeout))
	stop := context.AfterFunc(ctx, func() { _ = conn.SetDeadline(aLongTimeAgo) })
	br := bufio.NewReader(conn)
	cause, err := clientHandshake(conn, br, secret, rank, world)
	if !stop() {
		// ctx ended during the handshake; whatever it returned, the
		// connection's deadline is no longer ours to clear.
		_ = conn.Close()
		return nil, nil, fmt.Errorf("detcoll/store: handshake with %s: %w", addr, ctx.Err())
	}
	if err == nil && cause == nil {
		err = conn.SetDeadline(time.Time{})
	}
	if err != nil || cause != nil {
		_ = conn.Close()
		if cause != nil {
			return nil, nil, cause
		}
		if errors.Is(err, ErrAuth) || errors.Is(err, errTurnedAway) {
			return nil, nil, err
		}
		return nil, nil, fmt.Errorf("detcoll/store: handshake with %s: %w", addr, err)
	}
	return conn, br, nil
}

// newClient starts the client of an authenticated connection.
func newClient(conn net.Conn, br *bufio.Reader, rank, world int) *Client {
	c := &Client{
		rank:       rank,
		world:      world,
		conn:       conn,
		out:        newOutbox(conn),
		readerDone: make(chan struct{}),
		done:       make(chan struct{}),
		closing:    make(chan struct{}),
		closed:     make(chan struct{}),
		byeAcked:   make(chan struct{}),
		pending:    make(map[uint64]chan msg),
	}
	go c.out.run()
	c.out.send(procFrame())
	go pinging(c.out, c.closing)
	go c.read(br)
	return c
}

// connect dials addr, retrying while the connection is refused.
func connect(ctx context.Context, addr string) (net.Conn, error) {
	d := net.Dialer{KeepAliveConfig: keepAlive}
	delay := 5 * time.Millisecond
	for {
		conn, err := d.DialContext(ctx, "tcp", addr)
		if err == nil {
			return conn, nil
		}
		if ctx.Err() != nil {
			return nil, fmt.Errorf("detcoll/store: dial %s: %w (last attempt: %v)", addr, ctx.Err(), err)
		}
		if !errors.Is(err, syscall.ECONNREFUSED) {
			return nil, fmt.Errorf("detcoll/store: dial %s: %w", addr, err)
		}
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, fmt.Errorf("detcoll/store: dial %s: %w (last attempt: %v)", addr, ctx.Err(), err)
		case <-t.C:
		}
		delay = min(2*delay, 200*time.Millisecond)
	}
}

// Rank returns the client's rank.
func (c *Client) Rank() int { return c.rank }

// Done returns a channel closed when the job has failed: a peer was lost or
// called Fail (this rank's own Fail included), or the server went away.
// Close does not close it.
func (c *Client) Done() <-chan struct{} { return c.done }

// Err returns nil while the job is healthy, and then the *PeerError naming
// the first failure, which matches ErrPeerLost.
func (c *Client) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err == nil {
		return nil
	}
	return c.err
}

// Fail reports that this rank has failed, for reason: every other rank's
// Done closes and its calls return a *PeerError naming this rank and the
// reason (cut to 1 KiB). This client's Done closes too. Fail waits, at most
// a second, until the server confirms that it has recorded the failure and
// queued the notice to every rank, so that a process may exit right after
// it. It does nothing after Close or once the job has failed.
func (c *Client) Fail(reason string) {
	reason = cutReason(reason)
	c.mu.Lock()
	if c.closeStarted || c.err != nil {
		c.mu.Unlock()
		return
	}
	id := c.nextID.Add(1)
	reply := make(chan msg, 1)
	c.pending[id] = reply
	c.failLocked(&PeerError{Rank: c.rank, Reason: reason})
	c.mu.Unlock()
	c.out.send(encode(msg{typ: tFail, id: id, reason: reason}))
	t := time.NewTimer(failAckTimeout)
	defer t.Stop()
	select {
	case <-reply:
	case <-c.readerDone:
	case <-t.C:
	}
	c.forget(id)
}

func (c *Client) failLocked(cause *PeerError) {
	if c.err == nil {
		c.err = cause
		close(c.done)
	}
}

// Close says goodbye and waits, until ctx is done, for the server to
// acknowledge it; after that this rank's disconnect is not a failure. Then it
// closes the connection and waits for the client's goroutines to exit. Calls
// in progress return an error matching ErrClosed, as do later ones. Close
// returns ctx's error if the goodbye was not acknowledged in time (the server
// then sees a lost rank), the job's *PeerError if the job failed while Close
// waited, and nil otherwise, also when the job had failed before. Later calls
// wait for the first to finish and return nil. On rank 0 the Server is closed
// separately, by its owner.
func (c *Client) Close(ctx context.Context) error {
	c.mu.Lock()
	if c.closeStarted {
		c.mu.Unlock()
		<-c.closed
		return nil
	}
	c.closeStarted = true
	close(c.closing)
	failed := c.err != nil
	c.mu.Unlock()

	var err error
	if !failed {
		c.out.send(encode(msg{typ: tBye}))
		select {
		case <-c.byeAcked:
		case <-c.done:
			err = c.Err()
		case <-ctx.Done():
			err = fmt.Errorf("detcoll/store: close: goodbye not acknowledged: %w", ctx.Err())
		}
	}
	c.mu.Lock()
	c.shut = true
	c.mu.Unlock()
	_ = c.conn.Close()
	c.out.stop()
	<-c.readerDone
	<-c.out.done
	c.watching.Wait()
	close(c.closed)
	return err
}

// read is the connection's only reader: it delivers replies to waiting
// calls and records the job's failure. It returns when the connection ends.
func (c *Client) read(r *bufio.Reader) {
	defer close(c.readerDone)
	limit := silenceLimit()
	long := limit // a frame's once it has begun: the limit before the server said where it runs
	for {
		if err := expectWord(c.conn, limit); err != nil {
			c.lost(err)
			return
		}
		// The limit is on silence between frames (see Server.serve).
		_, err := r.Peek(1)
		if err == nil {
			err = expectWord(c.conn, long)
		}
		var m msg
		if err == nil {
			m, err = readMsg(r, maxFrame)
		}
		if err != nil {
			if silent(err) {
				c.mu.Lock()
				if !c.acked && !c.shut {
					c.failLocked(&PeerError{Rank: 0, Reason: silence("the store server (rank 0)", limit)})
				}
				c.mu.Unlock()
				_ = c.conn.Close()
				return
			}
			c.lost(err)
			return
		}
		switch m.typ {
		case tPing:
		case tProc:
			limit = peerLimit(m.value)
			c.watchOnce.Do(func() { c.watching.Go(func() { c.watchServer(m.value) }) })
		case tOK, tValue, tGathered, tError:
			c.mu.Lock()
			reply, ok := c.pending[m.id]
			delete(c.pending, m.id)
			c.mu.Unlock()
			if ok {
				reply <- m // buffered: never blocks
			}
		case tFailed:
			c.mu.Lock()
			c.failLocked(&PeerError{Rank: int(m.rank), Reason: m.reason})
			c.mu.Unlock()
		case tByeAck:
			c.mu.Lock()
			if !c.acked {
				c.acked = true
				close(c.byeAcked)
			}
			c.mu.Unlock()
		default:
			c.lost(fmt.Errorf("%w: unexpected %v from the server", errMalformed, m.typ))
			return
		}
	}
}

// lost handles the end of the connection. Unless the goodbye was
// acknowledged or Close cut the connection, the server is gone: a failure of
// rank 0.
func (c *Client) lost(err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.acked || c.shut {
		return
	}
	// The I/O error differs between ranks (EOF, a reset) for the one
	// cause: the reason does not carry it, so that every rank says the same.
	c.failLocked(&PeerError{Rank: 0, Reason: serverLost})
}

// serverLost is the reason of rank 0's loss, however a client found it
// (its connection ended, or its process is exiting: procwatch.go): each
// client decides alone, and every rank must tell the same story.
const serverLost = "lost the store server (rank 0 died or closed it)"

func (c *Client) forget(id uint64) {
	c.mu.Lock()
	delete(c.pending, id)
	c.mu.Unlock()
}
