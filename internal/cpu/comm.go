package cpu

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/detcoll/detcoll/internal/base"
	"github.com/detcoll/detcoll/internal/tree"
)

// Config is what the public API passes to Open, with defaults applied.
type Config struct {
	Rank, World int
	// Capacity is the staging memory of each rank in bytes: the largest
	// call's input.
	Capacity int64
	// Timeout bounds every wait for peers.
	Timeout time.Duration
	// Rendezvous reaches the other ranks; nil when World is 1.
	Rendezvous base.Rendezvous
	Logger     *slog.Logger
}

// Comm is a communicator of the cpu backend. Its methods are safe for
// concurrent use, but collectives are serialised: ranks must issue them in
// the same order, which concurrent callers could not guarantee anyway.
type Comm struct {
	rank, world int
	capacity    int64
	timeout     time.Duration
	rdv         base.Rendezvous
	log         *slog.Logger
	paths       paths
	spin        time.Duration // see spinFor
	yield       bool          // see spinFor
	cachedMax   int           // largest footprint copied through the cache: see copy.go
	chunk       int           // bytes staged between publications of a streamed call: see stream.go

	// segs are the mapped segments by rank; segs[rank] is this rank's own.
	// segsMu guards their unmapping against Abort and the monitor, which
	// wake sleepers without holding mu.
	segsMu sync.RWMutex
	segs   []segment

	// cause is the first failure; once set every call returns it. It is
	// written by a failing call, Abort or the rendezvous monitor.
	cause atomic.Pointer[error]

	stopMonitor chan struct{}  // closed by Close to end the monitor goroutine
	monitorDone chan struct{}  // closed when the monitor goroutine has exited
	telling     sync.WaitGroup // failure reports in flight to the rendezvous

	mu      sync.Mutex // serialises calls; guards the fields below
	seq     uint64     // last published stage value
	staged  int        // bytes reserved by Stage and not yet reduced, or -1
	closed  bool
	reducer tree.Reducer
	srcs    [][]byte // scratch for peerSlices
	cached  bool     // the current call's copies go through the cache (copyCached)
}

// Open maps every rank's segment. It is collective: every rank calls it with
// the same capacity, and it returns when every rank has mapped every
// segment, or with an error on every rank.
func Open(ctx context.Context, cfg Config) (c *Comm, err error) {
	c = &Comm{
		rank: cfg.Rank, world: cfg.World, capacity: cfg.Capacity, timeout: cfg.Timeout,
		rdv: cfg.Rendezvous, log: cfg.Logger, paths: defaultPaths(cfg.World),
		segs: make([]segment, cfg.World), staged: -1,
	}
	c.spin, c.yield = spinFor(cfg.World)
	if err := c.paths.fromEnv(); err != nil {
		return nil, err
	}
	if c.cachedMax, err = cachedMaxFromEnv(); err != nil {
		return nil, err
	}
	if c.chunk, err = streamChunkFromEnv(); err != nil {
		return nil, err
	}
	size := segmentSize(cfg.Capacity)
	if cfg.World == 1 {
		mem, err := anonymousSegment(size)
		if err != nil {
			return nil, fmt.Errorf("map staging memory: %w", err)
		}
		c.segs[0] = newSegment(mem)
		return c, nil
	}

	// Create the segment only once every rank is here, so that a rank
	// lost before then leaves nothing behind; a rank lost during the
	// exchange below leaves a file whose name the others may not learn,
	// which the next Open on the host removes (sweepStale).
	if err := c.rdv.Barrier(ctx, "cpu/joined"); err != nil {
		return nil, fmt.Errorf("wait for every rank to join: %w", err)
	}
	sweepStale()
	name, mem, err := createSegment(size)
	if err != nil {
		return nil, err
	}
	c.segs[c.rank] = newSegment(mem)
	names := []string{name}
	// Whatever happens below, the names must not outlive setup: unlink ours
	// and, if setup fails, every peer's we learned (the peer may be dead).
	defer func() {
		for _, n := range names {
			unlinkSegment(n)
		}
		if err != nil {
			c.unmapAll()
		}
	}()

	// Every rank adopts rank 0's thresholds: they are derived from the
	// core count, which CPU binding can make differ between ranks, or set
	// by environment variables, which may differ too.
	setup := fmt.Sprintf("%s %d %d %d", name, cfg.Capacity, c.paths.allReduceOneShotMax, c.paths.streamMin)
	all, err := c.rdv.AllGather(ctx, "cpu/segments", []byte(setup))
	if err != nil {
		return nil, fmt.Errorf("exchange shared memory names: %w", err)
	}
	for p, v := range all {
		var peerName string
		var capacity int64
		var oneShotMax, streamMin int
		if _, err := fmt.Sscanf(string(v), "%s %d %d %d", &peerName, &capacity, &oneShotMax, &streamMin); err != nil {
			return nil, fmt.Errorf("rank %d sent a bad segment description %q: %w", p, v, err)
		}
		if p == 0 {
			c.paths.allReduceOneShotMax = oneShotMax
			c.paths.streamMin = streamMin
		}
		if p == c.rank {
			continue
		}
		names = append(names, peerName)
		if capacity != cfg.Capacity {
			return nil, base.Invalidf("rank %d has capacity %d bytes, rank %d has %d: every rank must open with the same capacity",
				p, capacity, c.rank, cfg.Capacity)
		}
		m, err := openSegment(peerName, size)
		if err != nil {
			return nil, fmt.Errorf("rank %d: %w", p, err)
		}
		c.segs[p] = newSegment(m)
	}
	if err := c.rdv.Barrier(ctx, "cpu/mapped"); err != nil {
		return nil, fmt.Errorf("wait for peers to map shared memory: %w", err)
	}
	c.stopMonitor = make(chan struct{})
	c.monitorDone = make(chan struct{})
	go c.monitor()
	return c, nil
}

