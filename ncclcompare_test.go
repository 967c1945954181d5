package detcoll_test

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/detcoll/detcoll"
	"github.com/detcoll/detcoll/internal/check"
	"github.com/detcoll/detcoll/internal/cuda/driver"
	"github.com/detcoll/detcoll/internal/nccl"
	"github.com/detcoll/detcoll/internal/ranktest"
)

// The NCCL comparisons run NCCL and the cuda backend side by side on the
// same inputs, one process per GPU. For all-gather, a pure copy, NCCL is an
// oracle: the outputs must be equal byte for byte. For sums it is not:
// NCCL adds in an order of its own choosing, so only detcoll is checked
// (against check.ReferenceSum), and how often NCCL's sum differs from the
// fixed tree is reported, not asserted. At W=2 each element is a single
// addition, which is commutative and rounds once in both, so differences
// can only come from NaN encodings or flushed subnormals (none were seen on
// H200 with NCCL 2.28.3, docs/gpu-results.md); the order NCCL picks starts
// to matter from W=3 on.

func init() {
	roles["nccl-compare"] = roleNCCLCompare
}

func TestDeviceAllGatherMatchesNCCLGPU(t *testing.T) { runNCCLCompare(t, "gather") }

func TestDeviceReduceVsNCCLGPU(t *testing.T) { runNCCLCompare(t, "reduce") }

// runNCCLCompare runs the nccl-compare role on 2 GPUs in mode ("gather" or
// "reduce") and logs what the ranks said.
func runNCCLCompare(t *testing.T, mode string) {
	requireGPUs(t, 2)
	if err := nccl.Load(); err != nil {
		t.Skipf("nccl: %v", err)
	}
	env := []string{"TEST_NCCL_MODE=" + mode, "TEST_TIMEOUT_MS=20000"}
	if os.Getenv("NCCL_NVLS_ENABLE") == "" {
		env = append(env, "NCCL_NVLS_ENABLE=0") // NVLink multicast stays off (shared/gpu/README.md)
	}
	res := ranktest.Run(t, 2, "nccl-compare", 3*time.Minute, env...)
	ranktest.RequireOK(t, res)
	for _, r := range res {
		t.Log(strings.TrimSpace(r.Output))
	}
}

// roleNCCLCompare creates an NCCL communicator beside a cuda one and runs
// the comparison TEST_NCCL_MODE names. A result that differs is recorded
// and the sweep goes on, so that both ranks keep making the same calls
// and neither is left waiting in a collective; only a failed call ends it.
func roleNCCLCompare() error {
	ctx := context.Background()
	runtime.LockOSThread() // NCCL, like the driver, uses the thread's current context
	if err := nccl.Load(); err != nil {
		return err
	}
	id, err := exchangeNCCLID(ctx)
	if err != nil {
		return fmt.Errorf("exchange the NCCL id: %w", err)
	}
	c, g, err := openGPURank(ctx)
	if err != nil {
		return err
	}
	defer g.close()
	defer c.Close(ctx)
	comm, err := nccl.CommInitRank(c.WorldSize(), id, c.Rank())
	if err != nil {
		return err
	}
	destroyed := false
	defer func() {
		if !destroyed {
			comm.Abort() // a peer may be gone: do not wait for it
		}
	}()
	// A blocking stream: NCCL's work waits for the synchronous copies and
	// detcoll's calls on the legacy default stream.
	s, err := driver.StreamCreate(driver.StreamDefault)
	if err != nil {
		return err
	}
	defer s.Destroy()
	n := &ncclPeer{comm: comm, s: s, g: g}
	v, err := nccl.Version()
	if err != nil {
		return err
	}
	fmt.Printf("rank %d: NCCL %d.%d.%d (%s)\n", c.Rank(), v/10000, v/100%100, v%100, nccl.Library())

	var bad []string
	switch mode := os.Getenv("TEST_NCCL_MODE"); mode {
	case "gather":
		bad, err = compareGatherWithNCCL(c, g, n)
	case "reduce":
		bad, err = compareReduceWithNCCL(c, g, n)
	default:
		err = fmt.Errorf("unknown TEST_NCCL_MODE %q", mode)
	}
	if err != nil {
		return err
	}
	if err := comm.Destroy(); err != nil {
		return err
	}
	destroyed = true
	if err := c.Close(ctx); err != nil {
		return err
	}
	if len(bad) > 0 {
		if len(bad) > 10 {
			bad = append(bad[:10], fmt.Sprintf("... and %d more", len(bad)-10))
		}
		return fmt.Errorf("%d checks failed:\n%s", len(bad), strings.Join(bad, "\n"))
	}
	return nil
}

