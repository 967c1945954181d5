package detcoll

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/detcoll/detcoll/internal/backend/hier"
	"github.com/detcoll/detcoll/internal/core/base"
	"github.com/detcoll/detcoll/internal/job/store"
)

// storeRendezvous adapts the store's client to what backends need, turning
// its errors into the public ones (see base.Failure): a failed or lost rank,
// a wait that outlived Open's deadline, a refused join.
type storeRendezvous struct{ c *store.Client }

func (r storeRendezvous) AllGather(ctx context.Context, name string, v []byte) ([][]byte, error) {
	all, err := r.c.AllGather(ctx, name, v)
	return all, r.openError(ctx, err, func(ctx context.Context) ([]int, error) { return r.c.AllGatherMissing(ctx, name) })
}

func (r storeRendezvous) Barrier(ctx context.Context, name string) error {
	return r.openError(ctx, r.c.Barrier(ctx, name), func(ctx context.Context) ([]int, error) { return r.c.BarrierMissing(ctx, name) })
}

func (r storeRendezvous) Fail(reason string)    { r.c.Fail(reason) }
func (r storeRendezvous) Done() <-chan struct{} { return r.c.Done() }
func (r storeRendezvous) Err() error            { return publicError(r.c.Err()) }

// openError is publicError for a wait of Open at the store: when ctx's
// deadline ended it, the store names the ranks that had not arrived
// (missing asks it), so that every rank blames them and not the first rank
// to give up.
func (r storeRendezvous) openError(ctx context.Context, err error, missing func(context.Context) ([]int, error)) error {
	if err == nil || !errors.Is(err, context.DeadlineExceeded) || ctx.Err() == nil {
		return publicError(err)
	}
	te := &base.TimeoutError{Op: base.OpOpen, Phase: "waiting for every rank to join", After: openElapsed(ctx)}
	// ctx is over, so the question gets a moment of its own.
	qctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), missingQueryTimeout)
	defer cancel()
	if m, qerr := missing(qctx); qerr == nil {
		te.Missing = m
	} else if perr := publicError(r.c.Err()); perr != nil {
		return perr // the job failed meanwhile: that is the cause
	}
	return te
}

// missingQueryTimeout bounds the question to the store, after Open's
// deadline, of which ranks had not arrived.
const missingQueryTimeout = 500 * time.Millisecond

// openStart is the context key of the time Open started, for the After of
// its timeouts.
type openStart struct{}

func openElapsed(ctx context.Context) time.Duration {
	if t, ok := ctx.Value(openStart{}).(time.Time); ok {
		return time.Since(t).Round(time.Millisecond)
	}
	return 0
}

// publicError maps the store's failure report to the error every rank
// reports for it: the failure a failed rank encoded (base.Failure), or a
// *base.RankError naming the lost rank.
func publicError(err error) error {
	var pe *store.PeerError
	if errors.As(err, &pe) {
		if f, ok := base.DecodeFailure(pe.Reason); ok {
			return f.Err()
		}
		return &base.RankError{Rank: pe.Rank, Reason: pe.Reason, Err: base.ErrPeerLost}
	}
	return err
}

// joinStore connects this rank to the job's store, hosting it on rank 0.
func joinStore(ctx context.Context, o Options) (*store.Server, *store.Client, error) {
	var srv *store.Server
	if o.Rank == 0 {
		var err error
		srv, err = store.Listen(o.Addr, o.WorldSize, []byte(o.Secret))
		if err != nil {
			// The launcher may hold the address with the job's failure
			// (a rank died before rank 0 listened: store.Tombstone): then
			// that is the story. Anything else there is not ours.
			dctx, cancel := context.WithTimeout(ctx, time.Second)
			defer cancel()
			var pe *store.PeerError
			cl, derr := store.Dial(dctx, o.Addr, o.Rank, o.WorldSize, []byte(o.Secret))
			if errors.As(derr, &pe) {
				return nil, nil, publicError(derr)
			}
			if cl != nil {
				cl.Close(dctx)
			}
			return nil, nil, fmt.Errorf("%w: host the rendezvous store at %s: %w", ErrUnavailable, o.Addr, err)
		}
	}
	cl, err := store.Dial(ctx, o.Addr, o.Rank, o.WorldSize, []byte(o.Secret))
	if err != nil {
		if srv != nil {
			srv.Close()
		}
		switch {
		case errors.Is(err, store.ErrAuth):
			// This rank's options disagree with the job's (secret, world
			// size, rank): the store cannot tell the others, whose Open
			// times out naming this rank as missing.
			return nil, nil, &base.RankError{Rank: o.Rank, Err: ErrInvalid,
				Reason: fmt.Sprintf("the rendezvous store at %s refused this rank: %v", o.Addr, err)}
		case errors.Is(err, context.DeadlineExceeded):
			return nil, nil, &base.TimeoutError{Op: base.OpOpen, Missing: []int{0}, After: openElapsed(ctx),
				Phase: fmt.Sprintf("connecting to the rendezvous store at %s, hosted by rank 0", o.Addr)}
		}
		var pe *store.PeerError
		if errors.As(err, &pe) {
			return nil, nil, publicError(err) // the job failed before we joined
		}
		// The server went away during the handshake: rank 0 is lost.
		return nil, nil, &base.RankError{Rank: 0, Err: ErrPeerLost, Reason: fmt.Sprintf("joining the rendezvous store at %s: %v", o.Addr, err)}
	}
	return srv, cl, nil
}

