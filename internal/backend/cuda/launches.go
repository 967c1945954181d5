package cuda

import (
	"fmt"

	"github.com/detcoll/detcoll/internal/core/proto"
)

// How a path's schedule (proto.Schedule) becomes kernel launches. A launch
// runs a run of the schedule's steps, each carried by a flag of struct
// Args (kernels/launch.h): the kernel takes them in the
// schedule's order. A new launch starts at every wait that follows work
// or a publish, because a wait is where a launch's blocks must all have
// finished what came before (the stream orders launches; nothing orders
// the blocks of one). The LL path is the exception: its one launch runs
// the whole schedule by the LL protocol (flagLL).

// shape is one launch of a path, whatever the call's sizes.
type shape struct {
	steps []proto.Step // the run of the schedule it carries
	flags uint32
	work  proto.Action // its one step that moves data (CopyIn, Compute, ReduceShard, Gather), or 0
}

// waitFlags and publishFlags are the flags of the waits and the publishes:
// of several chunks of one launch, the first waits and the last publishes.
const (
	waitFlags    = flagReserve | flagReady | flagWaitRed | flagWaitSent
	publishFlags = flagPublish | flagReduced | flagSent | flagDone
)

var shapes = func() (t [numShapePaths][2][]shape) {
	for _, path := range shapePaths {
		for staged := range 2 {
			if steps := proto.Schedule(path, staged == 1); steps != nil {
				t[path][staged] = cut(path, steps)
			}
		}
	}
	return t
}()

// shapePaths are the paths the cuda backend runs as launches of their own
// (LL is one launch by construction; Streamed is the cpu backend's).
var shapePaths = []proto.Path{proto.OneShot, proto.TwoPhase, proto.ReserveOnly, proto.Push, proto.PushScatter, proto.Alone}

const numShapePaths = proto.Alone + 1

// launchShapes returns the launches of path; the slice is shared.
func launchShapes(path proto.Path, staged bool) []shape {
	i := 0
	if staged {
		i = 1
	}
	return shapes[path][i]
}

// cut splits a schedule into launches and gives each its flags.
func cut(path proto.Path, steps []proto.Step) []shape {
	var out []shape
	cur := shape{}
	for i, s := range steps {
		if s.Action == proto.Await && i > 0 && steps[i-1].Action != proto.Await {
			out = append(out, cur)
			cur = shape{}
		}
		cur.steps = append(cur.steps, s)
		cur.flags |= stepFlag(path, s)
		switch s.Action {
		case proto.CopyIn, proto.Compute, proto.ReduceShard, proto.Gather:
			if cur.work != 0 {
				panic(fmt.Sprintf("cuda: path %v: one launch does %v and %v", path, cur.work, s.Action))
			}
			cur.work = s.Action
		}
	}
	return append(out, cur)
}

// stepFlag is the flag that carries s on path. The signature travels with
// the stage (flagPublish writes both), and is checked by the wait that
// meets (flagReady, or flagWaitSent on Sent1): those steps add no flag.
func stepFlag(path proto.Path, s proto.Step) uint32 {
	push := path == proto.Push || path == proto.PushScatter
	switch {
	case s.Action == proto.Await && s.Word == proto.Done && s.Behind == 1:
		return flagReserve
	case s.Action == proto.Await && s.Word == proto.Stage:
		return flagReady
	case s.Action == proto.Await && s.Word == proto.Reduced:
		return flagWaitRed
	case s.Action == proto.Await && (s.Word == proto.Sent1 || s.Word == proto.Sent2):
		return flagWaitSent
	case s.Action == proto.Publish && s.Word == proto.Stage:
		return flagPublish
	case s.Action == proto.Publish && s.Word == proto.Reduced:
		return flagReduced
	case s.Action == proto.Publish && (s.Word == proto.Sent1 || s.Word == proto.Sent2):
		return flagSent
	case s.Action == proto.Publish && s.Word == proto.Done:
		return flagDone
	case s.Action == proto.CopyIn && push:
		return flagCompute // the push modes copy the input into the peers' staging
	case s.Action == proto.CopyIn:
		return flagCopyIn
	case s.Action == proto.Compute && path == proto.Alone:
		return flagCompute | flagFromInput
	case s.Action == proto.Compute || s.Action == proto.ReduceShard || s.Action == proto.Gather:
		return flagCompute
	case s.Action == proto.Sign || s.Action == proto.CheckSignatures:
		return 0
	}
	panic(fmt.Sprintf("cuda: path %v: no launch flag carries %v", path, s))
}
