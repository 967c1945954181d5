package check

import (
	"bytes"
	"fmt"
	"math"

	"github.com/detcoll/detcoll"
	"github.com/detcoll/detcoll/internal/core/num"
	"github.com/detcoll/detcoll/internal/core/tree"
)

// ReferenceSum evaluates the tree element by element with the scalar adds:
// the independent reference every backend's output is compared with.
func ReferenceSum(dt detcoll.DType, ins [][]byte) []byte {
	size := dt.Size()
	out := make([]byte, len(ins[0]))
	leaves := make([]uint64, len(ins))
	add := ScalarAdd(dt)
	negZero := uint64(1) << (8*size - 1)
	for i := 0; i < len(out); i += size {
		for p := range ins {
			leaves[p] = GetBits(ins[p][i:], size)
		}
		v := tree.Eval(leaves, add)
		if len(leaves) == 1 {
			// T over one leaf is a copy whose NaNs are canonical: in IEEE
			// terms x + (-0), which is x for every x but NaN (-0 + -0 is
			// -0), and the scalar add makes a NaN canonical. Written so,
			// the reference does not share the backends' canonicalisation.
			v = add(v, negZero)
		}
		PutBits(out[i:], size, v)
	}
	return out
}

// ScalarAdd is the add of dt on bit patterns: internal/core/num's scalar add,
// which rounds once to nearest even and canonicalises NaN.
func ScalarAdd(dt detcoll.DType) func(a, b uint64) uint64 {
	switch dt {
	case detcoll.TypeBFloat16:
		return func(a, b uint64) uint64 { return uint64(num.AddBFloat16(num.BFloat16(a), num.BFloat16(b))) }
	case detcoll.TypeFloat16:
		return func(a, b uint64) uint64 { return uint64(num.AddFloat16(num.Float16(a), num.Float16(b))) }
	case detcoll.TypeFloat32:
		return func(a, b uint64) uint64 {
			return uint64(math.Float32bits(num.AddFloat32(math.Float32frombits(uint32(a)), math.Float32frombits(uint32(b)))))
		}
	case detcoll.TypeFloat64:
		return func(a, b uint64) uint64 {
			return math.Float64bits(num.AddFloat64(math.Float64frombits(a), math.Float64frombits(b)))
		}
	}
	panic("not a float type: " + dt.String())
}

// Shares returns every rank's bytes [r*k, (r+1)*k): what rank r reduces
// in a reduce-scatter of k bytes per rank.
func Shares(ins [][]byte, r, k int) [][]byte {
	out := make([][]byte, len(ins))
	for p, in := range ins {
		out[p] = in[r*k : (r+1)*k]
	}
	return out
}

// FirstDiff describes the first element where got and want differ.
func FirstDiff(dt detcoll.DType, got, want []byte) error {
	if bytes.Equal(got, want) {
		return nil
	}
	if len(got) != len(want) {
		return fmt.Errorf("got %d bytes, want %d", len(got), len(want))
	}
	size := dt.Size()
	for i := 0; i < len(got); i += size {
		if !bytes.Equal(got[i:i+size], want[i:i+size]) {
			return fmt.Errorf("element %d of %d: got %#x, want %#x", i/size, len(got)/size, GetBits(got[i:], size), GetBits(want[i:], size))
		}
	}
	return nil
}

// ReduceCase is one size of a reduction check: every rank's inputs and the
// sums this rank must get, for an all-reduce of n elements and for a
// reduce-scatter of W*n.
type ReduceCase struct {
	Ins, ScatterIns [][]byte // by rank
	Want            []byte   // the all-reduce's result
	ScatterWant     []byte   // this rank's share of the reduce-scatter's
}

// NewReduceCase makes the case for rank of w at n elements of dt; calls
// numbers the inputs (two per case).
func NewReduceCase(seed uint64, call, w, rank, n int, dt detcoll.DType) ReduceCase {
	var rc ReduceCase
	for p := range w {
		rc.Ins = append(rc.Ins, Input(seed, call, p, n, dt))
		rc.ScatterIns = append(rc.ScatterIns, Input(seed, call+1, p, w*n, dt))
	}
	rc.Want = ReferenceSum(dt, rc.Ins)
	rc.ScatterWant = ReferenceSum(dt, Shares(rc.ScatterIns, rank, n*dt.Size()))
	return rc
}
