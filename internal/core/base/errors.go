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

// RankError attributes a failure to one rank: a peer that vanished or
// failed (Err is ErrPeerLost), aborted (ErrAborted), or opened with options
// that disagree with the others' (ErrInvalid). Reason says why, in the words
// of the rank that found it.
type RankError struct {
	Rank   int
	Reason string
	Err    error
	cause  error // Abort's cause, on the aborting rank only
}

func (e *RankError) Error() string {
	if e.Reason == "" {
		return fmt.Sprintf("%v: rank %d", e.Err, e.Rank)
	}
	return fmt.Sprintf("%v: rank %d: %s", e.Err, e.Rank, e.Reason)
}

// Unwrap returns the sentinel and, on a rank that called Abort, its cause.
func (e *RankError) Unwrap() []error {
	if e.cause == nil {
		return []error{e.Err}
	}
	return []error{e.Err, e.cause}
}

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
	call := e.Op.String()
	switch {
	case e.Op == OpInvalid && e.Seq != 0: // the waiter knows the call's number only
		call = fmt.Sprintf("call #%d", e.Seq)
	case e.Seq != 0:
		call = fmt.Sprintf("%v #%d", e.Op, e.Seq)
	}
	if len(e.Missing) == 0 { // the waiter could not tell who (a rail across hosts)
		return fmt.Sprintf("%v: %s: %s: not done after %v", ErrTimeout, call, e.Phase, e.After)
	}
	return fmt.Sprintf("%v: %s: %s: ranks %v had not arrived after %v", ErrTimeout, call, e.Phase, e.Missing, e.After)
}

func (e *TimeoutError) Is(target error) bool {
	return target == ErrTimeout || target == context.DeadlineExceeded
}
