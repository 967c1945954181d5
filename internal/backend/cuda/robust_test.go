package cuda_test

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"net"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/detcoll/detcoll"
	"github.com/detcoll/detcoll/internal/binding/driver"
	"github.com/detcoll/detcoll/internal/testkit/conformance"
	"github.com/detcoll/detcoll/internal/testkit/ranktest"
	"github.com/detcoll/detcoll/internal/tools/devmem"
)

// The GPU tests of issue 11's cuda defects: two communicators on
// unordered streams, Close on a failed communicator, and Barrier while
// another thread captures a graph. Where they need two ranks and only one
// GPU is here, the ranks share it (time-sliced: correctness only, nothing
// here is a timing).

// twoCommsCase: two communicators at W=2 on two unordered streams finish
// (issue 11, defect 8). Open compiles the W=2 kernels on a cold cache:
// the timeout allows it.
var twoCommsCase = conformance.Case{Name: "DeviceTwoComms", DeviceWorlds: []int{2}, Limit: 3 * time.Minute,
	Capacity: 32 << 20, Timeout: time.Minute, Rank: twoCommsRank}

func TestDeviceTwoCommsGPU(t *testing.T) { conformance.RunCase(t, backend, &twoCommsCase) }

// secondAddr returns an address for a second communicator of c's job:
// rank 0 picks a free port on the rendezvous host and broadcasts it.
func secondAddr(c *detcoll.Comm, m *devmem.Memory) (string, error) {
	host, _, err := net.SplitHostPort(c.Options().Addr)
	if err != nil {
		return "", err
	}
	port := make([]byte, 8)
	if c.Rank() == 0 {
		l, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
		if err != nil {
			return "", err
		}
		binary.LittleEndian.PutUint64(port, uint64(l.Addr().(*net.TCPAddr).Port))
		l.Close()
	}
	buf, err := m.Alloc(8, 0)
	if err == nil && c.Rank() == 0 {
		err = buf.Write(port)
	}
	if err == nil {
		err = m.Broadcast(c, detcoll.TypeUint8, buf, 0)
	}
	if err == nil {
		port, err = buf.Read()
	}
	if err != nil {
		return "", fmt.Errorf("pass on the second communicator's port: %w", err)
	}
	return net.JoinHostPort(host, strconv.FormatUint(binary.LittleEndian.Uint64(port), 10)), nil
}