// Rendezvous is a caller's channel between its ranks, for Open's setup
// exchange (Options.Rendezvous).
type Rendezvous interface {
	// AllGather publishes value under name and returns every rank's
	// value, indexed by rank. Every rank calls it with the same names in
	// the same order; it returns early with an error when ctx ends.
	AllGather(ctx context.Context, name string, value []byte) ([][]byte, error)
}

// FailureDetector is a Rendezvous that also carries failures: it tells
// every other rank that this one failed, and reports when another did.
type FailureDetector interface {
	// Fail tells every other rank that this rank failed and why.
	Fail(reason string)
	// Done is closed when another rank failed or was lost.
	Done() <-chan struct{}
	// Err is that failure once Done is closed: an error of this package
	// (a *RankError naming the rank, say); any other error reads as the
	// loss of a peer it does not name.
	Err() error
}

// userRendezvous adapts a caller's Rendezvous to what backends need.
type userRendezvous struct {
	r  Rendezvous
	fd FailureDetector // r, if it is one; else nil
}

func newUserRendezvous(r Rendezvous) *userRendezvous {
	u := &userRendezvous{r: r}
	u.fd, _ = r.(FailureDetector)
	return u
}

func (u *userRendezvous) AllGather(ctx context.Context, name string, v []byte) ([][]byte, error) {
	return u.r.AllGather(ctx, name, v)
}

func (u *userRendezvous) Barrier(ctx context.Context, name string) error {
	_, err := u.r.AllGather(ctx, name, nil)
	return err
}

func (u *userRendezvous) Fail(reason string) {
	if u.fd != nil {
		u.fd.Fail(reason)
	}
}

// Done never closes without a FailureDetector: a nil channel.
func (u *userRendezvous) Done() <-chan struct{} {
	if u.fd == nil {
		return nil
	}
	return u.fd.Done()
}

func (u *userRendezvous) Err() error {
	if u.fd == nil {
		return nil
	}
	err := u.fd.Err()
	var re *RankError
	var te *TimeoutError
	var me *MismatchError
	if err == nil || errors.As(err, &re) || errors.As(err, &te) || errors.As(err, &me) {
		return err
	}
	return fmt.Errorf("%w: %v", ErrPeerLost, err)
}

// Interconnect carries a communicator's traffic between hosts
// (Options.Hosts): the setup of each host's own communicator, and the
// rails, which join the ranks of one local rank, one per host. An
// implementation rides on an engine the job has already (Open MPI, NCCL):
// packages mpi and nccl have one. It may add capabilities, which Open
// finds by their methods: RailExchanger (halving along the rail),
// DeviceInterconnect and DeviceRailExchanger (the cuda backend's rails),
// FailureSource, Aborter and Settler (failures), and io.Closer (called by
// Comm.Close, after the host's communicator closed).
type Interconnect interface {
	// Host is the channel among this rank's host's ranks, for the setup
	// of the host's communicator (its Open). If it is a FailureDetector
	// too, the host's communicator watches it.
	Host() Rendezvous
	// AllGather gathers len(send) bytes from every rank of this rank's
	// rail into recv (Hosts x len(send) bytes), in host order. It returns
	// early with an error when ctx ends.
	AllGather(ctx context.Context, send, recv []byte) error
}

// The capabilities an Interconnect may add.
type (
	// RailExchanger sends send to the rail's rank on host peer and
	// receives len(recv) bytes from it, at once: with a power of two of
	// hosts, all-reduces and reduce-scatters then halve along the rail,
	// moving the bandwidth-optimal share.
	RailExchanger interface {
		Exchange(ctx context.Context, peer int, send, recv []byte) error
	}
	// DeviceInterconnect also moves device memory, queued on the call's
	// stream in order with the host's calls: what the cuda backend needs
	// across hosts. AllGatherDevice gathers n bytes at send from every
	// rank of the rail into recv, in host order.
	DeviceInterconnect interface {
		Interconnect
		AllGatherDevice(send, recv uint64, n int, stream uintptr) error
	}
	// DeviceRailExchanger is RailExchanger for device memory, queued on
	// stream s: with a power of two of hosts, device reduce-scatters (and
	// all-reduces from four hosts) halve along the rail.
	DeviceRailExchanger interface {
		ExchangeDevice(peer int, send uint64, sendN int, recv uint64, recvN int, s uintptr) error
	}
	// FailureSource learns of failures by itself (NCCL's asynchronous
	// errors, a lost process): Done closes then, and Err says which; the
	// communicator fails with it.
	FailureSource interface {
		Done() <-chan struct{}
		Err() error
	}
	// Aborter stops the work it queued when the communicator fails.
	Aborter interface{ Abort(cause error) }
	// Settler says whether the abort has returned within d: until it
	// has, Close leaves device memory the engine's kernels may still use.
	Settler interface{ Settled(d time.Duration) bool }
)

// The capabilities are package hier's, which finds them by their methods;
// these three it names (the others it declares unexported, with the same
// methods).
var (
	_ hier.Exchanger       = RailExchanger(nil)
	_ hier.DeviceRail      = DeviceInterconnect(nil)
	_ hier.DeviceExchanger = DeviceRailExchanger(nil)
)
