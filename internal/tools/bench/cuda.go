package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/detcoll/detcoll"
	"github.com/detcoll/detcoll/internal/binding/driver"
	"github.com/detcoll/detcoll/internal/tools/report"
)

// CUDA is detcoll's side on device memory (the cuda backend): the Device
// calls of a cuda communicator on a stream of its own, timed by device
// events in the GPU modes.
//
// It makes the device's primary context current on the calling goroutine's
// thread and keeps that goroutine locked to it until Close: make it, run
// the harness and close it on one goroutine.
type CUDA struct {
	g    *gpuSide
	c    *detcoll.Comm
	info GPUInfo
	// How the ranks share GPUs (report.Meta's GPUSharing and
	// RanksPerGPU): set by shareGPUs; "" and 1 when each has its own.
	sharing string
	perGPU  int
	// registered registers the buffers of every call that can take the
	// registered path (all-reduce, reduce-scatter: registers) as windows
	// (Config.Registered); wins are the prepared call's, given back
	// before its buffers are freed (gpuSide.beforeFree).
	registered bool
	wins       []*detcoll.Window
}

// NewCUDA returns detcoll's side on c, a cuda communicator.
func NewCUDA(c *detcoll.Comm) (*CUDA, error) {
	if c.Device() < 0 {
		return nil, fmt.Errorf("bench: the detcoll cuda side needs a cuda communicator, not %s", c.Options().Backend)
	}
	g, err := openGPUSide(c.Device())
	if err != nil {
		return nil, fmt.Errorf("bench: detcoll side on GPU %d: %w", c.Device(), err)
	}
	st := detcoll.Stream(g.s)
	g.wait = func() error { return c.Synchronize(st) }
	info, err := g.info()
	if err != nil {
		g.close()
		return nil, fmt.Errorf("bench: detcoll side on GPU %d: %w", c.Device(), err)
	}
	d := &CUDA{g: g, c: c, info: info}
	g.beforeFree = d.deregister
	return d, nil
}

// registers reports whether the buffers of op are registered as windows.
func (d *CUDA) registers(op Op) bool { return d.registered && (op == AllReduce || op == ReduceScatter) }

// Name is "detcoll".
func (d *CUDA) Name() string { return "detcoll" }

// Describe sets the GPU's name, the driver and CUDA versions and
// detcoll's options, and notes how the modes are timed.
func (d *CUDA) Describe(m *report.Meta) {
	m.Device = d.info.Device
	if d.sharing != "" {
		m.GPUSharing, m.RanksPerGPU = d.sharing, d.perGPU
	}
	m.DriverVersion = d.info.Driver
	m.CUDAVersion = d.info.CUDA
	opts, err := json.Marshal(d.c.Options())
	if err != nil {
		panic("bench: detcoll.Options does not marshal: " + err.Error())
	}
	m.Options = opts
	m.Notes = append(m.Notes,
		timingNote(),
		fmt.Sprintf("detcoll: the cuda backend's Device calls on a non-blocking stream of the primary context, out of place, buffers from cuMemAlloc; "+
			"its barrier is the cuda communicator's Barrier (a kernel on the legacy default stream, waited for); kernels compiled by NVRTC %s; libraries: %s",
			d.info.NVRTC, d.info.Libs))
	if d.registered {
		m.Notes = append(m.Notes, "detcoll: every all-reduce's and reduce-scatter's input and output registered as windows (Comm.RegisterDevice): the registered path above the LL threshold")
	}
}

// Prepare allocates op's device buffers at s, copies the input in and
// poisons the outputs.
func (d *CUDA) Prepare(op Op, s Shape, input []byte) error {
	if d.registers(op) {
		// Every rank allocates the same buffers in the same order, so
		// each allocation is a window of the same row everywhere.
		d.g.mem.OnChunk = func(p driver.DevicePtr, n int) error {
			w, err := d.c.RegisterDevice(context.Background(), detcoll.DevicePtr(p), n)
			if err == nil {
				d.wins = append(d.wins, w)
			}
			return err
		}
		defer func() { d.g.mem.OnChunk = nil }()
	}
	ins, outs, err := d.g.buffers(op, s, input)
	if err != nil {
		return err // buffers released them, the windows first
	}
	inLens, outLens := Parts(op, s)
	dt, size, c := s.DType, s.DType.Size(), d.c
	st := detcoll.Stream(d.g.s)
	ptrs := func(ps []driver.DevicePtr) []detcoll.DevicePtr {
		out := make([]detcoll.DevicePtr, len(ps))
		for i, p := range ps {
			out[i] = detcoll.DevicePtr(p)
		}
		return out
	}
	in, out := ptrs(ins), ptrs(outs)
	var call func() error
	switch op {
	case AllReduce:
		red := s.redOp()
		call = func() error { return c.AllReduceDevice(in[0], out[0], s.Elements(), dt, st, red) }
	case ReduceScatter:
		red := s.redOp()
		call = func() error { return c.ReduceScatterDevice(in[0], out[0], outLens[0]/size, dt, st, red) }
	case AllGather:
		call = func() error { return c.AllGatherDevice(in[0], out[0], inLens[0]/size, dt, st) }
	case AllGatherMany:
		counts := scaled(inLens, 1, size)
		call = func() error { return c.AllGatherManyDevice(in, out, counts, dt, st) }
	case ReduceScatterMany:
		counts := scaled(outLens, 1, size)
		red := s.redOp()
		call = func() error { return c.ReduceScatterManyDevice(in, out, counts, dt, st, red) }
	case Broadcast:
		buf := out[0]
		if s.Rank == BroadcastRoot {
			buf = in[0]
		}
		call = func() error { return c.BroadcastDevice(buf, s.Elements(), dt, BroadcastRoot, st) }
	default:
		d.g.release()
		return fmt.Errorf("bench: detcoll side: unknown operation %q", op)
	}
	d.g.prepared(s.Bytes, call)
	return nil
}

// Moves is what rank 0's kernels move for one call of op at s.
func (d *CUDA) Moves(op Op, s Shape) (*report.Moves, error) {
	return moves(op, s, d.registers(op))
}

// Barrier is the cuda communicator's Barrier.
func (d *CUDA) Barrier() error { return d.c.Barrier() }

// Time takes one sample in mode: report.ModeSynchronised, ModePipelined or
// ModeGraph.
func (d *CUDA) Time(mode string) (time.Duration, error) { return d.g.time(mode) }

// Release frees the prepared call's buffers and graph, its windows
// given back first.
func (d *CUDA) Release() { d.g.release() }

// deregister gives back the prepared call's windows; the stream is idle
// and their memory not yet freed (gpuSide.beforeFree).
func (d *CUDA) deregister() {
	for _, w := range d.wins {
		w.Deregister(context.Background())
	}
	d.wins = nil
}

// Close frees the stream and events, releases the context and unlocks the
// goroutine from its thread. The communicator stays open. Later calls
// of Close do nothing.
func (d *CUDA) Close() {
	if d.g != nil {
		d.g.close()
		d.g = nil
	}
}
