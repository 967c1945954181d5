package detcoll_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/detcoll/detcoll"
	"github.com/detcoll/detcoll/internal/cuda/driver"
	"github.com/detcoll/detcoll/internal/ranktest"
)

func init() {
	roles["device-graph"] = roleDeviceGraph
	roles["device-mismatch"] = roleDeviceMismatch
	roles["device-skip"] = roleDeviceSkip
	roles["device-kill"] = roleDeviceKill
	roles["device-badinput"] = roleDeviceBadInput
	roles["device-abort"] = roleDeviceAbort
}

// roleDeviceAbort: rank 1 aborts from another goroutine while its kernel
// waits for rank 0; the kernel exits, Synchronize returns ErrAborted with
// the cause, and rank 0's next call fails naming rank 1.
func roleDeviceAbort() error {
	ctx := context.Background()
	c, g, err := openGPURank(ctx)
	if err != nil {
		return err
	}
	defer g.close()
	defer c.Close(ctx)
	buf := detcoll.DevicePtr(g.alloc(64))
	cause := errors.New("the user gave up")
	if c.Rank() == 1 {
		time.AfterFunc(100*time.Millisecond, func() { c.Abort(cause) })
		start := time.Now()
		if err := c.AllReduceDevice(buf, buf, 16, detcoll.TypeFloat32, 0); err != nil {
			return err
		}
		err := c.Synchronize(0)
		if !errors.Is(err, detcoll.ErrAborted) || !errors.Is(err, cause) {
			return fmt.Errorf("aborted call: got %v, want ErrAborted wrapping the cause", err)
		}
		if took := time.Since(start); took > time.Second {
			return fmt.Errorf("aborted call returned after %v", took)
		}
		fmt.Printf("rank 1: Synchronize returned after %v: %v\n", time.Since(start).Round(time.Millisecond), err)
		return nil
	}
	time.Sleep(400 * time.Millisecond)
	err = c.AllReduceDevice(buf, buf, 16, detcoll.TypeFloat32, 0)
	if err == nil {
		err = c.Synchronize(0)
	}
	var re *detcoll.RankError
	if !errors.As(err, &re) || re.Rank != 1 {
		return fmt.Errorf("got %v, want a *RankError naming rank 1", err)
	}
	fmt.Printf("rank 0: %v\n", err)
	return nil
}

// graphOp is one call of the graph test: its buffers and expected output.
type graphOp struct {
	kind    string // "ar", "rs", "ag"
	dt      detcoll.DType
	n       int // elements per rank (reduce-scatter: of the output)
	in, out *devGuarded
}

