package ncclshim

import (
	"context"
	"fmt"

	"github.com/detcoll/detcoll"
	"github.com/detcoll/detcoll/internal/core/base"
	railnccl "github.com/detcoll/detcoll/nccl"
)

// A communicator whose ranks are on several machines is served, when the
// settings ask for it (DETCOLL_NCCL_HOSTS=serve), as detcoll's Go API
// serves one across hosts: each machine's ranks through CUDA IPC, the
// machines through rails of NCCL communicators of detcoll's own (package
// nccl's), set up over the application's communicator like the rest of
// the setup, every rank deciding alike. The flat tree nests over the
// machines only when each holds the same power of two of consecutive
// ranks; other layouts are handed to NCCL, saying why.

// RailsFunc sets up the rails of a communicator across hosts hosts:
// package nccl's Rails (tests: a stand-in).
type RailsFunc func(ctx context.Context, o detcoll.Options, setup railnccl.Setup, hosts int) (detcoll.Options, error)

// machines splits the ranks into machines by their boot ids and returns
// how many, or why detcoll cannot serve them: a machine whose ranks are
// not consecutive, machines of unequal or not power-of-two numbers of
// ranks, ranks of one machine that cannot share memory (unservable), or
// several machines when across is off. With across on, ranks of a
// machine that cannot share memory are served each as a host of its own
// instead (apart), on every machine alike. Every rank computes it from
// the same round, so all agree.
func machines(ids []identity, across bool) (hosts int, why string) {
	for p, id := range ids {
		if id.Boot == "" {
			return 0, unservable(ids[:p+1]) // says which boot id is missing
		}
	}
	var starts []int
	seen := map[string]int{}
	for p, id := range ids {
		if p > 0 && id.Boot == ids[p-1].Boot {
			continue
		}
		if q, ok := seen[id.Boot]; ok {
			if !across {
				return 0, fmt.Sprintf("its ranks are on several hosts (rank 0 on %s, rank %d on %s), and ranks %d and %d share a machine that rank %d is not on: NCCL serves it", ids[0].Host, p, id.Host, q, p, p-1)
			}
			return 0, fmt.Sprintf("ranks %d and %d share a machine that rank %d, between them, is not on: detcoll serves several machines only with each machine's ranks numbered consecutively", q, p, p-1)
		}
		seen[id.Boot] = p
		starts = append(starts, p)
	}
	if len(starts) == 1 {
		why := unservable(ids)
		if why != "" && across && len(ids) > 1 && apart(ids) {
			return len(ids), ""
		}
		return 1, why
	}
	if !across {
		return len(starts), fmt.Sprintf("its ranks are on several hosts (%d machines: rank 0 on %s, rank %d on %s): detcoll serves it with %s=serve (opt-in: docs/nccl.md says why); until then NCCL does",
			len(starts), ids[0].Host, starts[1], ids[starts[1]].Host, EnvHosts)
	}
	per := len(ids) / len(starts)
	for i, s := range starts {
		end := len(ids)
		if i+1 < len(starts) {
			end = starts[i+1]
		}
		if end-s != per || len(ids)%len(starts) != 0 {
			return 0, fmt.Sprintf("its %d machines hold different numbers of its ranks (rank %d's holds %d): detcoll needs the same number on each", len(starts), s, end-s)
		}
		if why := unservable(ids[s:end]); why != "" {
			if apart(ids) {
				return len(ids), ""
			}
			return 0, fmt.Sprintf("on the machine of ranks %d to %d: %s", s, end-1, why)
		}
	}
	if per&(per-1) != 0 {
		return 0, fmt.Sprintf("%d ranks per machine: across machines detcoll needs a power of two, so that the flat tree over all ranks is a tree over the machines' trees", per)
	}
	return len(starts), ""
}

// machinesOf is machines under the settings, with the identities the
// liveness watch is to take: with VirtualHosts, over the virtual split,
// which needs every rank a process of its own on a known machine (one
// process cannot be on two machines).
func machinesOf(ids []identity, s Settings) (hosts int, why string, watched []identity) {
	if s.VirtualHosts == 0 {
		hosts, why = machines(ids, s.AcrossHosts)
		return hosts, why, ids
	}
	if !apart(ids) {
		return 0, fmt.Sprintf("%s needs every rank a process of its own on a known machine (boot id and PID namespace)", EnvVirtualHosts), ids
	}
	virtual, why := virtualMachines(ids, s.VirtualHosts)
	if why != "" {
		return 0, why, ids
	}
	hosts, why = machines(virtual, s.AcrossHosts)
	return hosts, why, virtual
}

// virtualMachines splits ids into h machines of consecutive ranks
// (Settings.VirtualHosts), each a boot id and host name of its own, so
// that machines and the liveness watch take them for machines apart; or
// says why it cannot.
func virtualMachines(ids []identity, h int) ([]identity, string) {
	if len(ids)%h != 0 {
		return nil, fmt.Sprintf("%s=%d does not divide its %d ranks", EnvVirtualHosts, h, len(ids))
	}
	per := len(ids) / h
	out := make([]identity, len(ids))
	for p, id := range ids {
		m := p / per
		id.Boot = fmt.Sprintf("%s/virtual-%d", id.Boot, m)
		id.Host = fmt.Sprintf("%s/virtual-%d", id.Host, m)
		out[p] = id
	}
	return out, ""
}

// apart reports whether ranks that cannot all share memory on their
// machine (other PID namespaces: a container per GPU, as Kubernetes
// starts them) can be served each as a host of its own, along the rails
// alone: every rank a process of its own. Then machines gives every rank
// its own host rather than hand the communicator to NCCL: the flat tree
// nests over hosts of one rank, at the cost of NCCL's transport between
// ranks that CUDA IPC could have joined.
func apart(ids []identity) bool {
	type process struct {
		boot, ns string
		pid      int
	}
	seen := map[process]bool{}
	for _, id := range ids {
		p := process{id.Boot, id.PIDNS, id.PID}
		if id.Boot == "" || id.PIDNS == "" || seen[p] {
			return false
		}
		seen[p] = true
	}
	return true
}

// railSetup is the setup's rendezvous as the rails' Setup: their rounds
// ride on the application's communicator too.
type railSetup struct{ r *rendezvous }

func (a railSetup) Rank() int { return a.r.rank }

func (a railSetup) AllGather(ctx context.Context, name string, value []byte) ([][]byte, error) {
	return a.r.AllGather(ctx, name, value)
}

func (a railSetup) Fail(reason string)    { a.r.Fail(reason) }
func (a railSetup) Done() <-chan struct{} { return a.r.Done() }
func (a railSetup) Err() error            { return a.r.Err() }

// Leave tells the peers of a cause; the rendezvous itself is the setup's
// to close.
func (a railSetup) Leave(ctx context.Context, cause error) error {
	if cause == nil {
		return nil
	}
	cause = base.Canonical(cause, a.r.rank)
	a.r.Fail(base.FailureOf(cause, a.r.rank).Encode())
	return cause
}
