package ncclshim

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"sync"
	"time"

	"github.com/detcoll/detcoll"
	"github.com/detcoll/detcoll/internal/core/base"
)

// transport moves one round of the setup exchange: every rank gives n
// bytes (the same n everywhere) and gets every rank's, by rank.
type transport interface {
	allGather(ctx context.Context, send []byte) ([]byte, error)
	close()
}

// rendezvous is the detcoll.Rendezvous (and FailureDetector) of one
// communicator's setup, over a transport: the real NCCL's all-gather.
//
// Every AllGather is two rounds: a fixed header (kind, length, a hash of
// the name) and the payload, padded to the longest. A rank that fails
// during the setup sends one round of kind failed with its reason (Fail),
// which its peers receive in whatever round they are in; after a failure
// was sent or seen, nobody sends another round. The setup's last round is
// the agreement (agree): everyone says whether its Open succeeded, unless
// a failure was exchanged already. So every rank sends the same rounds,
// whoever fails where. Once the setup is over (seal), Fail is local: the
// peers learn of a failure from the status words in detcoll's memory.
type rendezvous struct {
	t           transport
	world, rank int

	mu     sync.Mutex
	failed error // the first failure sent or seen; then no more rounds
	sealed bool
	done   chan struct{} // closed when failed is set
}

func newRendezvous(t transport, world, rank int) *rendezvous {
	return &rendezvous{t: t, world: world, rank: rank, done: make(chan struct{})}
}

const (
	kindData   = 1
	kindFailed = 2
	headerLen  = 16
)

// errOutOfStep means the ranks' rounds disagree: a bug, not a user's error.
var errOutOfStep = errors.New("detcoll: the ranks' setup exchanges are out of step")

// AllGather publishes value under name and returns every rank's.
func (r *rendezvous) AllGather(ctx context.Context, name string, value []byte) ([][]byte, error) {
	if err := r.Err(); err != nil {
		return nil, err
	}
	all, err := r.round(ctx, kindData, name, value)
	if err != nil {
		r.setFailed(err)
	}
	return all, err
}

// Fail sends this rank's failure to the peers, once, during the setup.
func (r *rendezvous) Fail(reason string) {
	r.mu.Lock()
	send := r.failed == nil && !r.sealed
	r.mu.Unlock()
	if !send {
		return
	}
	err := &detcoll.RankError{Rank: r.rank, Err: detcoll.ErrPeerLost, Reason: reason}
	ctx, cancel := context.WithTimeout(context.Background(), failRoundTimeout)
	defer cancel()
	r.round(ctx, kindFailed, "", []byte(reason))
	r.setFailed(err)
}

// failRoundTimeout bounds the round that carries a failure: the peers are
// in a round of their own, or about to be.
const failRoundTimeout = 10 * time.Second

// agree is the setup's last round: whether every rank's Open succeeded.
func (r *rendezvous) agree(ctx context.Context) error {
	_, err := r.AllGather(ctx, "ncclshim/agree", nil)
	return err
}

// seal ends the setup: from now on Fail tells no one.
func (r *rendezvous) seal() {
	r.mu.Lock()
	r.sealed = true
	r.mu.Unlock()
}

func (r *rendezvous) Done() <-chan struct{} { return r.done }

func (r *rendezvous) Err() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.failed
}

// setFailed records the first failure.
func (r *rendezvous) setFailed(err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.failed == nil {
		r.failed = err
		close(r.done)
	}
}

func (r *rendezvous) close() { r.t.close() }

// round exchanges one value of kind under name: the headers, then the
// payloads. A peer's failure in the headers is returned as its error,
// with the reason from its payload.
func (r *rendezvous) round(ctx context.Context, kind byte, name string, value []byte) ([][]byte, error) {
	// A failure seen meanwhile (a peer's process died: watch) ends the
	// wait with that failure.
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		select {
		case <-r.done:
			cancel()
		case <-ctx.Done():
		}
	}()
	all, err := r.exchange(ctx, kind, name, value)
	if err != nil && ctx.Err() != nil {
		if ferr := r.Err(); ferr != nil {
			err = ferr
		}
	}
	return all, err
}

func (r *rendezvous) exchange(ctx context.Context, kind byte, name string, value []byte) ([][]byte, error) {
	h := make([]byte, headerLen)
	h[0] = kind
	binary.LittleEndian.PutUint32(h[4:], uint32(len(value)))
	binary.LittleEndian.PutUint64(h[8:], nameHash(name))
	heads, err := r.t.allGather(ctx, h)
	if err != nil {
		return nil, err
	}
	if len(heads) != r.world*headerLen {
		return nil, fmt.Errorf("%w: %d header bytes", errOutOfStep, len(heads))
	}
	longest, failedRank, sameName := 0, -1, true
	for p := range r.world {
		ph := heads[p*headerLen : (p+1)*headerLen]
		longest = max(longest, int(binary.LittleEndian.Uint32(ph[4:])))
		if ph[0] == kindFailed && failedRank < 0 {
			failedRank = p
		}
		if !bytes.Equal(ph[8:16], h[8:16]) {
			sameName = false
		}
	}
	var all []byte
	if longest > 0 {
		pad := make([]byte, longest)
		copy(pad, value)
		if all, err = r.t.allGather(ctx, pad); err != nil {
			return nil, err
		}
		if len(all) != r.world*longest {
			return nil, fmt.Errorf("%w: %d payload bytes", errOutOfStep, len(all))
		}
	}
	values := make([][]byte, r.world)
	for p := range r.world {
		n := int(binary.LittleEndian.Uint32(heads[p*headerLen+4:]))
		values[p] = all[p*longest : p*longest+n]
	}
	switch {
	case failedRank >= 0:
		return nil, failureOf(failedRank, values[failedRank])
	case !sameName:
		return nil, fmt.Errorf("%w at %q", errOutOfStep, name)
	}
	return values, nil
}

// failureOf is the error a peer's failed round reports: the failure it
// encoded (detcoll's own failures carry their whole story), or its loss.
func failureOf(rank int, reason []byte) error {
	if f, ok := base.DecodeFailure(string(reason)); ok {
		return f.Err()
	}
	return &detcoll.RankError{Rank: rank, Err: detcoll.ErrPeerLost, Reason: string(reason)}
}

func nameHash(name string) uint64 {
	f := fnv.New64a()
	f.Write([]byte(name))
	return f.Sum64()
}