// twoCommsRank opens two communicators on the same GPUs and runs
// all-reduces on two non-blocking streams, which nothing orders: rank 0
// queues its call of the first communicator first, rank 1 that of the
// second, each 50 ms before the other. A launch that filled the GPU would
// leave no room for the other communicator's, which the peer's waits on:
// both would spin until the timeout. LL (1 MiB) and push path (16 MiB).
func twoCommsRank(r *conformance.Rank) error {
	ctx := context.Background()
	t0 := time.Now()
	g, err := openRank(r, driver.StreamNonBlocking, driver.StreamNonBlocking)
	if err != nil {
		return err
	}
	defer g.close()
	opened := time.Since(t0) // with the kernels' compile, on a cold cache
	c1, m, streams := g.c, g.mem, g.streams
	o := c1.Options()
	if o.Addr, err = secondAddr(c1, m); err != nil {
		return err
	}
	c2, err := detcoll.Open(ctx, o)
	if err != nil {
		return fmt.Errorf("open the second communicator: %w", err)
	}
	defer c2.Close(ctx)
	comms := [2]*detcoll.Comm{c1, c2}
	rank, w := r.Rank, r.World
	order := []int{0, 1}
	if rank%2 == 1 {
		order = []int{1, 0}
	}
	want := float32(w * (w + 1) / 2)
	calls := 0
	for _, n := range []int{1 << 20 / 4, 16 << 20 / 4} {
		m.Reset()
		in, err := m.Arena.Alloc(4 * n)
		if err != nil {
			return err
		}
		var outs [2]driver.DevicePtr
		for i := range outs {
			if outs[i], err = m.Arena.Alloc(4 * n); err != nil {
				return err
			}
		}
		if err := driver.MemsetD32(in, math.Float32bits(float32(rank+1)), n); err != nil {
			return err
		}
		for round := range 3 {
			for _, out := range outs {
				if err := driver.MemsetD8(out, 0xA5, 4*n); err != nil {
					return err
				}
			}
			// The non-blocking streams do not wait for the legacy one.
			if err := driver.Stream(0).Synchronize(); err != nil {
				return err
			}
			for k, i := range order {
				if k == 1 {
					time.Sleep(50 * time.Millisecond) // the first call takes the GPU first
				}
				if err := comms[i].AllReduceDevice(detcoll.DevicePtr(in), detcoll.DevicePtr(outs[i]), n, detcoll.TypeFloat32, detcoll.Stream(streams[i])); err != nil {
					return fmt.Errorf("n=%d round %d: communicator %d: %w", n, round, i, err)
				}
			}
			for i, c := range comms {
				if err := c.Synchronize(detcoll.Stream(streams[i])); err != nil {
					return fmt.Errorf("n=%d round %d: communicator %d (rank %d queued it %s): %w",
						n, round, i, rank, []string{"first", "second"}[order[i]], err)
				}
				got, err := devmem.Get(outs[i], 4*n)
				if err != nil {
					return err
				}
				for e := range n {
					if v := math.Float32frombits(binary.LittleEndian.Uint32(got[4*e:])); v != want {
						return fmt.Errorf("n=%d round %d: communicator %d: element %d is %v, want %v", n, round, i, e, v, want)
					}
				}
				calls++
			}
		}
	}
	fmt.Printf("rank %d: %d calls on two communicators, two unordered streams, checked (first Open %v)\n", rank, calls, opened.Round(time.Millisecond))
	if err := c2.Close(ctx); err != nil {
		return err
	}
	return c1.Close(ctx)
}

// closeWaitCase: Close on a failed communicator waits for a live peer to
// stop before it frees its buffer (issue 11, defect 7).
var closeWaitCase = conformance.Case{Name: "DeviceCloseWaitsForPeers", DeviceWorlds: []int{2}, Limit: 2 * time.Minute,
	Rank: closeWaitRank, Check: closeWaitCheck}

func TestDeviceCloseWaitsForPeersGPU(t *testing.T) { conformance.RunCase(t, backend, &closeWaitCase) }

// closeWaitRank: rank 1 aborts after a call, waits 600 ms and prints STOP
// before it closes; rank 0 closes as soon as it sees the failure and
// prints FREED when its Close returns. Rank 0 must not free its buffer
// (which rank 1 maps, and whose kernels could still run) before rank 1
// has stopped.
func closeWaitRank(r *conformance.Rank) error {
	ctx := context.Background()
	g, err := openRank(r)
	if err != nil {
		return err
	}
	defer g.close()
	c := g.c
	p, err := g.mem.Arena.Alloc(1 << 20)
	if err != nil {
		return err
	}
	for _, n := range []int{16, 100000} { // LL, then the push path
		if err := c.AllReduceDevice(detcoll.DevicePtr(p), detcoll.DevicePtr(p)+detcoll.DevicePtr(4*n), n, detcoll.TypeFloat32, 0); err != nil {
			return err
		}
	}
	if err := c.Synchronize(0); err != nil {
		return err
	}
	if r.Rank == 1 {
		c.Abort(errors.New("test: rank 1 aborts"))
		time.Sleep(600 * time.Millisecond)
		fmt.Printf("STOP %d\n", time.Now().UnixNano())
		c.Close(ctx)
		return nil
	}
	deadline := time.Now().Add(20 * time.Second)
	for c.Err() == nil {
		if time.Now().After(deadline) {
			return errors.New("rank 1's abort never arrived")
		}
		time.Sleep(time.Millisecond)
	}
	t0 := time.Now()
	c.Close(ctx)
	fmt.Printf("FREED %d after %v\n", time.Now().UnixNano(), time.Since(t0))
	return nil
}

