package cpu

import (
	"bytes"
	"errors"
	"sync/atomic"

	"github.com/detcoll/detcoll/internal/base"
)

// A failed rank's status word says how it failed, so that a peer that reads
// it reports the rank that caused the failure, not one that only reacted
// to it: kind in the high half, the culprit rank + 1 in the low half. Its
// reason text is written before the word.
const (
	statusOwn      = 1 // the rank failed by itself (timeout, abort)
	statusMismatch = 2 // the rank found the signatures differ
	statusPeer     = 3 // the rank failed because the culprit did
)

func statusWord(kind uint64, culprit int) uint64 { return kind<<32 | uint64(culprit+1) }

// setStatus publishes this rank's failure for its peers.
func (c *Comm) setStatus(err error) {
	own := c.segs[c.rank]
	kind, culprit := uint64(statusOwn), c.rank
	var re *base.RankError
	switch {
	case errors.Is(err, base.ErrMismatch) && !errors.As(err, &re):
		kind = statusMismatch
	case errors.As(err, &re):
		kind, culprit = statusPeer, re.Rank
	}
	reason := own.mem[offReason : offReason+reasonLen]
	n := copy(reason[:reasonLen-1], err.Error())
	clear(reason[n:])
	atomic.StoreUint64(own.word(offStatus), statusWord(kind, culprit))
}

// peerFailure returns the failure that peer p's status word reports, or
// nil while p is healthy.
func (c *Comm) peerFailure(p int) error {
	s := c.segs[p]
	st := s.load(offStatus)
	if st == 0 {
		return nil
	}
	culprit := int(st&0xFFFFFFFF) - 1
	reason := s.mem[offReason : offReason+reasonLen]
	if i := bytes.IndexByte(reason, 0); i >= 0 {
		reason = reason[:i]
	}
	return &base.RankError{Rank: culprit, Reason: string(reason), Err: base.ErrPeerLost}
}
