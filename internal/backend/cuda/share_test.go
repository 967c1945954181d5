package cuda

import (
	"errors"
	"testing"

	"github.com/detcoll/detcoll/internal/core/base"
	"github.com/detcoll/detcoll/internal/core/num"
)

// TestPlanGridCap: no launch that may wait takes more than maxBlocks
// blocks, for any operation, size or world size (issue 22: launches of
// half the GPU each deadlocked at W=4 and 8 on one GPU); only an Alone
// launch, which never waits, may take more.
func TestPlanGridCap(t *testing.T) {
	ops := []base.Op{base.OpAllReduce, base.OpReduceScatter, base.OpAllGather, base.OpBroadcast, base.OpAllReduceStaged, base.OpBarrier}
	for _, world := range []int{1, 2, 3, 4, 8, 64} {
		for _, maxBlocks := range []int{1, 7, 32} {
			p := testPlanner(0, world)
			p.maxBlocks = maxBlocks
			p.llMax = defaultLLMax(world)
			for _, op := range ops {
				for _, n := range []int{0, 1, 1000, 64 << 10, 1 << 20, 4<<20 + 3, 1 << 30} {
					n := n / world * world
					if op == base.OpBarrier && n > 0 {
						continue
					}
					req := &base.DeviceRequest{Op: op, DType: num.Float32Type}
					if op != base.OpBarrier {
						in, out := n, n
						switch op {
						case base.OpReduceScatter:
							out = n / world
						case base.OpAllGather:
							out = n * world
						}
						req.In, req.Out = buf(1<<40, in), buf(1<<42, out)
					}
					for i, s := range p.plan(req) {
						alone := s.table[0] == opAlone
						if alone != (world == 1) {
							t.Errorf("W=%d %v %d bytes: launch %d alone=%v", world, op, n, i, alone)
						}
						if !alone && (s.grid < 1 || s.grid > maxBlocks) {
							t.Errorf("W=%d cap %d, %v of %d bytes: launch %d of %d blocks", world, maxBlocks, op, n, i, s.grid)
						}
					}
				}
			}
		}
	}
}

func TestFit(t *testing.T) {
	for _, c := range []struct{ resident, maxBlocks, want int }{
		{528, 32, 16}, {528, 264, 2}, {132, 32, 4}, {31, 32, 1}, {0, 32, 1}, {528, 0, 528},
	} {
		if got := fit(c.resident, c.maxBlocks); got != c.want {
			t.Errorf("fit(%d, %d) = %d, want %d", c.resident, c.maxBlocks, got, c.want)
		}
	}
}

// TestShareCount: a communicator that puts more of its ranks on one GPU
// than fit there is refused, with the same error on every rank; one that
// fits joins the process's count of its GPU until it leaves.
func TestShareCount(t *testing.T) {
	gpus := func(fitA int, ids ...string) []gpuOf {
		g := make([]gpuOf, len(ids))
		for i, id := range ids {
			g[i] = gpuOf{busID: id, fit: fitA}
		}
		return g
	}
	over := gpus(2, "A", "A", "B", "A")
	var first error
	for rank := range over {
		var s sharing
		err := s.count(rank, 32, over)
		if !errors.Is(err, base.ErrInvalid) {
			t.Fatalf("rank %d: %v, want ErrInvalid", rank, err)
		}
		if first == nil {
			first = err
			t.Logf("as expected: %v", err)
		} else if err.Error() != first.Error() {
			t.Errorf("rank %d: %q; rank 0: %q", rank, err, first)
		}
	}

	var a, b sharing
	if err := a.count(0, 32, gpus(4, "X", "X", "Y")); err != nil {
		t.Fatal(err)
	}
	if n, crowded := a.crowded(); n != 2 || crowded {
		t.Errorf("one communicator of 2 ranks on X: %d kernels, crowded %v", n, crowded)
	}
	if err := b.count(1, 32, gpus(4, "X", "X", "X")); err != nil {
		t.Fatal(err)
	}
	if n, crowded := b.crowded(); n != 5 || !crowded {
		t.Errorf("then one of 3 ranks on X: %d kernels, crowded %v; want 5, true", n, crowded)
	}
	b.leave()
	if n, _ := a.crowded(); n != 2 {
		t.Errorf("after the second left: %d kernels on X, want 2", n)
	}
	a.leave()
	a.leave() // twice: nothing more
	kernelsOn.Lock()
	defer kernelsOn.Unlock()
	if len(kernelsOn.n) != 0 {
		t.Errorf("after both left: %v", kernelsOn.n)
	}
}
