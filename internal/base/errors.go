package base

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
)

// The sentinels. Callers test with errors.Is; the text is not API.
var (
	ErrClosed      = errors.New("detcoll: communicator closed")
	ErrInvalid     = errors.New("detcoll: invalid argument")
	ErrMismatch    = errors.New("detcoll: ranks called different collectives")
	ErrPeerLost    = errors.New("detcoll: peer lost")
	ErrTimeout     = errors.New("detcoll: timed out waiting for peers")
	ErrAborted     = errors.New("detcoll: aborted")
	ErrUnavailable = errors.New("detcoll: backend unavailable")
)

// Invalidf returns an error matching ErrInvalid with the formatted detail.
func Invalidf(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrInvalid, fmt.Sprintf(format, args...))
}

// RankError attributes a failure to one rank: a peer that vanished or reported
// its own failure. Err says what happened (ErrPeerLost for a lost connection
// or a crash).
type RankError struct {
	Rank   int
	Reason string
	Err    error
}

func (e *RankError) Error() string {
	if e.Reason == "" {
		return fmt.Sprintf("rank %d: %v", e.Rank, e.Err)
	}
	return fmt.Sprintf("rank %d: %v: %s", e.Rank, e.Err, e.Reason)
}

func (e *RankError) Unwrap() error { return e.Err }

// MismatchError reports that the ranks did not call the same collective: it
// lists every rank's signature for the call, indexed by rank.
type MismatchError struct {
	Signatures []Signature
}

func (e *MismatchError) Error() string {
	var b strings.Builder
	b.WriteString(ErrMismatch.Error())
	for r, s := range e.Signatures {
		fmt.Fprintf(&b, "; rank %d: %v", r, s)
	}
	return b.String()
}

func (e *MismatchError) Is(target error) bool { return target == ErrMismatch }

// TimeoutError reports a wait that outlived the communicator's deadline. It
// names the operation, the phase of the protocol and the ranks that had not
// arrived. It matches ErrTimeout and context.DeadlineExceeded.
type TimeoutError struct {
	Op      Op
	Seq     uint64
	Phase   string
	Missing []int
	After   time.Duration
}

func (e *TimeoutError) Error() string {
	return fmt.Sprintf("%v: %v #%d: %s: ranks %v had not arrived after %v",
		ErrTimeout, e.Op, e.Seq, e.Phase, e.Missing, e.After)
}

func (e *TimeoutError) Is(target error) bool {
	return target == ErrTimeout || target == context.DeadlineExceeded
}
