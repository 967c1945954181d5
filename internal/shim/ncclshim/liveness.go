package ncclshim

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"syscall"
	"time"

	"github.com/detcoll/detcoll"
)

// Without detcoll's store, nothing tells a rank that a peer process died:
// the real NCCL does not, and detcoll's kernels would wait for the peer
// until the timeout. The peers are processes of this host (detcoll's IPC
// needs that), so the shim watches them itself: the setup's first round
// gives every rank its peers' process ids, and a goroutine checks them
// every pollLiveness; a dead one fails the communicator (Done, Err), which
// raises the abort word that stops detcoll's kernels.

// pollLiveness is how often the peers' processes are checked.
const pollLiveness = 50 * time.Millisecond

// identity is what each rank tells the others in the setup's first round:
// enough to prove that two ranks are processes of one machine that can
// see each other. A hostname alone proves nothing (containers share
// names, clusters reuse them); the kernel's boot id is drawn at random
// at every boot, so two processes with the same one run on the same
// kernel; and the PID namespace says whether each can see the other's
// process id, which the watch of the peers' processes needs.
type identity struct {
	Host  string `json:"host"`
	Boot  string `json:"boot"`  // /proc/sys/kernel/random/boot_id
	PIDNS string `json:"pidns"` // the target of /proc/self/ns/pid, such as "pid:[4026531836]"
	PID   int    `json:"pid"`
	Start string `json:"start"` // the process's start time (/proc/PID/stat), against a reused pid
}

func osGetpid() int { return os.Getpid() }

func selfIdentity(pid int) identity {
	host, _ := os.Hostname()
	boot, _ := os.ReadFile("/proc/sys/kernel/random/boot_id")
	ns, _ := os.Readlink("/proc/self/ns/pid")
	return identity{Host: host, Boot: strings.TrimSpace(string(boot)), PIDNS: ns, PID: pid, Start: startTime(pid)}
}

// startTime is field 22 of /proc/pid/stat, or "" where it cannot be read.
func startTime(pid int) string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return ""
	}
	// The command (field 2) is in parentheses and may hold spaces.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return ""
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 20 {
		return ""
	}
	return f[19]
}

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
	t := time.NewTicker(pollLiveness)
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
			if p == r.rank || alive(id) {
				continue
			}
			r.setFailed(&detcoll.RankError{Rank: p, Err: detcoll.ErrPeerLost,
				Reason: fmt.Sprintf("its process %d exited (seen by rank %d)", id.PID, r.rank)})
			return
		}
	}
}

// processAlive reports whether the process is still there (a zombie counts as
// gone: it runs no more).
func processAlive(id identity) bool {
	if err := syscall.Kill(id.PID, 0); errors.Is(err, syscall.ESRCH) {
		return false
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", id.PID))
	if err != nil {
		return true // no /proc: the signal's answer stands
	}
	if i := bytes.LastIndexByte(b, ')'); i >= 0 && i+2 < len(b) && b[i+2] == 'Z' {
		return false
	}
	return id.Start == "" || startTime(id.PID) == id.Start
}
