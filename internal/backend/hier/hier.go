package hier

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/detcoll/detcoll/internal/core/base"
	"github.com/detcoll/detcoll/internal/core/num"
	"github.com/detcoll/detcoll/internal/core/proto"
	"github.com/detcoll/detcoll/internal/core/tree"
)

// Local is the host's own communicator of G ranks: a backend.
type Local interface {
	Do(req *base.Request) error
	Abort(cause error)
	Err() error
	Close(ctx context.Context) error
	Reserved() base.Region
}

// Rail is the channel between the ranks of one local rank, one per host.
type Rail interface {
	// AllGather gathers len(send) bytes from each rank of the rail into
	// recv (H x len(send) bytes), in host order. It returns early with
	// an error when ctx ends.
	AllGather(ctx context.Context, send, recv []byte) error
}

// Exchanger is a Rail that also trades bytes with one peer of the rail at
// a time: then, with a power of two of hosts, an all-reduce moves the
// bandwidth-optimal share along the rail (railSum).
type Exchanger interface {
	// Exchange sends send to the rail's host peer and receives len(recv)
	// bytes from it, at once. It returns early with an error when ctx
	// ends.
	Exchange(ctx context.Context, peer int, send, recv []byte) error
}

// Config says where a rank is.
type Config struct {
	Hosts, Host int // H, and this rank's host
	PerHost     int // G, ranks per host: a power of two
	LocalRank   int // this rank's rank on its host
	Timeout     time.Duration
	Local       Local
	Rail        Rail
}

// Comm is one rank's communicator of several hosts. It runs one call at a
// time.
type Comm struct {
	hosts, host, g, G int
	timeout           time.Duration
	local             Local
	rail              Rail
	ex                Exchanger // the rail, when it halves: an Exchanger and H a power of two above 1

	cause atomic.Pointer[error]
	// ctx ends when the communicator fails, so that a call waiting on the
	// rail returns at once on Abort, not at its timeout.
	ctx    context.Context
	cancel context.CancelCauseFunc

	mu  sync.Mutex // one call at a time; guards the fields below
	seq uint64     // the call's number, for signatures and errors
	op  base.Op    // the call's operation, for errors
	// The call's operator as the steps apply it: the host's reduce-scatter
	// takes hostRed (and scalar: PreMulSum's, which every rank applies to
	// its own input there), the rail's steps node; Avg sums throughout and
	// divides once at the end (Do).
	hostRed num.RedOp
	scalar  []byte
	node    num.RedOp
	closed  bool
	stage   base.StagedCall
	staging []byte // Stage's memory
	reducer tree.Reducer
	scratch [proto.NumHostBufs][]byte // by buffer, grown, reused (run.go)
	sigs    []byte                    // meet's gathered signatures, grown, reused
	srcs    [][]byte                  // a Tree step's sources, reused
	steps   []proto.HostStep          // the call's schedule, reused

	// Device calls (device.go), when the host's communicator is one.
	dev      DeviceLocal
	drail    DeviceRail
	dex      DeviceExchanger // the rail, when it can halve: two or more hosts, a power of two (see halvesDevice)
	dscratch [numSlots]dbuf  // by buffer (and the staging), grown, reused
	dsrcs    []uint64        // a Tree step's addresses, reused
	stagedAt uint64          // StageDevice's memory
	cur      uintptr         // the stream of the device call in progress
	captured bool            // a call was captured in a CUDA graph: devBuf keeps what graphs may use
	retired  []uint64        // scratch a graph may still use, freed at Close

	failMu   sync.Mutex     // one fail at a time: see fail
	watching sync.WaitGroup // the rail's watcher (New), waited for by Close
}

// New returns the communicator of cfg. G must be a power of two.
func New(cfg Config) (*Comm, error) {
	if cfg.PerHost < 1 || cfg.PerHost&(cfg.PerHost-1) != 0 {
		return nil, base.Invalidf("%d ranks per host: across hosts detcoll needs a power of two, so that the flat tree over all ranks is a tree over the hosts' trees (with %d the hosts' sums would not give the flat tree's bits)", cfg.PerHost, cfg.PerHost)
	}
	c := &Comm{hosts: cfg.Hosts, host: cfg.Host, g: cfg.LocalRank, G: cfg.PerHost,
		timeout: cfg.Timeout, local: cfg.Local, rail: cfg.Rail}
	if ex, ok := cfg.Rail.(Exchanger); ok && c.hosts > 1 && c.hosts&(c.hosts-1) == 0 {
		c.ex = ex
	}
	if dev, ok := cfg.Local.(DeviceLocal); ok {
		drail, ok := cfg.Rail.(DeviceRail)
		if !ok {
			return nil, base.Invalidf("a device communicator across hosts needs an interconnect that moves device memory (package nccl's); %T does not", cfg.Rail)
		}
		c.dev, c.drail = dev, drail
		if c.hosts > 1 {
			if err := dev.PrepareRail(c.hosts); err != nil {
				return nil, err
			}
		}
		c.ex = nil // the host path's; the device path halves through dex
		if dex, ok := cfg.Rail.(DeviceExchanger); ok && c.hosts >= 2 && c.hosts&(c.hosts-1) == 0 {
			c.dex = dex
		}
	}
	c.ctx, c.cancel = context.WithCancelCause(context.Background())
	if w, ok := cfg.Rail.(watched); ok {
		c.watching.Add(1)
		go func() {
			defer c.watching.Done()
			select {
			case <-w.Done():
				c.fail(w.Err())
			case <-c.ctx.Done():
			}
		}()
	}
	return c, nil
}

