package driver

import (
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"github.com/detcoll/detcoll/internal/testkit/gputest"
	"github.com/detcoll/detcoll/internal/testkit/ranktest"
	"github.com/detcoll/detcoll/internal/testkit/testseed"
)

// The GPU tests skip with "no CUDA driver: ..." where Load fails (fail,
// under DETCOLL_REQUIRE_GPU=1: gputest). They use device 0.

const testKernels = `
extern "C" __global__ void axpb(const float* x, float* y, float a, float b, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  // Explicit rounding: no fused multiply-add, so the host can check bitwise.
  if (i < n) y[i] = __fadd_rn(__fmul_rn(a, x[i]), b);
}

extern "C" __global__ void inc(unsigned* p, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) p[i] += 1u;
}

extern "C" __global__ void fill(unsigned* p, int n, unsigned seed) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
    p[i] = seed ^ ((unsigned)i * 2654435761u);
}

extern "C" __global__ void big_shared(unsigned* out, int words) {
  extern __shared__ unsigned smem[];
  for (int i = threadIdx.x; i < words; i += blockDim.x) smem[i] = (unsigned)i * 2654435761u + blockIdx.x;
  __syncthreads();
  if (threadIdx.x == 0) {
    unsigned s = 0;
    for (int i = 0; i < words; i++) s += smem[i] ^ (unsigned)i;
    out[blockIdx.x] = s;
  }
}

__device__ static unsigned long long now_ns() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

// wait_word spins until the host writes a non-zero *word or budget_ns pass,
// the shape of every bounded wait on an abort word.
extern "C" __global__ void wait_word(const volatile unsigned* word, volatile unsigned* started,
                                     unsigned* out, unsigned long long budget_ns) {
  unsigned long long t0 = now_ns();
  *started = 1u;
  __threadfence_system();
  unsigned v = *word;
  while (v == 0u && now_ns() - t0 < budget_ns) v = *word;
  out[0] = v;
  out[1] = (unsigned)((now_ns() - t0) / 1000ull);
}
`

// gpuTest loads the driver, locks the test goroutine to its OS thread and
// makes device 0's primary context current there, undoing it all in
// cleanups. It skips the test where there is no driver or device.
func gpuTest(t *testing.T) Device {
	t.Helper()
	if err := Load(); err != nil {
		gputest.Missing(t, "no CUDA driver: %v", err)
		return 0
	}
	t.Cleanup(func() {
		if err := Unload(); err != nil {
			t.Errorf("Unload: %v", err)
		}
	})
	runtime.LockOSThread()
	t.Cleanup(runtime.UnlockOSThread)
	n, err := DeviceCount()
	if err != nil {
		t.Fatal(err)
	}
	if n == 0 {
		gputest.Missing(t, "no CUDA device")
	}
	dev, err := DeviceGet(0)
	if err != nil {
		t.Fatal(err)
	}
	ctx, err := dev.PrimaryCtxRetain()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := dev.PrimaryCtxRelease(); err != nil {
			t.Errorf("PrimaryCtxRelease: %v", err)
		}
	})
	if err := ctx.SetCurrent(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { Context(0).SetCurrent() })
	return dev
}

// gpuModule compiles testKernels for dev through a fresh cache and loads it.
func gpuModule(t *testing.T, dev Device) Module {
	t.Helper()
	arch, err := dev.Arch()
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv(EnvCacheDir, t.TempDir())
	bin, err := BuildKernel([]byte(testKernels), "detcoll_test.cu", arch, nil)
	if err != nil {
		t.Fatal(err)
	}
	mod, err := ModuleLoadData(bin)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := mod.Unload(); err != nil {
			t.Errorf("Module.Unload: %v", err)
		}
	})
	return mod
}

func function(t *testing.T, m Module, name string) Function {
	t.Helper()
	f, err := m.Function(name)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func alloc(t *testing.T, size int) DevicePtr {
	t.Helper()
	p, err := MemAlloc(size)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := MemFree(p); err != nil {
			t.Errorf("MemFree: %v", err)
		}
	})
	return p
}

