package cuda

import (
	"github.com/detcoll/detcoll/internal/base"
	"github.com/detcoll/detcoll/internal/num"
)

// kernel names one entry point of collective.cu.
type kernel int

const (
	kernelCopy kernel = iota // gathers, broadcast, staging copies, waits
	kernelBF16
	kernelF16
	kernelF32
	kernelF64
	numKernels
)

var kernelNames = [numKernels]string{"dc_copy", "dc_bf16", "dc_f16", "dc_f32", "dc_f64"}

// reduceKernel returns the kernel that sums dt.
func reduceKernel(dt num.DType) kernel {
	switch dt {
	case num.BFloat16Type:
		return kernelBF16
	case num.Float16Type:
		return kernelF16
	case num.Float32Type:
		return kernelF32
	case num.Float64Type:
		return kernelF64
	}
	return kernelCopy
}

// step is one kernel launch of a call.
type step struct {
	kernel kernel
	grid   int
	flags  uint32
	mode   uint32
	work   []work
	window int // LL: image bytes per block
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
	// block is the threads per block; maxGrid caps the blocks of a launch
	// (loops stride over the rest): half the blocks the GPU holds at once
	// (comm.go, maxGrid).
	block, maxGrid int
}

// plan returns the launches of req, in stream order. An AllReduceStaged
// call skips the reserve and the copy: Stage reserved the staging and the
// caller wrote the input into it.
func (p planner) plan(req *base.DeviceRequest) []step {
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
	mode, kern := uint32(modeNone), kernelCopy
	switch req.Op {
	case base.OpAllReduce, base.OpAllReduceStaged:
		mode, kern = modeReduce, reduceKernel(req.DType)
	case base.OpReduceScatter, base.OpReduceScatterMany:
		mode, kern = modeRShard, reduceKernel(req.DType)
	case base.OpAllGather, base.OpAllGatherMany:
		mode = modeGather
	case base.OpBroadcast:
		mode = modeBcast
	}
	staged := req.Op == base.OpAllReduceStaged
	front := uint32(flagReserve | flagCopyIn | flagPublish)
	if staged {
		front = flagPublish // Stage reserved; the input is in place
	}
	if len(works) <= maxWork && total <= p.llMax {
		if staged {
			works[0].In = p.staging
		}
		grid, window := p.llGrid(total)
		return []step{{kernel: kern, grid: grid, flags: flagLL, mode: mode, work: works, window: window}}
	}
	if mode == modeReduce && !staged && p.world > 1 {
		return []step{
			{kernel: kernelCopy, grid: p.grid(total, false), flags: flagReserve | flagPublish | flagCompute | flagSent, mode: modePush, work: works},
			{kernel: kern, grid: p.grid(total/p.world, false), flags: flagWaitSent | flagCompute | flagSent, mode: modeRPush, work: works},
			{kernel: kernelCopy, grid: p.grid(total, false), flags: flagWaitSent | flagCompute | flagDone, mode: modeGPushed, work: works},
		}
	}
	if mode == modeRShard && len(works) == 1 && p.world > 1 {
		return []step{
			{kernel: kernelCopy, grid: p.grid(total, false), flags: flagReserve | flagPublish | flagCompute | flagSent, mode: modePushRS, work: works},
			{kernel: kern, grid: p.grid(total/p.world, false), flags: flagWaitSent | flagCompute | flagDone, mode: modeRPushRS, work: works},
		}
	}
	if mode == modeReduce && p.world > 1 {
		// A staged all-reduce's input is in the staging already: reduce-
		// scatter into place, then gather the summed shards.
		return []step{
			{kernel: kernelCopy, grid: p.grid(total, staged), flags: front, work: works},
			{kernel: kern, grid: p.grid(total/p.world, false), flags: flagReady | flagCompute | flagReduced, mode: modeRInPlace, work: works},
			{kernel: kernelCopy, grid: p.grid(total, false), flags: flagWaitRed | flagCompute | flagDone, mode: modeGShards, work: works},
		}
	}
	var steps []step
	chunks := chunk(works)
	for i, c := range chunks {
		f := front
		if i > 0 {
			f &^= flagReserve
		}
		if i < len(chunks)-1 {
			f &^= flagPublish
		}
		steps = append(steps, step{kernel: kernelCopy, grid: p.grid(maxBytes(c), staged), flags: f, work: c})
	}
	for i, c := range chunks {
		f := uint32(flagCompute)
		if i == 0 {
			f |= flagReady
		}
		if i == len(chunks)-1 {
			f |= flagDone
		}
		out := maxBytes(c)
		if mode == modeRShard {
			out /= p.world
		}
		steps = append(steps, step{kernel: kern, grid: p.grid(out, false), flags: f, mode: mode, work: c})
	}
	return steps
}

// reserve returns the launch of Stage: wait until the staging is free.
func (p planner) reserve() step {
	return step{kernel: kernelCopy, grid: 1, flags: flagReserve}
}

// llGrid returns the blocks of an LL launch for an image of n bytes and
// the bytes each handles: llWindow, or more where that would take more
// than maxGrid blocks. Windows are whole 64-byte lines, so that no element
// straddles two.
func (p planner) llGrid(n int) (grid, window int) {
	window = p.llWindow
	if n > window*p.maxGrid {
		window = (n + p.maxGrid - 1) / p.maxGrid
		window = (window + 63) / 64 * 64
	}
	return max(1, (n+window-1)/window), window
}

// grid returns the blocks for a launch that moves n bytes per buffer: one
// thread per 16-byte vector, at least one block, at most maxGrid. A launch
// that copies nothing (staged) needs one block.
func (p planner) grid(n int, nothing bool) int {
	if nothing {
		return 1
	}
	per := 16 * p.block
	return max(1, min(p.maxGrid, (n+per-1)/per))
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
