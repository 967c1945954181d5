package proto

import "github.com/detcoll/detcoll/internal/core/base"

// View is what a waiting rank sees of its peers: each one's awaited word and
// whether it has failed (its status word, decoded). The backend reads them
// from shared memory; tests script them.
type View interface {
	// Word returns peer p's awaited word.
	Word(p int) uint64
	// Failure returns peer p's failure, if its status word shows one.
	Failure(p int) (base.Failure, bool)
}

// Outcome says how a wait stands.
type Outcome uint8

const (
	// Pending: keep waiting.
	Pending Outcome = iota
	// Arrived: every peer's word reached the target.
	Arrived
	// Failed: the communicator failed (Verdict.Failure says how).
	Failed
	// TimedOut: the deadline passed first (Verdict.Failure names the
	// missing ranks).
	TimedOut
)

var outcomeNames = [...]string{Pending: "pending", Arrived: "arrived", Failed: "failed", TimedOut: "timed-out"}

func (o Outcome) String() string { return outcomeNames[o] }

// Verdict is how a wait ends, or that it goes on.
type Verdict struct {
	Outcome Outcome
	Failure base.Failure // Failed and TimedOut
}

// Wait describes one wait: this rank, the world, what it waits for.
type Wait struct {
	Self, World int
	Target      uint64
	Op          base.Op
	Seq         uint64
	Phase       Phase
}

// Decide says how a wait stands given what the rank saw: v, its own
// communicator's failure (own, nil while healthy), and whether its deadline
// has passed. The rules, in order:
//
//  1. Progress wins: when every peer's word has reached the target the
//     wait is over, even if a peer has failed since (it failed after
//     publishing what we waited for: a mismatch it found, say; this rank
//     will see it at its next wait, or find the mismatch itself).
//  2. This rank's own failure (an Abort, a failure the rendezvous
//     reported) ends the wait with that cause.
//  3. A peer's failure ends it with that peer's cause, as the peer
//     reported it (its culprit, not the peer, is to blame); of several,
//     the lowest rank's, so that every rank that sees the same words
//     reports the same one.
//  4. Past the deadline, the wait times out naming every peer below the
//     target, the first of them the culprit.
//
// A rank that wakes up, reads and applies Decide repeatedly waits
// correctly; that is all a backend's wait loop is.
func Decide(w Wait, v View, own *base.Failure, expired bool) Verdict {
	all := true
	for p := range w.World {
		if p != w.Self && v.Word(p) < w.Target {
			all = false
			break
		}
	}
	switch {
	case all:
		return Verdict{Outcome: Arrived}
	case own != nil:
		return Verdict{Outcome: Failed, Failure: *own}
	}
	for p := range w.World {
		if p == w.Self {
			continue
		}
		if f, failed := v.Failure(p); failed {
			return Verdict{Outcome: Failed, Failure: f}
		}
	}
	if !expired {
		return Verdict{Outcome: Pending}
	}
	var missing []int
	for p := range w.World {
		if p != w.Self && v.Word(p) < w.Target {
			missing = append(missing, p)
		}
	}
	if len(missing) == 0 {
		// The words are live memory: the last one arrived since the
		// first read. Progress wins (rule 1).
		return Verdict{Outcome: Arrived}
	}
	return Verdict{Outcome: TimedOut, Failure: base.Failure{
		Kind: base.FailureTimeout, Culprit: missing[0], Op: w.Op, Seq: w.Seq, Phase: w.Phase.String(), Missing: missing,
	}}
}

// Prevails reports whether a failure a rank found should replace the cause
// its communicator already recorded. The first cause stands, but for one
// case: a mismatch this rank found itself (it read every rank's signature)
// replaces a relayed failure, which said less about the same event (a peer
// found the mismatch first and failed, and its status reached this rank's
// wait before the signatures did).
func Prevails(recorded, found base.Failure) bool {
	return found.Kind == base.FailureMismatch && recorded.Kind != base.FailureMismatch
}
