package conformance

import (
	"context"
	"fmt"
	"time"

	"github.com/detcoll/detcoll"
	"github.com/detcoll/detcoll/internal/core/num"
	"github.com/detcoll/detcoll/internal/testkit/check"
)

// operatorCases: every reduction operator on every element type it takes,
// against check.ReferenceReduce, on host and device memory alike
// (internal/backend/hier's TestOperatorsAreTheFlatTree checks them across
// hosts).
func operatorCases() []Case {
	return []Case{{Name: "OperatorsMatchReference", Worlds: []int{1, 2, 3, 4, 5, 8}, ShortWorlds: []int{1, 2, 3},
		DeviceWorlds: []int{1, 2, 4}, Limit: 5 * time.Minute, Rank: withMemory(operatorsRank)}}
}

// operatorsRank makes, for every operator and element type it takes and a
// few counts (one element, odd, past the one-shot all-reduce), an
// AllReduce out of place and in place, a staged one, a ReduceScatter and
// a ReduceScatterMany of two buffers, and checks every output and its
// guard bytes. A PreMulSum's scalar is in the call and, on a device, in
// device memory, in turn.
func operatorsRank(r *Rank, c *detcoll.Comm, m check.Memory) error {
	w, calls, call := r.World, 0, 0
	counts := []int{1, 7, 999, 40003}
	if r.Short {
		counts = counts[:3]
	}
	for _, op := range num.RedOps() {
		for dt := detcoll.TypeBFloat16; dt <= detcoll.TypeUint64; dt++ {
			if !op.Supports(dt) {
				continue
			}
			scalars := check.PremulFactors(dt, w)
			for _, n := range counts {
				call++
				m.Reset()
				pub := check.RedOpOf(op, r.Rank)
				if op == num.PreMulSum {
					var err error
					if pub, err = m.PreMulSum(dt, check.PremulFactor(r.Rank), call%2 == 0); err != nil {
						return err
					}
				}
				size := dt.Size()
				ins := make([][]byte, w)
				for p := range ins {
					ins[p] = check.Input(seed, 10000+call, p, n, dt)
				}
				want := check.ReferenceReduce(dt, op, ins, scalars)
				what := fmt.Sprintf("%v %v n=%d", op, dt, n)
				// Out of place (at an odd offset), staged, in place.
				for i, k := range []check.Reduction{check.CallAllReduce, check.CallStaged, check.CallAllReduce} {
					in, err := check.Alloc(m, n*size, size*(i%2), ins[r.Rank])
					if err != nil {
						return err
					}
					out := in
					if i < 2 {
						if out, err = m.Alloc(n*size, size); err != nil {
							return err
						}
					}
					if err := m.Reduce(c, k, dt, pub, []check.Buffer{in}, []check.Buffer{out}); err != nil {
						return fmt.Errorf("%s, call %d: %w", what, i, err)
					}
					if err := readEqual(dt, out, want); err != nil {
						return fmt.Errorf("%s, call %d: %w", what, i, err)
					}
				}
				// ReduceScatter of the first w*m elements, m = n/w (at least one).
				k := max(1, n/w)
				rsIns := make([][]byte, w)
				for p := range rsIns {
					rsIns[p] = check.Input(seed, 20000+call, p, w*k, dt)
				}
				rsWant := check.ReferenceReduce(dt, op, check.Shares(rsIns, r.Rank, k*size), scalars)
				in, err := check.Alloc(m, w*k*size, 0, rsIns[r.Rank])
				if err != nil {
					return err
				}
				outs := make([]check.Buffer, 3)
				for i := range outs {
					if outs[i], err = m.Alloc(k*size, size*i); err != nil {
						return err
					}
				}
				if err := m.Reduce(c, check.CallReduceScatter, dt, pub, []check.Buffer{in}, outs[:1]); err != nil {
					return fmt.Errorf("%s ReduceScatter: %w", what, err)
				}
				if err := m.Reduce(c, check.CallReduceScatterMany, dt, pub, []check.Buffer{in, in}, outs[1:]); err != nil {
					return fmt.Errorf("%s ReduceScatterMany: %w", what, err)
				}
				for i, out := range outs {
					if err := readEqual(dt, out, rsWant); err != nil {
						return fmt.Errorf("%s ReduceScatter(Many), output %d: %w", what, i, err)
					}
				}
				calls += 5
			}
		}
	}
	m.Reset()
	fmt.Printf("rank %d: %d reductions with operators checked\n", r.Rank, calls)
	return c.Close(context.Background())
}

// readEqual reads out, checks its guard bytes, and compares it with want.
func readEqual(dt detcoll.DType, out check.Buffer, want []byte) error {
	got, err := out.Read()
	if err != nil {
		return err
	}
	return check.FirstDiff(dt, got, want)
}