func check(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func asBytes[T any](s []T) []byte {
	if len(s) == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(&s[0])), len(s)*int(unsafe.Sizeof(s[0])))
}

// compareAXPB checks y == a*x + b bitwise and reports the first mismatches.
func compareAXPB(t *testing.T, what string, y, x []float32, a, b float32) {
	t.Helper()
	bad := 0
	for i := range y {
		want := float32(a*x[i]) + b // the conversion forbids a fused multiply-add
		if math.Float32bits(y[i]) != math.Float32bits(want) {
			if bad < 5 {
				t.Errorf("%s: y[%d] = %v; want %v (x %v)", what, i, y[i], want, x[i])
			}
			bad++
		}
	}
	if bad > 0 {
		t.Errorf("%s: %d of %d wrong", what, bad, len(y))
	}
}

func TestGPUSmoke(t *testing.T) {
	dev := gpuTest(t)
	name, err := dev.Name()
	check(t, err)
	arch, err := dev.Arch()
	check(t, err)
	bus, err := dev.PCIBusID()
	check(t, err)
	drv, err := DriverVersion()
	check(t, err)
	rmaj, rmin, err := NVRTCVersion()
	check(t, err)
	sms, err := dev.Attribute(AttrMultiprocessorCount)
	check(t, err)
	free, total, err := MemGetInfo()
	check(t, err)
	libcuda, libnvrtc := Libraries()
	t.Logf("device 0: %s, %s, %d SMs, PCI %s, %d of %d MiB free; driver %d, NVRTC %d.%d (%s, %s)",
		name, arch, sms, bus, free>>20, total>>20, drv, rmaj, rmin, libcuda, libnvrtc)
	if cur, err := CurrentContext(); err != nil || cur == 0 {
		t.Fatalf("CurrentContext() = %v, %v; want the primary context", cur, err)
	}
	if n, _ := DeviceCount(); n > 1 {
		ok, err := dev.CanAccessPeer(1)
		check(t, err)
		t.Logf("device 0 can access device 1: %v", ok)
	}

	start := time.Now()
	mod := gpuModule(t, dev)
	t.Logf("NVRTC compile and load: %v", time.Since(start))
	// The second build is a cache hit with the same bytes.
	start = time.Now()
	bin1, err := BuildKernel([]byte(testKernels), "detcoll_test.cu", arch, nil)
	check(t, err)
	dir, _ := CacheDir()
	entries, _ := filepath.Glob(filepath.Join(dir, "*.cubin"))
	t.Logf("cached build: %v, %d bytes, %d cache entries", time.Since(start), len(bin1), len(entries))
	if len(entries) != 1 {
		t.Errorf("%d cache entries; want 1", len(entries))
	}

	axpb := function(t, mod, "axpb")
	_, err = mod.Function("no_such_kernel")
	var r Result
	if !errors.As(err, &r) || r != ResultNotFound {
		t.Errorf("Function(no_such_kernel) = %v; want CUDA_ERROR_NOT_FOUND", err)
	}

	// Synchronous copies and a launch on the legacy default stream.
	const n = 1<<20 + 3 // a partial last block
	rng := testseed.Rand(t)
	x := make([]float32, n)
	for i := range x {
		x[i] = float32(rng.NormFloat64() * 1e3)
	}
	a, b, nn := float32(1.75), float32(-3.25), int32(n)
	dx, dy := alloc(t, 4*n), alloc(t, 4*n)
	check(t, MemcpyHtoD(dx, asBytes(x)))
	check(t, MemsetD8(dy, 0xff, 4*n)) // poison: NaN
	grid := LaunchConfig{Grid: Dim3{X: (n + 255) / 256}, Block: Dim3{X: 256}}
	check(t, axpb.Launch(grid, &dx, &dy, &a, &b, &nn))
	check(t, CtxSynchronize())
	y := make([]float32, n)
	check(t, MemcpyDtoH(asBytes(y), dy))
	compareAXPB(t, "sync", y, x, a, b)

	// An offset inside an allocation maps back to the allocation.
	base, size, err := PointerRange(dx + 4096)
	check(t, err)
	if base != dx || size < 4*n {
		t.Errorf("PointerRange(dx+4096) = %v, %d; want %v, >= %d", base, size, dx, 4*n)
	}

	// Asynchronous copies through pinned memory on a non-blocking stream,
	// timed with events.
	s, err := StreamCreate(StreamNonBlocking)
	check(t, err)
	defer s.Destroy()
	ev0, err := EventCreate(EventDefault)
	check(t, err)
	defer ev0.Destroy()
	ev1, err := EventCreate(EventDefault)
	check(t, err)
	defer ev1.Destroy()
	in, err := MemHostAllocMapped(4 * n)
	check(t, err)
	defer MemFreeHost(in)
	out, err := MemHostAllocMapped(4 * n)
	check(t, err)
	defer MemFreeHost(out)
	copy(in.Bytes(), asBytes(x))
	dz := alloc(t, 4*n)
	grid.Stream = s
	check(t, ev0.Record(s))
	check(t, MemcpyHtoDAsync(dz, in, s))
	check(t, MemsetD8Async(dy, 0xff, 4*n, s))
	check(t, axpb.Launch(grid, &dz, &dy, &a, &b, &nn))
	check(t, MemcpyDtoDAsync(dz, dy, 4*n, s))
	check(t, MemcpyDtoHAsync(out, dz, s))
	check(t, ev1.Record(s))
	s2, err := StreamCreate(StreamNonBlocking)
	check(t, err)
	defer s2.Destroy()
	check(t, s2.WaitEvent(ev1))
	check(t, s2.Synchronize())
	check(t, ev1.Synchronize())
	if done, err := ev1.Query(); err != nil || !done {
		t.Errorf("Event.Query after Synchronize = %v, %v; want true", done, err)
	}
	if done, err := s.Query(); err != nil || !done {
		t.Errorf("Stream.Query after the last event = %v, %v; want true", done, err)
	}
	el, err := EventElapsed(ev0, ev1)
	check(t, err)
	t.Logf("async copy in, axpb, copy out of %d MiB: %v", 4*n>>20, el)
	if el <= 0 {
		t.Errorf("EventElapsed = %v; want > 0", el)
	}
	got := unsafe.Slice((*float32)(out.Ptr()), n)
	compareAXPB(t, "async", got, x, a, b)

	// Dynamic shared memory above 48 KiB needs the attribute.
	big := function(t, mod, "big_shared")
	optin, err := dev.Attribute(AttrMaxSharedMemoryPerBlockOptin)
	check(t, err)
	const blocks = 4
	words := int32(optin / 4)
	dout := alloc(t, 4*blocks)
	cfg := LaunchConfig{Grid: Dim3{X: blocks}, Block: Dim3{X: 256}, SharedMem: int(words) * 4}
	err = big.Launch(cfg, &dout, &words)
	if !errors.As(err, &r) {
		t.Errorf("launch with %d B shared memory before SetAttribute = %v; want a CUDA error", cfg.SharedMem, err)
	} else {
		t.Logf("launch before SetAttribute, as expected: %v", err)
	}
	check(t, big.SetAttribute(FuncAttrMaxDynamicSharedSizeBytes, cfg.SharedMem))
	check(t, big.Launch(cfg, &dout, &words))
	check(t, CtxSynchronize())
	sums := make([]uint32, blocks)
	check(t, MemcpyDtoH(asBytes(sums), dout))
	for blk := range uint32(blocks) {
		var want uint32
		for i := range uint32(words) {
			want += (i*2654435761 + blk) ^ i
		}
		if sums[blk] != want {
			t.Errorf("big_shared block %d = %#x; want %#x (%d B shared)", blk, sums[blk], want, cfg.SharedMem)
		}
	}
}

