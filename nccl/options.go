package nccl

import (
	"context"
	"fmt"
	"os"
	"strconv"

	"github.com/detcoll/detcoll"
	"github.com/detcoll/detcoll/internal/core/settings"
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
	given, autoDevice := o.WorldSize != 0, o.Device == 0 || o.Device == -1
	o, local, err := o.Resolve()
	if err != nil {
		return o, err
	}
	if !given && local.Rank < 0 {
		return o, invalidf("nccl: no launcher's environment (RANK, WORLD_SIZE, ...): start the job with detcoll run, torchrun or srun, or set Options.WorldSize, Rank and Addr")
	}
	perHost, virtual, err := hostSize(o.WorldSize, local.WorldSize, o.Hosts)
	if err != nil {
		return o, err
	}
	if autoDevice && perHost < o.WorldSize {
		// Resolve took the launcher's local rank; the hosts' split is
		// ours (virtual hosts on one machine, Options.Hosts).
		o.Device = o.Rank % perHost
	}
	if perHost == o.WorldSize {
		return o, nil // one host
	}
	hosts, host := o.WorldSize/perHost, o.Rank/perHost
	if err := checkShape(hosts, perHost); err != nil {
		return o, err
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
	m, err := detcoll.JoinJob(ctx, o)
	if err != nil {
		return o, err
	}
	if !virtual {
		if err := checkHosts(ctx, m, o.Rank, perHost); err != nil {
			return o, m.Leave(ctx, err)
		}
	}
	if o, err = Rails(ctx, o, m, hosts); err != nil {
		return o, m.Leave(ctx, err)
	}
	return o, nil
}

// The job's rendezvous is one.
var _ Setup = (*detcoll.Job)(nil)

// Setup is the channel over which the rails are set up and whose
// failures are theirs: the job's rendezvous (a *detcoll.Job, as Options
// joins it), or one the caller has already, as libdetcoll-nccl has over
// the application's own NCCL communicator. Every rank of the job takes
// part in its exchanges, in the same order.
type Setup interface {
	Rank() int
	AllGather(ctx context.Context, name string, value []byte) ([][]byte, error)
	// Fail tells every other rank that this one failed, for reason.
	Fail(reason string)
	// Done is closed when a rank failed; Err is then the failure.
	Done() <-chan struct{}
	Err() error
	// Leave ends this rank's part: with a cause, it tells the others
	// first, and returns the cause as every rank reports it.
	Leave(ctx context.Context, cause error) error
}

// Rails returns o (its WorldSize, Rank, Device and Timeout set) with Hosts
// and Interconnect for hosts hosts of WorldSize/hosts consecutive ranks
// each, their rails set up over setup: every rank of the job calls it.
// On error nothing is left open, and the caller tells setup's other ranks
// (Setup.Leave with the error).
func Rails(ctx context.Context, o detcoll.Options, setup Setup, hosts int) (detcoll.Options, error) {
	if hosts < 2 || o.WorldSize%hosts != 0 {
		return o, invalidf("nccl: %d hosts for %d ranks: want a divisor above 1", hosts, o.WorldSize)
	}
	perHost := o.WorldSize / hosts
	if err := checkShape(hosts, perHost); err != nil {
		return o, err
	}
	ic, err := openRails(ctx, setup, o, hosts, o.Rank/perHost, perHost)
	if err != nil {
		return o, err
	}
	o.Hosts, o.Interconnect = hosts, ic
	return o, nil
}

// checkShape refuses hosts the flat tree does not nest over, or more
// hosts than one kernel adds.
func checkShape(hosts, perHost int) error {
	if perHost&(perHost-1) != 0 {
		return invalidf("nccl: %d ranks per host: across hosts detcoll needs a power of two, so that the flat tree over all ranks is a tree over the hosts' trees", perHost)
	}
	if hosts > maxGatheredHosts && hosts&(hosts-1) != 0 {
		return invalidf("nccl: %d hosts: the cuda backend adds at most %d hosts' sums in one kernel (a power of two of hosts halves instead, with no limit)", hosts, maxGatheredHosts)
	}
	return nil
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
			return 0, false, invalidf("nccl: %s=%q: want a divisor of the %d ranks", EnvVirtualHosts, v, world)
		}
		return world / h, true, nil
	}
	if hosts > 0 {
		if world%hosts != 0 {
			return 0, false, invalidf("nccl: Options.Hosts %d: want a divisor of the %d ranks", hosts, world)
		}
		return world / hosts, false, nil
	}
	if localWorld < 1 {
		localWorld = 1
	}
	if world%localWorld != 0 {
		return 0, false, invalidf("nccl: %d ranks per host (the launcher's local world size) do not divide the %d ranks: every host must run as many", localWorld, world)
	}
	return localWorld, false, nil
}

// checkHosts makes sure that the ranks sharing a machine are numbered
// consecutively, perHost of them: the machine's name, gathered.
func checkHosts(ctx context.Context, m Setup, rank, perHost int) error {
	name, err := os.Hostname()
	if err != nil {
		return fmt.Errorf("nccl: this host's name: %w", err)
	}
	all, err := m.AllGather(ctx, "nccl/hostnames", []byte(name))
	if err != nil {
		return err
	}
	for r, n := range all {
		if first := all[r/perHost*perHost]; string(n) != string(first) {
			return invalidf("nccl: rank %d runs on %q, rank %d on %q: the %d ranks of a host must be numbered consecutively (the launcher's local world size)", r, n, r/perHost*perHost, first, perHost)
		}
		if r%perHost == 0 && r > 0 && string(n) == string(all[r-1]) {
			return invalidf("nccl: ranks %d and %d run on %q, but %d ranks per host put them on two", r-1, r, n, perHost)
		}
	}
	return nil
}

// idBytes is an NCCL unique id's size.
const idBytes = 128

// railIDs gathers the unique ids of every rail's two communicators: rank g
// (host 0's local rank g) makes rail g's.
func railIDs(ctx context.Context, m Setup, rank, perHost int, newIDs func() ([]byte, error)) ([]byte, error) {
	var mine []byte
	if rank < perHost {
		var err error
		if mine, err = newIDs(); err != nil {
			return nil, err
		}
	}
	all, err := m.AllGather(ctx, "nccl/ids", mine)
	if err != nil {
		return nil, err
	}
	ids := all[rank%perHost]
	if len(ids) != 2*idBytes {
		return nil, fmt.Errorf("nccl: rank %d published %d bytes of NCCL ids, want %d", rank%perHost, len(ids), 2*idBytes)
	}
	return ids, nil
}

// invalidf is an error matching detcoll.ErrInvalid.
func invalidf(format string, args ...any) error {
	return fmt.Errorf("%w: %s", detcoll.ErrInvalid, fmt.Sprintf(format, args...))
}