// Err is the communicator's failure, or nil. A failure of the host's
// communicator that hier has not seen yet (it learnt of a lost peer by
// itself) fails the communicator here, so that the rail is stopped before
// the caller hears of it.
func (c *Comm) Err() error {
	if p := c.cause.Load(); p != nil {
		return *p
	}
	if err := c.local.Err(); err != nil {
		return c.fail(err)
	}
	return nil
}

// Abort fails the communicator from any goroutine.
func (c *Comm) Abort(cause error) {
	err := base.Aborted(c.rank(), cause)
	c.fail(err)
}

// fail records err as the cause, unless one is recorded, and aborts the
// host's communicator with it, so that the local peers fail too, then the
// rail. The cause is published only after both have told their kernels to
// stop: a caller that hears of the failure may free memory at once, and
// the driver's implicit wait for the device to go idle must not find a
// kernel spinning for good (ours, or NCCL's waiting for a host that is
// gone; package nccl's abort returns once NCCL's has begun, bounded).
func (c *Comm) fail(err error) error {
	c.failMu.Lock()
	defer c.failMu.Unlock()
	if p := c.cause.Load(); p != nil {
		return *p
	}
	err = base.Canonical(err, c.rank())
	c.local.Abort(err) // first: our kernels stop at once; the rail's abort may wait for the device
	if a, ok := c.rail.(aborter); ok {
		a.Abort(err)
	}
	c.cause.Store(&err)
	c.cancel(err)
	return err
}

func (c *Comm) rank() int { return c.host*c.G + c.g }

// Reserved is the host communicator's own memory.
func (c *Comm) Reserved() base.Region { return c.local.Reserved() }

// Close closes the host's communicator (acknowledged by the host's
// ranks), then the rail if it has a Close; it returns the failure, if
// any, as every rank's Close does.
func (c *Comm) Close(ctx context.Context) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil
	}
	c.closed = true
	if c.dev != nil && c.Err() == nil {
		// The scratch must outlive the work queued on it; after a
		// failure that work was aborted.
		if err := c.dev.WaitFence(c.timeout); err != nil {
			c.fail(err)
		}
	}
	if c.Err() == nil {
		if err := c.closeMeet(ctx); err != nil {
			c.fail(err)
		}
	}
	if c.dev != nil {
		// Before the host's communicator closes: its context goes with it.
		// Unless the rail's engine may still run kernels (an abort that has
		// not returned), or a graph's replay may still use the scratch
		// (replays are fenced by nothing): then a free could wait for them
		// forever, and the scratch is left to the process's end instead.
		settled := true
		if st, ok := c.rail.(settler); ok {
			settled = st.Settled(settleWait)
		}
		if settled && c.captured {
			settled = c.dev.Idle(settleWait)
		}
		if settled {
			c.freeDevice()
		}
	}
	c.cancel(base.ErrClosed)
	c.watching.Wait() // no fail may reach the host's communicator during its Close
	err := c.local.Close(ctx)
	if cl, ok := c.rail.(closer); ok {
		if cerr := cl.Close(); err == nil {
			err = cerr
		}
	}
	if ferr := c.Err(); ferr != nil {
		return ferr
	}
	return err
}

// closeMeet is Close's meeting along the rail: Close is collective
// (contract section 1), and the host's communicator's Close has only the
// host's ranks acknowledge it, so the rail's ranks acknowledge it here. A
// rank lost before its Close fails every other rank's (a kill as the
// victim entered Close went unnoticed: run 13, results/gpu/levers-2026-12-02).
// It is a call's meeting, with Close's signature (as the cpu backend's
// Close has): on host memory a host that makes another call meanwhile
// gets the same bytes along the rail and a *MismatchError on every rank,
// not a short read. A device call's signatures travel on the device
// (device.go), not here: a host that makes one against another's Close
// waits as for a skipped call, and both end in a *TimeoutError.
func (c *Comm) closeMeet(ctx context.Context) error {
	mctx, cancel := context.WithTimeout(c.ctx, c.timeout)
	defer cancel()
	defer context.AfterFunc(ctx, cancel)()
	c.seq, c.op = c.seq+1, base.OpClose
	start := time.Now()
	err := c.meet(mctx, base.Signature{Op: base.OpClose, Buffers: 1, Seq: c.seq})
	if err != nil && errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return &base.TimeoutError{Op: base.OpClose, Seq: c.seq, After: time.Since(start).Round(time.Millisecond),
			Phase: fmt.Sprintf("waiting for the other hosts to close (the rail of local rank %d)", c.g)}
	}
	return err
}

