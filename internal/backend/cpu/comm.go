package cpu

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/detcoll/detcoll/internal/core/base"
	"github.com/detcoll/detcoll/internal/core/proto"
	"github.com/detcoll/detcoll/internal/core/tree"
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

	mu      sync.Mutex      // serialises calls; guards the fields below
	seq     uint64          // last published stage value
	stage   base.StagedCall // a Stage awaiting its AllReduceStaged
	closed  bool
	reducer tree.Reducer
	// PreMulSum (premultiplied): this rank's inputs times its scalar, in
	// scaled (grown, never shrunk), and the request that reads them.
	scaled    []byte
	scaledIns [][]byte
	scaledReq base.Request
	srcs      [][]byte // scratch for peerSlices
	cached    bool     // the current call's copies go through the cache (copyCached)
	view      peers    // what the current wait watches: see wait
}

// Open maps every rank's segment. It is collective: every rank calls it with
// the same capacity, and it returns when every rank has mapped every
// segment, or with an error on every rank (the same one where the ranks can
// tell: see base.Failure).
func Open(ctx context.Context, cfg Config) (*Comm, error) {
	c := &Comm{
		rank: cfg.Rank, world: cfg.World, capacity: cfg.Capacity, timeout: cfg.Timeout,
		rdv: cfg.Rendezvous, log: cfg.Logger, paths: defaultPaths(cfg.World),
		segs: make([]segment, cfg.World),
	}
	c.spin, c.yield = spinFor(cfg.World)
	if err := c.paths.fromEnv(); err != nil {
		return nil, err
	}
	var err error
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
	if err := c.mapPeers(ctx, size); err != nil {
		c.unmapAll()
		return nil, err
	}
	c.stopMonitor = make(chan struct{})
	c.monitorDone = make(chan struct{})
	go c.monitor()
	return c, nil
}

// mapPeers creates this rank's segment, exchanges names with the peers and
// maps theirs. On error the caller unmaps what was mapped.
func (c *Comm) mapPeers(ctx context.Context, size int64) error {
	// The ranks agree on names and sizes before anyone creates a segment,
	// so that a disagreement leaves nothing behind, and so that whoever
	// survives a rank lost after creating its segment can remove it.
	if err := c.rdv.Barrier(ctx, "cpu/joined"); err != nil {
		return err
	}
	sweepStale()
	name, err := newSegmentName()
	if err != nil {
		return err
	}
	// Every rank adopts rank 0's thresholds: they are derived from the
	// core count, which CPU binding can make differ between ranks, or set
	// by environment variables, which may differ too.
	setup := fmt.Sprintf("%s %d %d %d", name, c.capacity, c.paths.allReduceOneShotMax, c.paths.streamMin)
	all, err := c.rdv.AllGather(ctx, "cpu/segments", []byte(setup))
	if err != nil {
		return err
	}
	descs := make([]segmentDesc, len(all))
	for p, v := range all {
		d := &descs[p]
		if _, err := fmt.Sscanf(string(v), "%s %d %d %d", &d.name, &d.capacity, &d.oneShotMax, &d.streamMin); err != nil || !validName(d.name) {
			return &base.RankError{Rank: p, Err: base.ErrInvalid, Reason: fmt.Sprintf("bad segment description %q", v)}
		}
	}
	// Every rank sees the same descriptions, so every rank names the same
	// culprit with the same words.
	for p, d := range descs {
		if d.capacity != descs[0].capacity {
			caps := make([]int64, len(descs))
			for q := range descs {
				caps[q] = descs[q].capacity
			}
			return &base.RankError{Rank: p, Err: base.ErrInvalid,
				Reason: fmt.Sprintf("every rank must open with the same capacity: ranks' capacities in bytes %v", caps)}
		}
	}
	c.paths.allReduceOneShotMax = descs[0].oneShotMax
	c.paths.streamMin = descs[0].streamMin

	// From here the names must not outlive setup, whatever happens: every
	// rank removes every name once all are mapped, or as it fails (a peer
	// that died may have created its segment and not removed it).
	defer func() {
		for _, d := range descs {
			unlinkSegment(d.name)
		}
	}()
	mem, err := createSegment(name, size)
	if err != nil {
		return err
	}
	c.segs[c.rank] = newSegment(mem)
	if err := c.rdv.Barrier(ctx, "cpu/created"); err != nil {
		return err
	}
	for p, d := range descs {
		if p == c.rank {
			continue
		}
		m, err := openSegment(d.name, size)
		if errors.Is(err, fs.ErrNotExist) {
			return c.echoOf(fmt.Errorf("map rank %d's segment: %w", p, err))
		}
		if err != nil {
			return fmt.Errorf("map rank %d's segment: %w", p, err)
		}
		c.segs[p] = newSegment(m)
	}
	return c.rdv.Barrier(ctx, "cpu/mapped")
}

