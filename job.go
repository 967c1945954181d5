package detcoll

import (
	"context"
	"time"

	"github.com/detcoll/detcoll/internal/core/base"
	"github.com/detcoll/detcoll/internal/job/store"
)

// LocalRanks is what a launcher's environment says of a rank's host.
type LocalRanks struct {
	// WorldSize is the number of the job's ranks on this rank's host, and
	// Rank this rank's place among them; 0 and -1 where no launcher said
	// (Options.WorldSize set by hand, or no launcher).
	WorldSize, Rank int
}

// Job is a rank's place in its job's rendezvous store, hosted by rank 0,
// before Open: for an engine that builds a transport of its own first and
// must agree on it with every rank (package nccl's rails between hosts).
// It joins as Open does and reports as Open does: a rank's failure
// reaches every other rank as the error it saw (Fail), a lost rank as a
// *RankError matching ErrPeerLost, a wait past its context's deadline as
// a *TimeoutError naming the missing ranks.
type Job struct {
	start  time.Time // of the join: the After of its timeouts
	rank   int
	server *store.Server // rank 0's
	client *store.Client
}

// JoinJob joins the job of o (its WorldSize, Rank, Addr and Secret, as
// Resolve leaves them), hosting the store on rank 0. ctx bounds the wait
// for rank 0's store.
func JoinJob(ctx context.Context, o Options) (*Job, error) {
	if o.Addr == "" {
		return nil, base.Invalidf("no rendezvous address (Options.Addr, or the launcher's MASTER_ADDR/MASTER_PORT)")
	}
	start := time.Now()
	srv, cl, err := joinStore(context.WithValue(ctx, openStart{}, start), o)
	if err != nil {
		return nil, err
	}
	return &Job{start: start, rank: o.Rank, server: srv, client: cl}, nil
}

// AllGather publishes value under name and returns every rank's value,
// indexed by rank. Every rank calls it with the same names in the same
// order; it returns early with an error when ctx ends or a rank fails.
func (j *Job) AllGather(ctx context.Context, name string, value []byte) ([][]byte, error) {
	r := storeRendezvous{j.client}
	return r.AllGather(context.WithValue(ctx, openStart{}, j.start), name, value)
}

// Rank is this rank's number in the job.
func (j *Job) Rank() int { return j.rank }

// Fail tells every other rank that this one failed, for reason (as a
// FailureDetector does); Leave with a cause says it with an error.
func (j *Job) Fail(reason string) { j.client.Fail(reason) }

// Done is closed when a rank failed or was lost; Err is then that failure,
// as every rank reports it.
func (j *Job) Done() <-chan struct{} { return j.client.Done() }

// Err is the job's failure (see Done), or nil.
func (j *Job) Err() error { return publicError(j.client.Err()) }

// Leave says goodbye to the store; rank 0's waits for every rank's
// goodbye, the job's failure or ctx, then closes the store. With a cause
// (a setup that failed on this rank), it first tells every other rank,
// and returns the cause as every rank reports it (a *RankError naming
// this rank, say); ctx may be over already: leaving then gets a moment of
// its own.
func (j *Job) Leave(ctx context.Context, cause error) error {
	if cause != nil {
		cause = base.Canonical(cause, j.rank)
		j.client.Fail(base.FailureOf(cause, j.rank).Encode())
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(context.WithoutCancel(ctx), leaveTimeout)
		defer cancel()
	}
	err := j.client.Close(ctx)
	if j.server != nil {
		if serr := j.server.Shutdown(ctx); err == nil {
			err = serr
		}
	}
	if cause != nil {
		return cause
	}
	return err
}

// leaveTimeout bounds a failed rank's leaving.
const leaveTimeout = 2 * time.Second
