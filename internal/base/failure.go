package base

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// FailureKind says how a rank's call failed, so that its peers can report
// the rank that caused the failure, not one that only reacted to it.
type FailureKind uint8

const (
	// FailureLost: the culprit crashed, vanished or failed by itself
	// (abort); peers get ErrPeerLost.
	FailureLost FailureKind = iota + 1
	// FailureTimeout: the culprit did not arrive before the deadline;
	// peers get ErrTimeout.
	FailureTimeout
	// FailureMismatch: the ranks' signatures differ; peers get ErrMismatch.
	FailureMismatch
)

// Failure is what a failed rank tells its peers: through the rendezvous
// (Encode) and through the backends' status words.
type Failure struct {
	Kind    FailureKind
	Culprit int
	Text    string
}

// FailureOf classifies err, found by rank self.
func FailureOf(err error, self int) Failure {
	var (
		re *RankError
		te *TimeoutError
		me *MismatchError
	)
	f := Failure{Kind: FailureLost, Culprit: self, Text: err.Error()}
	switch {
	case errors.As(err, &me):
		f.Kind = FailureMismatch
	case errors.As(err, &re):
		f.Culprit = re.Rank
		switch {
		case errors.Is(re.Err, ErrTimeout):
			f.Kind = FailureTimeout
		case errors.Is(re.Err, ErrMismatch):
			f.Kind = FailureMismatch
		}
	case errors.As(err, &te):
		f.Kind = FailureTimeout
		if len(te.Missing) > 0 {
			f.Culprit = te.Missing[0]
		}
	}
	return f
}

// Err is the error a peer reports for this failure.
func (f Failure) Err() error {
	sentinel := ErrPeerLost
	switch f.Kind {
	case FailureTimeout:
		sentinel = ErrTimeout
	case FailureMismatch:
		sentinel = ErrMismatch
	}
	return &RankError{Rank: f.Culprit, Reason: f.Text, Err: sentinel}
}

const failurePrefix = "detcoll-failure/1 "

// Encode writes f as a rendezvous failure reason.
func (f Failure) Encode() string {
	return fmt.Sprintf("%s%d %d %s", failurePrefix, f.Kind, f.Culprit, f.Text)
}

// DecodeFailure reads a reason that Encode wrote; ok is false for any
// other text (a lost connection, say).
func DecodeFailure(reason string) (f Failure, ok bool) {
	rest, ok := strings.CutPrefix(reason, failurePrefix)
	if !ok {
		return f, false
	}
	fields := strings.SplitN(rest, " ", 3)
	if len(fields) != 3 {
		return f, false
	}
	kind, err1 := strconv.Atoi(fields[0])
	culprit, err2 := strconv.Atoi(fields[1])
	if err1 != nil || err2 != nil || kind < int(FailureLost) || kind > int(FailureMismatch) || culprit < 0 {
		return f, false
	}
	return Failure{Kind: FailureKind(kind), Culprit: culprit, Text: fields[2]}, true
}