// echoWait bounds how long Open waits for the job's failure notice after a
// peer's segment went missing (echoOf): the notice left the store when the
// peer heard it, so it takes a loopback round trip, not a timeout.
const echoWait = time.Second

// echoOf returns the job's failure in place of err, a peer's segment found
// missing, if the rendezvous reports one within echoWait. A rank that
// leaves a failed Open removes every segment name (mapPeers), so a missing
// name is most likely the echo of a failure this rank has not heard of
// yet; reporting it as this rank's own would blame a healthy rank.
func (c *Comm) echoOf(err error) error {
	t := time.NewTimer(echoWait)
	defer t.Stop()
	select {
	case <-c.rdv.Done():
		return c.rdv.Err()
	case <-t.C:
		return err
	}
}

// segmentDesc is what a rank tells its peers about its segment at Open.
type segmentDesc struct {
	name                  string
	capacity              int64
	oneShotMax, streamMin int
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
	c.poison(base.Aborted(c.rank, cause), true)
}

// poison records the first failure, in the form every rank reports it
// (base.Canonical), publishes it in this rank's status word and wakes every
// sleeper, so that waits here and at the peers notice at once; then, when
// this rank is the origin (tell), it reports the failure through the
// rendezvous, which reaches peers that are not in a call. It returns the
// communicator's cause: err's, or an earlier failure's.
func (c *Comm) poison(err error, tell bool) error {
	// Counted before the cause is visible: a call that returns this failure
	// and a Close that follows must find the report in flight.
	c.telling.Add(1)
	defer c.telling.Done()
	err = base.Canonical(err, c.rank)
	if !c.cause.CompareAndSwap(nil, &err) {
		return *c.cause.Load()
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
	return err
}

// fail poisons the communicator with a failure found by this rank's call
// and returns the communicator's cause. A mismatch replaces an earlier
// cause: a peer's report of it may arrive first, but the signatures
// themselves say more.
func (c *Comm) fail(err error) error {
	var rank *base.RankError
	peers := errors.As(err, &rank) && rank.Rank != c.rank
	// A peer's failure is the peer's to report; ours we tell everyone.
	cause := c.poison(err, !peers)
	if found := base.Canonical(err, c.rank); !peers && proto.Prevails(base.FailureOf(cause, c.rank), base.FailureOf(found, c.rank)) {
		c.cause.Store(&found)
		return found
	}
	return cause
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
// the wait first). It then releases everything whatever happened, and
// returns nil if the communicator never failed, its failure otherwise (the
// same on every rank: see base.Failure). Close is idempotent; later calls
// return nil, and every other call ErrClosed.
func (c *Comm) Close(ctx context.Context) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil
	}
	if c.Err() == nil && c.world > 1 {
		c.closeHandshake(ctx)
	}
	c.closed = true
	if c.stopMonitor != nil {
		close(c.stopMonitor)
		<-c.monitorDone
	}
	c.telling.Wait()
	c.unmapAll()
	return c.Err()
}

// closeHandshake runs a Close call through the protocol (proto.Closing):
// the ranks meet, then wait until every peer has published done for it,
// after which nobody reads our memory. A failure poisons the communicator:
// Close returns it.
func (c *Comm) closeHandshake(ctx context.Context) {
	k := c.newCall(base.OpClose)
	k.ctx = ctx
	if d, ok := ctx.Deadline(); ok && d.Before(k.deadline) {
		k.deadline = d
	}
	c.run(k, nil, base.Signature{Op: base.OpClose, Buffers: 1}, proto.Schedule(proto.Closing, false))
}

func (c *Comm) unmapAll() {
	c.segsMu.Lock()
	defer c.segsMu.Unlock()
	for i, s := range c.segs {
		unmap(s.mem)
		c.segs[i] = segment{}
	}
}
