package proto

import (
	"github.com/detcoll/detcoll/internal/core/base"
	"github.com/detcoll/detcoll/internal/core/num"
)

// StatusWord is a failed rank's status word: the failure's kind in the high
// half, its culprit + 1 in the low half (0 means healthy, so a culprit of -1,
// a mismatch's, is 0). The whole failure travels beside it where there is
// room (base.Failure.Encode); the word alone is what a GPU kernel writes and
// reads.
func StatusWord(f base.Failure) uint64 {
	return uint64(f.Kind)<<StatusKindShift | uint64(uint32(f.Culprit+1))
}

// StatusKindShift is where the kind starts in a status word.
const StatusKindShift = 32

// StatusFailure decodes a status word; ok is false for 0 (healthy) and for a
// word that names no kind.
func StatusFailure(w uint64) (f base.Failure, ok bool) {
	kind := base.FailureKind(w >> StatusKindShift)
	if w == 0 || kind < base.FailureLost || kind > base.FailureInvalid {
		return f, false
	}
	return base.Failure{Kind: kind, Culprit: int(uint32(w)) - 1}, true
}

// SignatureWords is how many 64-bit words a signature takes in a control
// block.
const SignatureWords = 7

// EncodeSignature lays s out in words, in the order every backend and the
// kernels use. The reduction's operator shares the operation's word, above
// bit 32: num.Sum is 0, so the word of a sum is the operation alone, which
// is what the cuda kernels write. Registered is bit 32 of the buffers'
// word (SigRegistered).
func EncodeSignature(s base.Signature) [SignatureWords]uint64 {
	bufs := uint64(s.Buffers)
	if s.Registered {
		bufs |= SigRegistered
	}
	return [SignatureWords]uint64{
		uint64(s.Op) | uint64(s.Red)<<32, uint64(s.DType), s.Count, uint64(s.Root), bufs, s.Layout, s.Seq,
	}
}

// SigRegistered is Signature.Registered's bit in word 4.
const SigRegistered = 1 << 32

// DecodeSignature is EncodeSignature's inverse.
func DecodeSignature(w [SignatureWords]uint64) base.Signature {
	return base.Signature{
		Op: base.Op(uint32(w[0])), Red: num.RedOp(w[0] >> 32), DType: num.DType(w[1]), Count: w[2], Root: uint32(w[3]),
		Buffers: uint32(w[4]), Layout: w[5], Seq: w[6], Registered: w[4]&SigRegistered != 0,
	}
}