// roleDeviceGraph captures 16 calls (small and large all-reduces,
// reduce-scatters, all-gathers) in a CUDA graph, replays it 5 times with
// new inputs, with eager calls before and after each replay on the same
// stream, one rank delayed by a host sleep before it queues, and checks
// every output against the reference.
func roleDeviceGraph() error {
	ctx := context.Background()
	c, g, err := openGPURank(ctx)
	if err != nil {
		return err
	}
	defer g.close()
	defer c.Close(ctx)
	w, rank := c.WorldSize(), c.Rank()
	// A blocking stream: the tests' synchronous copies (legacy stream) are
	// ordered with it.
	s, err := driver.StreamCreate(driver.StreamDefault)
	if err != nil {
		return err
	}
	defer s.Destroy()
	st := detcoll.Stream(s)
	var ops []*graphOp
	for i := range 16 {
		op := &graphOp{}
		switch i % 4 {
		case 0:
			op.kind, op.dt, op.n = "ar", detcoll.TypeFloat32, 1000+i
		case 1:
			op.kind, op.dt, op.n = "ar", detcoll.TypeBFloat16, 1200000+i // the push path
		case 2:
			op.kind, op.dt, op.n = "rs", detcoll.TypeFloat16, 777+i
			if i%8 == 6 {
				op.n = 600000 + i // the push path from W=2
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
		if op.in, err = g.guarded(inN*op.dt.Size(), op.dt.Size()); err != nil {
			return err
		}
		if op.out, err = g.guarded(outN*op.dt.Size(), 0); err != nil {
			return err
		}
		ops = append(ops, op)
	}
	enqueue := func(op *graphOp) error {
		switch op.kind {
		case "ar":
			return c.AllReduceDevice(op.in.ptr(), op.out.ptr(), op.n, op.dt, st)
		case "rs":
			return c.ReduceScatterDevice(op.in.ptr(), op.out.ptr(), op.n, op.dt, st)
		}
		return c.AllGatherDevice(op.in.ptr(), op.out.ptr(), op.n, op.dt, st)
	}
	// inputs writes call's inputs and returns the expected outputs.
	inputs := func(op *graphOp, call int) ([]byte, error) {
		inN := op.n
		if op.kind == "rs" {
			inN = w * op.n
		}
		all := make([][]byte, w)
		for p := range all {
			all[p] = inputBytes(testSeed, call, p, inN, op.dt)
		}
		if err := op.in.write(all[rank]); err != nil {
			return nil, err
		}
		switch op.kind {
		case "ar":
			return referenceSum(op.dt, all), nil
		case "rs":
			return referenceSum(op.dt, shares(all, rank, op.n*op.dt.Size())), nil
		}
		var want []byte
		for _, b := range all {
			want = append(want, b...)
		}
		return want, nil
	}

	if err := s.BeginCapture(driver.CaptureModeThreadLocal); err != nil {
		return err
	}
	for _, op := range ops {
		if err := enqueue(op); err != nil {
			s.EndCapture()
			return fmt.Errorf("capture: %w", err)
		}
	}
	graph, err := s.EndCapture()
	if err != nil {
		return err
	}
	exec, err := graph.Instantiate()
	graph.Destroy()
	if err != nil {
		return err
	}
	defer exec.Destroy()

	eager := []*graphOp{ops[0], ops[1]} // reused buffers, new inputs
	for rep := range 5 {
		wants := make([][]byte, len(ops))
		for i, op := range ops {
			if wants[i], err = inputs(op, 1000*rep+i); err != nil {
				return err
			}
		}
		if rank == w-1 {
			time.Sleep(150 * time.Millisecond) // the others' kernels wait for this rank
		}
		// Eager calls before the replay, into separate outputs.
		for k, op := range eager {
			e := *op
			if e.out, err = g.guarded(op.out.n, 0); err != nil {
				return err
			}
			if err := enqueue(&e); err != nil {
				return fmt.Errorf("eager call %d before replay %d: %w", k, rep, err)
			}
			if err := c.Synchronize(st); err != nil {
				return err
			}
			if err := checkGuarded(e.out, e.dt, wants[k]); err != nil {
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
			if err := checkGuarded(op.out, op.dt, wants[i]); err != nil {
				return fmt.Errorf("replay %d, call %d (%s %v n=%d): %w", rep, i, op.kind, op.dt, op.n, err)
			}
		}
	}
	fmt.Printf("rank %d: 5 replays of 16 calls and 10 eager calls checked\n", rank)
	return c.Close(ctx)
}

func checkGuarded(out *devGuarded, dt detcoll.DType, want []byte) error {
	got, err := out.read()
	if err != nil {
		return err
	}
	return firstDiff(dt, got, want)
}

// roleDeviceMismatch: the last rank all-gathers while the others
// all-reduce; every rank must learn it from Synchronize as a
// *MismatchError listing each rank's signature, then stay failed.
func roleDeviceMismatch() error {
	ctx := context.Background()
	c, g, err := openGPURank(ctx)
	if err != nil {
		return err
	}
	defer g.close()
	defer c.Close(ctx)
	w, rank := c.WorldSize(), c.Rank()
	in := g.alloc(4000)
	out, err := g.guarded(4000*w, 0) // 0xA5 throughout: a mismatch must leave it so
	if err != nil {
		return err
	}
	if rank == w-1 {
		err = c.AllGatherDevice(detcoll.DevicePtr(in), out.ptr(), 1000, detcoll.TypeUint8, 0)
	} else {
		err = c.AllReduceDevice(detcoll.DevicePtr(in), out.ptr(), 1000, detcoll.TypeFloat32, 0)
	}
	if err != nil {
		return fmt.Errorf("queue: %w", err)
	}
	start := time.Now()
	err = c.Synchronize(0)
	var me *detcoll.MismatchError
	if !errors.As(err, &me) || len(me.Signatures) != w {
		return fmt.Errorf("got %v, want a *MismatchError of %d signatures", err, w)
	}
	for p, s := range me.Signatures {
		if (s == me.Signatures[0]) == (p == w-1) {
			return fmt.Errorf("signature of rank %d is %v: want the last rank alone to differ: %v", p, s, err)
		}
	}
	fmt.Printf("rank %d: after %v: %v\n", rank, time.Since(start).Round(time.Microsecond), err)
	got, err := out.read()
	if err != nil {
		return fmt.Errorf("output after the mismatch: %w", err)
	}
	for i, b := range got {
		if b != 0xA5 {
			return fmt.Errorf("the mismatched call wrote its output (byte %d is %#x)", i, b)
		}
	}
	if err := c.AllReduceDevice(detcoll.DevicePtr(in), out.ptr(), 10, detcoll.TypeFloat32, 0); !errors.Is(err, detcoll.ErrMismatch) {
		return fmt.Errorf("call after a mismatch: got %v, want the cause again", err)
	}
	return nil
}

// roleDeviceSkip: the last rank skips a call; the others' kernels time out
// and report the operation and the missing rank; the skipper then learns
// of their failure.
func roleDeviceSkip() error {
	ctx := context.Background()
	c, g, err := openGPURank(ctx)
	if err != nil {
		return err
	}
	defer g.close()
	defer c.Close(ctx)
	w, rank := c.WorldSize(), c.Rank()
	if rank == w-1 {
		time.Sleep(3 * time.Second)
		// By now the others have timed out waiting for this rank and
		// said so: the same *TimeoutError on every rank, naming this one
		// missing.
		var te *detcoll.TimeoutError
		if err := c.Barrier(); !errors.Is(err, detcoll.ErrTimeout) || !errors.As(err, &te) || !slices.Contains(te.Missing, rank) {
			return fmt.Errorf("skipper's next call: got %v, want a timeout naming this rank", err)
		}
		return nil
	}
	buf := detcoll.DevicePtr(g.alloc(40))
	start := time.Now()
	if err := c.AllReduceDevice(buf, buf, 10, detcoll.TypeFloat32, 0); err != nil {
		return err
	}
	err = c.Synchronize(0)
	var te *detcoll.TimeoutError
	if !errors.As(err, &te) || te.Op.String() != "AllReduce" || len(te.Missing) == 0 || te.Missing[len(te.Missing)-1] != w-1 {
		return fmt.Errorf("got %v, want a *TimeoutError of AllReduce naming rank %d", err, w-1)
	}
	fmt.Printf("rank %d: after %v: %v\n", rank, time.Since(start).Round(time.Millisecond), err)
	return nil
}

// roleDeviceKill: every rank all-reduces in a loop (LL and push-path
// sizes), waiting for each; the victim kills itself with SIGKILL in the
// middle. The others must fail with a *RankError naming it; they print
// when they noticed, the victim when it died. Then each survivor runs a
// new communicator of one rank on its GPU.
func roleDeviceKill() error {
	ctx := context.Background()
	c, g, err := openGPURank(ctx)
	if err != nil {
		return err
	}
	defer g.close()
	victim := envInt("VICTIM", 1)
	const n = 600000 // 2.4 MB of float32: the push path
	buf := detcoll.DevicePtr(g.alloc(4 * n))
	for i := 0; ; i++ {
		if c.Rank() == victim && i == 300 {
			fmt.Printf("KILL %d\n", time.Now().UnixNano())
			syscall.Kill(os.Getpid(), syscall.SIGKILL)
		}
		m := n
		if i%2 == 0 {
			m = 100
		}
		if err = c.AllReduceDevice(buf, buf, m, detcoll.TypeFloat32, 0); err != nil {
			break
		}
		if err = c.Synchronize(0); err != nil {
			break
		}
	}
	fmt.Printf("DETECTED %d %v\n", time.Now().UnixNano(), err)
	var re *detcoll.RankError
	if !errors.Is(err, detcoll.ErrPeerLost) || !errors.As(err, &re) || re.Rank != victim {
		return fmt.Errorf("got %v, want a *RankError naming rank %d", err, victim)
	}
	c.Close(ctx)
	c2, err := detcoll.Open(ctx, detcoll.Options{Backend: "cuda", WorldSize: 1, Device: c.Device(), Capacity: 1 << 20})
	if err != nil {
		return fmt.Errorf("new communicator after the failure: %w", err)
	}
	defer c2.Close(ctx)
	in := []byte{0, 0, 0x80, 0x3f} // 1.0
	if err := g.put(devPtr(buf), in); err != nil {
		return err
	}
	if err := c2.AllReduceDevice(buf, buf+64, 1, detcoll.TypeFloat32, 0); err != nil {
		return err
	}
	if err := c2.Synchronize(0); err != nil {
		return err
	}
	got, err := g.get(devPtr(buf+64), 4)
	if err != nil || string(got) != string(in) {
		return fmt.Errorf("new communicator: got %x (%v), want %x", got, err, in)
	}
	return c2.Close(ctx)
}

// roleDeviceBadInput: bad device calls and host calls on a cuda
// communicator are refused with ErrInvalid and leave it usable.
func roleDeviceBadInput() error {
	ctx := context.Background()
	c, g, err := openGPURank(ctx)
	if err != nil {
		return err
	}
	defer g.close()
	defer c.Close(ctx)
	w := c.WorldSize()
	p := detcoll.DevicePtr(g.alloc(1 << 16))
	f32, u8 := detcoll.TypeFloat32, detcoll.TypeUint8
	capElems := int(c.Options().Capacity/4) + 1
	bad := map[string]func() error{
		"nil input":        func() error { return c.AllReduceDevice(0, p, 10, f32, 0) },
		"nil output":       func() error { return c.AllReduceDevice(p, 0, 10, f32, 0) },
		"negative count":   func() error { return c.AllReduceDevice(p, p, -1, f32, 0) },
		"partial overlap":  func() error { return c.AllReduceDevice(p, p+4, 10, f32, 0) },
		"over capacity":    func() error { return c.AllReduceDevice(p, p+detcoll.DevicePtr(8*capElems), capElems, f32, 0) },
		"misaligned float": func() error { return c.AllReduceDevice(p+1, p+4096, 10, f32, 0) },
		"int sum":          func() error { return c.AllReduceDevice(p, p+4096, 10, detcoll.TypeInt32, 0) },
		"unknown type":     func() error { return c.AllGatherDevice(p, p+4096, 10, detcoll.DType(0), 0) },
		"reduce-scatter overlap": func() error {
			return c.ReduceScatterDevice(p, p+4, 10, f32, 0) // overlapping, not this rank's share
		},
		"gather into another slot": func() error {
			return c.AllGatherDevice(p+detcoll.DevicePtr(((c.Rank()+1)%w)*10+boolInt(w == 1)), p, 10, u8, 0)
		},
		"broadcast root":  func() error { return c.BroadcastDevice(p, 10, u8, w, 0) },
		"broadcast -1":    func() error { return c.BroadcastDevice(p, 10, u8, -1, 0) },
		"many lengths":    func() error { return c.AllGatherManyDevice([]detcoll.DevicePtr{p}, nil, []int{1}, u8, 0) },
		"many none":       func() error { return c.AllGatherManyDevice(nil, nil, nil, u8, 0) },
		"staged unstaged": func() error { return c.AllReduceStagedDevice(p, 10, f32, 0) },
		"stage ints":      func() error { _, err := c.StageDevice(10, detcoll.TypeInt32, 0); return err },
		"host AllReduce":  func() error { return detcoll.AllReduce(c, make([]float32, 4), make([]float32, 4)) },
		"host Stage":      func() error { _, err := detcoll.Stage[float32](c, 4); return err },
	}
	for name, call := range bad {
		if err := call(); !errors.Is(err, detcoll.ErrInvalid) {
			return fmt.Errorf("%s: got %v, want ErrInvalid", name, err)
		}
	}
	// Still usable: a good call, and Barrier.
	if err := g.put(devPtr(p), []byte{0, 0, 0x80, 0x3f}); err != nil {
		return err
	}
	if err := c.AllReduceDevice(p, p+64, 1, f32, 0); err != nil {
		return err
	}
	if err := c.Barrier(); err != nil {
		return fmt.Errorf("Barrier: %w", err)
	}
	got, err := g.get(devPtr(p+64), 4)
	if want := float32(w); err != nil || !strings.EqualFold(fmt.Sprintf("%x", got), fmt.Sprintf("%x", rawBytes([]float32{want}))) {
		return fmt.Errorf("good call after bad ones: got %x (%v), want %v", got, err, want)
	}
	if err := c.Close(ctx); err != nil {
		return err
	}
	if err := c.AllReduceDevice(p, p, 1, f32, 0); !errors.Is(err, detcoll.ErrClosed) {
		return fmt.Errorf("after Close: got %v, want ErrClosed", err)
	}
	if err := c.Synchronize(0); !errors.Is(err, detcoll.ErrClosed) {
		return fmt.Errorf("Synchronize after Close: got %v, want ErrClosed", err)
	}
	return nil
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

func TestDeviceGraphGPU(t *testing.T) {
	for _, w := range []int{1, 2} {
		t.Run("W="+strconv.Itoa(w), func(t *testing.T) {
			res := ranktest.Run(t, w, "device-graph", 2*time.Minute, gpusFor(t, w), "TEST_TIMEOUT_MS=20000")
			ranktest.RequireOK(t, res)
			t.Logf("rank 0 said: %s", res[0].Output)
		})
	}
}

func TestDeviceMismatchGPU(t *testing.T) {
	res := ranktest.Run(t, 2, "device-mismatch", time.Minute, gpusFor(t, 2), "TEST_TIMEOUT_MS=20000")
	ranktest.RequireOK(t, res)
	t.Logf("rank 0 said: %s", strings.TrimSpace(res[0].Output))
}

func TestDeviceSkippedCallTimesOutGPU(t *testing.T) {
	res := ranktest.Run(t, 2, "device-skip", time.Minute, gpusFor(t, 2), "TEST_TIMEOUT_MS=1000")
	ranktest.RequireOK(t, res)
	t.Logf("rank 0 said: %s", strings.TrimSpace(res[0].Output))
}

// TestDeviceKilledRankGPU kills a rank with SIGKILL during a run of
// all-reduces and measures how long the survivor takes to fail.
func TestDeviceKilledRankGPU(t *testing.T) {
	const victim = 1
	res := ranktest.Run(t, 2, "device-kill", time.Minute, gpusFor(t, 2), "VICTIM=1", "TEST_TIMEOUT_MS=30000")
	var killed int64
	if m := timeRE.FindStringSubmatch(res[victim].Output); m != nil && m[1] == "KILL" {
		killed, _ = strconv.ParseInt(m[2], 10, 64)
	}
	if res[victim].Signal != syscall.SIGKILL || killed == 0 {
		t.Fatalf("victim did not die by SIGKILL as planned: %+v", res[victim])
	}
	r := res[0]
	if r.Failed() {
		t.Fatalf("survivor: exit %d:\n%s", r.ExitCode, r.Output)
	}
	m := timeRE.FindStringSubmatch(r.Output)
	if m == nil || m[1] != "DETECTED" {
		t.Fatalf("survivor printed no detection time:\n%s", r.Output)
	}
	at, _ := strconv.ParseInt(m[2], 10, 64)
	took := time.Duration(at - killed)
	t.Logf("survivor failed %v after the kill: %s", took, strings.TrimSpace(r.Output))
	if took > time.Second {
		t.Errorf("survivor took %v to fail, want < 1s", took)
	}
}

func TestDeviceAbortGPU(t *testing.T) {
	res := ranktest.Run(t, 2, "device-abort", time.Minute, gpusFor(t, 2), "TEST_TIMEOUT_MS=20000")
	ranktest.RequireOK(t, res)
	t.Logf("said: %s | %s", strings.TrimSpace(res[0].Output), strings.TrimSpace(res[1].Output))
}

func TestDeviceBadInputGPU(t *testing.T) {
	for _, w := range []int{1, 2} {
		t.Run("W="+strconv.Itoa(w), func(t *testing.T) {
			ranktest.RequireOK(t, ranktest.Run(t, w, "device-badinput", time.Minute, gpusFor(t, w), "TEST_TIMEOUT_MS=20000"))
		})
	}
}
