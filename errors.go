package detcoll

import "github.com/detcoll/detcoll/internal/core/base"

// The errors every call may return. Test for them with errors.Is; read the
// detail with errors.As into the types below. (They are defined in an
// internal package so that backends can return them without importing this
// one; the values are the same.)
var (
	// ErrClosed: the communicator was closed.
	ErrClosed = base.ErrClosed
	// ErrInvalid: a bad argument, found before any work; nothing changed
	// and the communicator is still usable.
	ErrInvalid = base.ErrInvalid
	// ErrMismatch: the ranks called different collectives (operation,
	// element type, count, root or buffers). Every rank gets it, as a
	// *MismatchError listing each rank's signature.
	ErrMismatch = base.ErrMismatch
	// ErrPeerLost: a peer crashed, was killed, disconnected or failed. The
	// error is a *RankError naming it.
	ErrPeerLost = base.ErrPeerLost
	// ErrTimeout: peers did not arrive within Options.Timeout; a
	// *TimeoutError names the operation and the missing ranks. It also
	// matches context.DeadlineExceeded.
	ErrTimeout = base.ErrTimeout
	// ErrAborted: Abort was called on this communicator.
	ErrAborted = base.ErrAborted
	// ErrUnavailable: the backend cannot run here (no GPU, no driver).
	ErrUnavailable = base.ErrUnavailable
)

type (
	// RankError attributes a failure to one rank.
	RankError = base.RankError
	// MismatchError lists every rank's signature for a mismatched call.
	MismatchError = base.MismatchError
	// TimeoutError names the operation, phase and missing ranks of a wait
	// that outlived the timeout.
	TimeoutError = base.TimeoutError
	// Signature is what ranks compare before reading each other's data.
	Signature = base.Signature
	// Op names a collective operation in a Signature.
	Op = base.Op
)

// The operations, as a Signature or a TimeoutError names them.
const (
	OpAllReduce         = base.OpAllReduce
	OpReduceScatter     = base.OpReduceScatter
	OpAllGather         = base.OpAllGather
	OpBroadcast         = base.OpBroadcast
	OpBarrier           = base.OpBarrier
	OpAllGatherMany     = base.OpAllGatherMany
	OpReduceScatterMany = base.OpReduceScatterMany
	OpAllReduceStaged   = base.OpAllReduceStaged
	OpClose             = base.OpClose
	OpOpen              = base.OpOpen // Open's waits: never in a Signature
)