func TestGPUCompileError(t *testing.T) {
	dev := gpuTest(t)
	arch, err := dev.Arch()
	check(t, err)
	_, err = Compile(`extern "C" __global__ void k() { no_such_function(); }`, "bad.cu",
		[]string{"--gpu-architecture=" + arch})
	var ne *NVRTCError
	if !errors.As(err, &ne) || ne.Result != NVRTCCompilation || !strings.Contains(ne.Log, "no_such_function") {
		t.Fatalf("Compile(bad source) = %v; want NVRTC_ERROR_COMPILATION with a log naming no_such_function", err)
	}
	t.Logf("compile error, as expected:\n%v", err)
}

func TestGPUGraph(t *testing.T) {
	dev := gpuTest(t)
	inc := function(t, gpuModule(t, dev), "inc")
	const n = 4096
	host := make([]uint32, n)
	for i := range host {
		host[i] = uint32(i) * 7
	}
	dp := alloc(t, 4*n)
	check(t, MemcpyHtoD(dp, asBytes(host)))
	s, err := StreamCreate(StreamNonBlocking)
	check(t, err)
	defer s.Destroy()
	nn := int32(n)
	cfg := LaunchConfig{Grid: Dim3{X: n / 256}, Block: Dim3{X: 256}, Stream: s}

	check(t, s.BeginCapture(CaptureModeThreadLocal))
	check(t, inc.Launch(cfg, &dp, &nn))
	check(t, inc.Launch(cfg, &dp, &nn))
	g, err := s.EndCapture()
	check(t, err)
	defer g.Destroy()
	x, err := g.Instantiate()
	check(t, err)
	defer x.Destroy()
	check(t, s.Synchronize())
	got := make([]uint32, n)
	check(t, MemcpyDtoH(asBytes(got), dp))
	if got[1] != 7 {
		t.Fatalf("after capture p[1] = %d; want 7: captured work must not run", got[1])
	}

	const replays = 3
	for range replays {
		check(t, x.Launch(s))
	}
	check(t, inc.Launch(cfg, &dp, &nn)) // eager work mixes with replays
	check(t, s.Synchronize())
	check(t, MemcpyDtoH(asBytes(got), dp))
	for i := range got {
		if want := uint32(i)*7 + 2*replays + 1; got[i] != want {
			t.Fatalf("p[%d] = %d; want %d after %d replays of 2 increments and 1 eager one", i, got[i], want, replays)
		}
	}
}

