package cuda

import (
	"time"

	"github.com/detcoll/detcoll/internal/core/base"
	"github.com/detcoll/detcoll/internal/core/proto"
)

// monitorTick is how often the monitor reads the error record, so that a
// kernel's failure reaches Err and the peers without waiting for the next
// call.
const monitorTick = 10 * time.Millisecond

// monitor turns a failure the rendezvous reports (a peer crashed, was
// killed or failed) into this communicator's failure at once, raising the
// abort word so that spinning kernels exit; and it reads the error record
// regularly, so that a kernel's failure is told to the peers.
func (c *Comm) monitor() {
	defer close(c.monitorDone)
	tick := time.NewTicker(monitorTick)
	defer tick.Stop()
	var done <-chan struct{}
	if c.rdv != nil {
		done = c.rdv.Done()
	}
	for {
		select {
		case <-done:
			c.poison(c.rdv.Err(), false)
			done = nil
		case <-tick.C:
			c.refresh()
			c.watchRail()
		case <-c.stopMonitor:
			return
		}
	}
}

// Err returns the failure that poisoned the communicator, or nil. It reads
// the error record first, so a kernel's failure shows as soon as the
// kernel has recorded it.
func (c *Comm) Err() error {
	c.refresh()
	c.refreshRail()
	if p := c.cause.Load(); p != nil {
		return *p
	}
	return nil
}

// Abort fails the communicator with cause: pending kernels of this rank
// exit at the abort word, later calls return the cause, and every peer
// learns that this rank failed.
func (c *Comm) Abort(cause error) {
	c.poison(base.Aborted(c.rank, cause), true)
}

// refresh reads the error record and, when a kernel has failed, makes that
// the cause (a mismatch replaces an earlier cause: the signatures say
// more than a peer's report of them) and tells the peers, once. The record
// is written once; refresh takes it once.
func (c *Comm) refresh() {
	if c.recorded.Load() {
		return
	}
	rec, ok := c.readRecord()
	if !ok {
		return
	}
	rec.seq = c.callNumber(rec.seq)
	for p := range rec.sigs {
		rec.sigs[p].Seq = c.callNumber(rec.sigs[p].Seq)
	}
	err := base.Canonical(rec.err(c.rank, c.timeout), c.rank)
	if rec.code == codePeer || rec.code == codeAbort {
		err = c.peerReport(rec, err)
	}
	if !c.cause.CompareAndSwap(nil, &err) {
		if p := c.cause.Load(); proto.Prevails(base.FailureOf(*p, c.rank), base.FailureOf(err, c.rank)) {
			c.cause.Store(&err)
		}
	}
	c.recorded.Store(true)
	// Tell the peers what this rank's kernel found itself; a peer's
	// failure or an abort was told by whoever found it.
	if (rec.code == codeTimeout || rec.code == codeMismatch) && !c.told.Swap(true) {
		c.log.Error("communicator failed", "err", err)
		if c.rdv != nil {
			c.rdv.Fail(base.FailureOf(err, c.rank).Encode())
		}
	}
}

// readRecord decodes the error record, if a kernel has written it, under
// hostMu: Err may run on any goroutine while Close frees the memory.
func (c *Comm) readRecord() (record, bool) {
	c.hostMu.RLock()
	defer c.hostMu.RUnlock()
	if c.host.Len() == 0 || c.hostWord(recValid).Load() == 0 {
		return record{}, false
	}
	return decodeRecord(c.host.Bytes(), c.world)
}

// peerReportWait bounds how long refresh waits for the rendezvous to
// bring a peer's timeout or mismatch whole.
const peerReportWait = time.Second

// peerReport returns the error of a peer's failure that a kernel saw in
// the peer's status word (err, rebuilt from its kind and culprit alone).
// A peer's timeout or mismatch comes whole (operation, missing ranks,
// signatures) through the rendezvous, which the peer tells right after
// its kernel records it: refresh waits for that, at most peerReportWait,
// so that every rank reports the same error.
func (c *Comm) peerReport(rec record, err error) error {
	f, _ := proto.StatusFailure(rec.aux)
	k := f.Kind
	if c.rdv == nil || (k != base.FailureTimeout && k != base.FailureMismatch) {
		return err
	}
	t := time.NewTimer(peerReportWait)
	defer t.Stop()
	select {
	case <-c.rdv.Done():
		if rerr := c.rdv.Err(); rerr != nil {
			return rerr
		}
	case <-t.C:
	}
	return err
}

// poison records the first failure, tells the peers when this rank is the
// origin (tell), and raises the abort word so that kernels stop waiting.
func (c *Comm) poison(err error, tell bool) {
	err = base.Canonical(err, c.rank) // the error every rank reports: see base.Failure
	if !c.cause.CompareAndSwap(nil, &err) {
		return
	}
	c.log.Error("communicator failed", "err", err)
	if tell && c.rdv != nil && !c.told.Swap(true) {
		c.rdv.Fail(base.FailureOf(err, c.rank).Encode())
	}
	c.raiseAbort(err)
}

// raiseAbort sets the abort word to the status word of err (its kind and
// culprit), which a kernel that stops at it copies into this rank's status
// word for the peers.
func (c *Comm) raiseAbort(err error) {
	c.hostMu.RLock()
	defer c.hostMu.RUnlock()
	if c.host.Len() == 0 {
		return
	}
	c.hostWord(recAbort).CompareAndSwap(0, proto.StatusWord(base.FailureOf(err, c.rank)))
}

// usable returns why no call can run now, or nil.
func (c *Comm) usable() error {
	if c.closed {
		return base.ErrClosed
	}
	return c.Err()
}
