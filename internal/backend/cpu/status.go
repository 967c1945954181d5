package cpu

import (
	"bytes"
	"sync/atomic"

	"github.com/detcoll/detcoll/internal/core/base"
	"github.com/detcoll/detcoll/internal/core/proto"
)

// A failed rank's status word says how it failed and who caused it
// (proto.StatusWord). The whole failure, encoded (base.Failure.Encode), is
// written into the reason area before the word, so that a peer rebuilds the
// very error this rank returns.

// setStatus publishes this rank's failure for its peers.
func (c *Comm) setStatus(f base.Failure) {
	own := c.segs[c.rank]
	reason := own.mem[offReason : offReason+reasonLen]
	n := copy(reason[:reasonLen-1], f.Encode())
	clear(reason[n:])
	atomic.StoreUint64(own.word(offStatus), proto.StatusWord(f))
}

// peerFailure returns the failure that peer p's status word reports; ok is
// false while p is healthy.
func (c *Comm) peerFailure(p int) (f base.Failure, ok bool) {
	s := c.segs[p]
	st := s.load(offStatus)
	if st == 0 {
		return f, false
	}
	reason := s.mem[offReason : offReason+reasonLen]
	if i := bytes.IndexByte(reason, 0); i >= 0 {
		reason = reason[:i]
	}
	if f, ok := base.DecodeFailure(string(reason)); ok {
		return f, true
	}
	// Written by a rank of another version, or torn: the word alone still
	// names the kind and the culprit.
	if f, ok = proto.StatusFailure(st); !ok {
		f = base.Failure{Kind: base.FailureLost, Culprit: p}
	}
	f.Text = string(reason)
	return f, true
}
