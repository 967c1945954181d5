package proto

import "fmt"

// Path is how a backend carries a call through the protocol. Every path
// gives the same bits (contract section 6); they differ in which words the
// ranks meet on.
type Path uint8

const (
	// OneShot: stage the whole input, meet, compute from every peer's
	// staging, release.
	OneShot Path = iota + 1
	// TwoPhase: a large all-reduce. Each rank sums its shard of every
	// staging into its own staging and publishes Reduced; then every rank
	// gathers the shards.
	TwoPhase
	// Streamed: a large all-gather or broadcast. Sign and meet first, then
	// stage chunk by chunk (publishing Staged) while the peers copy each
	// chunk out as soon as it is there.
	Streamed
	// Reserve: the first step alone, for Stage: the caller then writes its
	// input into the staging and calls the staged all-reduce.
	ReserveOnly
	// Closing: Close. The ranks meet like a call with no data, then wait
	// until every peer has released this rank's memory.
	Closing
	// LL: a small call in one GPU launch. Each rank writes its signature
	// and input as flagged lines straight into every peer's receive slot
	// (CopyIn, Sign), and every line carries the stage with it (Publish
	// costs nothing more), so the meet is the receiver's poll of its own
	// slot. Two slots alternate, so the reserve waits for the call before
	// last (Done >= seq-2); the staged form skips it, since Stage reserved
	// for seq-1.
	LL
	// Push: a large all-reduce on GPUs. Each rank signs and publishes,
	// writes part p of its input into rank p's staging and pushes Sent1
	// to it; once every peer's Sent1 is in, it sums its part, writes the
	// sum into every peer's staging and pushes Sent2; then it copies the
	// peers' sums out. Only NVLink writes cross between GPUs, no reads.
	Push
	// PushScatter: Push for a reduce-scatter, which ends at the sum.
	PushScatter
	// Alone: a rank with no peers (W = 1) has no one to meet and nothing to
	// stage: it computes its outputs straight from its inputs (a staged
	// call's input is its staging), in one pass, and releases. The tree
	// over one leaf is the leaf, NaN canonical.
	Alone
	// Registered: a large all-reduce, or reduce-scatter of one buffer,
	// whose input and output every rank registered: no staging. Each
	// rank signs and publishes; once every peer's stage is in, it sums
	// its part of every rank's input, read where it lies, and writes the
	// sums into every rank's output (an all-reduce: a two-shot) or into
	// its own output alone (a reduce-scatter: its part is its output),
	// then pushes Sent2: the writer has finished reading the receiver's
	// input (and, an all-reduce, its sums are in the receiver's output).
	// No copy in, no copy out: each rank reads (W-1)/W of the message
	// over the links, and an all-reduce writes as much back.
	//
	// An all-gather does not take it. Read in place, it would save only
	// the staging path's copy in (n bytes read and n written in this
	// rank's memory) and pay with a word round and a launch more: the
	// staging path leaves its last round, Done, to the next call's
	// reserve, while a call on the caller's buffers must wait in the
	// call until every peer has read them. Reading the peers' inputs and
	// writing them into every peer's output need the same rounds (the
	// meet, then one word: "read your input" or "wrote your output").
	// Below a few megabytes per rank the round costs more than the copy
	// (docs/perf-levers.md, lever 2).
	Registered
	numPaths
)

var pathNames = [numPaths]string{
	OneShot: "one-shot", TwoPhase: "two-phase", Streamed: "streamed", ReserveOnly: "reserve", Closing: "close",
	LL: "ll", Push: "push", PushScatter: "push-scatter", Alone: "alone", Registered: "registered",
}

func (p Path) String() string {
	if p == 0 || p >= numPaths {
		return fmt.Sprintf("path(%d)", uint8(p))
	}
	return pathNames[p]
}

// ParsePath is String's inverse.
func ParsePath(s string) (Path, bool) {
	for p, name := range pathNames {
		if name == s && p != 0 {
			return Path(p), true
		}
	}
	return 0, false
}

// Action is one step of a call.
type Action uint8

const (
	// Await: wait until every peer's Word is at least the step's target.
	// Its end is Decide's verdict.
	Await Action = iota + 1
	// CopyIn: write this rank's input where its peers read it: its own
	// staging (LL: every peer's receive slot; Push: part p into rank p's
	// staging).
	CopyIn
	// ResetStaged: set this rank's Staged word to 0 (see Streamed).
	ResetStaged
	// Sign: write this call's signature into the control block.
	Sign
	// Publish: store the target into this rank's Word, with release
	// semantics (GPU: at system scope), after everything written before.
	Publish
	// CheckSignatures: compare every peer's signature with this rank's;
	// on a difference fail the call with every rank's signature.
	CheckSignatures
	// Compute: produce this rank's outputs from the peers' staging (a
	// streamed call stages and copies chunk by chunk here).
	Compute
	// ReduceShard: sum this rank's shard of every peer's staging into
	// its own staging (TwoPhase), or its part of every peer's input,
	// which the peers pushed into its staging, into the output and every
	// peer's staging (Push; PushScatter: into the output alone), or its
	// part of every rank's input, where it lies, into every rank's output
	// (Registered; a reduce-scatter: into its own output alone).
	ReduceShard
	// Gather: copy every rank's reduced shard into the output (TwoPhase;
	// Push: from this rank's own staging, where the peers pushed them).
	Gather
	numActions
)

