package detcoll

import (
	"context"
	"errors"
	"fmt"

	"github.com/detcoll/detcoll/internal/base"
	"github.com/detcoll/detcoll/internal/store"
)

// storeRendezvous adapts the store's client to what backends need, turning
// its errors into the public ones.
type storeRendezvous struct{ c *store.Client }

func (r storeRendezvous) AllGather(ctx context.Context, name string, v []byte) ([][]byte, error) {
	all, err := r.c.AllGather(ctx, name, v)
	return all, publicError(err)
}

func (r storeRendezvous) Barrier(ctx context.Context, name string) error {
	return publicError(r.c.Barrier(ctx, name))
}

func (r storeRendezvous) Fail(reason string)    { r.c.Fail(reason) }
func (r storeRendezvous) Done() <-chan struct{} { return r.c.Done() }
func (r storeRendezvous) Err() error            { return publicError(r.c.Err()) }

// publicError maps the store's failure report to a *base.RankError: the
// culprit and kind a failed rank encoded (base.Failure), or the lost rank.
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
			return nil, nil, fmt.Errorf("host the rendezvous store at %s: %w", o.Addr, err)
		}
	}
	cl, err := store.Dial(ctx, o.Addr, o.Rank, o.WorldSize, []byte(o.Secret))
	if err != nil {
		if srv != nil {
			srv.Close()
		}
		return nil, nil, fmt.Errorf("join the rendezvous store at %s: %w", o.Addr, publicError(err))
	}
	return srv, cl, nil
}
