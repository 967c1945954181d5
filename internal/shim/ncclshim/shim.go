package ncclshim

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/detcoll/detcoll"
	"github.com/detcoll/detcoll/internal/binding/nccl"
	railnccl "github.com/detcoll/detcoll/nccl"
)

// Real is what the shim needs of the real NCCL besides forwarding calls.
// The C boundary implements it over the real library's functions.
type Real interface {
	// AllGather queues NCCL's all-gather of n bytes from every rank of h
	// on stream s (recv holds world*n bytes); InProgress when h is
	// nonblocking and the queuing goes on (AsyncError says when it ends).
	AllGather(h Handle, send, recv uintptr, n int, s uintptr) nccl.Result
	// Reduction makes a reduction call with the real NCCL: one that was
	// deferred to the end of its group and then could not be served.
	Reduction(c Call) nccl.Result
	// RedOpDestroy is NCCL's ncclRedOpDestroy of op on h: an operator
	// destroyed inside a group whose deferred call takes it, destroyed
	// once the group's calls ran (groups.destroyLater).
	RedOpDestroy(h Handle, op nccl.RedOp) nccl.Result
	CommCount(h Handle) (int, nccl.Result)
	CommUserRank(h Handle) (int, nccl.Result)
	CommCuDevice(h Handle) (int, nccl.Result)
	// AsyncError is ncclCommGetAsyncError's state of h: InProgress while
	// a nonblocking communicator is still queuing its last call.
	AsyncError(h Handle) nccl.Result
}

// Collectives is what the shim needs of a detcoll communicator; a
// *detcoll.Comm is one.
type Collectives interface {
	AllReduceDevice(in, out detcoll.DevicePtr, count int, dt detcoll.DType, s detcoll.Stream, op ...detcoll.RedOp) error
	ReduceScatterDevice(in, out detcoll.DevicePtr, recvCount int, dt detcoll.DType, s detcoll.Stream, op ...detcoll.RedOp) error
	Err() error
	Abort(cause error)
	Close(ctx context.Context) error
}

// Device is the device memory and streams the shim uses itself, in the
// calling thread's current context (the application's).
type Device interface {
	// Ready says whether the device can be used at all (the CUDA driver
	// loads); a communicator cannot be served without it.
	Ready() error
	Alloc(n int) (uintptr, error)
	Free(p uintptr)
	CopyIn(dst uintptr, src []byte) error
	CopyOut(dst []byte, src uintptr) error
	// CopyAsync queues a copy of n bytes of device memory on stream s.
	CopyAsync(dst, src uintptr, n int, s uintptr) error
	NewStream() (uintptr, error)
	DestroyStream(s uintptr)
	// Follow makes work queued on ours from now on wait for the work
	// queued on theirs so far, without the host waiting. Where that
	// cannot be (one stream captures a CUDA graph and the other does
	// not, or they capture different graphs) it does nothing: a capture's
	// replays are ordered by whoever launches them.
	Follow(ours, theirs uintptr) error
	// Fork is Follow without the exceptions: ours waits for theirs even
	// when theirs is capturing and ours is not, which brings ours into
	// the capture (a fork of it; the caller joins ours back with Fork
	// the other way round before the capture ends).
	Fork(ours, theirs uintptr) error
	// Done reports whether the work queued on s is done.
	Done(s uintptr) (bool, error)
	Capturing(s uintptr) (bool, error)
}

// OpenFunc opens the detcoll communicator of one NCCL communicator.
type OpenFunc func(ctx context.Context, o detcoll.Options) (Collectives, error)

// OpenDetcoll is the OpenFunc of the library: detcoll.Open.
func OpenDetcoll(ctx context.Context, o detcoll.Options) (Collectives, error) {
	c, err := detcoll.Open(ctx, o)
	if err != nil {
		return nil, err
	}
	return detcollComm{c}, nil
}

// Shim is the state of the library: the communicators it knows and how
// each is served. Its methods are safe for concurrent use; those of one
// communicator run one at a time, as NCCL requires of its callers.
type Shim struct {
	real     Real
	dev      Device
	open     OpenFunc
	rails    RailsFunc // across hosts
	settings Settings
	getpid   func() int
	self     func(pid int) identity // this process's identity
	alive    func(identity) bool    // whether a peer's process still runs
	backend  string                 // of the detcoll communicators: "cuda" (tests: "cpu")

	mu      sync.Mutex
	comms   map[Handle]*comm // guarded by mu
	discard map[int]region   // guarded by mu: per device, Reduce's results off the root
	// gathering is the bytes of the communicators' reduce-scatter
	// gathering memory now (the report's).
	gathering atomic.Int64

	groups groups  // the calls deferred to the end of their group
	rec    *record // what went where, when Settings.Report asks for it

	lastMu  sync.Mutex
	lastErr string // guarded by lastMu: the text of the last error the shim returned

	// Warn, if set, hears why a call left detcoll: handed to the real
	// NCCL (delegate mode) or refused (strict). The C boundary prints each
	// reason once.
	Warn func(why string, refused bool)
	// Debug, if set, hears how each communicator's setup ended
	// (DETCOLL_NCCL_DEBUG=1 prints it).
	Debug func(line string)
}

