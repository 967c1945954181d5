package cuda

import (
	"github.com/detcoll/detcoll/internal/core/base"
	"github.com/detcoll/detcoll/internal/core/num"
	"github.com/detcoll/detcoll/internal/core/proto"
)

// kernel names one entry point of collective.cu: the copy of the
// operations that only move bytes, the reduction of every element type
// and operator (kernelArgs.Calc, calcOf), and the sum of each floating
// type, which most calls are and which so pays for no other operator.
type kernel int

const (
	kernelCopy   kernel = iota // gathers, broadcast, staging copies, waits
	kernelReduce               // every reduction
	kernelSumBF16
	kernelSumF16
	kernelSumF32
	kernelSumF64
	// The same six again, compiled for the LL protocol alone
	// (llKernel): an LL launch runs a kernel whose body is that
	// protocol's, not every path's (docs/perf-levers.md, lever 0).
	numKernels = 2 * (kernelSumF64 + 1)
)

// numPathKernels is the kernels of the step tables (the first six).
const numPathKernels = kernelSumF64 + 1

var kernelNames = [numKernels]string{"dc_copy", "dc_reduce", "dc_sum_bf16", "dc_sum_f16", "dc_sum_f32", "dc_sum_f64",
	"dc_ll_copy", "dc_ll_reduce", "dc_ll_sum_bf16", "dc_ll_sum_f16", "dc_ll_sum_f32", "dc_ll_sum_f64"}

// llKernel is k's LL-only twin.
func llKernel(k kernel) kernel { return k%numPathKernels + numPathKernels }

// reduceKernel is the kernel that computes red over dt.
func reduceKernel(red num.RedOp, dt num.DType) kernel {
	if red != num.Sum {
		return kernelReduce
	}
	switch dt {
	case num.BFloat16Type:
		return kernelSumBF16
	case num.Float16Type:
		return kernelSumF16
	case num.Float32Type:
		return kernelSumF32
	case num.Float64Type:
		return kernelSumF64
	}
	return kernelReduce
}

// calcOf is what the kernel of a reduction computes (Args.calc, reduce.h):
// the element type, the operator at the tree's nodes, premulsum's leaves,
// avg's root, and the integers' sign. Adding an operator: num, reduce.h,
// and a case here.
func calcOf(red num.RedOp, dt num.DType) uint32 {
	var c uint32
	switch red {
	case num.Max:
		c = calcMax
	case num.Min:
		c = calcMin
	case num.PreMulSum:
		c = calcPre
	case num.Avg:
		c = calcPost
	}
	var t uint32
	switch dt {
	case num.BFloat16Type:
		t = typeBF16
	case num.Float16Type:
		t = typeF16
	case num.Float32Type:
		t = typeF32
	case num.Float64Type:
		t = typeF64
	case num.Int8Type:
		t, c = typeI8, c|calcSigned
	case num.Uint8Type:
		t = typeI8
	case num.Int16Type:
		t, c = typeI16, c|calcSigned
	case num.Uint16Type:
		t = typeI16
	case num.Int32Type:
		t, c = typeI32, c|calcSigned
	case num.Uint32Type:
		t = typeI32
	case num.Int64Type:
		t, c = typeI64, c|calcSigned
	case num.Uint64Type:
		t = typeI64
	}
	return c | t<<calcTypeShift
}

// launch is one kernel launch of a call.
type launch struct {
	kernel kernel
	grid   int
	table  stepTable
	work   []work
	window int // LL: image bytes per block
	// threads is the threads per block: block, or fewer for a small LL
	// launch (llThreads).
	threads int
	// copies, where set, make this launch copies by the copy engines
	// instead of a kernel (pushcopy.go).
	copies []peerCopy
	// reg is a registered call's input and output as regWords
	// (window.go), for the kernels to publish and read; zero otherwise.
	reg [2]uint64
}

