// Package coord opens, for a tool, a communicator beside a small cpu one
// of the same ranks: a cuda communicator makes device calls only, and
// the tools around it (bench, soak, verify) also need host calls:
// gathering samples or results, passing NCCL's id, agreeing on outcomes.
//
// It imports the root package and internal/job/jobenv. The library must never
// import it (it would be a cycle, and it is a tool's concern).
package coord

import (
	"context"
	"encoding/binary"
	"fmt"
	"net"
	"strconv"

	"github.com/detcoll/detcoll"
	"github.com/detcoll/detcoll/internal/job/jobenv"
)

// Open opens a cpu communicator of job at its rendezvous, with capacity
// bytes, for what the caller does on host memory, then the communicator
// opts describes at a second rendezvous address that rank 0 picks (a free
// port on the rendezvous host) and passes on through the first: two
// stores cannot share a port. It is collective: every rank of job calls
// it. On error nothing stays open.
func Open(ctx context.Context, job jobenv.Job, capacity int64, opts detcoll.Options) (host, c *detcoll.Comm, err error) {
	return OpenWith(ctx, job, capacity, opts, nil)
}

// OpenWith is Open with prepare applied to opts (its address set) before
// the second communicator opens: nccl.Options, for one across hosts. The
// cpu communicator beside it is of one machine: across hosts the tools run
// virtual hosts.
func OpenWith(ctx context.Context, job jobenv.Job, capacity int64, opts detcoll.Options,
	prepare func(context.Context, detcoll.Options) (detcoll.Options, error)) (host, c *detcoll.Comm, err error) {
	host, err = detcoll.Open(ctx, detcoll.Options{Backend: "cpu", Capacity: capacity, Timeout: opts.Timeout})
	if err != nil {
		return nil, nil, fmt.Errorf("open the coordinating cpu communicator: %w", err)
	}
	name, _, err := net.SplitHostPort(job.Addr)
	if err != nil {
		host.Close(ctx)
		return nil, nil, fmt.Errorf("rendezvous address %q: %w", job.Addr, err)
	}
	var port [8]byte
	if host.Rank() == 0 {
		p, err := freePort(name)
		if err != nil {
			host.Abort(err)
			host.Close(ctx)
			return nil, nil, err
		}
		binary.LittleEndian.PutUint64(port[:], uint64(p))
	}
	if err := detcoll.Broadcast(host, port[:], 0); err != nil {
		host.Close(ctx)
		return nil, nil, fmt.Errorf("pass on the %s communicator's address: %w", opts.Backend, err)
	}
	opts.Addr = net.JoinHostPort(name, strconv.FormatUint(binary.LittleEndian.Uint64(port[:]), 10))
	if prepare != nil {
		if opts, err = prepare(ctx, opts); err != nil {
			host.Abort(err)
			host.Close(ctx)
			return nil, nil, err
		}
	}
	c, err = detcoll.Open(ctx, opts)
	if err != nil {
		host.Abort(err)
		host.Close(ctx)
		return nil, nil, err
	}
	return host, c, nil
}

// freePort returns a TCP port on host that nothing listens on now.
func freePort(host string) (int, error) {
	l, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
	if err != nil {
		return 0, fmt.Errorf("find a free port for a second rendezvous: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
