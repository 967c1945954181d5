package cuda_test

import (
	"fmt"
	"math"

	"github.com/detcoll/detcoll"
	"github.com/detcoll/detcoll/internal/binding/driver"
	"github.com/detcoll/detcoll/internal/binding/nccl"
	"github.com/detcoll/detcoll/internal/testkit/check"
)

// The sums of the NCCL comparison (TestDeviceReduceVsNCCLGPU,
// ncclcompare_test.go): detcoll's are asserted against the reference
// tree, NCCL's only counted where they differ from it.

// sumDiff counts how NCCL's float32 sum differs from the fixed tree's.
type sumDiff struct {
	elements int    // compared
	differ   int    // bit patterns differ
	nanOnly  int    // of differ: both NaN, only sign or payload differ
	example  string // the first value that differs, not NaN for NaN
}

func (d *sumDiff) add(ncclSum, tree []byte, ins [][]byte) {
	for i := 0; i+4 <= len(tree); i += 4 {
		d.elements++
		a, b := check.GetBits(ncclSum[i:], 4), check.GetBits(tree[i:], 4)
		if a == b {
			continue
		}
		d.differ++
		fa, fb := math.Float32frombits(uint32(a)), math.Float32frombits(uint32(b))
		if math.IsNaN(float64(fa)) && math.IsNaN(float64(fb)) {
			d.nanOnly++
			continue
		}
		if d.example == "" {
			var leaves []string
			for _, in := range ins {
				leaves = append(leaves, fmt.Sprintf("%#08x", check.GetBits(in[i:], 4)))
			}
			d.example = fmt.Sprintf("element %d: NCCL %#08x (%g), tree %#08x (%g), inputs %v", i/4, a, fa, b, fb, leaves)
		}
	}
}

func (d *sumDiff) String() string {
	s := fmt.Sprintf("NCCL's sum differs from the fixed tree in %d of %d elements (%d of them NaN against NaN with another sign or payload, %d other values)",
		d.differ, d.elements, d.nanOnly, d.differ-d.nanOnly)
	if d.example != "" {
		s += "; first: " + d.example
	}
	return s
}

// sumCall is one float32 sum of the reduce comparison: detcoll's call
// (op, ours) and NCCL's on the same input buffer.
type sumCall struct {
	op, what       string
	inN, outN      int // elements of the input and the output
	ours, ncclCall func(in, out driver.DevicePtr) error
}

// compare runs both calls on this rank's input in, checks detcoll's
// output against want, the sum of leaves, and adds where NCCL's differs
// from it to d. A detcoll output that fails its check is returned as
// problem; only a failed call is an error.
func (s *sumCall) compare(g *gpuRank, p *ncclPeer, in, want []byte, leaves [][]byte, d *sumDiff) (problem string, err error) {
	c, m := g.c, g.mem
	m.Reset()
	din, err := guarded(m, 4*s.inN, 0, in)
	if err != nil {
		return "", err
	}
	dout, err := guarded(m, 4*s.outN, 0, nil)
	if err != nil {
		return "", err
	}
	if err := s.ours(driver.DevicePtr(din.Ptr()), driver.DevicePtr(dout.Ptr())); err != nil {
		return "", fmt.Errorf("%s %s: %w", s.op, s.what, err)
	}
	if err := expectDevice(c, detcoll.TypeFloat32, dout, want); err != nil {
		problem = fmt.Sprintf("%s %s: %v", s.op, s.what, err)
	}
	nout, err := p.output(4 * s.outN)
	if err != nil {
		return problem, err
	}
	sum, err := p.wait(s.what, s.ncclCall(driver.DevicePtr(din.Ptr()), nout), nout, 4*s.outN)
	if err != nil {
		return problem, err
	}
	d.add(sum, want, leaves)
	return problem, nil
}

// compareReduceWithNCCL runs float32 AllReduceDevice and
// ReduceScatterDevice over the full sweep of the device tests' counts,
// checks them against the reference tree, runs NCCL's sum on the same
// inputs and counts where it differs from that tree.
func compareReduceWithNCCL(g *gpuRank, p *ncclPeer) ([]string, error) {
	c := g.c
	w, rank := c.WorldSize(), c.Rank()
	f32 := detcoll.TypeFloat32
	var bad []string
	var ar, rs sumDiff
	call := 0
	inputs := func(n int) [][]byte {
		call++
		ins := make([][]byte, w)
		for q := range ins {
			ins[q] = check.Input(seed, call, q, n, f32)
		}
		return ins
	}
	for _, n := range reduceCounts(f32, w, false) {
		if n == 0 {
			continue
		}
		ins := inputs(n)
		want := check.ReferenceSum(f32, ins)
		allReduce := &sumCall{op: "AllReduceDevice", what: fmt.Sprintf("float32 all-reduce of %d elements", n), inN: n, outN: n,
			ours: func(in, out driver.DevicePtr) error {
				return c.AllReduceDevice(detcoll.DevicePtr(in), detcoll.DevicePtr(out), n, f32, 0)
			},
			ncclCall: func(in, out driver.DevicePtr) error { return p.comm.AllReduce(in, out, n, nccl.Float32, nccl.Sum, p.s) }}
		problem, err := allReduce.compare(g, p, ins[rank], want, ins, &ar)
		if problem != "" {
			bad = append(bad, problem)
		}
		if err != nil {
			return bad, err
		}

		ins = inputs(w * n)
		mine := check.Shares(ins, rank, 4*n)
		reduceScatter := &sumCall{op: "ReduceScatterDevice", what: fmt.Sprintf("float32 reduce-scatter of %d elements per rank", n), inN: w * n, outN: n,
			ours: func(in, out driver.DevicePtr) error {
				return c.ReduceScatterDevice(detcoll.DevicePtr(in), detcoll.DevicePtr(out), n, f32, 0)
			},
			ncclCall: func(in, out driver.DevicePtr) error {
				return p.comm.ReduceScatter(in, out, n, nccl.Float32, nccl.Sum, p.s)
			}}
		problem, err = reduceScatter.compare(g, p, ins[rank], check.ReferenceSum(f32, mine), mine, &rs)
		if problem != "" {
			bad = append(bad, problem)
		}
		if err != nil {
			return bad, err
		}
	}
	fmt.Printf("rank %d: %d float32 all-reduces and reduce-scatters of detcoll equal to the reference tree: %d\n",
		rank, call, call-len(bad))
	fmt.Printf("rank %d: all-reduce: %v\n", rank, &ar)
	fmt.Printf("rank %d: reduce-scatter: %v\n", rank, &rs)
	return bad, nil
}
