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
// against check.ReferenceReduce. Host backends only, so far: the cuda
// backend sums only and refuses the others. (internal/backend/hier's
// TestOperatorsAreTheFlatTree checks them across hosts.)
func operatorCases() []Case {
	return []Case{{Name: "OperatorsMatchReference", Worlds: []int{1, 2, 3, 4, 5, 8}, ShortWorlds: []int{1, 2, 3},
		Limit: 5 * time.Minute, Rank: operatorsRank}}
}

// operatorsRank makes, for every operator and element type it takes and a
// few counts (one element, odd, past the one-shot all-reduce), an
// AllReduce out of place and in place, a staged one, a ReduceScatter and
// a ReduceScatterMany of two buffers, and checks every output.
func operatorsRank(r *Rank) error {
	c, err := r.Open(context.Background())
	if err != nil {
		return err
	}
	defer c.Close(context.Background())
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
			pub, scalars := check.RedOpOf(op, r.Rank), check.PremulFactors(dt, w)
			for _, n := range counts {
				call++
				size := dt.Size()
				ins := make([][]byte, w)
				for p := range ins {
					ins[p] = clone(check.Input(seed, 10000+call, p, n, dt))
				}
				want := check.ReferenceReduce(dt, op, ins, scalars)
				what := fmt.Sprintf("%v %v n=%d", op, dt, n)
				for _, k := range []check.Reduction{check.CallAllReduce, check.CallStaged} {
					out := num.AlignedBytes(n * size)
					if err := check.Reduce(c, k, dt, pub, [][]byte{clone(ins[r.Rank])}, [][]byte{out}); err != nil {
						return fmt.Errorf("%s, call %d: %w", what, k, err)
					}
					if err := check.FirstDiff(dt, out, want); err != nil {
						return fmt.Errorf("%s, call %d: %w", what, k, err)
					}
				}
				inPlace := clone(ins[r.Rank])
				if err := check.Reduce(c, check.CallAllReduce, dt, pub, [][]byte{inPlace}, [][]byte{inPlace}); err != nil {
					return fmt.Errorf("%s in place: %w", what, err)
				}
				if err := check.FirstDiff(dt, inPlace, want); err != nil {
					return fmt.Errorf("%s in place: %w", what, err)
				}
				// ReduceScatter of the first w*m elements, m = n/w (at least one).
				m := max(1, n/w)
				rsIns := make([][]byte, w)
				for p := range rsIns {
					rsIns[p] = clone(check.Input(seed, 20000+call, p, w*m, dt))
				}
				rsWant := check.ReferenceReduce(dt, op, check.Shares(rsIns, r.Rank, m*size), scalars)
				out := num.AlignedBytes(m * size)
				if err := check.Reduce(c, check.CallReduceScatter, dt, pub, [][]byte{rsIns[r.Rank]}, [][]byte{out}); err != nil {
					return fmt.Errorf("%s ReduceScatter: %w", what, err)
				}
				if err := check.FirstDiff(dt, out, rsWant); err != nil {
					return fmt.Errorf("%s ReduceScatter: %w", what, err)
				}
				outs := [][]byte{num.AlignedBytes(m * size), num.AlignedBytes(m * size)}
				if err := check.Reduce(c, check.CallReduceScatterMany, dt, pub, [][]byte{rsIns[r.Rank], rsIns[r.Rank]}, outs); err != nil {
					return fmt.Errorf("%s ReduceScatterMany: %w", what, err)
				}
				for k := range outs {
					if err := check.FirstDiff(dt, outs[k], rsWant); err != nil {
						return fmt.Errorf("%s ReduceScatterMany, buffer %d: %w", what, k, err)
					}
				}
				calls += 5
			}
		}
	}
	fmt.Printf("rank %d: %d reductions with operators checked\n", r.Rank, calls)
	return c.Close(context.Background())
}

// clone copies b into memory aligned for any element type.
func clone(b []byte) []byte {
	out := num.AlignedBytes(len(b))
	copy(out, b)
	return out
}