func TestGPUMappedHostAbort(t *testing.T) {
	dev := gpuTest(t)
	wait := function(t, gpuModule(t, dev), "wait_word")
	if v, err := dev.Attribute(AttrCanMapHostMemory); err != nil || v == 0 {
		t.Fatalf("CanMapHostMemory = %d, %v; want 1", v, err)
	}
	h, err := MemHostAllocMapped(4096)
	check(t, err)
	defer MemFreeHost(h)
	clear(h.Bytes())
	word := (*atomic.Uint32)(h.Ptr())
	started := (*atomic.Uint32)(unsafe.Add(h.Ptr(), 64))
	dword, err := MemHostGetDevicePointer(h)
	check(t, err)
	dstarted := dword + 64
	out := alloc(t, 8)
	check(t, MemsetD8(out, 0xff, 8))
	check(t, CtxSynchronize())
	s, err := StreamCreate(StreamNonBlocking)
	check(t, err)
	defer s.Destroy()
	budget := uint64(20 * time.Second)
	check(t, wait.Launch(LaunchConfig{Stream: s}, &dword, &dstarted, &out, &budget))
	defer func() { word.Store(1); s.Synchronize() }() // never leave the kernel spinning

	deadline := time.Now().Add(10 * time.Second)
	for started.Load() == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the kernel did not report starting within 10 s")
		}
		time.Sleep(100 * time.Microsecond)
	}
	time.Sleep(50 * time.Millisecond) // the kernel is spinning on the word now
	const abort = 0xA5A5
	word.Store(abort)
	t0 := time.Now()
	check(t, s.Synchronize())
	res := make([]uint32, 2)
	check(t, MemcpyDtoH(asBytes(res), out))
	t.Logf("kernel saw the host write %#x, spun %d µs in all, exited %v after the write", res[0], res[1], time.Since(t0))
	if res[0] != abort {
		t.Errorf("kernel read %#x; want %#x", res[0], abort)
	}
	if time.Duration(res[1])*time.Microsecond >= time.Duration(budget) {
		t.Errorf("kernel spun %d µs: it ran out its budget instead of seeing the write", res[1])
	}
}

