package cpu

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/detcoll/detcoll/internal/base"
)

// sleepSlice caps each futex sleep so that a sleeper re-checks the failure
// state even if no wake-up reaches it (a peer that dies cannot wake anyone).
const sleepSlice = 10 * time.Millisecond

// spinFor returns how long a waiter polls before it sleeps, and whether it
// yields its core between polls.
//
// With a core per rank it polls without yielding for up to 200 us: long
// enough to ride over a peer's scheduling hiccup without paying a futex
// wake-up (tens of microseconds).
//
// When ranks outnumber cores, polling alone would steal the core that the
// awaited peer needs, but sleeping at once is slow too: every wait then
// costs a futex wake-up plus the scheduler's latency in running the woken
// rank on a busy core (about 100 us per synchronisation at W=4 on 2
// cores, docs/thresholds.md). So the waiter gives its core away with
// sched_yield between polls (what Open MPI does when oversubscribed,
// mpi_yield_when_idle): a peer that shares the core runs at once, and the
// waiter is back as soon as that peer waits or yields in turn. The yields
// are bounded like the spin, then it sleeps: a rank waiting on a peer that
// is busy elsewhere (or on nobody runnable, where sched_yield returns at
// once) must not burn its core for long.
func spinFor(world int) (d time.Duration, yield bool) {
	if world > hostCPUs() {
		return yieldSpin, true
	}
	return 200 * time.Microsecond, false
}

// yieldSpin bounds the yielding polls of an oversubscribed waiter. At W=4
// on 2 cores, 50 us, 200 us and 1 ms gave the same times within noise
// (docs/perf-cpu.md); 200 us matches the plain spin.
const yieldSpin = 200 * time.Microsecond

// publish stores v into one of this rank's sequence words (a release: every
// write before it is visible to a peer that reads v) and wakes the peers
// sleeping on it, if any. The waiter count makes the common case, nobody
// asleep, free of system calls; the sequentially consistent atomics on both
// sides (store word, load count / add count, load word) mean a sleeper is
// either seen or sees the new value.
func (c *Comm) publish(off int, v uint64) {
	own := c.segs[c.rank]
	w := own.word(off)
	atomic.StoreUint64(w, v)
	if atomic.LoadUint32(own.waiters()) != 0 {
		futexWake(low32(w))
	}
}

// call is what a wait needs to know about the call it belongs to.
type call struct {
	op       base.Op
	seq      uint64 // the call's sequence number, for messages
	start    time.Time
	deadline time.Time
	ctx      context.Context // Close's; nil for collectives, bounded by deadline alone
}

func (c *Comm) newCall(op base.Op) call {
	now := time.Now()
	return call{op: op, seq: c.seq + 1, start: now, deadline: now.Add(c.timeout)}
}

// reserve waits until every peer has finished reading this rank's staging
// for the previous call, so the staging may be overwritten.
func (c *Comm) reserve(k call) error {
	return c.waitAll(k, offDone, k.seq-1, "waiting for peers to release the staging memory")
}

// waitAll waits until the word at off of every peer is at least target.
// It ends early on a failure (this communicator's or a peer's status) or
// the end of k.ctx, and with a *base.TimeoutError at the deadline.
func (c *Comm) waitAll(k call, off int, target uint64, phase string) error {
	for p := range c.world {
		if p == c.rank {
			continue
		}
		ok, err := c.waitPeer(k, p, off, target)
		if err != nil {
			return err
		}
		if !ok {
			var missing []int
			for q := range c.world {
				if q != c.rank && c.segs[q].load(off) < target {
					missing = append(missing, q)
				}
			}
			return &base.TimeoutError{Op: k.op, Seq: k.seq, Phase: phase, Missing: missing, After: time.Since(k.start).Round(time.Millisecond)}
		}
	}
	return nil
}

// waitPeer waits for one peer's word; ok is false at the deadline (k's, or
// k.ctx's).
func (c *Comm) waitPeer(k call, p, off int, target uint64) (ok bool, err error) {
	s := c.segs[p]
	w := s.word(off)
	if atomic.LoadUint64(w) >= target {
		return true, nil
	}
	if c.spin > 0 && c.yield {
		start := time.Now()
		for {
			schedYield()
			if atomic.LoadUint64(w) >= target {
				return true, nil
			}
			if time.Since(start) > c.spin {
				break
			}
		}
	} else if c.spin > 0 {
		start := time.Now()
		for i := 1; ; i++ {
			if atomic.LoadUint64(w) >= target {
				return true, nil
			}
			if i%256 == 0 && time.Since(start) > c.spin {
				break
			}
		}
	}
	for {
		if err := c.checkFailure(); err != nil {
			return false, err
		}
		if k.ctx != nil && k.ctx.Err() != nil {
			if errors.Is(k.ctx.Err(), context.DeadlineExceeded) {
				return false, nil // the caller's deadline: a timeout like ours
			}
			return false, base.Aborted(c.rank, fmt.Errorf("%v #%d: %w", k.op, k.seq, k.ctx.Err()))
		}
		left := time.Until(k.deadline)
		if left <= 0 {
			return atomic.LoadUint64(w) >= target, nil
		}
		atomic.AddUint32(s.waiters(), 1)
		if v := atomic.LoadUint64(w); v < target {
			futexWait(low32(w), uint32(v), min(left, sleepSlice))
		}
		atomic.AddUint32(s.waiters(), ^uint32(0))
		if atomic.LoadUint64(w) >= target {
			return true, nil
		}
	}
}

// checkFailure returns this communicator's failure, or a peer's that it
// has set in its status word.
func (c *Comm) checkFailure() error {
	if err := c.Err(); err != nil {
		return err
	}
	for p := range c.segs {
		if p != c.rank {
			if err := c.peerFailure(p); err != nil {
				return err
			}
		}
	}
	return nil
}
