package cuda_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/detcoll/detcoll"
	"github.com/detcoll/detcoll/internal/binding/driver"
	"github.com/detcoll/detcoll/internal/binding/nccl"
	"github.com/detcoll/detcoll/internal/testkit/check"
	"github.com/detcoll/detcoll/internal/testkit/conformance"
	"github.com/detcoll/detcoll/internal/tools/devmem"
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
//
// Each needs two GPUs of its own (ends by gputest otherwise) and skips
// where NCCL does not load.

var (
	ncclGatherCase = ncclCase("DeviceAllGatherMatchesNCCL", compareGatherWithNCCL)
	ncclReduceCase = ncclCase("DeviceReduceVsNCCL", compareReduceWithNCCL)
)

func TestDeviceAllGatherMatchesNCCLGPU(t *testing.T) {
	conformance.RunCase(t, ncclBackend, &ncclGatherCase)
}

func TestDeviceReduceVsNCCLGPU(t *testing.T) { conformance.RunCase(t, ncclBackend, &ncclReduceCase) }

// ncclCase is a comparison at W=2 on two GPUs of their own, its ranks
// running compare; every rank must pass, and what each said is logged.
func ncclCase(name string, compare func(*gpuRank, *ncclPeer) ([]string, error)) conformance.Case {
	return conformance.Case{Name: name, DeviceWorlds: []int{2}, OwnDevices: true, Limit: 3 * time.Minute,
		Capacity: 8 << 20, Timeout: 20 * time.Second, Check: requireOKAndLog,
		Rank: func(r *conformance.Rank) error { return ncclCompareRank(r, compare) }}
}

// ncclBackend is the backend whose environment check, after the GPUs',
// skips where NCCL does not load, and keeps NVLink multicast off unless
// the caller set NCCL_NVLS_ENABLE (shared/gpu/README.md).
var ncclBackend = func() conformance.Backend {
	b := backend
	b.Env = func(t *testing.T, c *conformance.Case, world int) []string {
		t.Helper()
		env := gpuEnv(t, c, world)
		if err := nccl.Load(); err != nil {
			t.Skipf("nccl: %v", err)
		}
		if os.Getenv("NCCL_NVLS_ENABLE") == "" {
			env = append(env, "NCCL_NVLS_ENABLE=0")
		}
		return env
	}
	return b
}()

// ncclCompareRank creates an NCCL communicator beside a cuda one and runs
// compare. A result that differs is recorded and the sweep goes on, so
// that both ranks keep making the same calls and neither is left waiting
// in a collective; only a failed call ends it.
func ncclCompareRank(r *conformance.Rank, compare func(*gpuRank, *ncclPeer) ([]string, error)) error {
	ctx := context.Background()
	runtime.LockOSThread() // NCCL, like the driver, uses the thread's current context
	if err := nccl.Load(); err != nil {
		return err
	}
	id, err := exchangeNCCLID(ctx, r)
	if err != nil {
		return fmt.Errorf("exchange the NCCL id: %w", err)
	}
	// A blocking stream for NCCL: its work waits for the synchronous
	// copies and detcoll's calls on the legacy default stream.
	g, err := openRank(r, driver.StreamDefault)
	if err != nil {
		return err
	}
	defer g.close()
	c := g.c
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
	p := &ncclPeer{comm: comm, s: g.streams[0], mem: g.mem}
	v, err := nccl.Version()
	if err != nil {
		return err
	}
	fmt.Printf("rank %d: NCCL %d.%d.%d (%s)\n", c.Rank(), v/10000, v/100%100, v%100, nccl.Library())

	bad, err := compare(g, p)
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
func exchangeNCCLID(ctx context.Context, r *conformance.Rank) (nccl.UniqueID, error) {
	var id nccl.UniqueID
	cc, err := detcoll.Open(ctx, detcoll.Options{Backend: "cpu", Capacity: 4096, Timeout: r.Options().Timeout})
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
	mem  *devmem.Memory
}

// input returns device memory holding b, at offset 0.
func (p *ncclPeer) input(b []byte) (driver.DevicePtr, error) {
	in, err := p.mem.Arena.Alloc(len(b))
	if err != nil {
		return 0, err
	}
	return in, devmem.Put(in, b)
}

// output returns n bytes of the arena poisoned with 0x5A, so that an
// output NCCL never wrote cannot pass for one it did.
func (p *ncclPeer) output(n int) (driver.DevicePtr, error) {
	out, err := p.mem.Arena.Alloc(n)
	if err != nil {
		return 0, err
	}
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
	return devmem.Get(out, n)
}

// guarded returns a guarded device buffer of n bytes at offset off that
// holds b (nil: its guard bytes).
func guarded(m *devmem.Memory, n, off int, b []byte) (*devmem.Buffer, error) {
	buf, err := m.Alloc(n, off)
	if err != nil {
		return nil, err
	}
	if b == nil {
		return buf.(*devmem.Buffer), nil
	}
	return buf.(*devmem.Buffer), buf.Write(b)
}

// expectDevice waits for the legacy stream, then compares out with want
// and checks its guards.
func expectDevice(c *detcoll.Comm, dt detcoll.DType, out *devmem.Buffer, want []byte) error {
	if err := c.Synchronize(0); err != nil {
		return err
	}
	return check.Expect(dt, out, want)
}

// compareGatherWithNCCL runs the reference system's all-gather sweep (the
// per-rank sizes of conformance.GatherBytes but 0, by the offset pairs of
// the device test) through AllGatherDevice and ncclAllGather on the same
// seeded bytes, and compares the outputs byte for byte. NCCL's buffers are
// at offset 0; detcoll's have guard bytes around them.
func compareGatherWithNCCL(g *gpuRank, p *ncclPeer) ([]string, error) {
	c, m := g.c, g.mem
	w, rank := c.WorldSize(), c.Rank()
	u8 := detcoll.TypeUint8
	var bad []string
	call, checked := 0, 0
	for _, n := range conformance.GatherBytes(w) {
		if n == 0 {
			continue // nothing to compare
		}
		call++
		ins := make([][]byte, w)
		for q := range ins {
			ins[q] = check.Input(seed, call, q, n, u8)
		}
		for _, offs := range [][2]int{{0, 0}, {1, 0}, {0, 3}, {5, 7}} {
			what := fmt.Sprintf("all-gather of %d bytes, offsets %v", n, offs)
			m.Reset()
			in, err := guarded(m, n, offs[0], ins[rank])
			if err != nil {
				return bad, err
			}
			out, err := guarded(m, w*n, offs[1], nil)
			if err != nil {
				return bad, err
			}
			if err := c.AllGatherDevice(in.Ptr(), out.Ptr(), n, u8, 0); err != nil {
				return bad, fmt.Errorf("AllGatherDevice %s: %w", what, err)
			}
			if err := c.Synchronize(0); err != nil {
				return bad, fmt.Errorf("AllGatherDevice %s: %w", what, err)
			}
			got, guardErr := out.Read()

			nin, err := p.input(ins[rank])
			if err != nil {
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
