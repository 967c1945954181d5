package cpu

import (
	"sync/atomic"
	"unsafe"

	"github.com/detcoll/detcoll/internal/core/base"
	"github.com/detcoll/detcoll/internal/core/proto"
)

// Layout of a rank's segment. Each word a peer polls has a cache line of its
// own so that writing one word does not disturb the readers of another.
const (
	offStage   = 0    // last sequence whose input is staged and signed
	offReduced = 64   // last sequence whose shard is reduced in place (large all-reduce)
	offDone    = 128  // last sequence this rank finished reading its peers for
	offStatus  = 192  // nonzero once the rank has failed: see status.go
	offWaiters = 256  // number of peers sleeping on one of this segment's words (uint32)
	offSig     = 320  // the signature of the staged call, proto.SignatureWords words
	offStaged  = 384  // bytes of the current call's input staged so far (streamed calls only: see stream.go)
	offReason  = 1024 // why the rank failed, reasonLen bytes, written before the status word
	reasonLen  = 2048
	ctrlSize   = 4096 // keeps the payload page aligned
)

// The signature's slot holds proto's words: a longer signature fails to
// compile here rather than overwrite offStaged.
const _ = uint(offStaged - offSig - 8*proto.SignatureWords)

// segment is one rank's mapped shared memory.
type segment struct {
	mem     []byte
	payload []byte
}

func newSegment(mem []byte) segment {
	return segment{mem: mem, payload: mem[ctrlSize:]}
}

func (s segment) word(off int) *uint64 {
	return (*uint64)(unsafe.Pointer(&s.mem[off]))
}

func (s segment) load(off int) uint64 { return atomic.LoadUint64(s.word(off)) }

func (s segment) waiters() *uint32 {
	return (*uint32)(unsafe.Pointer(&s.mem[offWaiters]))
}

func (s segment) writeSignature(sig base.Signature) {
	for i, v := range proto.EncodeSignature(sig) {
		atomic.StoreUint64(s.word(offSig+8*i), v)
	}
}

func (s segment) readSignature() base.Signature {
	var w [proto.SignatureWords]uint64
	for i := range w {
		w[i] = s.load(offSig + 8*i)
	}
	return proto.DecodeSignature(w)
}

func segmentSize(capacity int64) int64 {
	const page = 4096
	return ctrlSize + (capacity+page-1)/page*page
}
