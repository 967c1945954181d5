package bench

import (
	"errors"
	"fmt"
	"os"
	"regexp"
	"time"

	"github.com/detcoll/detcoll/internal/binding/driver"
	"github.com/detcoll/detcoll/internal/tools/devmem"
	"github.com/detcoll/detcoll/internal/tools/report"
)

// Calls per sample in the pipelined and graph modes: the counts of the
// performance anchors (100 calls enqueued back to back, 50 captured in one
// graph), fewer for large sizes so that one sample moves at most about
// sampleBytes per rank, but never fewer than minCalls. At 256 MiB that is
// 4 calls in each mode; below 8 MiB the anchors' counts.
const (
	pipelinedCalls = 100
	graphCalls     = 50
	sampleBytes    = 1 << 30
	minCalls       = 4
)

// PipelinedCalls is the number of calls a pipelined sample of bytes per
// rank enqueues between its two events.
func PipelinedCalls(bytes int) int { return callsPerSample(bytes, pipelinedCalls) }

// GraphCalls is the number of calls the graph of a graph sample of bytes
// per rank holds.
func GraphCalls(bytes int) int { return callsPerSample(bytes, graphCalls) }

func callsPerSample(bytes, most int) int {
	return min(most, max(minCalls, sampleBytes/max(bytes, 1)))
}

// timingNote says in a report how the GPU modes were timed.
func timingNote() string {
	return fmt.Sprintf("GPU timing, each side on its own stream, by device events (cuEventElapsedTime): synchronised = events around one call, "+
		"the host waiting for the end event; pipelined = calls enqueued back to back between two events, span / calls; "+
		"graph = calls captured in one CUDA graph on first use (then one untimed replay), one replay between two events, span / calls; "+
		"graph_steady = the same replay queued right behind an untimed one, which lines the ranks up (no host skew after the barrier); "+
		"calls per sample: min(%d pipelined or %d graph, max(%d, %d MiB / input bytes per rank)), so %d and %d at 256 MiB",
		pipelinedCalls, graphCalls, minCalls, sampleBytes>>20, PipelinedCalls(256<<20), GraphCalls(256<<20))
}

// gpuSide is what detcoll's and NCCL's sides on a GPU share: the device's
// primary context, current on the thread of the goroutine that made the
// side (which stays locked to it until close); one non-blocking stream for
// every call of the side; two timing events; the prepared call's buffers;
// and the timing of the GPU modes.
//
// A gpuSide is used from the goroutine that made it, never concurrently.
type gpuSide struct {
	gpu        *devmem.GPU
	s          driver.Stream
	start, end driver.Event

	// wait waits until the work queued on s is done and reports a failed
	// call (detcoll: Comm.Synchronize; NCCL: the stream's).
	wait func() error

	// beforeFree, where set, runs in release before the buffers are
	// freed: detcoll's side gives back the windows it registered on them
	// (a window must not outlive its memory).
	beforeFree func()

	// Set by Prepare, cleared by release.
	mem   devmem.Arena     // every allocation of the prepared call, one cuMemAlloc each
	call  func() error     // queues the prepared call on s; nil when none
	bytes int              // the prepared call's input bytes per rank
	graph driver.GraphExec // GraphCalls(bytes) calls, captured on first use; 0 before
}

// openGPUSide opens device's GPU on the calling goroutine's thread
// (devmem.Open: the thread stays locked, the primary context current) and
// creates the stream and the events. On error it undoes what it did.
func openGPUSide(device int) (g *gpuSide, err error) {
	gpu, err := devmem.Open(device)
	if err != nil {
		return nil, err
	}
	g = &gpuSide{gpu: gpu}
	defer func() {
		if err != nil {
			g.close()
		}
	}()
	if g.s, err = driver.StreamCreate(driver.StreamNonBlocking); err != nil {
		return nil, err
	}
	if g.start, err = driver.EventCreate(driver.EventDefault); err != nil {
		return nil, err
	}
	if g.end, err = driver.EventCreate(driver.EventDefault); err != nil {
		return nil, err
	}
	g.wait = g.s.Synchronize
	return g, nil
}

// close releases what openGPUSide made, and the prepared call's buffers.
// The stream must be idle.
func (g *gpuSide) close() {
	g.release()
	for _, e := range []driver.Event{g.start, g.end} {
		if e != 0 {
			e.Destroy()
		}
	}
	if g.s != 0 {
		g.s.Destroy()
	}
	if g.gpu != nil {
		g.gpu.Close()
	}
	*g = gpuSide{}
}

// buffers allocates op's device buffers at s: one input, filled from
// input, which the *Many forms cut into consecutive pieces (Parts), and
// one output per input, poisoned with 0x5A so that every page is written.
// On error it frees what it allocated.
func (g *gpuSide) buffers(op Op, s Shape, input []byte) (ins, outs []driver.DevicePtr, err error) {
	defer func() {
		if err != nil {
			g.release()
		}
	}()
	inLens, outLens := Parts(op, s)
	in, err := g.mem.Alloc(len(input))
	if err != nil {
		return nil, nil, err
	}
	if err := devmem.Put(in, input); err != nil {
		return nil, nil, err
	}
	off := 0
	for _, n := range inLens {
		ins = append(ins, in+driver.DevicePtr(off))
		off += n
	}
	for _, n := range outLens {
		out, err := g.mem.Alloc(n)
		if err != nil {
			return nil, nil, err
		}
		if err := driver.MemsetD8(out, 0x5A, max(n, 1)); err != nil {
			return nil, nil, err
		}
		outs = append(outs, out)
	}
	// The copy and memsets run on the legacy stream, which the timed
	// streams (non-blocking) do not wait for.
	if err := driver.CtxSynchronize(); err != nil {
		return nil, nil, err
	}
	return ins, outs, nil
}