func TestGPUIPC(t *testing.T) {
	dev := gpuTest(t)
	_ = dev
	const size, off, n = 1 << 20, 4096, 256
	base := alloc(t, size)
	pattern := make([]byte, n)
	rng := testseed.Rand(t)
	for i := range pattern {
		pattern[i] = byte(rng.Uint32())
	}
	check(t, MemsetD8(base, 0, size))
	check(t, MemcpyHtoD(base+off, pattern))
	check(t, CtxSynchronize())

	start, rsize, err := PointerRange(base + off)
	check(t, err)
	if start != base || rsize < size {
		t.Fatalf("PointerRange(base+%d) = %v, %d; want %v, >= %d", off, start, rsize, base, size)
	}
	h, err := IPCGetMemHandle(start)
	check(t, err)
	if h == (IPCMemHandle{}) {
		t.Fatal("IPC handle is all zero")
	}

	// The handle and the pattern exist only now: they reach the child in
	// its environment.
	res := ranktest.Run(t, 1, "ipc-child", time.Minute,
		"DETCOLL_TEST_IPC="+hex.EncodeToString(h[:])+","+strconv.Itoa(int(base+off-start))+","+hex.EncodeToString(pattern))
	t.Logf("child output: %s", strings.TrimSpace(res[0].Output))
	if ranktest.RequireOK(t, res); t.Failed() {
		t.FailNow()
	}
	// The child wrote 0x5a over [off+8192, off+8192+n).
	got := make([]byte, n)
	check(t, MemcpyDtoH(got, base+off+8192))
	for i, v := range got {
		if v != 0x5a {
			t.Fatalf("byte %d after the child's write = %#x; want 0x5a", i, v)
		}
	}
}

// ipcChild opens the parent's allocation, checks the pattern at the offset,
// writes 0x5a bytes after it, and returns the exit code.
func ipcChild() int {
	fail := func(format string, args ...any) int {
		fmt.Fprintf(os.Stderr, "ipc-child: "+format+"\n", args...)
		return 1
	}
	parts := strings.Split(os.Getenv("DETCOLL_TEST_IPC"), ",")
	if len(parts) != 3 {
		return fail("bad DETCOLL_TEST_IPC %q", os.Getenv("DETCOLL_TEST_IPC"))
	}
	hb, err1 := hex.DecodeString(parts[0])
	off, err2 := strconv.Atoi(parts[1])
	pattern, err3 := hex.DecodeString(parts[2])
	if err := errors.Join(err1, err2, err3); err != nil || len(hb) != len(IPCMemHandle{}) {
		return fail("bad DETCOLL_TEST_IPC: %v", err)
	}
	var h IPCMemHandle
	copy(h[:], hb)

	runtime.LockOSThread()
	if err := Load(); err != nil {
		return fail("%v", err)
	}
	defer Unload()
	dev, err := DeviceGet(0)
	if err != nil {
		return fail("%v", err)
	}
	ctx, err := dev.PrimaryCtxRetain()
	if err != nil {
		return fail("%v", err)
	}
	defer dev.PrimaryCtxRelease()
	if err := ctx.SetCurrent(); err != nil {
		return fail("%v", err)
	}
	p, err := IPCOpenMemHandle(h)
	if err != nil {
		return fail("%v", err)
	}
	defer func() {
		if err := IPCCloseMemHandle(p); err != nil {
			fmt.Fprintf(os.Stderr, "ipc-child: %v\n", err)
		}
	}()
	got := make([]byte, len(pattern))
	if err := MemcpyDtoH(got, p+DevicePtr(off)); err != nil {
		return fail("%v", err)
	}
	for i := range got {
		if got[i] != pattern[i] {
			return fail("byte %d = %#x; want %#x", i, got[i], pattern[i])
		}
	}
	if err := MemsetD8(p+DevicePtr(off+8192), 0x5a, len(pattern)); err != nil {
		return fail("%v", err)
	}
	if err := CtxSynchronize(); err != nil {
		return fail("%v", err)
	}
	fmt.Printf("ipc-child: opened %v, read %d bytes at +%d, wrote %d\n", p, len(pattern), off, len(pattern))
	return 0
}
