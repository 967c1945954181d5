package detcoll_test

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"net"
	"os"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/detcoll/detcoll"
	"github.com/detcoll/detcoll/internal/cuda/driver"
	"github.com/detcoll/detcoll/internal/ranktest"
)

// The GPU tests of issue 11's cuda defects: canonical NaN at W=1, two
// communicators on unordered streams, Close on a failed communicator, and
// Barrier while another thread captures a graph. Where they need two ranks
// and only one GPU is here, the ranks share it (time-sliced: correctness
// only, nothing here is a timing).

func init() {
	roles["device-nan"] = roleDeviceNaN
	roles["device-two-comms"] = roleDeviceTwoComms
	roles["device-close-wait"] = roleDeviceCloseWait
	roles["device-barrier-capture"] = roleDeviceBarrierCapture
}

// nanBits returns the canonical NaN of dt's width and a predicate for
// NaN bit patterns.
func nanBits(dt detcoll.DType) (canonical uint64, isNaN func(uint64) bool) {
	switch dt.Size() {
	case 2:
		exp := uint64(0x7c00) // float16
		if dt == detcoll.TypeBFloat16 {
			exp = 0x7f80
		}
		return 0x7fff, func(v uint64) bool { return v&0x7fff > exp }
	case 4:
		return 0x7fffffff, func(v uint64) bool { return v&0x7fffffff > 0x7f800000 }
	}
	return 0x7fffffffffffffff, func(v uint64) bool { return v&(1<<63-1) > 0x7ff0000000000000 }
}

// nanInput returns n elements of dt: random bits, and every third element
// a NaN with a random payload and sign (never the canonical one).
func nanInput(dt detcoll.DType, n int, seed uint64) []byte {
	size := dt.Size()
	rng := rand.New(rand.NewPCG(seed, uint64(n)))
	b := make([]byte, n*size)
	for i := range n {
		v := rng.Uint64()
		if i%3 == 0 {
			switch size {
			case 2:
				exp := uint64(0x7c00)
				if dt == detcoll.TypeBFloat16 {
					exp = 0x7f80
				}
				v = exp | (v & (0x7fff &^ exp) &^ 1) | 1 | (v>>20&1)<<15
			case 4:
				v = 0x7f800000 | (v & 0x7ffffe) | 1 | (v>>40&1)<<31
			default:
				v = 0x7ff0000000000000 | (v & 0xffffffffffffe) | 1 | (v>>60&1)<<63
			}
		}
		putElem(b[i*size:], size, v)
	}
	return b
}

func putElem(b []byte, size int, v uint64) {
	switch size {
	case 2:
		binary.LittleEndian.PutUint16(b, uint16(v))
	case 4:
		binary.LittleEndian.PutUint32(b, uint32(v))
	default:
		binary.LittleEndian.PutUint64(b, v)
	}
}

func getElem(b []byte, size int) uint64 {
	switch size {
	case 2:
		return uint64(binary.LittleEndian.Uint16(b))
	case 4:
		return uint64(binary.LittleEndian.Uint32(b))
	}
	return binary.LittleEndian.Uint64(b)
}

// canonicalised returns in with every NaN replaced by dt's canonical NaN:
// the sum over one rank.
func canonicalised(dt detcoll.DType, in []byte) []byte {
	size := dt.Size()
	canon, isNaN := nanBits(dt)
	out := append([]byte(nil), in...)
	for i := 0; i < len(out); i += size {
		if isNaN(getElem(out[i:], size)) {
			putElem(out[i:], size, canon)
		}
	}
	return out
}

