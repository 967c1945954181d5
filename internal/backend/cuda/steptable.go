package cuda

import (
	"fmt"

	"github.com/detcoll/detcoll/internal/core/base"
	"github.com/detcoll/detcoll/internal/core/proto"
)

// How a path's schedule becomes kernel launches. proto.Launches cuts the
// schedule; each launch carries its steps as a table of the kernels'
// primitives (stepOp), which collective.cu's run executes in order. So
// the schedule is written once, in proto: adding a path is a new step
// sequence there, a case in stepOpOf where a step needs a primitive of its
// own, and that primitive in one kernel header.

// stepOp is one entry of a launch's step table: a primitive of the
// kernels (Args.steps, kernels/launch.h; the header names it DC_S_*).
type stepOp uint8

const (
	opEnd stepOp = iota // the table's end

	opAwaitAcks    // await done >= seq-1: every peer's done, pushed into this rank's acks
	opAwaitStage   // await stage >= seq
	opAwaitReduced // await reduced >= seq
	opAwaitSent1   // push path: await sent1 >= seq (the peers' parts are here)
	opAwaitSent2   // push and registered paths: await sent2 >= seq (the peers' sums are here; registered: they also read this rank's input)
	opCheck        // compare every peer's signature with this call's

	opPublishStage   // write the signature, then stage = seq (proto's Sign and Publish Stage)
	opPublishReduced // reduced = seq
	opPublishSent1   // sent1 = seq at every peer
	opPublishSent2   // sent2 = seq at every peer
	opPublishDone    // done = seq here, and in every peer's acks

	opCopyIn            // copy the inputs into this rank's staging
	opReduce            // out = T(every staging at off)
	opReduceShard       // out = T(every staging at off + rank*n): a reduce-scatter
	opReduceInPlace     // own staging's shard = T(that shard of every staging)
	opGather            // out[p*n:] = staging p at off
	opGatherShards      // out's shard p = staging p's shard p
	opBroadcast         // out = the root's staging, on every rank but the root
	opPush              // copy input part p into rank p's staging
	opPushScatter       // opPush of a reduce-scatter
	opReducePush        // sum this rank's part into the output and every peer's staging
	opReducePushScatter // sum this rank's part into the output
	opGatherPushed      // copy the peers' sums from this rank's staging into the output
	opReduceReg         // registered: sum this rank's part of every rank's input into every rank's output
	opReduceRegScatter  // registered reduce-scatter: sum this rank's part of every rank's input into its output

	// The two paths that are one launch by design, the first entry of
	// their tables: the entry after it names the launch's compute.
	opLL    // the whole call by the LL protocol (ll.h)
	opAlone // W=1: the compute's one leaf is the input itself (alone.h)

	numStepOps
)

// maxSteps is the entries of a step table (Args.steps).
const maxSteps = 8

// stepTable is one launch's steps, opEnd after the last.
type stepTable [maxSteps]stepOp