// exchangeNCCLID gives every rank the id rank 0 gets from NCCL, broadcast
// over a small cpu communicator that is closed again before the caller
// opens its cuda one on the same rendezvous.
func exchangeNCCLID(ctx context.Context) (nccl.UniqueID, error) {
	var id nccl.UniqueID
	cc, err := detcoll.Open(ctx, detcoll.Options{Backend: "cpu", Capacity: 4096,
		Timeout: time.Duration(envInt("TEST_TIMEOUT_MS", 20000)) * time.Millisecond})
	if err != nil {
		return id, err
	}
	if cc.Rank() == 0 {
		if id, err = nccl.GetUniqueID(); err != nil {
			cc.Abort(err) // the peers fail now rather than at the timeout
			cc.Close(ctx)
			return id, err
		}
	}
	if err := detcoll.Broadcast(cc, id[:], 0); err != nil {
		cc.Close(ctx)
		return id, err
	}
	return id, cc.Close(ctx)
}

// ncclPeer runs NCCL calls on a rank's GPU and waits for them.
type ncclPeer struct {
	comm nccl.Comm
	s    driver.Stream
	g    *gpuRank
}

// output returns n bytes of the arena poisoned with 0x5A, so that an
// output NCCL never wrote cannot pass for one it did.
func (p *ncclPeer) output(n int) (driver.DevicePtr, error) {
	out := p.g.alloc(n)
	return out, driver.MemsetD8(out, 0x5A, n)
}

// wait waits for the queued NCCL call and returns its n output bytes at out.
func (p *ncclPeer) wait(what string, err error, out driver.DevicePtr, n int) ([]byte, error) {
	if err != nil {
		return nil, err
	}
	if err := p.s.Synchronize(); err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	return p.g.get(out, n)
}

// compareGatherWithNCCL runs the reference system's all-gather sweep (the
// per-rank sizes of gatherSizes but 0, by the offset pairs of the device
// test) through AllGatherDevice and ncclAllGather on the same seeded bytes,
// and compares the outputs byte for byte. NCCL's buffers are at offset 0;
// detcoll's output has guard bytes around it.
func compareGatherWithNCCL(c *detcoll.Comm, g *gpuRank, p *ncclPeer) ([]string, error) {
	w, rank := c.WorldSize(), c.Rank()
	u8 := detcoll.TypeUint8
	var bad []string
	call, checked := 0, 0
	for _, n := range gatherSizes(w) {
		if n == 0 {
			continue // nothing to compare
		}
		call++
		ins := make([][]byte, w)
		for q := range ins {
			ins[q] = inputBytes(testSeed, call, q, n, u8)
		}
		for _, offs := range [][2]int{{0, 0}, {1, 0}, {0, 3}, {5, 7}} {
			what := fmt.Sprintf("all-gather of %d bytes, offsets %v", n, offs)
			g.reset()
			in, err := g.guarded(n, offs[0])
			if err != nil {
				return bad, err
			}
			if err := in.write(ins[rank]); err != nil {
				return bad, err
			}
			out, err := g.guarded(w*n, offs[1])
			if err != nil {
				return bad, err
			}
			if err := c.AllGatherDevice(in.ptr(), out.ptr(), n, u8, 0); err != nil {
				return bad, fmt.Errorf("AllGatherDevice %s: %w", what, err)
			}
			if err := c.Synchronize(0); err != nil {
				return bad, fmt.Errorf("AllGatherDevice %s: %w", what, err)
			}
			got, guardErr := out.read()

			nin := g.alloc(n)
			if err := g.put(nin, ins[rank]); err != nil {
				return bad, err
			}
			nout, err := p.output(w * n)
			if err != nil {
				return bad, err
			}
			ref, err := p.wait(what, p.comm.AllGather(nin, nout, n, nccl.Uint8, p.s), nout, w*n)
			if err != nil {
				return bad, err
			}
			checked++
			switch {
			case guardErr != nil:
				bad = append(bad, fmt.Sprintf("%s: detcoll's output: %v", what, guardErr))
			case !bytes.Equal(got, ref):
				i := 0
				for got[i] == ref[i] {
					i++
				}
				want := bytes.Join(ins, nil)
				bad = append(bad, fmt.Sprintf("%s: byte %d (from rank %d): detcoll %#x, NCCL %#x; detcoll equals the inputs: %v, NCCL: %v",
					what, i, i/n, got[i], ref[i], bytes.Equal(got, want), bytes.Equal(ref, want)))
			}
		}
	}
	fmt.Printf("rank %d: all-gather: %d of %d (size, offsets) cases equal to NCCL byte for byte, guards intact\n",
		rank, checked-len(bad), checked)
	return bad, nil
}

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