// planner turns a call into launches. It is pure: the thresholds and the
// grid limit come in as fields, so tests run it without a GPU.
type planner struct {
	rank, world int
	// llMax is the largest image, in bytes, that the LL protocol carries
	// in one launch: the call's inputs as base.StagingLayout lays them out.
	// Larger calls take the staging path's launches of many blocks.
	llMax int
	// llWindow is the image bytes each block of an LL launch handles.
	llWindow int
	// staging is the device address of this rank's staging, where the
	// input of an AllReduceStaged call lies.
	staging uint64
	// block is the threads per block. maxBlocks caps the blocks of every
	// launch that may wait for peers (loops stride over the rest): a
	// constant, not a share of the GPU, so that the kernels of many ranks
	// and communicators are resident together (share.go). resident is the
	// blocks the GPU holds at once: the cap of a launch that never waits
	// (proto.Alone), which starves no one.
	block, maxBlocks, resident int
	// pushEngine makes the push path's first copies by the copy engines
	// (pushcopy.go); peerStaging is every rank's staging as mapped here,
	// where they copy to.
	pushEngine  bool
	peerStaging []uint64
	// windows are this rank's registered memory (window.go).
	windows []regWindow
	// profile compiles the kernels with their marks (profile.go).
	profile bool
}

// path returns the protocol path of a call (proto.ChoosePath); registered
// says its buffers lie in windows (registration).
func (p planner) path(req *base.DeviceRequest, buffers, total int, registered bool) proto.Path {
	return proto.ChoosePath(proto.GPUKernels, proto.PathFacts{Op: req.Op, World: p.world, Buffers: buffers, Total: total, Registered: registered},
		proto.Thresholds{LLMax: p.llMax, LLBuffers: maxWork})
}

// registration returns the regWords of a call's input and output where
// its shape may take the registered path (registrable) and both lie in
// windows, aligned (regOf); ok is false otherwise.
func (p planner) registration(req *base.DeviceRequest) (reg [2]uint64, ok bool) {
	if len(p.windows) == 0 || !p.registrable(req) {
		return reg, false
	}
	in, okIn := regOf(p.windows, req.In[0])
	out, okOut := regOf(p.windows, req.Out[0])
	return [2]uint64{in, out}, okIn && okOut
}

// registrable reports whether req may take the registered path where its
// buffers lie in windows: an all-reduce or a reduce-scatter of one buffer
// at W > 1 (an all-gather stays on the staging path: proto.Registered
// says why). A reduce-scatter's output, the part of every rank's input
// that this rank reads, must be whole 16-byte vectors, so that every part
// starts aligned where the buffers do (an all-reduce's shards are whole
// lines by construction); its other sizes would leave the kernel's reads
// of the peers' memory scalar. The shape is the same on every rank, so
// the ranks differ in the path only where their buffers do, which the
// signature catches.
func (p planner) registrable(req *base.DeviceRequest) bool {
	if p.world == 1 || len(req.In) != 1 || len(req.Out) != 1 {
		return false
	}
	switch req.Op {
	case base.OpAllReduce:
		return true
	case base.OpReduceScatter, base.OpReduceScatterMany:
		return req.Out[0].Len%16 == 0
	}
	return false
}

// plan returns the launches of req, in stream order: its path's schedule
// cut into launches (launchShapes), each with its step table, for each
// chunk of at most maxWork buffers.
func (p planner) plan(req *base.DeviceRequest) []launch {
	sizes := req.InputSizes()
	offs, total := base.StagingLayout(sizes)
	works := make([]work, len(sizes))
	for k := range sizes {
		w := work{Bytes: uint64(sizes[k]), Off: uint64(offs[k])}
		if k < len(req.In) && (req.Op != base.OpBroadcast || req.Root == p.rank) {
			w.In = req.In[k].Addr
		}
		if k < len(req.Out) {
			w.Out = req.Out[k].Addr
		}
		works[k] = w
	}
	staged := req.Op == base.OpAllReduceStaged
	reg, registered := p.registration(req)
	path := p.path(req, len(works), total, registered)
	k := kindOf(req.Op)
	if path == proto.LL {
		if staged {
			works[0].In = p.staging
		}
		grid, window := p.llGrid(total)
		return []launch{{kernel: llKernel(p.kernelOf(req, proto.Compute)), grid: grid, threads: p.llThreads(total, window),
			table: launchShapes(path, staged, k)[0].table, work: works, window: window}}
	}
	if path == proto.Alone && req.Op == base.OpBroadcast {
		return nil // in place, and the root's own: nothing moves, and no peer awaits a word
	}
	if path == proto.Alone && staged {
		works[0].In = p.staging // the input lies in the staging, where Stage put it
	}
	if path == proto.Alone && len(works) <= maxWork {
		// One launch, as launchShapes(Alone) has it, without its chunking's
		// allocations: the host path of every W=1 call.
		return []launch{{kernel: p.kernelOf(req, proto.Compute), grid: p.aloneGrid(works),
			table: launchShapes(path, staged, k)[0].table, work: works}}
	}
	shapes := launchShapes(path, staged, k)
	chunks := chunk(works)
	out := make([]launch, 0, len(shapes)*len(chunks))
	for _, sh := range shapes {
		for i, c := range chunks {
			grid := p.gridOf(req, sh.work, c, total)
			if path == proto.Alone {
				grid = p.aloneGrid(c)
			}
			out = append(out, launch{kernel: p.kernelOf(req, sh.work), grid: grid, table: chunkTable(sh.table, i, len(chunks)), work: c})
		}
	}
	if p.pushEngine && (path == proto.Push || path == proto.PushScatter) {
		out = p.withEngineCopies(out)
	}
	if path == proto.Registered {
		for i := range out {
			out[i].reg = reg
		}
	}
	return out
}

