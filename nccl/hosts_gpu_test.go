package nccl_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/detcoll/detcoll"
	"github.com/detcoll/detcoll/internal/binding/driver"
	"github.com/detcoll/detcoll/internal/core/num"
	"github.com/detcoll/detcoll/internal/testkit/check"
	"github.com/detcoll/detcoll/internal/testkit/gputest"
	"github.com/detcoll/detcoll/internal/testkit/ranktest"
	"github.com/detcoll/detcoll/internal/tools/devmem"
	"github.com/detcoll/detcoll/nccl"
)

// The GPU tests of calls across hosts whose signatures are checked on the
// device (internal/backend/hier): captured in CUDA graphs and replayed,
// mismatched between hosts (eager and in graphs), and skipped by a host.
// The hosts are virtual: two on this machine (DETCOLL_VIRTUAL_HOSTS=2),
// NCCL's rail through its socket transport, ranks time-sliced where they
// share a GPU. Each test ends with "cuda: ..." where no GPU is here
// (skips; fails under DETCOLL_REQUIRE_GPU=1).

func TestMain(m *testing.M) {
	ranktest.Main(map[string]ranktest.Role{
		"hosts-graph":          hostsGraphRank,
		"hosts-mismatch":       func() error { return hostsMismatchRank(false) },
		"hosts-graph-mismatch": func() error { return hostsMismatchRank(true) },
		"hosts-skip":           hostsSkipRank,
	})
	os.Exit(m.Run())
}

// hostsEnv is the ranks' environment: two virtual hosts, NCCL between
// them over sockets on this machine.
func hostsEnv(t *testing.T, timeout time.Duration) []string {
	t.Helper()
	n, err := devmem.Count()
	gputest.Need(t, 1, n, err)
	return []string{nccl.EnvVirtualHosts + "=2", "DETCOLL_CUDA_SHARE_DEVICES=1", "DETCOLL_TEST_TIMEOUT=" + timeout.String(),
		"NCCL_P2P_DISABLE=1", "NCCL_SHM_DISABLE=1", "NCCL_NET=Socket", "NCCL_SOCKET_IFNAME=lo", "NCCL_IB_DISABLE=1"}
}

// runHosts runs role at each world size and logs what every rank said.
func runHosts(t *testing.T, role string, worlds []int, timeout time.Duration) {
	for _, w := range worlds {
		t.Run(strconv.Itoa(w), func(t *testing.T) {
			res := ranktest.Run(t, w, role, 3*time.Minute, hostsEnv(t, timeout)...)
			ranktest.RequireOK(t, res)
			for _, r := range res {
				t.Log(string(bytes.TrimSpace([]byte(r.Output))))
			}
		})
	}
}

func TestHostsGraphGPU(t *testing.T)    { runHosts(t, "hosts-graph", []int{2, 4}, 20*time.Second) }
func TestHostsMismatchGPU(t *testing.T) { runHosts(t, "hosts-mismatch", []int{2, 4}, 20*time.Second) }
func TestHostsGraphMismatchGPU(t *testing.T) {
	runHosts(t, "hosts-graph-mismatch", []int{2}, 20*time.Second)
}
func TestHostsSkippedCallGPU(t *testing.T) { runHosts(t, "hosts-skip", []int{2}, 3*time.Second) }

// hostsRank is a rank's communicator across the two hosts, its GPU, a
// memory on the legacy default stream and a stream of its own.
type hostsRank struct {
	c   *detcoll.Comm
	gpu *devmem.GPU
	m   *devmem.Memory
	s   driver.Stream
}

func openHosts() (*hostsRank, error) {
	ctx := context.Background()
	timeout, err := time.ParseDuration(os.Getenv("DETCOLL_TEST_TIMEOUT"))
	if err != nil {
		return nil, err
	}
	o, err := nccl.Options(ctx, detcoll.Options{Capacity: 8 << 20, Timeout: timeout})
	if err != nil {
		return nil, err
	}
	r := &hostsRank{}
	if r.c, err = detcoll.Open(ctx, o); err != nil {
		return nil, err
	}
	if r.gpu, err = devmem.Open(r.c.Device()); err == nil {
		// Blocking: the memory's synchronous copies are ordered with it.
		r.s, err = driver.StreamCreate(driver.StreamDefault)
	}
	if err != nil {
		r.c.Close(ctx)
		return nil, err
	}
	r.m = devmem.NewMemory(0)
	return r, nil
}

func (r *hostsRank) close() {
	r.c.Close(context.Background())
	r.s.Destroy()
	r.m.Arena.Free()
	r.gpu.Close()
}

const seed = 20261202

