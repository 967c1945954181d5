package cpu

import (
	"bytes"
	"sync/atomic"

	"github.com/detcoll/detcoll/internal/base"
)

// A failed rank's status word says how it failed and who caused it (a
// base.Failure): the kind in the high half, the culprit rank + 1 in the low
// half. The whole failure, encoded (base.Failure.Encode), is written into
// the reason area before the word, so that a peer rebuilds the very error
// this rank returns.
func statusWord(f base.Failure) uint64 { return uint64(f.Kind)<<32 | uint64(f.Culprit+1) }

// setStatus publishes this rank's failure for its peers.
func (c *Comm) setStatus(f base.Failure) {
	own := c.segs[c.rank]
	reason := own.mem[offReason : offReason+reasonLen]
	n := copy(reason[:reasonLen-1], f.Encode())
	clear(reason[n:])
	atomic.StoreUint64(own.word(offStatus), statusWord(f))
}

// peerFailure returns the failure that peer p's status word reports, or
// nil while p is healthy.
func (c *Comm) peerFailure(p int) error {
	s := c.segs[p]
	st := s.load(offStatus)
	if st == 0 {
		return nil
	}
	reason := s.mem[offReason : offReason+reasonLen]
	if i := bytes.IndexByte(reason, 0); i >= 0 {
		reason = reason[:i]
	}
	f, ok := base.DecodeFailure(string(reason))
	if !ok {
		// Written by a rank of another version, or torn: the word alone
		// still names the kind and the culprit.
		f = base.Failure{Kind: base.FailureKind(st >> 32), Culprit: int(st&0xFFFFFFFF) - 1, Text: string(reason)}
	}
	return f.Err()
}