// reserve returns the launch of Stage: wait until the staging is free.
func (p planner) reserve() launch {
	return launch{kernel: kernelCopy, grid: 1, table: launchShapes(proto.ReserveOnly, false, kindNone)[0].table}
}

// kernelOf is the kernel of a launch whose work is a: the call's
// reduction where a reduces, the byte copy otherwise.
func (p planner) kernelOf(req *base.DeviceRequest, a proto.Action) kernel {
	if kindOf(req.Op).sums() && (a == proto.Compute || a == proto.ReduceShard) {
		return reduceKernel(req.Red, req.DType)
	}
	return kernelCopy
}

// gridOf is the blocks of a launch whose work is a over the buffers ws of
// a call of total input bytes: one thread per 16-byte vector of what the
// launch writes.
func (p planner) gridOf(req *base.DeviceRequest, a proto.Action, ws []work, total int) int {
	switch {
	case a == proto.ReduceShard:
		return p.grid(total / p.world)
	case a == proto.Gather:
		return p.grid(total)
	case a == proto.Compute && kindOf(req.Op) == kindReduceScatter:
		return p.grid(maxBytes(ws) / p.world)
	case a == proto.Compute || a == proto.CopyIn:
		return p.grid(maxBytes(ws))
	}
	return 1 // no data: a wait or a publish
}

// llGrid returns the blocks of an LL launch for an image of n bytes and
// the bytes each handles: llWindow, or more where that would take more
// than maxBlocks blocks. Windows are whole 64-byte lines, so that no element
// straddles two.
func (p planner) llGrid(n int) (grid, window int) {
	window = p.llWindow
	if n > window*p.maxBlocks {
		window = (n + p.maxBlocks - 1) / p.maxBlocks
		window = (window + 63) / 64 * 64
	}
	return max(1, (n+window-1)/window), window
}

// llThreads is the threads per block of an LL launch for an image of n
// bytes in windows of window bytes: one per 8-byte line of a window, in
// whole warps, from llMinThreads up to block. A small call so starts only
// the warps that carry lines: every thread runs the launch's set-up and
// waits at its barriers (docs/perf-levers.md, lever 0). The kernels take
// any block size (their loops stride by it).
func (p planner) llThreads(n, window int) int {
	lines := (min(n, window) + 7) / 8
	return min(p.block, max(llMinThreads, (lines+31)/32*32))
}

// llMinThreads: at W=8, a thread for each word of every rank's signature
// (run_ll sends and checks kWorld * DC_SIG_WORDS lines).
const llMinThreads = 64

// grid returns the blocks for a launch that moves n bytes per buffer: one
// thread per 16-byte vector, at least one block, at most maxBlocks.
func (p planner) grid(n int) int { return p.gridUpTo(n, p.maxBlocks) }

// aloneGrid is the grid of an Alone launch over ws: it never waits, so it
// may take every resident block.
func (p planner) aloneGrid(ws []work) int {
	return p.gridUpTo(maxBytes(ws), max(p.maxBlocks, p.resident))
}

// gridUpTo is grid with at most limit blocks.
func (p planner) gridUpTo(n, limit int) int {
	per := 16 * p.block
	return max(1, min(limit, (n+per-1)/per))
}

// chunk splits works into launches of at most maxWork buffers; a call of
// no buffers (Barrier) is one empty chunk.
func chunk(works []work) [][]work {
	if len(works) == 0 {
		return [][]work{nil}
	}
	var c [][]work
	for len(works) > 0 {
		n := min(len(works), maxWork)
		c = append(c, works[:n])
		works = works[n:]
	}
	return c
}

func maxBytes(ws []work) int {
	m := 0
	for _, w := range ws {
		m = max(m, int(w.Bytes))
	}
	return m
}
