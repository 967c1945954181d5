// Package mpi runs a detcoll communicator across hosts over Open MPI: the
// ranks of a host talk through detcoll's backend, the hosts through MPI
// (detcoll.Options.Hosts, detcoll.Interconnect). Under mpirun:
//
//	o, err := mpi.Options(detcoll.Options{})
//	c, err := detcoll.Open(ctx, o)
//
// MPI moves bytes only (its own reductions are never used), so the sums
// are detcoll's tree over all ranks, bit for bit the results of one host
// of as many ranks. It is built with the tag mpi (and cgo), which needs
// Open MPI's headers and library (Debian: libopenmpi-dev); without it,
// Options returns mpiref's ErrNotBuilt.
//
// # Hosts
//
// The ranks that share memory (MPI_Comm_split_type) are a host, and they
// must be numbered consecutively, as mpirun places them by default
// (--map-by slot), with the same number on every host, a power of two.
// DETCOLL_VIRTUAL_HOSTS=H instead splits the ranks into H hosts of
// consecutive ranks, on one machine or several: that is how the tests run
// several hosts on one machine, with the hosts' traffic through MPI.
//
// # Imports
//
// It imports the root package and internal/binding/mpiref (the cgo). The library
// never imports it: a program that wants several hosts does.
package mpi

import (
	"context"
	"encoding/binary"
	"fmt"
	"strconv"
	"sync"

	"github.com/detcoll/detcoll"
	"github.com/detcoll/detcoll/internal/binding/mpiref"
	"github.com/detcoll/detcoll/internal/core/settings"
)

// EnvVirtualHosts names the variable that splits the ranks into hosts by
// number rather than by machine.
const EnvVirtualHosts = settings.VirtualHosts

var world = sync.OnceValues(mpiref.Init)

// Options returns o with WorldSize, Rank, Hosts and Interconnect set from
// MPI_COMM_WORLD (initialising MPI once for the process). It fails when the
// hosts' ranks are not consecutive or not equal in number.
func Options(o detcoll.Options) (detcoll.Options, error) {
	w, err := world()
	if err != nil {
		return o, err
	}
	rank, size := w.Rank(), w.Size()
	perHost, err := hostSize(w)
	if err != nil {
		return o, err
	}
	hosts := size / perHost
	ic := &Interconnect{}
	if ic.host, err = w.Split(rank/perHost, rank); err != nil {
		return o, err
	}
	o.WorldSize, o.Rank, o.Hosts = size, rank, hosts
	if hosts == 1 {
		o.Rendezvous = ic.Host() // no rails: one host
		return o, nil
	}
	if ic.rail, err = w.Split(rank%perHost, rank); err != nil {
		return o, err
	}
	o.Interconnect = ic
	return o, nil
}

// hostSize is the ranks per host: from DETCOLL_VIRTUAL_HOSTS, or the size
// of this rank's shared-memory group, checked to number the ranks
// consecutively.
func hostSize(w *mpiref.World) (int, error) {
	size := w.Size()
	if v := settings.Get(EnvVirtualHosts); v != "" {
		h, err := strconv.Atoi(v)
		if err != nil || h < 1 || size%h != 0 {
			return 0, fmt.Errorf("mpi: %s=%q: want a divisor of the %d ranks", EnvVirtualHosts, v, size)
		}
		return size / h, nil
	}
	g, err := w.SharedHosts()
	if err != nil {
		return 0, err
	}
	// Every rank's (first rank of its node, node size) must be (rank -
	// local rank, the same for all): host-major numbering.
	mine := make([]byte, 16)
	binary.LittleEndian.PutUint64(mine, uint64(w.Rank()-g.Rank()))
	binary.LittleEndian.PutUint64(mine[8:], uint64(g.Size()))
	all := make([]byte, 16*size)
	if err := w.Allgather(mine, all); err != nil {
		return 0, err
	}
	per := g.Size()
	for r := range size {
		first, n := binary.LittleEndian.Uint64(all[16*r:]), binary.LittleEndian.Uint64(all[16*r+8:])
		if int(n) != per || int(first) != r/per*per {
			return 0, fmt.Errorf("mpi: the ranks of a host must be consecutive and as many on every host (rank %d: a host of %d from rank %d; rank 0's has %d): use mpirun --map-by slot with the same number per host", r, n, first, per)
		}
	}
	return per, nil
}

// Interconnect is a detcoll.Interconnect over two MPI communicators: this
// rank's host's and its rail's.
type Interconnect struct {
	host, rail *mpiref.Group
}

// The capability along the rail: all-reduces over a power of two of hosts
// halve.
var _ detcoll.RailExchanger = (*Interconnect)(nil)

// Host is the setup channel of this rank's host.
func (ic *Interconnect) Host() detcoll.Rendezvous { return groupRendezvous{ic.host} }

// AllGather gathers along this rank's rail.
func (ic *Interconnect) AllGather(ctx context.Context, send, recv []byte) error {
	return ic.rail.AllGather(ctx, send, recv)
}

// Exchange trades bytes with the rail's rank on host peer (with a power
// of two of hosts, all-reduces then move the bandwidth-optimal share
// between hosts: internal/backend/hier).
func (ic *Interconnect) Exchange(ctx context.Context, peer int, send, recv []byte) error {
	return ic.rail.Exchange(ctx, peer, send, recv)
}

// groupRendezvous is a detcoll.Rendezvous over an MPI group: the lengths,
// then the values padded to the longest. MPI orders the calls, so the
// names are not needed.
type groupRendezvous struct{ g *mpiref.Group }

func (r groupRendezvous) AllGather(ctx context.Context, name string, value []byte) ([][]byte, error) {
	n := r.g.Size()
	lens := make([]byte, 8*n)
	mine := binary.LittleEndian.AppendUint64(nil, uint64(len(value)))
	if err := r.g.AllGather(ctx, mine, lens); err != nil {
		return nil, fmt.Errorf("mpi: setup exchange %q: %w", name, err)
	}
	longest := 0
	for p := range n {
		longest = max(longest, int(binary.LittleEndian.Uint64(lens[8*p:])))
	}
	pad := make([]byte, longest)
	copy(pad, value)
	all := make([]byte, n*longest)
	if err := r.g.AllGather(ctx, pad, all); err != nil {
		return nil, fmt.Errorf("mpi: setup exchange %q: %w", name, err)
	}
	out := make([][]byte, n)
	for p := range n {
		out[p] = all[p*longest : p*longest+int(binary.LittleEndian.Uint64(lens[8*p:]))]
	}
	return out, nil
}

// WorldRendezvous is a detcoll.Rendezvous over every MPI rank: for a
// communicator of one host (or of all ranks, where they share memory)
// opened over MPI instead of detcoll's store.
func WorldRendezvous() (detcoll.Rendezvous, error) {
	w, err := world()
	if err != nil {
		return nil, err
	}
	g, err := w.Split(0, w.Rank())
	if err != nil {
		return nil, err
	}
	return groupRendezvous{g}, nil
}

// Finalize ends MPI for this process, after its communicators are closed.
// Every rank must call it before it exits (mpirun reports a rank that
// exits without it as failed).
func Finalize() error {
	w, err := world()
	if err != nil {
		return err
	}
	return w.Finalize()
}
