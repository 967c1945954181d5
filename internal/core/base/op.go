package base

import (
	"fmt"

	"github.com/detcoll/detcoll/internal/core/num"
)

// Op names a collective operation. Its value is part of the signature that
// ranks compare, so values are never reused.
type Op uint32

const (
	OpInvalid Op = iota
	OpAllReduce
	OpReduceScatter
	OpAllGather
	OpBroadcast
	OpBarrier
	OpAllGatherMany
	OpReduceScatterMany
	OpAllReduceStaged
	OpClose
	OpOpen // never in a signature: names Open in errors
	numOps
)

var opNames = [numOps]string{
	OpInvalid:           "invalid",
	OpAllReduce:         "AllReduce",
	OpReduceScatter:     "ReduceScatter",
	OpAllGather:         "AllGather",
	OpBroadcast:         "Broadcast",
	OpBarrier:           "Barrier",
	OpAllGatherMany:     "AllGatherMany",
	OpReduceScatterMany: "ReduceScatterMany",
	OpAllReduceStaged:   "AllReduceStaged",
	OpClose:             "Close",
	OpOpen:              "Open",
}

func (o Op) String() string {
	if o >= numOps {
		return fmt.Sprintf("op(%d)", uint32(o))
	}
	return opNames[o]
}

// Reduces reports whether the operation sums elements (and so needs a
// reducible element type).
func (o Op) Reduces() bool {
	switch o {
	case OpAllReduce, OpReduceScatter, OpReduceScatterMany, OpAllReduceStaged:
		return true
	}
	return false
}

// Signature is what every rank publishes with its input and checks against
// every peer's before reading their data: the call's operation, element type
// and shape, and the rank's sequence number.
type Signature struct {
	Op Op
	// Red is a reduction's operator (num.Sum for the other operations).
	Red   num.RedOp
	DType num.DType
	// Count is the number of elements per rank (for the *Many operations,
	// the total over the buffers).
	Count uint64
	// Root is Broadcast's root, otherwise 0.
	Root uint32
	// Buffers is the number of buffers of a *Many call, otherwise 1.
	Buffers uint32
	// Layout hashes the per-buffer counts of a *Many call so that two calls
	// with the same total but different buffers differ.
	Layout uint64
	// Seq is the rank's operation number on this communicator, from 1.
	Seq uint64
	// Registered says the call's buffers lie in memory registered with
	// the communicator (a window, on GPUs): its ranks then read and write
	// each other's buffers in place, so every rank must have registered
	// its own.
	Registered bool
}

func (s Signature) String() string {
	str := fmt.Sprintf("%v %v n=%d", s.Op, s.DType, s.Count)
	if s.Red != num.Sum {
		str = fmt.Sprintf("%v/%v %v n=%d", s.Op, s.Red, s.DType, s.Count)
	}
	if s.Op == OpBroadcast {
		str += fmt.Sprintf(" root=%d", s.Root)
	}
	if s.Buffers != 1 {
		str += fmt.Sprintf(" buffers=%d layout=%#x", s.Buffers, s.Layout)
	}
	if s.Registered {
		str += " registered"
	}
	return str + fmt.Sprintf(" seq=%d", s.Seq)
}