var actionNames = [numActions]string{
	Await: "await", CopyIn: "copy-in", ResetStaged: "reset-staged", Sign: "sign", Publish: "publish",
	CheckSignatures: "check-signatures", Compute: "compute", ReduceShard: "reduce-shard", Gather: "gather",
}

func (a Action) String() string {
	if a == 0 || a >= numActions {
		return fmt.Sprintf("action(%d)", uint8(a))
	}
	return actionNames[a]
}

// Step is one action of a call's schedule. Word, Behind and Phase qualify
// Publish and Await: the value published or awaited is the call's sequence
// number less Behind.
type Step struct {
	Action Action
	Word   Word
	Behind uint8
	Phase  Phase
}

// Target is the value the step publishes or awaits in the call numbered seq.
func (s Step) Target(seq uint64) uint64 { return seq - uint64(s.Behind) }

func (s Step) String() string {
	switch s.Action {
	case Publish:
		return fmt.Sprintf("publish %v=seq%s", s.Word, behind(s.Behind))
	case Await:
		return fmt.Sprintf("await %v>=seq%s (%v)", s.Word, behind(s.Behind), s.Phase)
	}
	return s.Action.String()
}

func behind(b uint8) string {
	if b == 0 {
		return ""
	}
	return fmt.Sprintf("-%d", b)
}

var (
	reserve     = Step{Action: Await, Word: Done, Behind: 1, Phase: PhaseReserve}
	copyIn      = Step{Action: CopyIn}
	sign        = Step{Action: Sign}
	publishSt   = Step{Action: Publish, Word: Stage}
	awaitReady  = Step{Action: Await, Word: Stage, Phase: PhaseReady}
	check       = Step{Action: CheckSignatures}
	compute     = Step{Action: Compute}
	release     = Step{Action: Publish, Word: Done}
	meet        = []Step{sign, publishSt, awaitReady, check}
	schedules   [numPaths][2][]Step // by path and staged: built once, shared, never changed
	reserveOnly = []Step{reserve}
)

func init() {
	cat := func(parts ...[]Step) []Step {
		var s []Step
		for _, p := range parts {
			s = append(s, p...)
		}
		return s
	}
	twoPhase := []Step{{Action: ReduceShard}, {Action: Publish, Word: Reduced}, {Action: Await, Word: Reduced, Phase: PhaseReduced}, {Action: Gather}}
	for staged, front := range [2][]Step{{reserve, copyIn}, nil} {
		schedules[OneShot][staged] = cat(front, meet, []Step{compute, release})
		schedules[TwoPhase][staged] = cat(front, meet, twoPhase, []Step{release})
	}
	schedules[Streamed][0] = cat([]Step{reserve, {Action: ResetStaged}}, meet, []Step{compute, release})
	// The LL lines carry signature and stage together with the data.
	llMeet := []Step{copyIn, sign, publishSt, awaitReady, check, compute, release}
	schedules[LL][0] = cat([]Step{{Action: Await, Word: Done, Behind: 2, Phase: PhaseReserve}}, llMeet)
	schedules[LL][1] = llMeet
	// A push path checks the signatures once the peers' first pushes are
	// in: Sent1 comes after their Stage, so it implies it.
	pushFront := []Step{reserve, sign, publishSt, copyIn, {Action: Publish, Word: Sent1}, {Action: Await, Word: Sent1, Phase: PhaseReady}, check, {Action: ReduceShard}}
	schedules[Push][0] = cat(pushFront, []Step{{Action: Publish, Word: Sent2}, {Action: Await, Word: Sent2, Phase: PhaseReduced}, {Action: Gather}, release})
	schedules[PushScatter][0] = cat(pushFront, []Step{release})
	// Registered, all-reduce and reduce-scatter alike. The reserve keeps
	// the signature slot (and the buffers published with it) until every
	// peer has checked it for the call before, whatever that call's path;
	// the meet is the staging path's, with no copy in. Sent2 ends the
	// peers' reads of this rank's input (and an all-reduce's writes into
	// its output): the call ends only once every peer's Sent2 is in,
	// since the caller may reuse its input then. That round cannot be
	// left to the next call's reserve, as the staging paths leave Done,
	// because the buffers are the caller's; and Done cannot carry it
	// (publish done, then await done>=seq, as Close does): a wait after
	// a publish starts a launch of its own (Launches), and the GPU
	// kernels count every launch's seq from their own Done, so Done is
	// every call's last step. A reduce-scatter writes into no peer's
	// memory, but its peers read its input in place: it needs the Sent2
	// round just as much, so the two operations share the least
	// schedule that is correct for either.
	schedules[Registered][0] = cat([]Step{reserve}, meet, []Step{{Action: ReduceShard}, {Action: Publish, Word: Sent2}, {Action: Await, Word: Sent2, Phase: PhaseReduced}, release})
	schedules[ReserveOnly][0] = reserveOnly
	schedules[Alone][0] = []Step{compute, release}
	schedules[Alone][1] = schedules[Alone][0] // Stage reserved; the input is in the staging
	schedules[Closing][0] = cat([]Step{reserve}, meet, []Step{release, {Action: Await, Word: Done, Phase: PhaseClose}})
}

// Schedule returns the steps of a call on path p, in order. staged says the
// input is in the staging already (AllReduceStaged, after Stage reserved
// it): the call starts at Sign. It returns nil for a combination that does
// not exist (a staged streamed call, say). The slice is shared: callers
// must not change it.
func Schedule(p Path, staged bool) []Step {
	if p == 0 || p >= numPaths {
		return nil
	}
	i := 0
	if staged {
		i = 1
	}
	return schedules[p][i]
}
