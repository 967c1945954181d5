package base

import (
	"encoding/json"
	"errors"
	"strings"
	"time"
)

// One failure, one story. A communicator fails once, for one root cause,
// and every rank must report that cause the same way: the same error type,
// the same sentinel, the culprit named once, whichever rank found it and
// however it reached the others (its own wait, a peer's status word, the
// rendezvous). Failure is that cause in a form that travels between ranks;
// Err rebuilds the one error every rank returns for it, and a rank that
// finds a failure itself returns Err of its own Failure (Canonical), not the
// raw error it found. The rule, per kind:
//
//	lost      a rank crashed, was killed, vanished or failed on its own:
//	          *RankError{Rank: culprit, Err: ErrPeerLost}
//	aborted   Abort was called on rank culprit: *RankError{Err: ErrAborted}
//	          (on that rank it also wraps the caller's cause)
//	timeout   ranks did not arrive in time: *TimeoutError naming the
//	          operation, the phase and the missing ranks
//	mismatch  ranks called different collectives: *MismatchError listing
//	          every rank's signature
//	invalid   ranks opened with options that disagree (capacity, world):
//	          *RankError{Rank: culprit, Err: ErrInvalid}

// FailureKind says how a communicator failed. Its values travel in the
// backends' status words (the high half; see the cuda kernels), so they are
// never reused.
type FailureKind uint8

const (
	// FailureLost: the culprit crashed, vanished or failed by itself.
	FailureLost FailureKind = iota + 1
	// FailureTimeout: the culprit (and maybe others) did not arrive
	// before the deadline.
	FailureTimeout
	// FailureMismatch: the ranks' signatures differ.
	FailureMismatch
	// FailureAborted: Abort was called on the culprit.
	FailureAborted
	// FailureInvalid: the ranks' options disagree.
	FailureInvalid
	numFailureKinds
)

// Failure is a communicator's failure as ranks tell each other about it:
// through the rendezvous (Encode) and through the backends' status words.
type Failure struct {
	Kind FailureKind
	// Culprit is the rank that caused the failure: the lost, aborted or
	// disagreeing rank, or the first missing one. -1 for a mismatch, which
	// is nobody's alone.
	Culprit int
	// Text says why, in the finder's words, without any prefix: the
	// reason a connection ended, an abort's cause. Err adds the sentinel
	// and the rank once.
	Text string

	// Op, Seq, Phase, Missing and After describe a timeout: what was
	// being waited for, by which call, and who had not arrived after how
	// long.
	Op      Op
	Seq     uint64
	Phase   string
	Missing []int
	After   time.Duration

	// Signatures, by rank, describe a mismatch.
	Signatures []Signature
}

// FailureOf returns the failure that err reports, as found by rank self.
// An error that is none of the package's types (a system call that failed,
// say) is a failure of self itself, which its peers see as a lost rank.
func FailureOf(err error, self int) Failure {
	var (
		re *RankError
		te *TimeoutError
		me *MismatchError
	)
	switch {
	case errors.As(err, &me):
		return Failure{Kind: FailureMismatch, Culprit: -1, Signatures: me.Signatures}
	case errors.As(err, &te):
		f := Failure{Kind: FailureTimeout, Culprit: self, Op: te.Op, Seq: te.Seq, Phase: te.Phase, Missing: te.Missing, After: te.After}
		if len(te.Missing) > 0 {
			f.Culprit = te.Missing[0]
		}
		return f
	case errors.As(err, &re):
		return Failure{Kind: kindOf(re.Err), Culprit: re.Rank, Text: re.Reason}
	case errors.Is(err, ErrAborted):
		return Failure{Kind: FailureAborted, Culprit: self, Text: strings.TrimPrefix(err.Error(), ErrAborted.Error()+": ")}
	}
	return Failure{Kind: FailureLost, Culprit: self, Text: err.Error()}
}