// stepOpDocs names each primitive for the kernels' header.
var stepOpDocs = [numStepOps]struct{ name, doc string }{
	opEnd:               {"END", "the table's end"},
	opAwaitAcks:         {"AWAIT_ACKS", "await done >= seq-1 (the acks pushed here)"},
	opAwaitStage:        {"AWAIT_STAGE", "await stage >= seq"},
	opAwaitReduced:      {"AWAIT_REDUCED", "await reduced >= seq"},
	opAwaitSent1:        {"AWAIT_SENT1", "push path: await sent1 >= seq"},
	opAwaitSent2:        {"AWAIT_SENT2", "push and registered paths: await sent2 >= seq"},
	opCheck:             {"CHECK", "compare the peers' signatures with this call's"},
	opPublishStage:      {"PUBLISH_STAGE", "write the signature, then stage = seq"},
	opPublishReduced:    {"PUBLISH_REDUCED", "reduced = seq"},
	opPublishSent1:      {"PUBLISH_SENT1", "sent1 = seq at every peer"},
	opPublishSent2:      {"PUBLISH_SENT2", "sent2 = seq at every peer"},
	opPublishDone:       {"PUBLISH_DONE", "done = seq, and pushed into every peer's acks"},
	opCopyIn:            {"COPY_IN", "copy the inputs into this rank's staging"},
	opReduce:            {"REDUCE", "out = T(every staging)"},
	opReduceShard:       {"REDUCE_SHARD", "out = T(this rank's W-th of every staging)"},
	opReduceInPlace:     {"REDUCE_IN_PLACE", "own staging's shard = T(that shard of every staging)"},
	opGather:            {"GATHER", "out[p*n:] = staging p"},
	opGatherShards:      {"GATHER_SHARDS", "out's shard p = staging p's shard p"},
	opBroadcast:         {"BROADCAST", "out = the root's staging"},
	opPush:              {"PUSH", "copy input part p into rank p's staging"},
	opPushScatter:       {"PUSH_SCATTER", "PUSH of a reduce-scatter"},
	opReducePush:        {"REDUCE_PUSH", "sum this rank's part into the output and every peer's staging"},
	opReducePushScatter: {"REDUCE_PUSH_SCATTER", "sum this rank's part into the output"},
	opGatherPushed:      {"GATHER_PUSHED", "copy the peers' sums into the output"},
	opReduceReg:         {"REDUCE_REG", "registered: sum this rank's part of every rank's input into every rank's output"},
	opReduceRegScatter:  {"REDUCE_REG_SCATTER", "registered reduce-scatter: sum this rank's part of every rank's input into its output"},
	opLL:                {"LL", "the call by the LL protocol; the next entry is its compute"},
	opAlone:             {"ALONE", "W=1: from the input; the next entry is its compute"},
}

func (o stepOp) String() string {
	if o < numStepOps {
		return stepOpDocs[o].name
	}
	return fmt.Sprintf("stepOp(%d)", uint8(o))
}

// waits reports whether o waits for peers (or checks what a wait
// brought): of the launches of a call's chunks, only the first does.
func (o stepOp) waits() bool { return o >= opAwaitAcks && o <= opCheck }

// publishes reports whether o publishes a word: of the launches of a
// call's chunks, only the last does.
func (o stepOp) publishes() bool { return o >= opPublishStage && o <= opPublishDone }

// kind is what a call computes, whatever its path: it picks the compute
// primitive of each path.
type kind uint8

const (
	kindNone          kind = iota // a barrier
	kindReduce                    // all-reduce
	kindReduceScatter             // reduce-scatter
	kindGather                    // all-gather
	kindBroadcast                 // broadcast
	numKinds
)

func kindOf(op base.Op) kind {
	switch op {
	case base.OpAllReduce, base.OpAllReduceStaged:
		return kindReduce
	case base.OpReduceScatter, base.OpReduceScatterMany:
		return kindReduceScatter
	case base.OpAllGather, base.OpAllGatherMany:
		return kindGather
	case base.OpBroadcast:
		return kindBroadcast
	}
	return kindNone
}

// sums reports whether a call of k reduces.
func (k kind) sums() bool { return k == kindReduce || k == kindReduceScatter }

// computeOps is the primitive of proto's Compute step of a call of each
// kind on the staging path, the LL path and Alone (which differ in where
// the leaves are, not in what is computed). A barrier is an all-reduce of
// no buffers: every primitive computes nothing over none, and the LL and
// Alone launches, whose second entry the kernels read as their compute,
// then take the one path they take for every call (ll_refresh spares the
// LL header only for an LL compute; run_alone publishes done after it).
var computeOps = [numKinds]stepOp{kindNone: opReduce, kindReduce: opReduce, kindReduceScatter: opReduceShard, kindGather: opGather, kindBroadcast: opBroadcast}

// The primitives of the steps that wait for a word and publish one, by word.
var (
	awaitOps   = map[proto.Word]stepOp{proto.Stage: opAwaitStage, proto.Reduced: opAwaitReduced, proto.Sent1: opAwaitSent1, proto.Sent2: opAwaitSent2}
	publishOps = map[proto.Word]stepOp{proto.Stage: opPublishStage, proto.Reduced: opPublishReduced, proto.Sent1: opPublishSent1, proto.Sent2: opPublishSent2, proto.Done: opPublishDone}
)

