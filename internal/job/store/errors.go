package store

import (
	"errors"
	"fmt"
)

// Sentinels. The detcoll root maps them to its own through errors.Is, so
// every error here wraps one of them (or a context error) with %w.
var (
	// ErrPeerLost matches a job failure: a rank lost without a goodbye, a
	// rank that called Fail, or the server gone (reported as rank 0). The
	// detail is a *PeerError.
	ErrPeerLost = errors.New("detcoll/store: peer lost")

	// ErrAuth matches a refused handshake: wrong secret, wrong world size,
	// a rank out of range or already joined, a malformed hello, or a server
	// that cannot prove it knows the secret.
	ErrAuth = errors.New("detcoll/store: authentication failed")

	// ErrClosed matches a call on a closed Client, and a Barrier or
	// AllGather that cannot complete because a rank has already closed.
	ErrClosed = errors.New("detcoll/store: closed")

	// ErrInvalid matches bad arguments, found before any work: an empty
	// secret, a rank outside [0, world), an empty or long key, a long value.
	ErrInvalid = errors.New("detcoll/store: invalid argument")
)

// errMalformed matches a frame that does not decode. The peer that sent it is
// broken or not a detcoll store; it is never reported to callers by itself.
var errMalformed = errors.New("detcoll/store: malformed frame")

// errTurnedAway matches a connection the server closed before its challenge:
// it had as many handshakes pending as it allows (or was closing). Dial
// retries it, as it retries a refused connection.
var errTurnedAway = errors.New("detcoll/store: turned away before the challenge")

// PeerError is the cause of a job failure: which rank was lost and why. It
// matches ErrPeerLost. Rank 0 with a reason naming the server means the
// server went away.
type PeerError struct {
	Rank   int    // the rank lost or failed; 0 also when the server went away
	Reason string // the Fail reason, or how the connection ended
}

// Error says which rank failed and why.
func (e *PeerError) Error() string {
	return fmt.Sprintf("detcoll/store: rank %d failed: %s", e.Rank, e.Reason)
}

// Unwrap returns ErrPeerLost.
func (e *PeerError) Unwrap() error { return ErrPeerLost }
