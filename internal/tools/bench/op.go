package bench

import (
	"fmt"
	"github.com/detcoll/detcoll"
	"github.com/detcoll/detcoll/internal/testkit/check"
	"strings"

	"github.com/detcoll/detcoll/internal/core/num"
)

// Op names a benchmarked operation, as reports and the command line spell
// it.
type Op string

// The operations. The *Many forms pass two buffers (the input's halves;
// for reduce_scatter_many, halves rounded to whole multiples of the world
// size) under one synchronisation; their references make one call per
// buffer, as a program without such a call would. Broadcast's root is rank
// 0.
const (
	AllReduce         Op = "all_reduce"
	ReduceScatter     Op = "reduce_scatter"
	AllGather         Op = "all_gather"
	AllGatherMany     Op = "all_gather_many"
	ReduceScatterMany Op = "reduce_scatter_many"
	Broadcast         Op = "broadcast"
)

// Ops lists every operation, in the order a full run measures them.
var Ops = []Op{AllReduce, ReduceScatter, AllGather, AllGatherMany, ReduceScatterMany, Broadcast}

// BroadcastRoot is the root of the broadcasts.
const BroadcastRoot = 0

// Reduces reports whether op sums, so needs a floating element type.
func (op Op) Reduces() bool {
	return op == AllReduce || op == ReduceScatter || op == ReduceScatterMany
}

// scatters reports whether each rank's input is the world size times its
// output.
func (op Op) scatters() bool { return op == ReduceScatter || op == ReduceScatterMany }

func (op Op) known() bool {
	for _, o := range Ops {
		if o == op {
			return true
		}
	}
	return false
}

// BenchName is op in Go benchmark style: "AllReduce".
func (op Op) BenchName() string {
	var b strings.Builder
	for w := range strings.SplitSeq(string(op), "_") {
		if w != "" {
			b.WriteString(strings.ToUpper(w[:1]) + w[1:])
		}
	}
	return b.String()
}

// Shape is one measurement's size on one rank.
type Shape struct {
	DType       num.DType
	Bytes       int // input bytes per rank
	World, Rank int
	// Red is the reductions' operator (Config.Red); gathers ignore it.
	Red num.RedOp
}

// redOp is s.Red as detcoll's API takes it on rank s.Rank.
func (s Shape) redOp() detcoll.RedOp { return check.RedOpOf(s.Red, s.Rank) }

// Elements is the input's element count.
func (s Shape) Elements() int { return s.Bytes / s.DType.Size() }

// check reports why op cannot run at s, or nil.
func (op Op) check(s Shape) error {
	size, n := s.DType.Size(), s.Elements()
	switch {
	case s.Bytes <= 0 || s.Bytes%size != 0:
		return fmt.Errorf("size %d bytes: want a positive multiple of the %v size, %d", s.Bytes, s.DType, size)
	case op.scatters() && n%s.World != 0:
		return fmt.Errorf("%s of %d bytes: its %d %v elements are not a multiple of the world size %d", op, s.Bytes, n, s.DType, s.World)
	case op == ReduceScatterMany && n < 2*s.World:
		return fmt.Errorf("%s of %d bytes: two buffers need at least 2 x %d (world size) elements, not %d", op, s.Bytes, s.World, n)
	case op == AllGatherMany && n < 2:
		return fmt.Errorf("%s of %d bytes: two buffers need at least 2 elements", op, s.Bytes)
	}
	return nil
}

// Parts returns the byte lengths of the input and output buffers op
// passes at s: one of each, or two of each for the *Many forms. The inputs
// cut the rank's input in order. Broadcast's output is its one buffer,
// which on the root holds the input.
func Parts(op Op, s Shape) (ins, outs []int) {
	size, n, w := s.DType.Size(), s.Elements(), s.World
	switch op {
	case AllGatherMany:
		ins = []int{n / 2 * size, (n - n/2) * size}
	case ReduceScatterMany:
		k := n / w
		ins = []int{k / 2 * w * size, (k - k/2) * w * size}
	default:
		ins = []int{s.Bytes}
	}
	for _, in := range ins {
		switch {
		case op.scatters():
			outs = append(outs, in/w)
		case op == AllGather || op == AllGatherMany:
			outs = append(outs, in*w)
		default:
			outs = append(outs, in)
		}
	}
	return ins, outs
}
