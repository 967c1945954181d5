package nccl

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"time"

	"github.com/detcoll/detcoll"
	"github.com/detcoll/detcoll/internal/core/base"
	"github.com/detcoll/detcoll/internal/core/settings"
	"github.com/detcoll/detcoll/internal/job/jobenv"
	"github.com/detcoll/detcoll/internal/job/store"
)

// EnvVirtualHosts names the variable that splits the ranks into hosts by
// number rather than by machine (package mpi reads the same one).
const EnvVirtualHosts = settings.VirtualHosts

// Options returns o with Backend "cuda", Hosts and Interconnect set for a
// communicator across hosts, and WorldSize, Rank, Addr, Secret and Device
// filled in from the launcher's environment where o leaves them unset (as
// Open does). It is collective: every rank of the job calls it, and it
// returns when every rail's NCCL communicators are up, or with an error
// when ctx or o.Timeout ends first or a rank fails. With one host it sets
// no Hosts and no Interconnect: Open needs no rails then. Open owns the
// Interconnect it returns (Comm.Close, or a failed Open, closes it).
func Options(ctx context.Context, o detcoll.Options) (detcoll.Options, error) {
	o.Backend = "cuda"
	if o.Timeout == 0 {
		o.Timeout = detcoll.DefaultTimeout
	}
	localWorld, localRank := 0, -1
	if o.WorldSize == 0 {
		job, found, err := jobenv.FromEnv(os.Getenv)
		if err != nil {
			return o, fmt.Errorf("%w: %w", base.ErrInvalid, err)
		}
		if !found {
			return o, base.Invalidf("nccl: no launcher's environment (RANK, WORLD_SIZE, ...): start the job with detcoll run, torchrun or srun, or set Options.WorldSize, Rank and Addr")
		}
		o.WorldSize, o.Rank, localWorld, localRank = job.World, job.Rank, job.LocalWorld, job.LocalRank
		if o.Addr == "" {
			o.Addr = job.Addr
		}
		if o.Secret == "" {
			o.Secret = job.Secret
		}
	}
	if o.Secret == "" {
		o.Secret = settings.Get(settings.Secret)
	}
	perHost, virtual, err := hostSize(o.WorldSize, localWorld, o.Hosts)
	if err != nil {
		return o, err
	}
	if o.Device == 0 || o.Device == -1 {
		// Open would take the local rank from the launcher, but with
		// WorldSize filled in here it no longer reads the launcher.
		switch {
		case perHost < o.WorldSize:
			o.Device = o.Rank % perHost
		case localRank >= 0:
			o.Device = localRank
		}
	}
	if perHost == o.WorldSize {
		return o, nil // one host
	}
	if perHost&(perHost-1) != 0 {
		return o, base.Invalidf("nccl: %d ranks per host: across hosts detcoll needs a power of two, so that the flat tree over all ranks is a tree over the hosts' trees", perHost)
	}
	hosts, host := o.WorldSize/perHost, o.Rank/perHost
	if hosts > maxGatheredHosts && hosts&(hosts-1) != 0 {
		return o, base.Invalidf("nccl: %d hosts: the cuda backend adds at most %d hosts' sums in one kernel (a power of two of hosts halves instead, with no limit)", hosts, maxGatheredHosts)
	}
	if virtual && os.Getenv("NCCL_HOSTID") == "" {
		// NCCL tells hosts apart by this (its host hash): a virtual host
		// of its own makes NCCL connect the rail through its network
		// transport, and accept two ranks on one GPU.
		name, _ := os.Hostname()
		os.Setenv("NCCL_HOSTID", fmt.Sprintf("%s/detcoll-virtual-host-%d", name, host))
	}
	ctx, cancel := context.WithTimeout(ctx, o.Timeout)
	defer cancel()
	m, err := join(ctx, o)
	if err != nil {
		return o, err
	}
	if !virtual {
		if err := checkHosts(ctx, m, o.Rank, perHost); err != nil {
			return o, m.fail(ctx, err)
		}
	}
	ic, err := openRails(ctx, m, o, hosts, host, perHost)
	if err != nil {
		return o, m.fail(ctx, err)
	}
	o.Hosts, o.Interconnect = hosts, ic
	return o, nil
}

// maxGatheredHosts is internal/backend/cuda's maxLeaves: the most hosts whose sums
// one kernel adds, when the rail gathers.
const maxGatheredHosts = 256