// roleDeviceNaN (W=1): AllReduceDevice (out of place, in place, staged)
// and ReduceScatterDevice of inputs full of NaN payloads return every NaN
// as the canonical NaN of its type and every other element unchanged, on
// the LL path and on the staging path (3 MiB, past the W=1 LL threshold).
func roleDeviceNaN() error {
	ctx := context.Background()
	c, g, err := openGPURank(ctx)
	if err != nil {
		return err
	}
	defer g.close()
	defer c.Close(ctx)
	if c.WorldSize() != 1 {
		return fmt.Errorf("device-nan runs at W=1, not %d", c.WorldSize())
	}
	checked := 0
	for _, dt := range floatTypes {
		size := dt.Size()
		for _, n := range []int{1, 7, 1000, 3<<20/size + 3} {
			in := nanInput(dt, n, testSeed)
			want := canonicalised(dt, in)
			what := fmt.Sprintf("%v n=%d", dt, n)
			g.reset()
			src, err := g.guarded(n*size, 0)
			if err != nil {
				return err
			}
			if err := src.write(in); err != nil {
				return err
			}
			calls := map[string]func(out *devGuarded) error{
				"AllReduceDevice": func(out *devGuarded) error {
					return c.AllReduceDevice(src.ptr(), out.ptr(), n, dt, 0)
				},
				"AllReduceDevice in place": func(out *devGuarded) error {
					if err := out.write(in); err != nil {
						return err
					}
					return c.AllReduceDevice(out.ptr(), out.ptr(), n, dt, 0)
				},
				"ReduceScatterDevice": func(out *devGuarded) error {
					return c.ReduceScatterDevice(src.ptr(), out.ptr(), n, dt, 0)
				},
				"AllReduceStagedDevice": func(out *devGuarded) error {
					staging, err := c.StageDevice(n, dt, 0)
					if err != nil {
						return err
					}
					if err := g.put(devPtr(staging), in); err != nil {
						return err
					}
					return c.AllReduceStagedDevice(out.ptr(), n, dt, 0)
				},
			}
			for name, call := range calls {
				out, err := g.guarded(n*size, 0)
				if err != nil {
					return err
				}
				if err := call(out); err != nil {
					return fmt.Errorf("%s %s: %w", name, what, err)
				}
				if err := checkDevice(c, dt, out, want); err != nil {
					return fmt.Errorf("%s %s: %w", name, what, err)
				}
				checked++
			}
		}
	}
	fmt.Printf("rank 0: %d calls with NaN payloads gave canonical NaNs\n", checked)
	return c.Close(ctx)
}

