package detcoll

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/detcoll/detcoll/internal/backend/cpu"
	"github.com/detcoll/detcoll/internal/backend/cuda"
	"github.com/detcoll/detcoll/internal/backend/hier"
	"github.com/detcoll/detcoll/internal/core/base"
	"github.com/detcoll/detcoll/internal/job/store"
)

// hostBackend is what a backend implements for host-memory calls.
type hostBackend interface {
	Do(req *base.Request) error
	Stage(n int) ([]byte, error)
	Abort(cause error)
	Err() error
	Close(ctx context.Context) error
	// Reserved is the backend's own memory, which no buffer of a call may
	// share (base.Bounds).
	Reserved() base.Region
}

// Comm is a communicator: this process's place in a group of WorldSize
// ranks that call collectives together.
//
// Every collective is called by every rank, in the same order, with
// matching arguments. The methods are safe for concurrent use, but a
// communicator runs one collective at a time: concurrent calls are
// serialised, which leaves their order, and so their pairing across ranks,
// to chance. Issue collectives from one goroutine per communicator.
type Comm struct {
	opts    Options
	bounds  base.Bounds // every call is checked against them, once, here
	backend hostBackend
	device  deviceBackend   // the same backend, for device calls; nil on cpu
	client  *store.Client   // nil for a single rank or a caller's Rendezvous
	server  *store.Server   // rank 0's, nil elsewhere
	user    *userRendezvous // the caller's Rendezvous, or nil

	mu     sync.Mutex // guards closed
	closed bool

	reqs requestScratch // see do1
}

// requestScratch is the Request that every host collective call fills in
// and hands to the backend, kept here so that a call allocates nothing: a
// Request built per call escapes to the heap (the backend is an
// interface), with its buffer lists, three allocations for every
// collective. mu serialises its users; the backends serialise calls
// anyway, so holding it across the call costs no concurrency.
type requestScratch struct {
	mu        sync.Mutex
	req       base.Request
	in, out   [1][]byte
	ins, outs [][]byte // the *Many calls' lists, grown and reused
	scalar    [8]byte  // PreMulSum's factor as one element
}

// do1 runs a request of one input and one output buffer (n = 1), or none
// of either (n = 0; AllReduceStaged passes its output all the same) through
// the reusable request. The buffers are dropped afterwards so that the
// communicator does not keep the caller's memory alive.
func (c *Comm) do1(op base.Op, dt DType, ops []RedOp, root int, in, out []byte, n int) error {
	r := &c.reqs
	r.mu.Lock()
	defer r.mu.Unlock()
	red, scalar, err := redOf(ops, dt, &r.scalar)
	if err != nil {
		return err
	}
	r.in[0], r.out[0] = in, out
	r.req = base.Request{Op: op, DType: dt, Red: red, Scalar: scalar, Root: root, In: r.in[:n], Out: r.out[:n]}
	if op == base.OpAllReduceStaged {
		r.req.Out = r.out[:1]
	}
	err = c.do(&r.req)
	r.in[0], r.out[0] = nil, nil
	r.req = base.Request{}
	return err
}

// Open joins this process to its job's communicator. It is collective: it
// returns when every rank has joined and mapped every peer's staging memory,
// or with an error when ctx or opts.Timeout ends first, a rank fails, or
// opts are invalid.
// Rank 0 hosts the rendezvous store at opts.Addr. Across hosts Open owns
// opts.Interconnect: a failed Open closes it (if it has a Close method),
// as Comm.Close does.
func Open(ctx context.Context, opts Options) (*Comm, error) {
	c, err := open(ctx, opts)
	if err != nil && opts.Hosts > 1 {
		if cl, ok := opts.Interconnect.(interface{ Close() error }); ok {
			cl.Close()
		}
	}
	return c, err
}

func open(ctx context.Context, opts Options) (*Comm, error) {
	o, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	if err := o.validate(); err != nil {
		return nil, err
	}
	// Open waits for every rank, so it too is bounded by the timeout.
	ctx, cancel := context.WithTimeout(context.WithValue(ctx, openStart{}, time.Now()), o.Timeout)
	defer cancel()
	c := &Comm{opts: o}
	o.Logger = o.Logger.With("rank", o.Rank, "world", o.WorldSize, "backend", o.Backend)
	var rdv base.Rendezvous
	switch {
	case o.Hosts > 1:
		// The host's own communicator rides on the interconnect's host
		// channel; the hosts meet along its rails (internal/backend/hier).
		c.user = newUserRendezvous(o.Interconnect.Host())
		rdv = c.user
	case o.Rendezvous != nil:
		c.user = newUserRendezvous(o.Rendezvous)
		rdv = c.user
	case o.WorldSize > 1:
		c.server, c.client, err = joinStore(ctx, o)
		if err != nil {
			return nil, err
		}
		rdv = storeRendezvous{c: c.client}
	}
	if o.Hosts > 1 {
		err = c.openHosts(ctx, o, rdv)
	} else {
		c.backend, c.device, err = openBackend(ctx, o, o.Rank, o.WorldSize, o.Capacity, rdv)
	}
	if err != nil {
		return nil, c.failOpen(ctx, err)
	}
	o.Logger.Info("communicator open", "capacity", o.Capacity, "timeout", o.Timeout)
	c.opts = o
	c.bounds = base.Bounds{Rank: o.Rank, World: o.WorldSize, Capacity: o.Capacity, Reserved: c.backend.Reserved()}
	return c, nil
}

