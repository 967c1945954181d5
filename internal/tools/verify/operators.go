package verify

import (
	"fmt"

	"github.com/detcoll/detcoll"
	"github.com/detcoll/detcoll/internal/core/num"
	"github.com/detcoll/detcoll/internal/testkit/check"
)

// operatorOps are the reductions with the operators besides Sum, on host
// memory (the cuda backend sums only, so far): AllReduce and
// ReduceScatter with each, against check.ReferenceReduce.
func operatorOps() []operation {
	var ops []operation
	for _, red := range num.RedOps() {
		if red == num.Sum {
			continue
		}
		ops = append(ops,
			operation{name: "AllReduce/" + red.String(), inScale: one, outLen: same,
				want: func(w, _ int, dt detcoll.DType, ins [][]byte) []byte { return reference(red, dt, ins) },
				call: func(_ check.Memory, c *detcoll.Comm, dt detcoll.DType, in, out check.Buffer) error {
					return reduceWith(c, check.CallAllReduce, red, dt, in, out)
				}},
			operation{name: "ReduceScatter/" + red.String(), inScale: world, outLen: func(w, n, _ int) int { return n / w },
				want: func(w, rank int, dt detcoll.DType, ins [][]byte) []byte {
					r := reference(red, dt, ins)
					k := len(r) / w
					return r[rank*k : (rank+1)*k]
				},
				call: func(_ check.Memory, c *detcoll.Comm, dt detcoll.DType, in, out check.Buffer) error {
					return reduceWith(c, check.CallReduceScatter, red, dt, in, out)
				}})
	}
	return ops
}

func reference(red num.RedOp, dt detcoll.DType, ins [][]byte) []byte {
	return check.ReferenceReduce(dt, red, ins, check.PremulFactors(dt, len(ins)))
}

// reduceWith makes reduction k with red on host buffers.
func reduceWith(c *detcoll.Comm, k check.Reduction, red num.RedOp, dt detcoll.DType, in, out check.Buffer) error {
	i, ok1 := in.(*check.Guarded)
	o, ok2 := out.(*check.Guarded)
	if !ok1 || !ok2 {
		return fmt.Errorf("%v on %T: host memory only", red, in)
	}
	return check.Reduce(c, k, dt, check.RedOpOf(red, c.Rank()), [][]byte{i.Bytes()}, [][]byte{o.Bytes()})
}
