package cuda

import (
	"encoding/binary"
	"fmt"
	"math/bits"
	"time"

	"github.com/detcoll/detcoll/internal/core/base"
	"github.com/detcoll/detcoll/internal/core/proto"
)

// record is a failure as a kernel wrote it into the host-mapped error
// record.
type record struct {
	code, phase uint64
	op          base.Op
	seq         uint64
	missing     uint64 // bit p: rank p had not arrived (timeouts)
	aux         uint64 // the peer's status word (codePeer) or the abort word (codeAbort)
	sigs        []base.Signature
}

// decodeRecord reads the error record in mem (recSize bytes, little
// endian as the GPU writes it). ok is false while no kernel has failed. The
// caller has read the valid word with an atomic load first, so that the
// fields, written before it, are complete.
func decodeRecord(mem []byte, world int) (r record, ok bool) {
	word := func(off int) uint64 { return binary.LittleEndian.Uint64(mem[off:]) }
	if word(recValid) == 0 {
		return record{}, false
	}
	r = record{
		code: word(recCode), phase: word(recPhase), op: base.Op(word(recOp)),
		seq: word(recSeq), missing: word(recMissing), aux: word(recAux),
		sigs: make([]base.Signature, world),
	}
	for p := range r.sigs {
		var w [proto.SignatureWords]uint64
		for k := range w {
			w[k] = word(recSigs + 8*(p*sigWords+k))
		}
		r.sigs[p] = proto.DecodeSignature(w)
	}
	return r, true
}

// err turns the record into the error the cpu backend would return for
// the same failure: a *base.TimeoutError, a *base.MismatchError, or a
// *base.RankError naming the rank that caused it. rank is this rank.
func (r record) err(rank int, timeout time.Duration) error {
	switch r.code {
	case codeTimeout:
		var missing []int
		for m := r.missing; m != 0; m &= m - 1 {
			missing = append(missing, bits.TrailingZeros64(m))
		}
		return &base.TimeoutError{Op: r.op, Seq: r.seq, Phase: proto.Phase(r.phase).String(), Missing: missing, After: timeout}
	case codeMismatch:
		return &base.MismatchError{Signatures: r.sigs}
	case codePeer, codeAbort:
		f, ok := proto.StatusFailure(r.aux)
		if !ok {
			f = base.Failure{Kind: base.FailureLost, Culprit: -1}
		}
		if r.code == codeAbort && f.Culprit == rank && f.Kind == base.FailureLost {
			return fmt.Errorf("%w: %v #%d: a kernel stopped at the abort word", base.ErrAborted, r.op, r.seq)
		}
		what := "aborted the kernels"
		if r.code == codePeer {
			what = "failed"
		}
		f.Text = fmt.Sprintf("rank %d %s (seen by rank %d's kernel in %v #%d)", f.Culprit, what, rank, r.op, r.seq)
		return f.Err()
	}
	return fmt.Errorf("%w: a kernel recorded unknown failure code %d in %v #%d", base.ErrPeerLost, r.code, r.op, r.seq)
}
