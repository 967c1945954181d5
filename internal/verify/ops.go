package verify

import (
	"bytes"
	"fmt"
	"slices"
	"time"

	"github.com/detcoll/detcoll"
	"github.com/detcoll/detcoll/internal/check"
)

// operation is one checked collective: call runs it on this rank's input
// into out, and want says what out must hold given every rank's input.
type operation struct {
	name string
	// inScale is how many outputs' worth of input a rank gives
	// (ReduceScatter: the world size).
	inScale func(w int) int
	call    func(c *detcoll.Comm, dt detcoll.DType, in, out []byte) error
	want    func(c *detcoll.Comm, dt detcoll.DType, ins [][]byte) []byte
	// outLen is the output bytes for an input of n bytes.
	outLen func(w, n int) int
}

func one(int) int       { return 1 }
func world(w int) int   { return w }
func same(_, n int) int { return n }

var reduceOps = []operation{
	{name: "AllReduce", inScale: one, outLen: same, call: check.AllReduce, want: sum},
	{name: "AllReduce/inplace", inScale: one, outLen: same, want: sum,
		call: func(c *detcoll.Comm, dt detcoll.DType, in, out []byte) error {
			copy(out, in)
			return check.AllReduce(c, dt, out, out)
		}},
	{name: "AllReduceStaged", inScale: one, outLen: same, call: check.StagedAllReduce, want: sum},
	{name: "ReduceScatter", inScale: world, outLen: func(w, n int) int { return n / w }, call: check.ReduceScatter,
		want: func(c *detcoll.Comm, dt detcoll.DType, ins [][]byte) []byte {
			s := check.ReferenceSum(dt, ins)
			k := len(s) / c.WorldSize()
			return s[c.Rank()*k : (c.Rank()+1)*k]
		}},
	{name: "ReduceScatterMany", inScale: world, outLen: func(w, n int) int { return n / w },
		call: func(c *detcoll.Comm, dt detcoll.DType, in, out []byte) error {
			ins, outs := splitScatter(c.WorldSize(), dt, in, out)
			return check.ReduceScatterMany(c, dt, ins, outs)
		},
		want: func(c *detcoll.Comm, dt detcoll.DType, ins [][]byte) []byte {
			// Each buffer is scattered by itself: rank r gets its share of
			// each, one after the other.
			w := c.WorldSize()
			var want []byte
			for k := range 2 {
				parts := make([][]byte, w)
				for p, in := range ins {
					pi, _ := splitScatter(w, dt, in, make([]byte, len(in)/w))
					parts[p] = pi[k]
				}
				s := check.ReferenceSum(dt, parts)
				share := len(s) / w
				want = append(want, s[c.Rank()*share:(c.Rank()+1)*share]...)
			}
			return want
		}},
}

// splitScatter cuts a reduce-scatter's input into two buffers, each a
// whole multiple of W elements, and its output into their shares.
func splitScatter(w int, dt detcoll.DType, in, out []byte) (ins, outs [][]byte) {
	cut := len(in) / dt.Size() / w / 2 * w * dt.Size()
	return [][]byte{in[:cut], in[cut:]}, [][]byte{out[:cut/w], out[cut/w:]}
}

var gatherOps = []operation{
	{name: "AllGather", inScale: one, outLen: func(w, n int) int { return w * n }, call: check.AllGather, want: concat},
	{name: "AllGather/inplace", inScale: one, outLen: func(w, n int) int { return w * n }, want: concat,
		call: func(c *detcoll.Comm, dt detcoll.DType, in, out []byte) error {
			slot := out[c.Rank()*len(in) : (c.Rank()+1)*len(in)]
			copy(slot, in)
			return check.AllGather(c, dt, slot, out)
		}},
	{name: "AllGatherMany", inScale: one, outLen: func(w, n int) int { return w * n },
		call: func(c *detcoll.Comm, _ detcoll.DType, in, out []byte) error {
			// Two buffers: the input's halves, gathered into the output's
			// halves; want checks them against the halves' concatenations.
			h := len(in) / 2
			w := c.WorldSize()
			return detcoll.AllGatherMany(c, [][]byte{in[:h], in[h:]}, [][]byte{out[:w*h], out[w*h:]})
		},
		want: func(c *detcoll.Comm, _ detcoll.DType, ins [][]byte) []byte {
			h := len(ins[0]) / 2
			var first, second [][]byte
			for _, in := range ins {
				first, second = append(first, in[:h]), append(second, in[h:])
			}
			return append(bytes.Join(first, nil), bytes.Join(second, nil)...)
		}},
	{name: "Broadcast", inScale: one, outLen: same,
		call: func(c *detcoll.Comm, _ detcoll.DType, in, out []byte) error {
			root := c.WorldSize() - 1
			if c.Rank() == root {
				copy(out, in)
			}
			return detcoll.Broadcast(c, out, root)
		},
		want: func(c *detcoll.Comm, _ detcoll.DType, ins [][]byte) []byte { return ins[c.WorldSize()-1] }},
}

func sum(_ *detcoll.Comm, dt detcoll.DType, ins [][]byte) []byte { return check.ReferenceSum(dt, ins) }

func concat(_ *detcoll.Comm, _ detcoll.DType, ins [][]byte) []byte { return bytes.Join(ins, nil) }

// run checks op on n elements per rank (times inScale for the input) at
// every offset, then repeats and times it. It returns the median time per
// call.
func (op operation) run(c *detcoll.Comm, dt detcoll.DType, n int, seed uint64, call int) (time.Duration, error) {
	w, size := c.WorldSize(), dt.Size()
	inN := n * op.inScale(w)
	ins := make([][]byte, w)
	for p := range ins {
		ins[p] = check.Input(seed, call, p, inN, dt)
	}
	in := ins[c.Rank()]
	outBytes := op.outLen(w, inN*size)
	want := op.want(c, dt, ins)
	// Every rank makes every call whatever its checks find: a rank that
	// stopped early would pair its next call with a peer's leftover one.
	// A call's own error (the communicator failed) does end the run.
	var first error
	note := func(err error) {
		if first == nil {
			first = err
		}
	}
	for _, off := range offsets {
		out := check.NewGuarded(outBytes, off*size)
		inCopy := slices.Clone(in)
		if err := op.call(c, dt, inCopy, out.Bytes()); err != nil {
			return 0, fmt.Errorf("offset %d: %w", off, err)
		}
		if err := out.Holds(dt, want); err != nil {
			note(fmt.Errorf("offset %d: %w", off, err))
		}
		if !bytes.Equal(inCopy, in) {
			note(fmt.Errorf("offset %d: the input changed", off))
		}
	}
	// Repeats, timed: every result must still be the reference's.
	iters := min(max((8<<20)/max(outBytes, 1), 3), 100)
	times := make([]time.Duration, iters)
	out := make([]byte, outBytes)
	for i := range times {
		start := time.Now()
		if err := op.call(c, dt, in, out); err != nil {
			return 0, fmt.Errorf("repeat %d: %w", i, err)
		}
		times[i] = time.Since(start)
		if i == 0 || i == iters-1 {
			if err := check.FirstDiff(dt, out, want); err != nil {
				note(fmt.Errorf("repeat %d: %w", i, err))
			}
		}
	}
	slices.Sort(times)
	return times[len(times)/2], first
}