func closeWaitCheck(t *testing.T, world int, res []ranktest.Result) {
	ranktest.RequireOK(t, res)
	stamp := func(r int, what string) int64 {
		for _, line := range strings.Split(res[r].Output, "\n") {
			if v, ok := strings.CutPrefix(line, what+" "); ok {
				at, _, _ := strings.Cut(v, " ")
				if n, err := strconv.ParseInt(at, 10, 64); err == nil {
					return n
				}
			}
		}
		t.Fatalf("rank %d printed no %s:\n%s", r, what, res[r].Output)
		return 0
	}
	stop, freed := stamp(1, "STOP"), stamp(0, "FREED")
	t.Logf("rank 0 freed %v after rank 1 stopped: %s", time.Duration(freed-stop), strings.TrimSpace(res[0].Output))
	if freed < stop {
		t.Errorf("rank 0 freed its buffer %v before rank 1 stopped", time.Duration(stop-freed))
	}
	if d := time.Duration(freed - stop); d > 3*time.Second {
		t.Errorf("rank 0 freed its buffer %v after rank 1 stopped, want within the bound", d)
	}
}

// barrierCaptureCase: Barrier waits for its stream, not the device, so
// another thread's global-mode capture neither fails it nor is broken by
// it (issue 11, defect 9).
var barrierCaptureCase = conformance.Case{Name: "DeviceBarrierDuringCapture", DeviceWorlds: []int{1}, Limit: time.Minute,
	Rank: barrierCaptureRank}

func TestDeviceBarrierDuringCaptureGPU(t *testing.T) {
	conformance.RunCase(t, backend, &barrierCaptureCase)
}

// barrierCaptureRank (W=1): Barrier, after a call on a non-blocking
// stream, while another thread captures a graph in global mode: the
// barrier works, and the capture is still valid when it ends.
func barrierCaptureRank(r *conformance.Rank) error {
	g, err := openRank(r, driver.StreamNonBlocking)
	if err != nil {
		return err
	}
	defer g.close()
	c, s := g.c, g.streams[0]
	p, err := g.mem.Arena.Alloc(1 << 16)
	if err != nil {
		return err
	}
	if err := devmem.Put(p, []byte{0, 0, 0x80, 0x3f}); err != nil {
		return err
	}
	if err := c.AllReduceDevice(detcoll.DevicePtr(p), detcoll.DevicePtr(p+64), 1, detcoll.TypeFloat32, detcoll.Stream(s)); err != nil {
		return err
	}
	if err := c.Synchronize(detcoll.Stream(s)); err != nil {
		return err
	}
	started, finish, ended := make(chan error, 1), make(chan struct{}), make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		cs, err := driver.Stream(0), g.gpu.Ctx.SetCurrent()
		if err == nil {
			cs, err = driver.StreamCreate(driver.StreamNonBlocking)
		}
		if err == nil {
			defer cs.Destroy()
			err = cs.BeginCapture(driver.CaptureModeGlobal)
		}
		if err == nil {
			err = driver.MemsetD8Async(p+4096, 1, 64, cs)
		}
		started <- err
		if err != nil {
			ended <- nil
			return
		}
		<-finish
		graph, err := cs.EndCapture()
		if err == nil {
			graph.Destroy()
		}
		ended <- err
	}()
	if err := <-started; err != nil {
		close(finish)
		<-ended
		return fmt.Errorf("start a capture in global mode: %w", err)
	}
	berr := c.Barrier()
	close(finish)
	cerr := <-ended
	if berr != nil {
		return fmt.Errorf("Barrier while another thread captures in global mode: %w", berr)
	}
	if cerr != nil {
		return fmt.Errorf("the other thread's capture, after Barrier: %w", cerr)
	}
	if err := c.Barrier(); err != nil {
		return fmt.Errorf("Barrier after the capture: %w", err)
	}
	fmt.Println("rank 0: Barrier during a global-mode capture on another thread: ok")
	return c.Close(context.Background())
}
