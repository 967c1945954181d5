package proto

import "github.com/detcoll/detcoll/internal/core/base"

// Engine is what carries a backend's calls; the paths open to it differ.
type Engine uint8

const (
	// SharedMemory: ranks' processes on one host read each other's
	// memory (the cpu backend).
	SharedMemory Engine = iota + 1
	// GPUKernels: one GPU per rank, kernels over CUDA IPC (the cuda
	// backend).
	GPUKernels
)

// PathFacts is what a call's path depends on: its signature's shape and
// the world, the same on every rank, so that every rank takes the same
// path.
type PathFacts struct {
	Op      base.Op
	World   int
	Buffers int // buffer pairs (Many calls); 1 otherwise
	In, Out int // the first input's and output's bytes
	Total   int // the staging all inputs take together (base.StagingLayout)
	// Registered: the call's input and output lie in memory every rank
	// registered with the communicator (GPUKernels: windows its peers
	// map), aligned for 16-byte vectors (a reduce-scatter's every part
	// too). It is the one fact a rank knows of itself alone; it is in the
	// signature (base.Signature.Registered), so ranks that differ in it
	// fail the call with a mismatch.
	Registered bool
}

// Thresholds are a backend's limits between paths: its tuning knobs, with
// the defaults that docs/thresholds.md measured.
type Thresholds struct {
	OneShotMax int // SharedMemory: the largest all-reduce on the one-shot path
	StreamMin  int // SharedMemory: the smallest gather or broadcast streamed
	LLMax      int // GPUKernels: the largest call (Total) in one LL launch
	LLBuffers  int // GPUKernels: the most buffers of one LL launch
}

// ChoosePath returns the path of a call on engine e. Every path gives the
// same bits (contract section 6); the choice is speed only.
func ChoosePath(e Engine, f PathFacts, t Thresholds) Path {
	allReduce := f.Op == base.OpAllReduce || f.Op == base.OpAllReduceStaged
	scatter := f.Op == base.OpReduceScatter || f.Op == base.OpReduceScatterMany
	if e == SharedMemory {
		switch {
		case f.World == 1:
			return OneShot
		case (f.Op == base.OpAllGather || f.Op == base.OpBroadcast) && f.In > 0 && f.In >= t.StreamMin:
			// Each chunk is copied out while the next is staged.
			return Streamed
		case allReduce && f.Out > t.OneShotMax:
			return TwoPhase
		}
		return OneShot
	}
	switch {
	case f.World == 1:
		return Alone
	case f.Buffers <= t.LLBuffers && f.Total <= t.LLMax:
		return LL
	case f.Registered && (f.Op == base.OpAllReduce || (scatter && f.Buffers == 1)):
		// An all-gather in windows stays on the staging path: see
		// Registered.
		return Registered
	case f.Op == base.OpAllReduce:
		return Push
	case scatter && f.Buffers == 1:
		return PushScatter
	case allReduce:
		// A staged input is in the staging already: reduce-scatter it
		// into place, then gather the summed shards.
		return TwoPhase
	}
	return OneShot
}