// hostSize is the ranks per host: from DETCOLL_VIRTUAL_HOSTS, else from
// Options.Hosts, else the launcher's local world size (1 when it gives
// none: a rank per host).
func hostSize(world, localWorld, hosts int) (perHost int, virtual bool, err error) {
	if v := settings.Get(EnvVirtualHosts); v != "" {
		h, err := strconv.Atoi(v)
		if err != nil || h < 1 || world%h != 0 {
			return 0, false, base.Invalidf("nccl: %s=%q: want a divisor of the %d ranks", EnvVirtualHosts, v, world)
		}
		return world / h, true, nil
	}
	if hosts > 0 {
		if world%hosts != 0 {
			return 0, false, base.Invalidf("nccl: Options.Hosts %d: want a divisor of the %d ranks", hosts, world)
		}
		return world / hosts, false, nil
	}
	if localWorld < 1 {
		localWorld = 1
	}
	if world%localWorld != 0 {
		return 0, false, base.Invalidf("nccl: %d ranks per host (the launcher's local world size) do not divide the %d ranks: every host must run as many", localWorld, world)
	}
	return localWorld, false, nil
}

// member is this rank's place at the job's rendezvous store.
type member struct {
	rank   int
	client *store.Client
	server *store.Server // rank 0's
}

// join connects to the job's store, rank 0 hosting it.
func join(ctx context.Context, o detcoll.Options) (*member, error) {
	if o.Addr == "" {
		return nil, base.Invalidf("nccl: no rendezvous address (Options.Addr, or the launcher's MASTER_ADDR/MASTER_PORT)")
	}
	m := &member{rank: o.Rank}
	if o.Rank == 0 {
		srv, err := store.Listen(o.Addr, o.WorldSize, []byte(o.Secret))
		if err != nil {
			return nil, fmt.Errorf("%w: nccl: host the rendezvous store at %s: %w", base.ErrUnavailable, o.Addr, err)
		}
		m.server = srv
	}
	cl, err := store.Dial(ctx, o.Addr, o.Rank, o.WorldSize, []byte(o.Secret))
	if err != nil {
		if m.server != nil {
			m.server.Close()
		}
		if errors.Is(err, context.DeadlineExceeded) {
			return nil, &base.TimeoutError{Op: base.OpOpen, Missing: []int{0}, After: o.Timeout,
				Phase: fmt.Sprintf("connecting to the rendezvous store at %s, hosted by rank 0", o.Addr)}
		}
		return nil, publicError(err)
	}
	m.client = cl
	return m, nil
}

// fail tells every rank that this one failed with err, leaves the store
// and returns err.
func (m *member) fail(ctx context.Context, err error) error {
	err = base.Canonical(err, m.rank)
	m.client.Fail(base.FailureOf(err, m.rank).Encode())
	// The setup's ctx may be over: the goodbye gets a moment of its own.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), leaveTimeout)
	defer cancel()
	m.leave(ctx)
	return err
}

// leaveTimeout bounds leaving the store after a failed setup.
const leaveTimeout = 2 * time.Second

// leave says goodbye to the store; rank 0's waits for every goodbye (or
// the job's failure, or ctx).
func (m *member) leave(ctx context.Context) error {
	err := m.client.Close(ctx)
	if m.server != nil {
		if serr := m.server.Shutdown(ctx); err == nil {
			err = serr
		}
	}
	return err
}

// checkHosts makes sure that the ranks sharing a machine are numbered
// consecutively, perHost of them: the machine's name, gathered.
func checkHosts(ctx context.Context, m *member, rank, perHost int) error {
	name, err := os.Hostname()
	if err != nil {
		return fmt.Errorf("nccl: this host's name: %w", err)
	}
	all, err := m.client.AllGather(ctx, "nccl/hostnames", []byte(name))
	if err != nil {
		return publicError(err)
	}
	for r, n := range all {
		if first := all[r/perHost*perHost]; string(n) != string(first) {
			return base.Invalidf("nccl: rank %d runs on %q, rank %d on %q: the %d ranks of a host must be numbered consecutively (the launcher's local world size)", r, n, r/perHost*perHost, first, perHost)
		}
		if r%perHost == 0 && r > 0 && string(n) == string(all[r-1]) {
			return base.Invalidf("nccl: ranks %d and %d run on %q, but %d ranks per host put them on two", r-1, r, n, perHost)
		}
	}
	return nil
}

// publicError maps the store's report of a failed or lost rank to the
// error every rank reports for it (as the root package's Open does).
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

// idBytes is an NCCL unique id's size.
const idBytes = 128

// railIDs gathers the unique ids of every rail's two communicators: rank g
// (host 0's local rank g) makes rail g's.
func railIDs(ctx context.Context, m *member, rank, perHost int, newIDs func() ([]byte, error)) ([]byte, error) {
	var mine []byte
	if rank < perHost {
		var err error
		if mine, err = newIDs(); err != nil {
			return nil, err
		}
	}
	all, err := m.client.AllGather(ctx, "nccl/ids", mine)
	if err != nil {
		return nil, publicError(err)
	}
	ids := all[rank%perHost]
	if len(ids) != 2*idBytes {
		return nil, fmt.Errorf("nccl: rank %d published %d bytes of NCCL ids, want %d", rank%perHost, len(ids), 2*idBytes)
	}
	return ids, nil
}
