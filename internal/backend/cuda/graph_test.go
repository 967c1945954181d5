package cuda_test

import (
	"bytes"
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/detcoll/detcoll"
	"github.com/detcoll/detcoll/internal/binding/driver"
	"github.com/detcoll/detcoll/internal/core/num"
	"github.com/detcoll/detcoll/internal/testkit/check"
	"github.com/detcoll/detcoll/internal/testkit/conformance"
	"github.com/detcoll/detcoll/internal/tools/devmem"
)

// seed makes the inputs; every rank derives every peer's input from it.
const seed = 20261130

// The tests of what only this backend does, as cases of the suite's
// shape, run by their own tests (TestDevice...GPU).
var deviceCases = []conformance.Case{graphCase, twoCommsCase, closeWaitCase, barrierCaptureCase, latencyCase, badInputCase,
	ncclGatherCase, ncclReduceCase, fourCommsCase, windowCase}

var graphCase = conformance.Case{Name: "DeviceGraph", DeviceWorlds: []int{1, 2}, Limit: 2 * time.Minute, Rank: graphRank}

func TestDeviceGraphGPU(t *testing.T) { conformance.RunCase(t, backend, &graphCase) }

// graphOp is one call of the graph test: its buffers and expected output.
type graphOp struct {
	kind    string // "ar", "rs", "ag"
	dt      detcoll.DType
	red     num.RedOp // "ar": its operator
	n       int       // elements per rank (reduce-scatter: of the output)
	in, out check.Buffer
	scalar  check.Buffer // PreMulSum's factor, in device memory, rewritten before each replay
}

// graphOps are 16 calls: small and large all-reduces (the push path),
// reduce-scatters (one large: the push path from W=2), all-gathers. Four
// all-reduces take another operator: PreMulSum with its factor in device
// memory (small and large), which each replay must read anew, Avg, Min.
var graphReds = map[int]num.RedOp{4: num.PreMulSum, 5: num.PreMulSum, 8: num.Avg, 13: num.Min}

func graphOps(m check.Memory, w int) ([]*graphOp, error) {
	var ops []*graphOp
	for i := range 16 {
		op := &graphOp{}
		switch i % 4 {
		case 0:
			op.kind, op.dt, op.n = "ar", detcoll.TypeFloat32, 1000+i
		case 1:
			op.kind, op.dt, op.n = "ar", detcoll.TypeBFloat16, 1200000+i
		case 2:
			op.kind, op.dt, op.n = "rs", detcoll.TypeFloat16, 777+i
			if i%8 == 6 {
				op.n = 600000 + i
			}
		case 3:
			op.kind, op.dt, op.n = "ag", detcoll.TypeUint8, 30001+i
		}
		inN, outN := op.n, op.n
		switch op.kind {
		case "rs":
			inN = w * op.n
		case "ag":
			outN = w * op.n
		}
		var err error
		if red, ok := graphReds[i]; ok {
			op.red = red
			if red == num.PreMulSum {
				if op.scalar, err = m.Alloc(op.dt.Size(), 0); err != nil {
					return nil, err
				}
			}
		}
		if op.in, err = m.Alloc(inN*op.dt.Size(), op.dt.Size()); err != nil {
			return nil, err
		}
		if op.out, err = m.Alloc(outN*op.dt.Size(), 0); err != nil {
			return nil, err
		}
		ops = append(ops, op)
	}
	return ops, nil
}

// windowGraphOps are the graph test's calls on windows (win's memory is
// registered with the communicator), above the LL threshold at W=2: the
// registered path's all-reduce out of place and in place, and its
// reduce-scatter (an output of whole 16-byte vectors). At W=1 they are
// Alone's.
func windowGraphOps(win check.Memory, w int) ([]*graphOp, error) {
	var ops []*graphOp
	for _, c := range []struct {
		kind    string
		dt      detcoll.DType
		n       int
		inPlace bool
	}{
		{"ar", detcoll.TypeBFloat16, 1200016, false},
		{"ar", detcoll.TypeFloat32, 600004, true},
		{"rs", detcoll.TypeFloat16, 600000, false},
	} {
		op := &graphOp{kind: c.kind, dt: c.dt, n: c.n}
		inN := op.n
		if op.kind == "rs" {
			inN = w * op.n
		}
		var err error
		if op.in, err = win.Alloc(inN*op.dt.Size(), 16); err != nil {
			return nil, err
		}
		op.out = op.in
		if !c.inPlace {
			if op.out, err = win.Alloc(op.n*op.dt.Size(), 0); err != nil {
				return nil, err
			}
		}
		ops = append(ops, op)
	}
	return ops, nil
}