func kindOf(sentinel error) FailureKind {
	switch {
	case errors.Is(sentinel, ErrAborted):
		return FailureAborted
	case errors.Is(sentinel, ErrTimeout):
		return FailureTimeout
	case errors.Is(sentinel, ErrMismatch):
		return FailureMismatch
	case errors.Is(sentinel, ErrInvalid):
		return FailureInvalid
	}
	return FailureLost
}

// Err is the error every rank returns for this failure.
func (f Failure) Err() error {
	switch f.Kind {
	case FailureTimeout:
		return &TimeoutError{Op: f.Op, Seq: f.Seq, Phase: f.Phase, Missing: f.Missing, After: f.After}
	case FailureMismatch:
		return &MismatchError{Signatures: f.Signatures}
	case FailureAborted:
		return &RankError{Rank: f.Culprit, Reason: f.Text, Err: ErrAborted}
	case FailureInvalid:
		return &RankError{Rank: f.Culprit, Reason: f.Text, Err: ErrInvalid}
	}
	return &RankError{Rank: f.Culprit, Reason: f.Text, Err: ErrPeerLost}
}

// Canonical returns the error every rank reports for the failure err, found
// by rank self: Err of its Failure. The errors of Abort keep the caller's
// cause, and the package's own errors are returned as they are, so that
// what a rank found and what its peers rebuild are the same error.
func Canonical(err error, self int) error {
	switch err.(type) {
	case *RankError, *TimeoutError, *MismatchError:
		// Already one of ours, unwrapped: a %w with more words around it
		// would make the ranks' texts differ.
		return err
	}
	return FailureOf(err, self).Err()
}

// Aborted is the error of Abort(cause) on rank self.
func Aborted(self int, cause error) error {
	return &RankError{Rank: self, Reason: cause.Error(), Err: ErrAborted, cause: cause}
}

const failurePrefix = "detcoll-failure/2 "

// failureWire is Failure's encoding, but for Text, which follows it.
type failureWire struct {
	Kind       FailureKind   `json:"k"`
	Culprit    int           `json:"c"`
	Op         Op            `json:"op,omitempty"`
	Seq        uint64        `json:"seq,omitempty"`
	Phase      string        `json:"phase,omitempty"`
	Missing    []int         `json:"missing,omitempty"`
	After      time.Duration `json:"after,omitempty"`
	Signatures []Signature   `json:"sigs,omitempty"`
}

// EncodedMax is the most bytes Encode writes: what the rendezvous carries
// as a failure reason.
const EncodedMax = 1 << 10

// Encode writes f in at most EncodedMax bytes: the structured part as JSON
// on the first line, then the text, cut to fit (the signatures are dropped
// if even they do not fit: every rank reads those from its peers anyway).
func (f Failure) Encode() string {
	const limit = EncodedMax
	w := failureWire{f.Kind, f.Culprit, f.Op, f.Seq, f.Phase, f.Missing, f.After, f.Signatures}
	head, _ := json.Marshal(w)
	if len(failurePrefix)+len(head)+1 > limit {
		w.Signatures = nil
		head, _ = json.Marshal(w)
	}
	s := failurePrefix + string(head) + "\n" + f.Text
	if len(s) > limit {
		s = s[:max(limit, 0)]
	}
	return s
}

// DecodeFailure reads what Encode wrote; ok is false for any other text (a
// lost connection's reason, say) and for a structured part Encode could not
// have written.
func DecodeFailure(s string) (f Failure, ok bool) {
	rest, ok := strings.CutPrefix(s, failurePrefix)
	if !ok {
		return f, false
	}
	head, text, ok := strings.Cut(rest, "\n")
	if !ok {
		return f, false
	}
	var w failureWire
	if err := json.Unmarshal([]byte(head), &w); err != nil {
		return f, false
	}
	if w.Kind < FailureLost || w.Kind >= numFailureKinds || w.Culprit < -1 {
		return f, false
	}
	return Failure{
		Kind: w.Kind, Culprit: w.Culprit, Text: text,
		Op: w.Op, Seq: w.Seq, Phase: w.Phase, Missing: w.Missing, After: w.After, Signatures: w.Signatures,
	}, true
}
