package proto

// Word names a sequence word every rank publishes in its control block and
// its peers wait on. Words only grow during a communicator's life, except
// Staged, which a streamed call resets before it publishes Stage.
type Word uint8

const (
	// Stage is the last call whose input this rank staged and signed.
	Stage Word = iota + 1
	// Reduced is the last call whose shard this rank has summed into its
	// own staging (a two-phase all-reduce).
	Reduced
	// Done is the last call for which this rank finished reading its
	// peers' staging: after it, they may overwrite it.
	Done
	// Staged counts the bytes of the current call's input staged so far
	// (a streamed call only).
	Staged
	// Sent1 and Sent2 are pushed, not read across: each rank writes them
	// into every receiver's control block (Push, PushScatter, Registered).
	// Sent1 says the writer's parts of its input are in the receiver's
	// staging, Sent2 that its reduced part is (Registered: the writer
	// has read the receiver's input, and an all-reduce's sums are in the
	// receiver's output).
	Sent1
	Sent2
	numWords
)

var wordNames = [numWords]string{Stage: "stage", Reduced: "reduced", Done: "done", Staged: "staged", Sent1: "sent1", Sent2: "sent2"}

func (w Word) String() string {
	if w == 0 || w >= numWords {
		return "word?"
	}
	return wordNames[w]
}

// Phase names what a wait waits for, in errors and in the kernels' error
// records (the values are shared with them).
type Phase uint8

const (
	// PhaseReserve: every peer's Done >= seq-1, so this rank may
	// overwrite its staging.
	PhaseReserve Phase = iota + 1
	// PhaseReady: every peer's Stage >= seq.
	PhaseReady
	// PhaseReduced: every peer's Reduced >= seq.
	PhaseReduced
	// PhaseClose: every peer's Done >= seq for a Close.
	PhaseClose
	// PhaseStaged: a peer's Staged covers the bytes this rank reads next.
	PhaseStaged
	numPhases
)

var phaseNames = [numPhases]string{
	PhaseReserve: "waiting for peers to release the staging memory",
	PhaseReady:   "waiting for peers to stage their inputs",
	PhaseReduced: "waiting for peers' reduced shards",
	PhaseClose:   "waiting for peers to acknowledge Close",
	PhaseStaged:  "waiting for a peer to stage its input",
}

// String is the phase as a TimeoutError names it.
func (p Phase) String() string {
	if p == 0 || p >= numPhases {
		return "waiting for peers"
	}
	return phaseNames[p]
}