// hostsOp is one call of the graph test.
type hostsOp struct {
	kind    string // "ar", "rs", "ag"
	dt      detcoll.DType
	red     num.RedOp
	n       int // elements per rank (rs: of the output)
	in, out check.Buffer
}

func (op *hostsOp) enqueue(c *detcoll.Comm, s detcoll.Stream) error {
	in, out := op.in.(*devmem.Buffer).Ptr(), op.out.(*devmem.Buffer).Ptr()
	switch op.kind {
	case "ar":
		return c.AllReduceDevice(in, out, op.n, op.dt, s, check.RedOpOf(op.red, 0))
	case "rs":
		return c.ReduceScatterDevice(in, out, op.n, op.dt, s)
	}
	return c.AllGatherDevice(in, out, op.n, op.dt, s)
}

// inputs writes call's inputs of this rank and returns the expected
// output.
func (op *hostsOp) inputs(w, rank, call int) ([]byte, error) {
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
	switch op.kind {
	case "ar":
		return check.ReferenceReduce(op.dt, op.red, all, nil), nil
	case "rs":
		return check.ReferenceSum(op.dt, check.Shares(all, rank, op.n*op.dt.Size())), nil
	}
	return bytes.Join(all, nil), nil
}

// hostsGraphRank captures six calls across the hosts in a CUDA graph
// (all-reduces small and large, one with Max, a reduce-scatter, an
// all-gather), replays it 5 times with new inputs and an eager call
// before each replay, the last rank late, and checks every output
// against the flat tree over all ranks.
func hostsGraphRank() error {
	r, err := openHosts()
	if err != nil {
		return err
	}
	defer r.close()
	c, w, rank := r.c, r.c.WorldSize(), r.c.Rank()
	st := detcoll.Stream(r.s)
	ops := []*hostsOp{
		{kind: "ar", dt: detcoll.TypeBFloat16, red: num.Sum, n: 1001},
		{kind: "ar", dt: detcoll.TypeFloat32, red: num.Sum, n: 300001},
		{kind: "ar", dt: detcoll.TypeFloat32, red: num.Max, n: 999},
		{kind: "rs", dt: detcoll.TypeFloat16, red: num.Sum, n: 777},
		{kind: "ag", dt: detcoll.TypeUint8, n: 30001},
		{kind: "ar", dt: detcoll.TypeFloat64, red: num.Avg, n: 4097},
	}
	for _, op := range ops {
		inN, outN := op.n, op.n
		switch op.kind {
		case "rs":
			inN = w * op.n
		case "ag":
			outN = w * op.n
		}
		if op.in, err = r.m.Alloc(inN*op.dt.Size(), op.dt.Size()); err != nil {
			return err
		}
		if op.out, err = r.m.Alloc(outN*op.dt.Size(), 0); err != nil {
			return err
		}
	}
	// One eager call of each first, as PyTorch's warm-up does: the
	// scratch then exists before the capture (which would allocate it
	// otherwise).
	for i, op := range ops {
		want, err := op.inputs(w, rank, 100+i)
		if err == nil {
			err = op.enqueue(c, st)
		}
		if err == nil {
			err = c.Synchronize(st)
		}
		if err == nil {
			err = check.Expect(op.dt, op.out, want)
		}
		if err != nil {
			return fmt.Errorf("eager call %d (%s %v): %w", i, op.kind, op.dt, err)
		}
	}
	exec, err := devmem.Capture(r.s, func() error {
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
	// Before Close: NCCL's destroy of the rail waits for every graph
	// that holds one of its calls.
	destroyed := false
	defer func() {
		if !destroyed {
			exec.Destroy()
		}
	}()
	start := time.Now()
	for rep := range 5 {
		wants := make([][]byte, len(ops))
		for i, op := range ops {
			if wants[i], err = op.inputs(w, rank, 1000*rep+i); err != nil {
				return err
			}
		}
		if rank == w-1 {
			time.Sleep(100 * time.Millisecond) // the others wait for this rank's signatures
		}
		// An eager call between replays, into an output of its own.
		e := *ops[0]
		if e.out, err = r.m.Alloc(ops[0].out.Len(), 0); err != nil {
			return err
		}
		if err = e.enqueue(c, st); err == nil {
			err = c.Synchronize(st)
		}
		if err == nil {
			err = check.Expect(e.dt, e.out, wants[0])
		}
		if err != nil {
			return fmt.Errorf("eager call before replay %d: %w", rep, err)
		}
		if err := exec.Launch(r.s); err != nil {
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
	fmt.Printf("rank %d of %d: 5 replays of %d calls across 2 hosts and 5 eager calls between them bit-equal to the flat tree (%v)\n",
		rank, w, len(ops), time.Since(start).Round(time.Millisecond))
	exec.Destroy()
	destroyed = true
	return c.Close(context.Background())
}

// hostsMismatchRank: host 0's ranks all-reduce one element more than the
// others', eagerly or in a graph (captured without complaint: nothing is
// checked until the call runs). Every rank must report a *MismatchError
// listing every rank's signature, host 0's differing, at its
// Synchronize, well before the timeout, and the same at its next call.
func hostsMismatchRank(graph bool) error {
	r, err := openHosts()
	if err != nil {
		return err
	}
	defer r.close()
	c, w, rank := r.c, r.c.WorldSize(), r.c.Rank()
	st := detcoll.Stream(r.s)
	per := w / 2
	n := 1000
	if rank < per {
		n++
	}
	in, err := check.Alloc(r.m, 4*n, 0, check.Input(seed, 1, rank, n, detcoll.TypeFloat32))
	if err != nil {
		return err
	}
	out, err := r.m.Alloc(4*n, 0)
	if err != nil {
		return err
	}
	call := func() error {
		return c.AllReduceDevice(in.(*devmem.Buffer).Ptr(), out.(*devmem.Buffer).Ptr(), n, detcoll.TypeFloat32, st)
	}
	start := time.Now()
	if graph {
		var exec driver.GraphExec
		if exec, err = devmem.Capture(r.s, call); err != nil {
			return fmt.Errorf("capture: %w", err)
		}
		defer exec.Destroy()
		start = time.Now()
		if err = exec.Launch(r.s); err == nil {
			err = c.Synchronize(st)
		}
	} else if err = call(); err == nil {
		// Queued, the check on the device; or refused at once, when a
		// faster rank has found the mismatch and told every rank.
		err = c.Synchronize(st)
	}
	took := time.Since(start)
	var me *detcoll.MismatchError
	if !errors.As(err, &me) {
		return fmt.Errorf("Synchronize after %v: %v; want a *MismatchError", took, err)
	}
	if len(me.Signatures) != w {
		return fmt.Errorf("%d signatures, want %d: %v", len(me.Signatures), w, err)
	}
	for p, s := range me.Signatures {
		if want := uint64(1000 + b2i(p < per)); s.Count != want {
			return fmt.Errorf("rank %d's signature %+v: want count %d: %v", p, s, want, err)
		}
	}
	if took > 5*time.Second {
		return fmt.Errorf("the mismatch took %v to report", took)
	}
	if err := call(); !errors.Is(err, detcoll.ErrMismatch) {
		return fmt.Errorf("the call after the mismatch: %v; want the mismatch again", err)
	}
	fmt.Printf("rank %d of %d (graph %v): mismatch reported after %v: %v\n", rank, w, graph, took.Round(time.Millisecond), err)
	return nil
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// hostsSkipRank: the last rank skips an all-reduce. Its peer's signatures
// wait on the rail until the timeout (3 s), then it reports a
// *TimeoutError, and so does the skipper at its next call.
func hostsSkipRank() error {
	r, err := openHosts()
	if err != nil {
		return err
	}
	defer r.close()
	c, w, rank := r.c, r.c.WorldSize(), r.c.Rank()
	st := detcoll.Stream(r.s)
	buf, err := check.Alloc(r.m, 4000, 0, check.Input(seed, 2, rank, 1000, detcoll.TypeFloat32))
	if err != nil {
		return err
	}
	p := buf.(*devmem.Buffer).Ptr()
	if rank == w-1 {
		time.Sleep(8 * time.Second)
		err := c.AllReduceDevice(p, p, 1000, detcoll.TypeFloat32, st)
		if !errors.Is(err, detcoll.ErrTimeout) {
			return fmt.Errorf("the skipper's next call: %v; want the peer's timeout", err)
		}
		fmt.Printf("rank %d (skipped): %v\n", rank, err)
		return nil
	}
	start := time.Now()
	// The call itself may wait: NCCL connects the rail at its first call
	// of a kind, with the peer. The monitor's timeout ends that too.
	if err = c.AllReduceDevice(p, p, 1000, detcoll.TypeFloat32, st); err == nil {
		err = c.Synchronize(st)
	}
	took := time.Since(start)
	var te *detcoll.TimeoutError
	if !errors.As(err, &te) || took < 3*time.Second || took > 6*time.Second {
		return fmt.Errorf("after %v: %v; want a *TimeoutError after about 3 s", took, err)
	}
	fmt.Printf("rank %d: timed out after %v: %v\n", rank, took.Round(time.Millisecond), err)
	return nil
}
