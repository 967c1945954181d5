package cuda

import (
	"github.com/detcoll/detcoll/internal/core/base"
	"github.com/detcoll/detcoll/internal/core/proto"
)

// The layout of a rank's buffer and of the host-mapped error record, and
// the kernels' codes. The kernels get them as a header
// generated from these (header.go, kernels/proto.h); struct Args of
// kernels/launch.h mirrors kernelArgs (layout_test.go checks the layout).
const (
	maxWorld = 64  // ranks: the missing-rank mask is one 64-bit word
	maxWork  = 8   // buffers per launch
	block    = 512 // threads per block (the kernels' launch bounds)

	offStage        = 0   // last sequence whose input is staged and signed
	offDone         = 128 // last sequence this rank finished reading its peers for
	offReduced      = 256 // last sequence whose shard is summed in place
	offStatus       = 384 // nonzero once the rank failed: statusWord
	offSig          = 512 // the signature of the staged call, sigWords words
	sigWords        = 8   // at least proto.SignatureWords (checked below)
	offClaim        = 640 // the first failing kernel claims the error record
	offCountStage   = 768 // launch counters of the last-block pattern
	offCountReduced = 832
	offCountDone    = 896
	offTicket       = 960  // LL: the next window to take (u32), reset by the last block
	offPeers        = 1024 // every rank's buffer as mapped by this rank
	offReg          = 1536 // a registered call's input and output (regWord), written with the signature
	offProf         = 1600 // DETCOLL_CUDA_PROFILE: the LL launches' spans (profile.go), 12 words
	offAck          = 2048 // ack[p]: rank p's done, pushed here by p
	offSent1        = 2560 // sent1[p]: rank p pushed its parts of the input here (push path)
	offSent2        = 3072 // sent2[p]: rank p pushed its reduced part here (push path), or read this rank's input and wrote its sums (registered)
	offStopped      = 3584 // stopped[p]: rank p's kernels have stopped; written by p's host in Close
	ctrlSize        = 4096 // keeps the staging page aligned

	// The LL area (after the staging): receive slots [2][world] of
	// llSlot(llMax) bytes, each a signature header of llHeader bytes and
	// two bytes of lines per image byte; then world scratch images of
	// llMax bytes.
	llHeader = 128

	recAbort   = 0 // raised by the host: a statusWord naming the culprit
	recValid   = 64
	recCode    = 72
	recPhase   = 80
	recOp      = 88
	recSeq     = 96
	recMissing = 104
	recAux     = 112 // the peer's status word, or the abort word
	recSigs    = 128 // every rank's signature, sigWords words each
	recSize    = recSigs + maxWorld*sigWords*8

	shardAlign = 64
)

// llSlot is the bytes of one LL receive slot for images of up to llMax
// bytes.
func llSlot(llMax int) int { return llHeader + 2*llMax }

// llAreaSize is the bytes of a rank's LL area.
func llAreaSize(world, llMax int) int { return 2*world*llSlot(llMax) + world*llMax }

// pushStaging is the staging the push path needs for inputs of up to
// capacity bytes: own part, W-1 received parts and W-1 received sums, each
// a part of an all-reduce (the largest shard, in whole 64-byte lines).
func pushStaging(capacity int64, world int) int64 {
	per := (capacity + int64(world) - 1) / int64(world)
	per = (per + shardAlign - 1) / shardAlign * shardAlign
	return int64(2*world-1) * per
}

// bufferLayout returns where the LL area starts in a rank's buffer and the
// buffer's size: the control block, the staging for calls of up to
// capacity bytes (page aligned), then the LL area.
func bufferLayout(capacity int64, world, llMax int) (llOff, size int) {
	const page = 4096
	staging := max(base.StagingCapacity(capacity), pushStaging(capacity, world))
	llOff = ctrlSize + int((staging+page-1)/page*page)
	return llOff, llOff + llAreaSize(world, llMax)
}

// BufferBytes is the device memory one rank of world ranks allocates for
// a communicator of the given capacity with the default LL settings (a
// user of many communicators sizes their capacity from it).
func BufferBytes(capacity int64, world int) int64 {
	_, size := bufferLayout(capacity, world, defaultLLMax(world))
	return int64(size)
}

// Error record codes (the phases are proto.Phase).
const (
	codeTimeout  = 1
	codeMismatch = 2
	codePeer     = 3
	codeAbort    = 4
)

// work is one buffer of a launch. It must match struct Work of the kernels.
type work struct {
	In, Out, Bytes, Off uint64
}

// What a reducing launch computes (kernelArgs.Calc, calcOf).
const (
	calcNode      = 3 // the operator at the tree's nodes: 0 (add), calcMax or calcMin
	calcMax       = 1
	calcMin       = 2
	calcPre       = 4  // premulsum: each leaf times its rank's scalar
	calcPost      = 8  // avg: the root divided by W
	calcSigned    = 16 // integers: max, min and avg compare and divide signed
	calcTypeShift = 8  // the element type, 4 bits from here: a type*
)

// The element types of the reducing kernel (calcTypeShift): integers by
// width, their sign in calcSigned.
const (
	typeBF16 = 1 + iota
	typeF16
	typeF32
	typeF64
	typeI8
	typeI16
	typeI32
	typeI64
)

// kernelArgs is the kernels' one parameter. It must match struct Args of
// the kernels field for field (Go lays it out as C does).
type kernelArgs struct {
	Self, Host, Timeout uint64
	Count, Layout       uint64
	LL, Window          uint64
	Scalar, ScalarAt    uint64
	// Wins is the windows' table (window.go); RegIn and RegOut are a
	// registered call's input and output as regWord has them, 0 for
	// every other call.
	Wins, RegIn, RegOut   uint64
	Op, DType, Root, NBuf uint32
	Red, Calc             uint32
	Rank, NWork           uint32
	Steps                 stepTable // the launch's steps, run in order (steptable.go)
	Work                  [maxWork]work
}

// The control block's words fit before the next field.
const _ = uint(offProf - offReg - 2*8)
const _ = uint(offAck - offProf - profWords*8)
const _ = uint(offReg - offPeers - maxWorld*8)

// A longer proto signature fails to compile here rather than overrun the
// signature slots.
const _ = uint(sigWords - proto.SignatureWords)