// enqueue queues op on s, without waiting.
func (op *graphOp) enqueue(c *detcoll.Comm, s detcoll.Stream) error {
	in, out := op.in.(*devmem.Buffer).Ptr(), op.out.(*devmem.Buffer).Ptr()
	switch {
	case op.kind == "ar" && op.scalar != nil:
		return c.AllReduceDevice(in, out, op.n, op.dt, s, detcoll.PreMulSumDevice(op.scalar.(*devmem.Buffer).Ptr()))
	case op.kind == "ar":
		return c.AllReduceDevice(in, out, op.n, op.dt, s, check.RedOpOf(op.red, 0))
	case op.kind == "rs":
		return c.ReduceScatterDevice(in, out, op.n, op.dt, s)
	}
	return c.AllGatherDevice(in, out, op.n, op.dt, s)
}

// inputs writes call's inputs and returns the expected output.
func (op *graphOp) inputs(w, rank, call int) ([]byte, error) {
	inN := op.n
	if op.kind == "rs" {
		inN = w * op.n
	}
	all := make([][]byte, w)
	for p := range all {
		all[p] = check.Input(seed, call, p, inN, op.dt)
	}
	if err := op.in.Write(all[rank]); err != nil {
		return nil, err
	}
	switch {
	case op.kind == "ar" && op.scalar != nil:
		// Every call its own factors: a replay that read a stale scalar
		// gets the last call's result.
		factors := make([]float64, w)
		for p := range factors {
			factors[p] = check.RoundTo(op.dt, check.PremulFactor(p)+0.125*float64(call%7))
		}
		if err := op.scalar.Write(check.ScalarBytes(op.dt, factors[rank])); err != nil {
			return nil, err
		}
		return check.ReferenceReduce(op.dt, op.red, all, factors), nil
	case op.kind == "ar":
		return check.ReferenceReduce(op.dt, op.red, all, nil), nil
	case op.kind == "rs":
		return check.ReferenceSum(op.dt, check.Shares(all, rank, op.n*op.dt.Size())), nil
	}
	return bytes.Join(all, nil), nil
}

// graphRank captures 16 calls and 3 on windows (windowGraphOps) in a CUDA
// graph, replays it 5 times with new inputs, with eager calls before each
// replay on the same stream, the last rank delayed by a host sleep before
// it queues, and checks every output against the reference.
func graphRank(r *conformance.Rank) error {
	// A blocking stream: the buffers' synchronous copies (legacy stream)
	// are ordered with it.
	g, err := openRank(r, driver.StreamDefault)
	if err != nil {
		return err
	}
	// The windows' memory goes after g closes, which gives the windows
	// back: a window must not outlive its memory.
	var win *devmem.Memory
	defer func() {
		g.close()
		if win != nil {
			win.Arena.Free()
		}
	}()
	c, m, s := g.c, g.mem, g.streams[0]
	st := detcoll.Stream(s)
	w, rank := r.World, r.Rank
	ops, err := graphOps(m, w)
	if err != nil {
		return err
	}
	win = devmem.NewMemory(0)
	win.Arena.ChunkSize = 32 << 20
	win.Arena.OnChunk = func(p driver.DevicePtr, n int) error {
		_, err := c.RegisterDevice(context.Background(), detcoll.DevicePtr(p), n)
		return err // Close gives the window back, before the memory goes
	}
	regOps, err := windowGraphOps(win, w)
	if err != nil {
		return err
	}
	ops = append(ops, regOps...)
	exec, err := devmem.Capture(s, func() error {
		for _, op := range ops {
			if err := op.enqueue(c, st); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("capture: %w", err)
	}
	defer exec.Destroy()

	eager := ops[:2] // reused inputs, outputs of their own
	for rep := range 5 {
		wants := make([][]byte, len(ops))
		for i, op := range ops {
			if wants[i], err = op.inputs(w, rank, 1000*rep+i); err != nil {
				return err
			}
		}
		if rank == w-1 {
			time.Sleep(150 * time.Millisecond) // the others' kernels wait for this rank
		}
		for k, op := range eager {
			e := *op
			if e.out, err = m.Alloc(op.out.Len(), 0); err != nil {
				return err
			}
			if err := e.enqueue(c, st); err == nil {
				err = c.Synchronize(st)
			}
			if err == nil {
				err = check.Expect(e.dt, e.out, wants[k])
			}
			if err != nil {
				return fmt.Errorf("eager call %d before replay %d: %w", k, rep, err)
			}
		}
		if err := exec.Launch(s); err != nil {
			return err
		}
		if err := c.Synchronize(st); err != nil {
			return fmt.Errorf("replay %d: %w", rep, err)
		}
		for i, op := range ops {
			if err := check.Expect(op.dt, op.out, wants[i]); err != nil {
				return fmt.Errorf("replay %d, call %d (%s %v n=%d): %w", rep, i, op.kind, op.dt, op.n, err)
			}
		}
	}
	fmt.Printf("rank %d: 5 replays of %d calls (%d on windows) and 10 eager calls checked\n", rank, len(ops), len(regOps))
	return c.Close(context.Background())
}