// dataOps are the primitives of the steps that move data, by path (0:
// every path not listed), where they differ from the staging path's.
var dataOps = map[proto.Path]map[proto.Action]stepOp{
	0:                 {proto.CopyIn: opCopyIn, proto.ReduceShard: opReduceInPlace, proto.Gather: opGatherShards},
	proto.Push:        {proto.CopyIn: opPush, proto.ReduceShard: opReducePush, proto.Gather: opGatherPushed},
	proto.PushScatter: {proto.CopyIn: opPushScatter, proto.ReduceShard: opReducePushScatter},
	proto.Registered:  {proto.ReduceShard: opReduceReg},
}

// stepOpOf is the primitive that carries step s of a call of kind k on
// path, or opEnd where the kernel has nothing to do for it: Sign (the
// signature is written with the stage, by opPublishStage).
func stepOpOf(path proto.Path, k kind, s proto.Step) stepOp {
	var o stepOp
	ok := true
	switch s.Action {
	case proto.Await:
		o, ok = awaitOps[s.Word]
		if s.Word == proto.Done && s.Behind == 1 {
			o, ok = opAwaitAcks, true
		}
	case proto.Publish:
		o, ok = publishOps[s.Word]
	case proto.CheckSignatures:
		o = opCheck
	case proto.Sign:
		o = opEnd
	case proto.Compute:
		o = computeOps[k]
	default:
		ops, byPath := dataOps[path]
		if !byPath {
			ops = dataOps[0]
		}
		o, ok = ops[s.Action]
		if o == opReduceReg && k == kindReduceScatter {
			// The registered path's one schedule, two sums: a
			// reduce-scatter's go into its own output alone.
			o = opReduceRegScatter
		}
	}
	if !ok {
		panic(fmt.Sprintf("cuda: path %v: no primitive carries %v", path, s))
	}
	return o
}

// shape is one launch of a path for a kind of call, whatever its sizes.
type shape struct {
	steps []proto.Step // what it carries of the schedule
	table stepTable
	work  proto.Action // its one step that moves data (CopyIn, Compute, ReduceShard, Gather), or 0
}

var shapes = func() (t [numShapePaths][2][numKinds][]shape) {
	for _, path := range shapePaths {
		for staged := range 2 {
			for k := range numKinds {
				t[path][staged][k] = cut(path, staged == 1, k)
			}
		}
	}
	return t
}()

// shapePaths are the paths the cuda backend runs (Streamed and Closing are
// the cpu backend's).
var shapePaths = []proto.Path{proto.OneShot, proto.TwoPhase, proto.ReserveOnly, proto.LL, proto.Push, proto.PushScatter, proto.Alone, proto.Registered}

const numShapePaths = proto.Registered + 1

// launchShapes returns the launches of a call of kind k on path; the
// slice is shared.
func launchShapes(path proto.Path, staged bool, k kind) []shape {
	i := 0
	if staged {
		i = 1
	}
	return shapes[path][i][k]
}

// cut gives each of proto's launches of path its table. The LL and Alone
// launches are their path's primitive, then the compute, and (Alone)
// the release: the LL protocol carries the rest of the schedule itself.
func cut(path proto.Path, staged bool, k kind) []shape {
	var out []shape
	for _, steps := range proto.Launches(path, staged) {
		sh := shape{steps: steps}
		n := 0
		add := func(o stepOp) {
			if o != opEnd {
				sh.table[n] = o
				n++
			}
		}
		switch path {
		case proto.LL:
			add(opLL)
			add(computeOps[k])
		case proto.Alone:
			add(opAlone)
			add(computeOps[k])
			add(opPublishDone)
		default:
			for _, s := range steps {
				add(stepOpOf(path, k, s))
			}
		}
		for _, s := range steps {
			switch s.Action {
			case proto.CopyIn, proto.Compute, proto.ReduceShard, proto.Gather:
				if sh.work != 0 && path != proto.LL {
					panic(fmt.Sprintf("cuda: path %v: one launch does %v and %v", path, sh.work, s.Action))
				}
				sh.work = s.Action
			}
		}
		out = append(out, sh)
	}
	return out
}

// chunkTable is t for the launch of chunk i of n: the waits only in the
// first, the publishes only in the last.
func chunkTable(t stepTable, i, n int) stepTable {
	if n == 1 {
		return t
	}
	var out stepTable
	k := 0
	for _, o := range t {
		if o == opEnd || (i > 0 && o.waits()) || (i < n-1 && o.publishes()) {
			continue
		}
		out[k] = o
		k++
	}
	return out
}