// New returns a shim over real, with the detcoll communicators that open
// makes.
func New(real Real, dev Device, open OpenFunc, s Settings) *Shim {
	sh := &Shim{real: real, dev: dev, open: open, rails: railnccl.Rails, settings: s, getpid: osGetpid, self: selfIdentity, alive: processAlive,
		backend: "cuda", comms: map[Handle]*comm{}, discard: map[int]region{}}
	sh.groups.calls = map[uint64][]*pendingCall{}
	if s.Report != "" {
		sh.rec = newRecord()
	}
	return sh
}

// state is how detcoll serves a communicator.
type state int

const (
	pending  state = iota // not set up yet: at its first served reduction
	served                // c.dc makes its reductions
	unserved              // detcoll cannot serve it (c.why): its reductions are handed
	broken                // the detcoll communicator failed (c.err): every reduction returns it
)

// comm is one NCCL communicator as the shim sees it.
type comm struct {
	h           Handle
	world, rank int // -1 until setup asks the real NCCL (a split communicator)
	device      int // the CUDA device, -1 until setup asks the real NCCL

	// ctx ends at Abort, which stops a setup in progress; active is the
	// detcoll communicator for Abort and AsyncError, which must not wait
	// for a call in progress (Abort is what ends it).
	ctx    context.Context
	cancel context.CancelFunc
	active atomic.Pointer[active]

	// premuls are the operators ncclRedOpCreatePreMulSum made on the
	// communicator (premul.go), under a lock of their own: a creation
	// must not wait for a setup in progress under mu.
	opsMu   sync.Mutex
	premuls map[nccl.RedOp]*premul // guarded by opsMu

	mu        sync.Mutex // one call at a time; guards the fields below
	state     state
	why       string // unserved: why
	err       error  // broken: the failure
	dc        Collectives
	rdv       *rendezvous
	stopWatch chan struct{} // closed to stop the watch of the peers' processes
	hosts     int           // served across this many machines (hosts.go); 0 or 1: one
	capacity  int64         // the largest piece of a call, bytes per rank
	buffer    int64         // device bytes of detcoll's buffer (the report's)
	// last is the stream of the last call queued on dc (valid when
	// queued): the next call on another stream follows it (order.go).
	last   uintptr
	queued bool
	side   uintptr // the stream a group's served calls run on, beside its other operations (0 until needed)
	gather region  // a reduce-scatter's pieces, gathered (0 until one is larger than the capacity)
	// windows are detcoll's side of the real NCCL's windows (window.go),
	// by the real ncclWindow_t.
	windows map[uintptr]Deregisterer
}

type active struct{ dc Collectives }

func newComm(h Handle, world, rank, device int) *comm {
	c := &comm{h: h, world: world, rank: rank, device: device}
	c.ctx, c.cancel = context.WithCancel(context.Background())
	return c
}

// activeDC is c's detcoll communicator, or nil, without c.mu.
func (c *comm) activeDC() Collectives {
	if a := c.active.Load(); a != nil {
		return a.dc
	}
	return nil
}

// Init records a communicator the real NCCL created (ncclCommInitRank and
// its variants; ncclCommSplit and ncclCommShrink with world and rank -1:
// the setup asks the real communicator). Its detcoll side is set up at
// its first served reduction, or now under SetupAtInit when ready (the
// real one is usable now: a blocking init, outside a group), which keeps
// the setup out of a later graph capture.
func (s *Shim) Init(h Handle, world, rank int, ready bool) nccl.Result {
	c := newComm(h, world, rank, -1)
	s.mu.Lock()
	s.comms[h] = c
	s.mu.Unlock()
	if ready && s.settings.Setup == SetupAtInit {
		c.mu.Lock()
		defer c.mu.Unlock()
		s.setup(c, 0)
	}
	return nccl.Success
}

// InitAll records the communicators of ncclCommInitAll: ranks of one
// process, which detcoll's IPC cannot join; their reductions are handed.
func (s *Shim) InitAll(hs []Handle, devices []int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for r, h := range hs {
		c := newComm(h, len(hs), r, devices[r])
		c.state, c.why = unserved, "its ranks are one process (ncclCommInitAll), which detcoll's IPC cannot join"
		s.comms[h] = c
	}
}

func (s *Shim) lookup(h Handle) *comm {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.comms[h]
}

