package verify

import (
	"github.com/detcoll/detcoll"
	"github.com/detcoll/detcoll/internal/core/num"
	"github.com/detcoll/detcoll/internal/testkit/check"
)

// operatorOps are the reductions with the operators besides Sum, on the
// backend's memory: AllReduce and ReduceScatter with each, against
// check.ReferenceReduce. A PreMulSum's scalar is in the call for
// AllReduce and, on a device, in device memory for ReduceScatter.
func operatorOps() []operation {
	var ops []operation
	for _, red := range num.RedOps() {
		if red == num.Sum {
			continue
		}
		ops = append(ops,
			operation{name: "AllReduce/" + red.String(), inScale: one, outLen: same,
				want: func(w, _ int, dt detcoll.DType, ins [][]byte) []byte { return reference(red, dt, ins) },
				call: func(m check.Memory, c *detcoll.Comm, dt detcoll.DType, in, out check.Buffer) error {
					return reduceWith(m, c, check.CallAllReduce, red, dt, in, out)
				}},
			operation{name: "ReduceScatter/" + red.String(), inScale: world, outLen: func(w, n, _ int) int { return n / w },
				want: func(w, rank int, dt detcoll.DType, ins [][]byte) []byte {
					r := reference(red, dt, ins)
					k := len(r) / w
					return r[rank*k : (rank+1)*k]
				},
				call: func(m check.Memory, c *detcoll.Comm, dt detcoll.DType, in, out check.Buffer) error {
					return reduceWith(m, c, check.CallReduceScatter, red, dt, in, out)
				}})
	}
	return ops
}

func reference(red num.RedOp, dt detcoll.DType, ins [][]byte) []byte {
	return check.ReferenceReduce(dt, red, ins, check.PremulFactors(dt, len(ins)))
}

// reduceWith makes reduction k with red in m.
func reduceWith(m check.Memory, c *detcoll.Comm, k check.Reduction, red num.RedOp, dt detcoll.DType, in, out check.Buffer) error {
	op := check.RedOpOf(red, c.Rank())
	if red == num.PreMulSum {
		var err error
		if op, err = m.PreMulSum(dt, check.PremulFactor(c.Rank()), k == check.CallReduceScatter); err != nil {
			return err
		}
	}
	return m.Reduce(c, k, dt, op, []check.Buffer{in}, []check.Buffer{out})
}