// prepared records the call that time runs.
func (g *gpuSide) prepared(bytes int, call func() error) {
	g.bytes, g.call = bytes, call
}

// release frees the prepared call's graph and buffers. The stream must be
// idle, as it is after every time.
func (g *gpuSide) release() {
	if g.graph != 0 {
		g.graph.Destroy()
		g.graph = 0
	}
	if g.beforeFree != nil {
		g.beforeFree()
	}
	g.mem.Free()
	g.call, g.bytes = nil, 0
}

// time takes one sample of the prepared call in mode: the device time of
// one call. It returns with the stream idle.
func (g *gpuSide) time(mode string) (time.Duration, error) {
	if g.call == nil {
		return 0, errors.New("nothing prepared")
	}
	switch mode {
	case report.ModeSynchronised:
		return g.span(1, g.call)
	case report.ModePipelined:
		n := PipelinedCalls(g.bytes)
		return g.span(n, func() error {
			for range n {
				if err := g.call(); err != nil {
					return err
				}
			}
			return nil
		})
	case report.ModeGraph:
		if g.graph == 0 {
			if err := g.capture(); err != nil {
				return 0, fmt.Errorf("capture a graph: %w", err)
			}
		}
		return g.span(GraphCalls(g.bytes), func() error { return g.graph.Launch(g.s) })
	case report.ModeGraphSteady:
		if g.graph == 0 {
			if err := g.capture(); err != nil {
				return 0, fmt.Errorf("capture a graph: %w", err)
			}
		}
		// The untimed replay lines the ranks up: every call waits for
		// the peers' same call, so the timed one starts with them in step.
		if err := g.graph.Launch(g.s); err != nil {
			g.wait()
			return 0, err
		}
		return g.span(GraphCalls(g.bytes), func() error { return g.graph.Launch(g.s) })
	}
	return 0, fmt.Errorf("no GPU timing mode %q", mode)
}

// span queues start, body (n calls), end, waits and returns the time
// between the events divided by n.
func (g *gpuSide) span(n int, body func() error) (time.Duration, error) {
	if err := g.start.Record(g.s); err != nil {
		return 0, err
	}
	if err := body(); err != nil {
		g.wait() // leave the stream idle; the error that matters is body's
		return 0, err
	}
	if err := g.end.Record(g.s); err != nil {
		g.wait()
		return 0, err
	}
	if err := g.wait(); err != nil {
		return 0, err
	}
	d, err := driver.EventElapsed(g.start, g.end)
	return d / time.Duration(n), err
}

// capture records GraphCalls calls of the prepared call into a graph on
// the side's stream, instantiates it and replays it once, untimed, so that
// the first timed replay does not pay for the upload. Every rank captures
// at the same sample, so the untimed replays pair up.
func (g *gpuSide) capture() error {
	exec, err := devmem.Capture(g.s, func() error {
		for range GraphCalls(g.bytes) {
			if err := g.call(); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	g.graph = exec
	if err := exec.Launch(g.s); err != nil {
		return err
	}
	return g.wait()
}

// GPUInfo describes the GPU a side runs on, for a report's metadata.
type GPUInfo struct {
	Device string // the product name, "NVIDIA H200"
	Driver string // the kernel driver's version, "580.159.03"; "" when unknown
	CUDA   string // the CUDA version the driver supports, "13.0"
	NVRTC  string // "13.0"
	Libs   string // the libcuda and NVRTC that were loaded
}

// gpuInfo asks the driver about g's device.
func (g *gpuSide) info() (GPUInfo, error) {
	var in GPUInfo
	var err error
	if in.Device, err = g.gpu.Device.Name(); err != nil {
		return in, err
	}
	v, err := driver.DriverVersion()
	if err != nil {
		return in, err
	}
	in.CUDA = fmt.Sprintf("%d.%d", v/1000, v%1000/10)
	if major, minor, err := driver.NVRTCVersion(); err == nil {
		in.NVRTC = fmt.Sprintf("%d.%d", major, minor)
	}
	cuda, nvrtc := driver.Libraries()
	in.Libs = cuda + ", " + nvrtc
	in.Driver = kernelDriverVersion()
	return in, nil
}

// driverVersionRE finds the version in /proc/driver/nvidia/version's first
// line ("NVRM version: NVIDIA UNIX Open Kernel Module for x86_64
// 580.159.03  Release Build ...").
var driverVersionRE = regexp.MustCompile(`\s(\d+\.\d+(?:\.\d+)*)\s`)

// kernelDriverVersion returns the NVIDIA kernel driver's version, which
// the CUDA driver API does not report, or "" when /proc does not say.
func kernelDriverVersion() string {
	b, err := os.ReadFile("/proc/driver/nvidia/version")
	if err != nil {
		return ""
	}
	return parseDriverVersion(string(b))
}

func parseDriverVersion(s string) string {
	if m := driverVersionRE.FindStringSubmatch(s + " "); m != nil {
		return m[1]
	}
	return ""
}