// openBackend opens the backend of o for rank of world, over rdv.
func openBackend(ctx context.Context, o Options, rank, world int, capacity int64, rdv base.Rendezvous) (hostBackend, deviceBackend, error) {
	switch o.Backend {
	case "cpu":
		c, err := cpu.Open(ctx, cpu.Config{
			Rank: rank, World: world, Capacity: capacity, Timeout: o.Timeout,
			Rendezvous: rdv, Logger: o.Logger,
		})
		if err != nil {
			return nil, nil, err
		}
		return c, nil, nil
	case "cuda":
		c, err := cuda.Open(ctx, cuda.Config{
			Rank: rank, World: world, Device: o.Device, Capacity: capacity, Timeout: o.Timeout,
			Rendezvous: rdv, Logger: o.Logger,
		})
		if err != nil {
			return nil, nil, err
		}
		return c, c, nil
	}
	return nil, nil, fmt.Errorf("%w: backend %q is not built yet", ErrUnavailable, o.Backend)
}

// openHosts opens a communicator of o.Hosts hosts: the host's own
// communicator of its G ranks (whose capacity leaves room for the padding
// of an all-reduce to a multiple of G elements), and the schedule over the
// hosts.
func (c *Comm) openHosts(ctx context.Context, o Options, rdv base.Rendezvous) error {
	g := o.WorldSize / o.Hosts
	local, _, err := openBackend(ctx, o, o.Rank%g, g, o.Capacity+int64(g)*8+base.StagingAlign, rdv)
	if err != nil {
		return err
	}
	h, err := hier.New(hier.Config{Hosts: o.Hosts, Host: o.Rank / g, PerHost: g, LocalRank: o.Rank % g,
		Timeout: o.Timeout, Local: local, Rail: o.Interconnect})
	if err != nil {
		local.Close(ctx)
		return err
	}
	c.backend = h
	if o.Backend == "cuda" {
		c.device = h
	}
	return nil
}

// failOpen ends an Open that failed with err after joining the store: it
// tells the peers (who then fail the same way, see base.Failure), leaves
// the store and returns the error this rank reports.
func (c *Comm) failOpen(ctx context.Context, err error) error {
	fail := func(string) {}
	switch {
	case c.client != nil:
		fail = c.client.Fail
	case c.user != nil:
		fail = c.user.Fail
	}
	if errors.Is(err, ErrUnavailable) || c.client == nil && c.user == nil {
		// This rank cannot run the backend at all: it fails alone, and
		// its peers see it lost.
		fail(err.Error())
		c.closeStore(ctx)
		return err
	}
	err = base.Canonical(err, c.opts.Rank)
	fail(base.FailureOf(err, c.opts.Rank).Encode())
	c.closeStore(ctx)
	return err
}

// Rank is this process's rank, in [0, WorldSize).
func (c *Comm) Rank() int { return c.opts.Rank }

// WorldSize is the number of ranks.
func (c *Comm) WorldSize() int { return c.opts.WorldSize }

// Options returns the options in effect, defaults filled in.
func (c *Comm) Options() Options { return c.opts }

// Err returns the failure that poisoned the communicator, or nil. Once a
// call fails on a protocol error (timeout, mismatch, lost peer, abort),
// every later call returns the same cause; Close the communicator and
// open a new one.
func (c *Comm) Err() error {
	return c.backend.Err()
}

// Abort fails the communicator from any goroutine: a call in progress on
// this rank returns promptly with an error matching ErrAborted and wrapping
// cause, and every peer's calls fail with a *RankError naming this rank.
func (c *Comm) Abort(cause error) {
	if cause == nil {
		cause = errors.New("no reason given")
	}
	c.backend.Abort(cause)
}

// Close ends the communicator. On a healthy communicator it is collective
// and acknowledged: it returns once every peer has called Close too and
// finished with this rank's memory, or with an error when ctx, the timeout
// or a failure ends the wait. Either way it then releases everything. It
// returns nil if the communicator never failed, and its failure (Err)
// otherwise, whether that came before Close or during it: so every rank's
// Close says the same. Close is idempotent: later calls return nil; every
// other call after it returns ErrClosed.
func (c *Comm) Close(ctx context.Context) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil
	}
	c.closed = true
	// Close waits for peers, so it too is bounded by the timeout.
	ctx, cancel := context.WithTimeout(ctx, c.opts.Timeout)
	defer cancel()
	err := c.backend.Close(ctx)
	if ferr := c.backend.Err(); ferr != nil {
		err = ferr // the failure, before Close or during it: the same on every rank
	}
	// Once the backend's Close is acknowledged by every peer, the store
	// has nothing left to say that matters to this rank: a peer that dies
	// before its goodbye has already finished with us.
	if serr := c.closeStore(ctx); serr != nil {
		c.opts.Logger.Warn("leaving the rendezvous store", "err", serr)
	}
	c.opts.Logger.Info("communicator closed", "err", err)
	return err
}

// closeStore leaves the rendezvous: every rank says goodbye, and rank 0's
// server waits for all goodbyes (or the job's failure, or ctx) before it
// stops, so that no rank still closing sees it vanish.
func (c *Comm) closeStore(ctx context.Context) error {
	var err error
	if c.client != nil {
		err = c.client.Close(ctx)
	}
	if c.server != nil {
		if serr := c.server.Shutdown(ctx); err == nil {
			err = serr
		}
	}
	return err
}

func (c *Comm) isClosed() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.closed
}

// do validates a request and runs it.
func (c *Comm) do(req *base.Request) error {
	if c.isClosed() {
		return ErrClosed
	}
	// A failed communicator reports its cause first, even for a call
	// that is also malformed.
	if err := c.backend.Err(); err != nil {
		return err
	}
	if err := c.bounds.Validate(req); err != nil {
		return err
	}
	return c.backend.Do(req)
}
