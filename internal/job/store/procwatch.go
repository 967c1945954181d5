package store

import (
	"encoding/json"
	"os"
	"sync"
	"time"

	"github.com/detcoll/detcoll/internal/job/proc"
)

// Ranks of one machine watch each other's processes (package proc): a
// SIGKILLed GPU process closes its sockets only after its teardown, about
// a second on the H200 machine, but shows that it is exiting at once.
// Right after the handshake each side sends its process identity (tProc);
// the server watches every rank of its machine and fails the job at the
// first that is exiting or gone, naming it, and each client watches the
// server's process likewise (rank 0, or the launcher hosting a failed
// store). Ranks of other machines (another boot id or PID namespace) rely
// on the connection and the silence limit (liveness.go), as before.

// self is this process's identity, read once. (A test's child process may
// claim another machine's, to be a remote peer.)
var self = sync.OnceValue(proc.Self)

// procFrame is this process's tProc.
func procFrame() []byte {
	b, _ := json.Marshal(self()) // a struct of strings and an int: never fails
	return encode(msg{typ: tProc, value: b})
}

// watchable decodes a peer's tProc and reports whether it is another
// process of this machine, which can be watched.
func watchable(value []byte) (proc.Identity, bool) {
	id, err := identityOf(value)
	return id, err == nil && id.PID > 0 && id.PID != os.Getpid() && proc.SameMachine(self(), id)
}

func identityOf(value []byte) (proc.Identity, error) {
	var id proc.Identity
	err := json.Unmarshal(value, &id)
	return id, err
}

// peerLimit is the silence limit for the peer of a tProc: the short
// remote one only when it runs on another machine for sure (both boot ids
// read, and different); a peer of this machine that cannot be watched
// (unreadable /proc, another PID namespace) keeps the long one.
func peerLimit(value []byte) time.Duration {
	me := self()
	if id, err := identityOf(value); err == nil && id.Boot != "" && me.Boot != "" && id.Boot != me.Boot {
		return remoteLimit()
	}
	return silenceLimit()
}

// watchLocked starts watching rank's process, as its tProc describes it.
func (s *Server) watchLocked(rank int, value []byte) {
	id, ok := watchable(value)
	if !ok || s.closed || s.cause != nil {
		return
	}
	if s.procs == nil {
		s.procs = make(map[int]proc.Identity)
		s.wg.Add(1)
		go s.watchProcs()
	}
	s.procs[rank] = id
}

// watchProcs checks the watched ranks' processes every proc.PollEvery
// until the server closes or the job fails.
func (s *Server) watchProcs() {
	defer s.wg.Done()
	t := time.NewTicker(proc.PollEvery)
	defer t.Stop()
	for {
		select {
		case <-s.quit:
			return
		case <-t.C:
		}
		s.mu.Lock()
		ids := make(map[int]proc.Identity, len(s.procs))
		for r, id := range s.procs {
			ids[r] = id
		}
		s.mu.Unlock()
		for r, id := range ids {
			running, why := proc.Running(id)
			if running {
				continue
			}
			s.mu.Lock()
			// A rank that said goodbye meanwhile was forgotten: its exit is
			// its business.
			if _, still := s.procs[r]; still && !s.closed {
				s.failLocked(&PeerError{Rank: r, Reason: why + " (seen by the store)"})
			}
			done := s.cause != nil
			s.mu.Unlock()
			if done {
				return
			}
		}
	}
}

// watchServer checks the server's process, as its tProc describes it,
// until Close starts or the job fails; a server whose process is exiting
// or gone before then is rank 0 lost, as when the connection ends. Once
// Close has started the connection's end speaks for the server: rank 0's
// process may exit as soon as it has received every goodbye, before this
// client has read its acknowledgement.
func (c *Client) watchServer(value []byte) {
	id, ok := watchable(value)
	if !ok {
		return
	}
	t := time.NewTicker(proc.PollEvery)
	defer t.Stop()
	for c.watchTick(t.C) {
		if running, _ := proc.Running(id); !running {
			// What the server sent before it went may still wait to be
			// read: a failure it broadcast names the rank to blame (a CI
			// soak's survivor blamed rank 0, which had closed after
			// broadcasting rank 2's loss, when its reader ran late). The
			// reader gets serverGrace to take it.
			grace := time.NewTimer(serverGrace)
			defer grace.Stop()
			if !c.watchTick(grace.C) {
				return
			}
			c.mu.Lock()
			if !c.closeStarted && !c.acked && !c.shut {
				c.failLocked(&PeerError{Rank: 0, Reason: serverLost})
			}
			c.mu.Unlock()
			return
		}
	}
}

// watchTick waits for tick and reports true, or false once Close has
// started or the job has failed: then watchServer has nothing to watch.
func (c *Client) watchTick(tick <-chan time.Time) bool {
	select {
	case <-c.closing:
		return false
	case <-c.done:
		return false
	case <-tick:
		return true
	}
}

// serverGrace is how long a client that found the server's process gone
// waits for its reader to deliver what the server sent before.
const serverGrace = 100 * time.Millisecond
