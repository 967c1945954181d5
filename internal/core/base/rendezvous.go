package base

import "context"

// Rendezvous is what a backend needs from the job's rendezvous store: to
// exchange setup data, to meet at barriers, and to hear about failures.
// Errors it returns already match this package's sentinels (a lost or failed
// peer is a *RankError matching ErrPeerLost).
type Rendezvous interface {
	// AllGather publishes value under name and returns every rank's value,
	// indexed by rank.
	AllGather(ctx context.Context, name string, value []byte) ([][]byte, error)
	// Barrier returns when every rank reached the barrier called name.
	Barrier(ctx context.Context, name string) error
	// Fail tells every other rank that this rank failed and why.
	Fail(reason string)
	// Done is closed when the job failed: a peer was lost or failed.
	Done() <-chan struct{}
	// Err is the cause once Done is closed.
	Err() error
}