// monitor turns a failure the rendezvous reports (a peer crashed, was
// killed or failed) into this communicator's failure at once, waking any
// wait in progress.
func (c *Comm) monitor() {
	defer close(c.monitorDone)
	select {
	case <-c.rdv.Done():
		c.poison(c.rdv.Err(), false)
	case <-c.stopMonitor:
	}
}

// Rank and World identify this rank.
func (c *Comm) Rank() int  { return c.rank }
func (c *Comm) World() int { return c.world }

// Err returns the failure that poisoned the communicator, or nil.
func (c *Comm) Err() error {
	if p := c.cause.Load(); p != nil {
		return *p
	}
	return nil
}

// Abort fails the communicator with cause: pending and later calls on this
// rank return it, and every peer learns that this rank failed.
func (c *Comm) Abort(cause error) {
	c.poison(fmt.Errorf("%w: %w", base.ErrAborted, cause), true)
}

// poison records the first failure, publishes it in this rank's status
// word and wakes every sleeper, so that waits here and at the peers notice
// at once; then, when this rank is the origin (tell), it reports the failure
// through the rendezvous, which reaches peers that are not in a call.
func (c *Comm) poison(err error, tell bool) {
	// Counted before the cause is visible: a call that returns this failure
	// and a Close that follows must find the report in flight.
	c.telling.Add(1)
	defer c.telling.Done()
	if !c.cause.CompareAndSwap(nil, &err) {
		return
	}
	if c.log != nil {
		c.log.Error("communicator failed", "err", err)
	}
	f := base.FailureOf(err, c.rank)
	c.segsMu.RLock()
	if c.segs[c.rank].mem != nil {
		c.setStatus(f)
	}
	for _, s := range c.segs {
		if s.mem == nil {
			continue
		}
		for _, off := range []int{offStage, offReduced, offDone, offStaged} {
			futexWake(low32(s.word(off)))
		}
	}
	c.segsMu.RUnlock()
	if tell && c.rdv != nil {
		c.rdv.Fail(f.Encode()) // Close waits for it (telling)
	}
}

// fail poisons the communicator with a failure found by this rank's call
// and returns it. A mismatch replaces an earlier cause: a peer's report of
// it may arrive first, but the signatures themselves say more.
func (c *Comm) fail(err error) error {
	var rank *base.RankError
	peers := errors.As(err, &rank)
	// A peer's failure is the peer's to report; ours we tell everyone.
	c.poison(err, !peers)
	if !peers && errors.Is(err, base.ErrMismatch) {
		c.cause.Store(&err)
	}
	return err
}

// usable returns why no call can run now, or nil.
func (c *Comm) usable() error {
	if c.closed {
		return base.ErrClosed
	}
	return c.Err()
}

// Close ends the communicator. When it is healthy, Close is collective: it
// returns after every peer has also called Close and finished reading this
// rank's memory (or with an error when ctx, the timeout or a failure ends
// the wait first). It then releases everything whatever happened. Close is
// idempotent; later calls return ErrClosed.
func (c *Comm) Close(ctx context.Context) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil
	}
	var err error
	if c.Err() == nil && c.world > 1 {
		err = c.closeHandshake(ctx)
	}
	c.closed = true
	if c.stopMonitor != nil {
		close(c.stopMonitor)
		<-c.monitorDone
	}
	c.telling.Wait()
	c.unmapAll()
	return err
}

// closeHandshake runs a Close call through the protocol, then waits until
// every peer has published done for it: after that nobody reads our memory.
func (c *Comm) closeHandshake(ctx context.Context) error {
	k := c.newCall(base.OpClose)
	k.ctx = ctx
	if d, ok := ctx.Deadline(); ok && d.Before(k.deadline) {
		k.deadline = d
	}
	req := &base.Request{Op: base.OpClose}
	if err := c.begin(k, req, base.Signature{Op: base.OpClose, Buffers: 1}, false); err != nil {
		return err
	}
	c.publish(offDone, c.seq)
	if err := c.waitAll(k, offDone, c.seq, "waiting for peers to acknowledge Close"); err != nil {
		return c.fail(err)
	}
	return nil
}

func (c *Comm) unmapAll() {
	c.segsMu.Lock()
	defer c.segsMu.Unlock()
	for i, s := range c.segs {
		unmap(s.mem)
		c.segs[i] = segment{}
	}
}
