package cpu

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync/atomic"
	"time"

	"github.com/detcoll/detcoll/internal/core/base"
	"github.com/detcoll/detcoll/internal/core/proto"
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

// wordOffset is where a protocol word lives in a segment.
func wordOffset(w proto.Word) int {
	switch w {
	case proto.Stage:
		return offStage
	case proto.Reduced:
		return offReduced
	case proto.Done:
		return offDone
	case proto.Staged:
		return offStaged
	}
	panic("cpu: no offset for word " + w.String())
}

// peers is the proto.View of the peers' segments for one word. With only >=
// 0, it watches peer only: the others read as arrived (a streamed call
// waits for one peer's bytes at a time), though their failures still count.
type peers struct {
	c    *Comm
	off  int
	only int
}

func (v peers) Word(p int) uint64 {
	if v.only >= 0 && p != v.only {
		return math.MaxUint64
	}
	return v.c.segs[p].load(v.off)
}

func (v peers) Failure(p int) (base.Failure, bool) { return v.c.peerFailure(p) }

// waitAll waits until word w of every peer is at least target: it sleeps on
// the peers' words and lets proto.Decide say when the wait is over, failed
// or timed out (at k's deadline, or k.ctx's).
func (c *Comm) waitAll(k call, w proto.Word, target uint64, phase proto.Phase) error {
	v := &c.view
	*v = peers{c: c, off: wordOffset(w), only: -1}
	return c.wait(k, v, target, phase)
}

// wait is waitAll over v, which is c.view: a view in the Comm, not on the
// stack, because proto.Decide takes it as an interface, which would move a
// stack value to the heap on every call.
func (c *Comm) wait(k call, v *peers, target uint64, phase proto.Phase) error {
	pw := proto.Wait{Self: c.rank, World: c.world, Target: target, Op: k.op, Seq: k.seq, Phase: phase}
	for {
		var own *base.Failure
		cause := c.Err()
		if cause != nil {
			f := base.FailureOf(cause, c.rank)
			own = &f
		}
		expired := !time.Now().Before(k.deadline)
		var ctxErr error
		if k.ctx != nil {
			ctxErr = k.ctx.Err()
		}
		if errors.Is(ctxErr, context.DeadlineExceeded) {
			expired = true // the caller's deadline: a timeout like ours
		}
		verdict := proto.Decide(pw, v, own, expired)
		switch verdict.Outcome {
		case proto.Arrived:
			return nil // even if the caller gave up meanwhile: progress wins
		case proto.Failed:
			if cause != nil {
				return cause // ours, as recorded: an Abort keeps its cause
			}
			return verdict.Failure.Err()
		case proto.TimedOut:
			verdict.Failure.After = time.Since(k.start).Round(time.Millisecond)
			return verdict.Failure.Err()
		}
		if ctxErr != nil {
			return base.Aborted(c.rank, fmt.Errorf("%v #%d: %w", k.op, k.seq, ctxErr))
		}
		for p := range c.world {
			if p != c.rank && v.Word(p) < target {
				c.await(k, p, v.off, target)
				break
			}
		}
	}
}

// await waits for a while for peer p's word at off to reach target: it
// polls (spinning or yielding, see spinFor), then sleeps on the word for
// one slice at most. It returns when the word is there, or when it is time
// for the caller to look at failures and the deadline again.
func (c *Comm) await(k call, p, off int, target uint64) {
	s := c.segs[p]
	w := s.word(off)
	if atomic.LoadUint64(w) >= target {
		return
	}
	if c.spin > 0 && c.yield {
		start := time.Now()
		for {
			schedYield()
			if atomic.LoadUint64(w) >= target {
				return
			}
			if time.Since(start) > c.spin {
				break
			}
		}
	} else if c.spin > 0 {
		start := time.Now()
		for i := 1; ; i++ {
			if atomic.LoadUint64(w) >= target {
				return
			}
			if i%256 == 0 && time.Since(start) > c.spin {
				break
			}
		}
	}
	if c.Err() != nil {
		return // the caller decides
	}
	left := time.Until(k.deadline)
	if left <= 0 {
		return
	}
	atomic.AddUint32(s.waiters(), 1)
	if v := atomic.LoadUint64(w); v < target {
		futexWait(low32(w), uint32(v), min(left, sleepSlice))
	}
	atomic.AddUint32(s.waiters(), ^uint32(0))
}