// Stage hands out memory for a staged all-reduce's input: the shim's own,
// since the input goes through the host's reduce-scatter anyway.
func (c *Comm) Stage(n int) ([]byte, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.usable(); err != nil {
		return nil, err
	}
	if c.dev != nil {
		return nil, base.Invalidf("Stage on a device communicator: its staging is StageDevice's")
	}
	if cap(c.staging) < n {
		c.staging = num.AlignedBytes(n)
	}
	c.stage.Begin(n)
	return c.staging[:n:n], nil
}

func (c *Comm) usable() error {
	if c.closed {
		return base.ErrClosed
	}
	return c.Err()
}

// Do runs one call that base.Validate accepted for the world of W ranks.
func (c *Comm) Do(req *base.Request) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.usable(); err != nil {
		return err
	}
	if c.dev != nil && req.Op != base.OpBarrier {
		return c.local.Do(req) // which refuses host memory, saying why
	}
	c.hostRed, c.scalar, c.node = req.Red, req.Scalar, req.Red.Node()
	if req.Red == num.Avg {
		c.hostRed = num.Sum
	}
	if err := c.stage.CheckRequest(req); err != nil {
		return err
	}
	c.seq, c.op = c.seq+1, req.Op
	ctx, cancel := context.WithTimeout(c.ctx, c.timeout)
	defer cancel()
	sig := req.Signature()
	sig.Seq = c.seq
	if err := c.meet(ctx, sig); err != nil {
		return c.fail(err)
	}
	var err error
	switch req.Op {
	case base.OpBarrier:
		err = c.local.Do(&base.Request{Op: base.OpBarrier})
	case base.OpAllReduceStaged:
		err = c.runHost(ctx, req, c.staging[:len(req.Out[0])], req.Out[0])
	default:
		for k := range req.Out {
			in := req.Out[k] // broadcast's buffer
			if k < len(req.In) {
				in = req.In[k]
			}
			if err = c.runHost(ctx, req, in, req.Out[k]); err != nil {
				break
			}
		}
	}
	if err != nil {
		return c.fail(err)
	}
	if req.Red == num.Avg {
		for _, out := range req.Out {
			num.Average(req.DType, out, c.hosts*c.G)
		}
	}
	return nil
}

// meet gathers every host's signature of this call along the rail: hosts
// that call different collectives (or the same with other arguments) fail
// here, before any output is written, each with every host's signature.
// A host's ranks agree among themselves: the host's communicator checks
// that at its first step.
func (c *Comm) meet(ctx context.Context, sig base.Signature) error {
	const n = 8 * proto.SignatureWords
	if len(c.sigs) < (c.hosts+1)*n {
		c.sigs = make([]byte, (c.hosts+1)*n)
	}
	mine, all := c.sigs[:n], c.sigs[n:(c.hosts+1)*n]
	for i, w := range proto.EncodeSignature(sig) {
		binary.LittleEndian.PutUint64(mine[8*i:], w)
	}
	if err := c.railGather(ctx, mine, all); err != nil {
		return err
	}
	host := func(h int) base.Signature {
		var w [proto.SignatureWords]uint64
		for i := range w {
			w[i] = binary.LittleEndian.Uint64(all[h*n+8*i:])
		}
		return proto.DecodeSignature(w)
	}
	for h := range c.hosts {
		if host(h) == sig {
			continue
		}
		// The rail knows one rank per host; the host's others called what
		// it did, or their host's communicator will say so.
		sigs := make([]base.Signature, c.hosts*c.G)
		for h := range c.hosts {
			for g := range c.G {
				sigs[h*c.G+g] = host(h)
			}
		}
		return &base.MismatchError{Signatures: sigs}
	}
	return nil
}

// railGather is Rail.AllGather, its wait bounded by ctx (the timeout). A
// rail that outlives it is a *TimeoutError; which host is missing the
// engine does not say.
func (c *Comm) railGather(ctx context.Context, send, recv []byte) error {
	err := c.rail.AllGather(ctx, send, recv)
	if err != nil && errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return &base.TimeoutError{Op: c.op, Seq: c.seq, After: c.timeout,
			Phase: fmt.Sprintf("waiting for the other hosts (the rail of local rank %d)", c.g)}
	}
	return err
}

// exchange is Exchanger.Exchange, its wait bounded as railGather's.
func (c *Comm) exchange(ctx context.Context, peer int, send, recv []byte) error {
	err := c.ex.Exchange(ctx, peer, send, recv)
	if err != nil && errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return &base.TimeoutError{Op: c.op, Seq: c.seq, After: c.timeout,
			Phase: fmt.Sprintf("waiting for host %d (the rail of local rank %d)", peer, c.g)}
	}
	return err
}