// roleDeviceTwoComms opens two communicators on the same GPUs and runs
// all-reduces on two non-blocking streams, which nothing orders: rank 0
// queues its call of the first communicator first, rank 1 that of the
// second, each 50 ms before the other. A launch that filled the GPU would
// leave no room for the other communicator's, which the peer's waits on:
// both would spin until the timeout. LL (1 MiB) and push path (16 MiB).
func roleDeviceTwoComms() error {
	ctx := context.Background()
	t0 := time.Now()
	c1, g, err := openGPURank(ctx)
	if err != nil {
		return err
	}
	defer g.close()
	defer c1.Close(ctx)
	opened := time.Since(t0) // with the kernels' compile, on a cold cache
	o := c1.Options()
	o.Addr = "127.0.0.1:" + os.Getenv("TEST_PORT2")
	c2, err := detcoll.Open(ctx, o)
	if err != nil {
		return fmt.Errorf("open the second communicator: %w", err)
	}
	defer c2.Close(ctx)
	comms := [2]*detcoll.Comm{c1, c2}
	var streams [2]driver.Stream
	for i := range streams {
		if streams[i], err = driver.StreamCreate(driver.StreamNonBlocking); err != nil {
			return err
		}
		defer streams[i].Destroy()
	}
	rank, w := c1.Rank(), c1.WorldSize()
	order := []int{0, 1}
	if rank%2 == 1 {
		order = []int{1, 0}
	}
	want := float32(w * (w + 1) / 2)
	calls := 0
	for _, n := range []int{1 << 20 / 4, 16 << 20 / 4} {
		g.reset()
		in := g.alloc(4 * n)
		outs := [2]driver.DevicePtr{g.alloc(4 * n), g.alloc(4 * n)}
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
				got, err := g.get(outs[i], 4*n)
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

// roleDeviceCloseWait: rank 1 aborts after a call, waits 600 ms and
// prints STOP before it closes; rank 0 closes as soon as it sees the
// failure and prints FREED when its Close returns. Rank 0 must not free
// its buffer (which rank 1 maps, and whose kernels could still run)
// before rank 1 has stopped.
func roleDeviceCloseWait() error {
	ctx := context.Background()
	c, g, err := openGPURank(ctx)
	if err != nil {
		return err
	}
	defer g.close()
	defer c.Close(ctx)
	p := detcoll.DevicePtr(g.alloc(1 << 20))
	for _, n := range []int{16, 100000} { // LL, then the push path
		if err := c.AllReduceDevice(p, p+detcoll.DevicePtr(4*n), n, detcoll.TypeFloat32, 0); err != nil {
			return err
		}
	}
	if err := c.Synchronize(0); err != nil {
		return err
	}
	if c.Rank() == 1 {
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

// roleDeviceBarrierCapture (W=1): Barrier, after a call on a non-blocking
// stream, while another thread captures a graph in global mode: the
// barrier works, and the capture is still valid when it ends.
func roleDeviceBarrierCapture() error {
	ctx := context.Background()
	c, g, err := openGPURank(ctx)
	if err != nil {
		return err
	}
	defer g.close()
	defer c.Close(ctx)
	s, err := driver.StreamCreate(driver.StreamNonBlocking)
	if err != nil {
		return err
	}
	defer s.Destroy()
	p := g.alloc(1 << 16)
	if err := g.put(p, []byte{0, 0, 0x80, 0x3f}); err != nil {
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
		cs, err := driver.Stream(0), g.ctx.SetCurrent()
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
	return c.Close(ctx)
}

func TestDeviceNaNCanonicalGPU(t *testing.T) {
	requireGPUs(t, 1)
	res := ranktest.Run(t, 1, "device-nan", 2*time.Minute, "TEST_CAPACITY=16777216", "TEST_TIMEOUT_MS=20000")
	ranktest.RequireOK(t, res)
	t.Logf("rank 0 said: %s", strings.TrimSpace(res[0].Output))
}

// TestDeviceTwoCommsGPU: two communicators at W=2 on two unordered
// streams finish (issue 11, defect 8). On one GPU both ranks share it.
func TestDeviceTwoCommsGPU(t *testing.T) {
	gpus := gpusFor(t, 2)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	res := ranktest.Run(t, 2, "device-two-comms", 3*time.Minute, gpus, "TEST_PORT2="+strconv.Itoa(port),
		"TEST_CAPACITY=33554432", "TEST_TIMEOUT_MS=60000") // Open compiles the W=2 kernels on a cold cache
	ranktest.RequireOK(t, res)
	t.Logf("said: %s | %s", strings.TrimSpace(res[0].Output), strings.TrimSpace(res[1].Output))
}

var closeWaitRE = regexp.MustCompile(`(STOP|FREED) (\d+)`)

// TestDeviceCloseWaitsForPeersGPU: Close on a failed communicator waits
// for a live peer to stop before it frees its buffer (issue 11, defect 7).
func TestDeviceCloseWaitsForPeersGPU(t *testing.T) {
	res := ranktest.Run(t, 2, "device-close-wait", 2*time.Minute, gpusFor(t, 2), "TEST_TIMEOUT_MS=20000")
	ranktest.RequireOK(t, res)
	stamp := func(r int, what string) int64 {
		for _, m := range closeWaitRE.FindAllStringSubmatch(res[r].Output, -1) {
			if m[1] == what {
				v, _ := strconv.ParseInt(m[2], 10, 64)
				return v
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

// TestDeviceBarrierDuringCaptureGPU: Barrier waits for its stream, not
// the device, so another thread's global-mode capture neither fails it
// nor is broken by it (issue 11, defect 9).
func TestDeviceBarrierDuringCaptureGPU(t *testing.T) {
	requireGPUs(t, 1)
	res := ranktest.Run(t, 1, "device-barrier-capture", time.Minute, "TEST_TIMEOUT_MS=20000")
	ranktest.RequireOK(t, res)
	t.Logf("rank 0 said: %s", strings.TrimSpace(res[0].Output))
}