func (s *Shim) forget(h Handle) *comm {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.comms[h]
	delete(s.comms, h)
	return c
}

// closeTimeout bounds Close of a detcoll communicator in Destroy, Abort
// and Finalize.
const closeTimeout = 30 * time.Second

// Finalize is ncclCommFinalize: detcoll's communicator closes, collectively
// (every rank finalizes), before the real one is finalized.
func (s *Shim) Finalize(h Handle) nccl.Result {
	c := s.lookup(h)
	if c == nil {
		return nccl.Success
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return s.closeLocked(c, nil)
}

// Destroy is ncclCommDestroy: what Finalize left of detcoll's
// communicator goes; the shim forgets h.
func (s *Shim) Destroy(h Handle) nccl.Result {
	c := s.forget(h)
	if c == nil {
		return nccl.Success
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return s.closeLocked(c, nil)
}

// Abort is ncclCommAbort: detcoll's kernels stop at once (the abort
// word), then its communicator is released without waiting for peers
// longer than its bound.
func (s *Shim) Abort(h Handle) {
	c := s.forget(h)
	if c == nil {
		return
	}
	c.cancel()
	if dc := c.activeDC(); dc != nil {
		dc.Abort(errors.New("ncclCommAbort"))
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	s.closeLocked(c, errors.New("aborted"))
}

// closeLocked closes c's detcoll communicator, if any, and frees what the
// shim allocated for c. A Close that reports the communicator's failure
// is not an error of Destroy: NCCL's destroy succeeds on a failed
// communicator too.
func (s *Shim) closeLocked(c *comm, why error) nccl.Result {
	failed := c.state == broken
	if c.dc != nil {
		ctx, cancel := context.WithTimeout(context.Background(), closeTimeout)
		if err := c.dc.Close(ctx); err != nil {
			failed = true
		}
		cancel()
		c.dc = nil
		c.active.Store(nil)
		c.windows = nil // Close gave them back
	}
	c.cancel()
	if c.stopWatch != nil {
		close(c.stopWatch)
		c.stopWatch = nil
	}
	if c.rdv != nil {
		c.rdv.close()
		c.rdv = nil
	}
	// After a failure, work queued on the gathering scratch may not have
	// run out (a kernel that waited for a dead peer): it is left rather
	// than freed under it.
	if c.gather.ptr != 0 && !failed {
		s.dev.Free(c.gather.ptr)
		s.gathering.Add(-c.gather.size)
	}
	c.gather = region{}
	if c.side != 0 {
		s.dev.DestroyStream(c.side)
		c.side = 0
	}
	if c.state == served || c.state == pending {
		c.state, c.why = unserved, "the communicator was finalized"
		if why != nil {
			c.why = why.Error()
		}
	}
	return nccl.Success
}

// AsyncError is ncclCommGetAsyncError's share of detcoll: the failure of
// h's detcoll communicator, as an NCCL result (Success while healthy).
func (s *Shim) AsyncError(h Handle) nccl.Result {
	c := s.lookup(h)
	if c == nil {
		return nccl.Success
	}
	dc := c.activeDC()
	if dc == nil {
		return nccl.Success
	}
	if err := dc.Err(); err != nil {
		s.setLast(err)
		return resultOf(err)
	}
	return nccl.Success
}

// LastError is the text of the last error the shim returned, or "".
func (s *Shim) LastError() string {
	s.lastMu.Lock()
	defer s.lastMu.Unlock()
	return s.lastErr
}

func (s *Shim) setLast(err error) {
	s.lastMu.Lock()
	s.lastErr = err.Error()
	s.lastMu.Unlock()
}

// fail records err as the last error and returns its result.
func (s *Shim) fail(err error) nccl.Result {
	s.setLast(err)
	return resultOf(err)
}

// handOff is the answer for a call detcoll does not serve: handed to the
// real NCCL (delegate) or refused with ncclInvalidUsage (strict). Either
// way the user hears why, once per reason (Warn). A call whose NCCL
// result is the same in any order (exact) is handed silently in both
// modes: it costs no determinism.
func (s *Shim) handOff(k callKey, format string, args ...any) (nccl.Result, Verdict) {
	why := fmt.Sprintf(format, args...)
	if exact(k.dt, k.op) {
		s.rec.count(k, outcomeExact, why)
		return nccl.Success, Handed
	}
	refused := s.settings.Mode == Strict
	if s.Warn != nil {
		s.Warn(why, refused)
	}
	if refused {
		s.rec.count(k, outcomeRefused, why)
		s.setLast(fmt.Errorf("detcoll: %s (%s=strict)", why, EnvMode))
		return nccl.InvalidUsage, Done
	}
	s.rec.count(k, outcomeHanded, why)
	return nccl.Success, Handed
}