// compareReduceWithNCCL runs float32 AllReduceDevice and
// ReduceScatterDevice over the device test's counts, checks them against
// the reference tree, runs NCCL's sum on the same inputs and counts where
// it differs from that tree.
func compareReduceWithNCCL(c *detcoll.Comm, g *gpuRank, p *ncclPeer) ([]string, error) {
	w, rank := c.WorldSize(), c.Rank()
	f32 := detcoll.TypeFloat32
	var bad []string
	var ar, rs sumDiff
	call := 0
	for _, n := range deviceReduceCounts(f32, w) {
		if n == 0 {
			continue
		}
		call++
		ins := make([][]byte, w)
		for q := range ins {
			ins[q] = inputBytes(testSeed, call, q, n, f32)
		}
		want := referenceSum(f32, ins)
		what := fmt.Sprintf("float32 all-reduce of %d elements", n)
		g.reset()
		in, err := g.guarded(4*n, 0)
		if err != nil {
			return bad, err
		}
		if err := in.write(ins[rank]); err != nil {
			return bad, err
		}
		out, err := g.guarded(4*n, 0)
		if err != nil {
			return bad, err
		}
		if err := c.AllReduceDevice(in.ptr(), out.ptr(), n, f32, 0); err != nil {
			return bad, fmt.Errorf("AllReduceDevice %s: %w", what, err)
		}
		if err := checkDevice(c, f32, out, want); err != nil {
			bad = append(bad, fmt.Sprintf("AllReduceDevice %s: %v", what, err))
		}
		nout, err := p.output(4 * n)
		if err != nil {
			return bad, err
		}
		sum, err := p.wait(what, p.comm.AllReduce(devPtr(in.ptr()), nout, n, nccl.Float32, nccl.Sum, p.s), nout, 4*n)
		if err != nil {
			return bad, err
		}
		ar.add(sum, want, ins)

		call++
		rsIns := make([][]byte, w)
		for q := range rsIns {
			rsIns[q] = inputBytes(testSeed, call, q, w*n, f32)
		}
		mine := shares(rsIns, rank, 4*n)
		rsWant := referenceSum(f32, mine)
		what = fmt.Sprintf("float32 reduce-scatter of %d elements per rank", n)
		g.reset()
		rsIn, err := g.guarded(4*w*n, 0)
		if err != nil {
			return bad, err
		}
		if err := rsIn.write(rsIns[rank]); err != nil {
			return bad, err
		}
		rsOut, err := g.guarded(4*n, 0)
		if err != nil {
			return bad, err
		}
		if err := c.ReduceScatterDevice(rsIn.ptr(), rsOut.ptr(), n, f32, 0); err != nil {
			return bad, fmt.Errorf("ReduceScatterDevice %s: %w", what, err)
		}
		if err := checkDevice(c, f32, rsOut, rsWant); err != nil {
			bad = append(bad, fmt.Sprintf("ReduceScatterDevice %s: %v", what, err))
		}
		nout, err = p.output(4 * n)
		if err != nil {
			return bad, err
		}
		sum, err = p.wait(what, p.comm.ReduceScatter(devPtr(rsIn.ptr()), nout, n, nccl.Float32, nccl.Sum, p.s), nout, 4*n)
		if err != nil {
			return bad, err
		}
		rs.add(sum, rsWant, mine)
	}
	fmt.Printf("rank %d: %d float32 all-reduces and reduce-scatters of detcoll equal to the reference tree: %d\n",
		rank, call, call-len(bad))
	fmt.Printf("rank %d: all-reduce: %v\n", rank, &ar)
	fmt.Printf("rank %d: reduce-scatter: %v\n", rank, &rs)
	return bad, nil
}
