package verify

import (
	"bytes"

	"github.com/detcoll/detcoll"
	"github.com/detcoll/detcoll/internal/testkit/check"
)

// operation is one checked collective, on any memory: call runs it on
// this rank's input into out, and want says what out must hold given
// every rank's input.
type operation struct {
	name string
	// inScale is how many outputs' worth of input a rank gives
	// (ReduceScatter: the world size).
	inScale func(w int) int
	// outLen is the output bytes for an input of n bytes of elements of
	// size bytes.
	outLen func(w, n, size int) int
	want   func(w, rank int, dt detcoll.DType, ins [][]byte) []byte
	call   func(m check.Memory, c *detcoll.Comm, dt detcoll.DType, in, out check.Buffer) error
	// cross, when set, also runs the operation on the cpu communicator
	// of the same ranks, on host memory: the row compares both backends.
	cross bool
}

func one(int) int           { return 1 }
func world(w int) int       { return w }
func same(_, n, _ int) int  { return n }
func times(w, n, _ int) int { return w * n }

func sum(_, _ int, dt detcoll.DType, ins [][]byte) []byte { return check.ReferenceSum(dt, ins) }

func concat(_, _ int, _ detcoll.DType, ins [][]byte) []byte { return bytes.Join(ins, nil) }

// share is the reduce-scatter's expected output: rank's share of the sum.
func share(w, rank int, dt detcoll.DType, ins [][]byte) []byte {
	s := check.ReferenceSum(dt, ins)
	k := len(s) / w
	return s[rank*k : (rank+1)*k]
}

var reduceOps = []operation{
	{name: "AllReduce", inScale: one, outLen: same, want: sum,
		call: check.Memory.AllReduce},
	{name: "AllReduce/inplace", inScale: one, outLen: same, want: sum,
		call: func(m check.Memory, c *detcoll.Comm, dt detcoll.DType, in, out check.Buffer) error {
			if err := m.Copy(out, in); err != nil {
				return err
			}
			return m.AllReduce(c, dt, out, out)
		}},
	{name: "AllReduceStaged", inScale: one, outLen: same, want: sum,
		call: check.Memory.AllReduceStaged},
	{name: "ReduceScatter", inScale: world, outLen: func(w, n, _ int) int { return n / w }, want: share,
		call: check.Memory.ReduceScatter},
	{name: "ReduceScatterMany", inScale: world, outLen: func(w, n, _ int) int { return n / w },
		call: func(m check.Memory, c *detcoll.Comm, dt detcoll.DType, in, out check.Buffer) error {
			ins, outs := splitScatter(c.WorldSize(), dt, in, out)
			return m.ReduceScatterMany(c, dt, ins, outs)
		},
		want: func(w, rank int, dt detcoll.DType, ins [][]byte) []byte {
			// Each buffer is scattered by itself: rank r gets its share of
			// each, one after the other.
			cut := scatterCut(w, dt, len(ins[0]))
			first, second := make([][]byte, w), make([][]byte, w)
			for p, in := range ins {
				first[p], second[p] = in[:cut], in[cut:]
			}
			return append(share(w, rank, dt, first), share(w, rank, dt, second)...)
		}},
}

// scatterCut is where splitScatter cuts an input of n bytes: into two
// buffers, each a whole multiple of W elements.
func scatterCut(w int, dt detcoll.DType, n int) int { return n / dt.Size() / w / 2 * w * dt.Size() }

// splitScatter cuts a reduce-scatter's input into two buffers at
// scatterCut and its output into their shares.
func splitScatter(w int, dt detcoll.DType, in, out check.Buffer) (ins, outs []check.Buffer) {
	cut := scatterCut(w, dt, in.Len())
	return []check.Buffer{in.Slice(0, cut), in.Slice(cut, in.Len())},
		[]check.Buffer{out.Slice(0, cut/w), out.Slice(cut/w, out.Len())}
}

var gatherOps = []operation{
	{name: "AllGather", inScale: one, outLen: times, want: concat,
		call: check.Memory.AllGather},
	{name: "AllGather/inplace", inScale: one, outLen: times, want: concat,
		call: func(m check.Memory, c *detcoll.Comm, dt detcoll.DType, in, out check.Buffer) error {
			slot := out.Slice(c.Rank()*in.Len(), (c.Rank()+1)*in.Len())
			if err := m.Copy(slot, in); err != nil {
				return err
			}
			return m.AllGather(c, dt, slot, out)
		}},
	{name: "AllGatherMany", inScale: one, outLen: times,
		call: func(m check.Memory, c *detcoll.Comm, dt detcoll.DType, in, out check.Buffer) error {
			// Two buffers: the input's halves, gathered into the output's
			// halves; want checks them against the halves' concatenations.
			h, w := in.Len()/2, c.WorldSize()
			return m.AllGatherMany(c, dt, []check.Buffer{in.Slice(0, h), in.Slice(h, in.Len())},
				[]check.Buffer{out.Slice(0, w*h), out.Slice(w*h, out.Len())})
		},
		want: func(_, _ int, _ detcoll.DType, ins [][]byte) []byte {
			h := len(ins[0]) / 2
			var first, second [][]byte
			for _, in := range ins {
				first, second = append(first, in[:h]), append(second, in[h:])
			}
			return append(bytes.Join(first, nil), bytes.Join(second, nil)...)
		}},
	{name: "Broadcast", inScale: one, outLen: same,
		call: func(m check.Memory, c *detcoll.Comm, dt detcoll.DType, in, out check.Buffer) error {
			root := c.WorldSize() - 1
			if c.Rank() == root {
				if err := m.Copy(out, in); err != nil {
					return err
				}
			}
			return m.Broadcast(c, dt, out, root)
		},
		want: func(w, _ int, _ detcoll.DType, ins [][]byte) []byte { return ins[w-1] }},
}

// windowOp (device rows) all-reduces elements [1, n) of the input, a
// buffer one element off its neighbour's alignment and one element
// shorter: its result must be the same elements of the full sum (a result
// depends only on the values at its index, never on the size or the
// alignment).
var windowOp = operation{
	name: "AllReduce/window", inScale: one,
	outLen: func(_, n, size int) int { return max(n-size, 0) },
	want: func(_, _ int, dt detcoll.DType, ins [][]byte) []byte {
		s := check.ReferenceSum(dt, ins)
		return s[min(dt.Size(), len(s)):]
	},
	call: func(m check.Memory, c *detcoll.Comm, dt detcoll.DType, in, out check.Buffer) error {
		return m.AllReduce(c, dt, in.Slice(min(dt.Size(), in.Len()), in.Len()), out)
	},
}

// crossOps (device rows, with a cpu communicator beside) run an
// all-reduce and a reduce-scatter on both backends on the same inputs.
func crossOps() []operation {
	ar, rs := reduceOps[0], reduceOps[3]
	ar.name, ar.cross = "AllReduce/vs-cpu", true
	rs.name, rs.cross = "ReduceScatter/vs-cpu", true
	return []operation{ar, rs}
}
