package ncclshim

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"time"

	"github.com/detcoll/detcoll"
	"github.com/detcoll/detcoll/internal/job/proc"
)

// Without detcoll's store, nothing tells a rank that a peer process died:
// the real NCCL does not, and detcoll's kernels would wait for the peer
// until the timeout. The peers are processes of this host (detcoll's IPC
// needs that), so the shim watches them itself: the setup's first round
// gives every rank its peers' process ids, and a goroutine checks them
// every proc.PollEvery; one that is exiting or gone fails the communicator
// (Done, Err), which raises the abort word that stops detcoll's kernels.

// identity is what each rank tells the others in the setup's first round
// (package proc says why each field is there).
type identity = proc.Identity

func osGetpid() int { return os.Getpid() }

func selfIdentity(pid int) identity { return proc.Of(pid) }

// identify runs the setup's first round.
func (r *rendezvous) identify(ctx context.Context, me identity) ([]identity, error) {
	mine, _ := json.Marshal(me)
	all, err := r.AllGather(ctx, "ncclshim/who", mine)
	if err != nil {
		return nil, err
	}
	ids := make([]identity, len(all))
	for p, v := range all {
		if err := json.Unmarshal(v, &ids[p]); err != nil {
			return nil, fmt.Errorf("%w: rank %d's identity %q", errOutOfStep, p, v)
		}
	}
	return ids, nil
}

// unservable says why detcoll cannot serve ranks of these identities, or
// "". Every rank computes it from the same round, so all agree. A field
// that could not be read ("") proves nothing and fails the comparison
// unless every rank lacks it alike.
func unservable(ids []identity) string {
	pids := map[int]int{}
	for p, id := range ids {
		switch {
		case id.Host != ids[0].Host:
			return fmt.Sprintf("its ranks are on several hosts (rank 0 on %s, rank %d on %s): detcoll's cuda backend serves one", ids[0].Host, p, id.Host)
		case id.Boot != ids[0].Boot || id.Boot == "":
			return fmt.Sprintf("ranks 0 and %d do not share a kernel (boot ids %q, %q): not one machine, so no CUDA IPC between them", p, ids[0].Boot, id.Boot)
		case id.PIDNS != ids[0].PIDNS:
			return fmt.Sprintf("ranks 0 and %d are in different PID namespaces (%s, %s): they cannot watch each other's processes (run them in one container, or with the host's PID namespace)", p, ids[0].PIDNS, id.PIDNS)
		}
		if q, ok := pids[id.PID]; ok {
			return fmt.Sprintf("ranks %d and %d are one process, which detcoll's IPC cannot join", q, p)
		}
		pids[id.PID] = p
	}
	return ""
}

// watch checks the peers' processes until stop is closed, and fails r at
// the first that is gone.
func (r *rendezvous) watch(ids []identity, alive func(identity) bool, stop <-chan struct{}) {
	t := time.NewTicker(proc.PollEvery)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-r.done:
			return
		case <-t.C:
		}
		for p, id := range ids {
			// Only the processes of this machine and PID namespace can
			// be looked at (a pid means nothing in another namespace);
			// the others fail through the rails (NCCL's errors) or the
			// timeout.
			if p == r.rank || !proc.SameMachine(id, ids[r.rank]) || alive(id) {
				continue
			}
			r.setFailed(&detcoll.RankError{Rank: p, Err: detcoll.ErrPeerLost,
				Reason: fmt.Sprintf("its process %d is exiting or gone", id.PID)})
			return
		}
	}
}

// processAlive reports whether the process still runs: a zombie, or one
// whose teardown has begun, runs no more (package proc).
func processAlive(id identity) bool {
	ok, _ := proc.Running(id)
	return ok
}
