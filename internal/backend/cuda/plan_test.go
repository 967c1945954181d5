package cuda

import (
	"slices"
	"testing"

	"github.com/detcoll/detcoll/internal/core/base"
	"github.com/detcoll/detcoll/internal/core/num"
	"github.com/detcoll/detcoll/internal/core/proto"
)

func testPlanner(rank, world int) planner {
	return planner{rank: rank, world: world, llMax: 64 << 10, llWindow: 16 << 10, staging: 1 << 40, block: 512, maxBlocks: 32, resident: 528}
}

func buf(addr uint64, n int) []base.DeviceBuf { return []base.DeviceBuf{{Addr: addr, Len: n}} }

// TestPlanPaths checks which launches each call gets: an LL call is one
// launch that starts a new call; on the staging path every call publishes
// its stage exactly once, waits for the peers' stage exactly once,
// publishes done last, and its first launch starts a new call.
func TestPlanPaths(t *testing.T) {
	many := func(op base.Op, k, n, w int) *base.DeviceRequest {
		r := &base.DeviceRequest{Op: op, DType: num.Float32Type}
		for i := range k {
			in, out := n, n*w
			if op == base.OpReduceScatterMany {
				in, out = n*w, n
			}
			r.In = append(r.In, base.DeviceBuf{Addr: uint64(1<<30 + i<<24), Len: in})
			r.Out = append(r.Out, base.DeviceBuf{Addr: uint64(1<<32 + i<<24), Len: out})
		}
		return r
	}
	for _, tc := range []struct {
		name  string
		req   *base.DeviceRequest
		world int
		modes []uint32
	}{
		{"small all-reduce", &base.DeviceRequest{Op: base.OpAllReduce, DType: num.BFloat16Type, In: buf(4096, 1000), Out: buf(8192, 1000)}, 2, []uint32{modeReduce}},
		{"large all-reduce", &base.DeviceRequest{Op: base.OpAllReduce, DType: num.BFloat16Type, In: buf(4096, 1<<20), Out: buf(4096, 1<<20)}, 2, []uint32{modePush, modeRPush, modeGPushed}},
		{"large reduce-scatter", &base.DeviceRequest{Op: base.OpReduceScatter, DType: num.BFloat16Type, In: buf(4096, 1<<20), Out: buf(1<<30, 1<<19)}, 2, []uint32{modePushRS, modeRPushRS}},
		{"large all-reduce W=1", &base.DeviceRequest{Op: base.OpAllReduce, DType: num.Float64Type, In: buf(4096, 1<<20), Out: buf(4096, 1<<20)}, 1, []uint32{modeReduce}},
		{"small all-reduce W=1", &base.DeviceRequest{Op: base.OpAllReduce, DType: num.BFloat16Type, In: buf(4096, 1000), Out: buf(8192, 1000)}, 1, []uint32{modeReduce}},
		{"gather many W=1, chunked", many(base.OpAllGatherMany, 10, 64, 1), 1, []uint32{modeGather, modeGather}},
		{"large staged W=1", &base.DeviceRequest{Op: base.OpAllReduceStaged, DType: num.Float32Type, Out: buf(4096, 1<<20)}, 1, []uint32{modeReduce}},
		{"large staged", &base.DeviceRequest{Op: base.OpAllReduceStaged, DType: num.Float32Type, Out: buf(4096, 1<<20)}, 2, []uint32{modeNone, modeRInPlace, modeGShards}},
		{"small staged", &base.DeviceRequest{Op: base.OpAllReduceStaged, DType: num.Float32Type, Out: buf(4096, 100)}, 2, []uint32{modeReduce}},
		{"gather at the threshold", &base.DeviceRequest{Op: base.OpAllGather, DType: num.Uint8Type, In: buf(4096, 64<<10), Out: buf(1<<20, 128<<10)}, 2, []uint32{modeGather}},
		{"gather over it", &base.DeviceRequest{Op: base.OpAllGather, DType: num.Uint8Type, In: buf(4096, 64<<10+1), Out: buf(1<<20, 128<<10+2)}, 2, []uint32{modeNone, modeGather}},
		{"barrier", &base.DeviceRequest{Op: base.OpBarrier}, 3, []uint32{modeNone}},
		{"reduce-scatter many, chunked", many(base.OpReduceScatterMany, 10, 64, 2), 2, []uint32{modeNone, modeNone, modeRShard, modeRShard}},
		{"gather many, LL", many(base.OpAllGatherMany, 8, 64, 4), 4, []uint32{modeGather}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			steps := testPlanner(0, tc.world).plan(tc.req)
			if len(steps) != len(tc.modes) {
				t.Fatalf("%d launches, want %d: %+v", len(steps), len(tc.modes), steps)
			}
			if steps[0].flags&flagLL != 0 {
				if len(steps) != 1 || steps[0].flags != flagLL {
					t.Fatalf("an LL call is one launch with flag LL alone: %+v", steps)
				}
				_, total := base.StagingLayout(tc.req.InputSizes())
				if g, w := steps[0].grid, steps[0].window; g < 1 || g > 264 || w%64 != 0 || g*w < total {
					t.Errorf("LL launch of %d blocks of %d bytes", g, w)
				}
				return
			}
			count := map[uint32]int{}
			for i, s := range steps {
				if s.mode != tc.modes[i] {
					t.Errorf("launch %d: mode %d, want %d", i, s.mode, tc.modes[i])
				}
				if s.grid < 1 || s.grid > 264 {
					t.Errorf("launch %d: grid %d", i, s.grid)
				}
				if len(s.work) > maxWork {
					t.Errorf("launch %d: %d buffers", i, len(s.work))
				}
				for f := uint32(1); f <= flagFromInput; f <<= 1 {
					if s.flags&f != 0 {
						count[f]++
					}
				}
			}
			if last := steps[len(steps)-1]; last.flags&flagDone == 0 {
				t.Errorf("last launch does not publish done: %#x", last.flags)
			}
			staged := tc.req.Op == base.OpAllReduceStaged
			if tc.world == 1 {
				// Alone: no peer to meet, the outputs straight from the
				// inputs, in one launch per chunk.
				for i, s := range steps {
					if s.flags&^flagDone != flagCompute|flagFromInput {
						t.Errorf("alone, launch %d has flags %#x", i, s.flags)
					}
				}
				if count[flagDone] != 1 {
					t.Errorf("flags per call: %v", count)
				}
				return
			}
			waits := count[flagReady] == 1 // the staging path
			if steps[0].mode == modePush || steps[0].mode == modePushRS {
				waits = count[flagReady] == 0 && count[flagWaitSent] == len(steps)-1 && count[flagSent] == len(steps)-1
			}
			if count[flagPublish] != 1 || !waits || count[flagDone] != 1 || (count[flagReserve] != 1) == !staged {
				t.Errorf("flags per call: %v", count)
			}
			// Every launch counts its seq from done: only the last one
			// may publish it.
			for i, s := range steps[:len(steps)-1] {
				if s.flags&flagDone != 0 {
					t.Errorf("launch %d of %d publishes done", i, len(steps))
				}
			}
		})
	}
}

// TestPlanStagedReadsTheStaging: a staged all-reduce takes its input from
// this rank's staging, small (LL) or alone (W=1, any size).
func TestPlanStagedReadsTheStaging(t *testing.T) {
	for _, tc := range []struct{ world, n int }{{2, 100}, {1, 100}, {1, 1 << 20}} {
		p := testPlanner(0, tc.world)
		s := p.plan(&base.DeviceRequest{Op: base.OpAllReduceStaged, DType: num.Float32Type, Out: buf(4096, tc.n)})
		if len(s) != 1 || s[0].work[0].In != p.staging {
			t.Errorf("W=%d, %d bytes: the staged call reads %#x, want the staging %#x: %+v", tc.world, tc.n, s[0].work[0].In, p.staging, s)
		}
	}
}

// TestPlanLLGrid: windows are whole 64-byte lines, cover the image, and
// grow rather than exceed the grid limit.
func TestPlanLLGrid(t *testing.T) {
	p := testPlanner(0, 2)
	for _, tc := range []struct{ n, grid, window int }{
		{0, 1, 16 << 10}, {1, 1, 16 << 10}, {16 << 10, 1, 16 << 10}, {16<<10 + 1, 2, 16 << 10},
		{32 * 16 << 10, 32, 16 << 10}, {32*16<<10 + 64, 32, 16<<10 + 64}, {1 << 30, 32, 1 << 25},
	} {
		g, w := p.llGrid(tc.n)
		if g != tc.grid || w != tc.window || w%64 != 0 || g*w < tc.n {
			t.Errorf("llGrid(%d) = %d x %d, want %d x %d", tc.n, g, w, tc.grid, tc.window)
		}
	}
}

// TestPlanBroadcastCopiesOnlyAtRoot: only the root stages its buffer.
func TestPlanBroadcastCopiesOnlyAtRoot(t *testing.T) {
	for rank := range 3 {
		req := &base.DeviceRequest{Op: base.OpBroadcast, DType: num.Uint8Type, Root: 1, In: buf(4096, 100), Out: buf(4096, 100)}
		s := testPlanner(rank, 3).plan(req)
		if got := s[0].work[0].In != 0; got != (rank == 1) {
			t.Errorf("rank %d copies in: %v", rank, got)
		}
	}
}

func TestPlanGrid(t *testing.T) {
	p := testPlanner(0, 2)
	for _, tc := range []struct{ n, want int }{{0, 1}, {1, 1}, {8192, 1}, {8193, 2}, {1 << 30, 32}} {
		if got := p.grid(tc.n); got != tc.want {
			t.Errorf("grid(%d) = %d, want %d", tc.n, got, tc.want)
		}
	}
}

// TestPlanAloneBroadcastLaunchesNothing: at W=1 a broadcast is in place at
// its root: no byte moves, so nothing is launched.
func TestPlanAloneBroadcastLaunchesNothing(t *testing.T) {
	req := &base.DeviceRequest{Op: base.OpBroadcast, DType: num.Float32Type, In: buf(4096, 1<<20), Out: buf(4096, 1<<20)}
	if s := testPlanner(0, 1).plan(req); len(s) != 0 {
		t.Errorf("W=1 broadcast: %+v; want no launch", s)
	}
}

// TestPlanAloneFillsTheGPU: a launch that never waits (W=1) may take every
// block the GPU holds at once; one that may wait takes at most maxBlocks.
func TestPlanAloneFillsTheGPU(t *testing.T) {
	req := &base.DeviceRequest{Op: base.OpAllReduce, DType: num.Float32Type, In: buf(4096, 64<<20), Out: buf(1<<30, 64<<20)}
	if s := testPlanner(0, 1).plan(req); len(s) != 1 || s[0].grid != 528 {
		t.Errorf("alone: %+v; want one launch of 528 blocks", s)
	}
	for _, s := range testPlanner(0, 2).plan(req) {
		if s.grid > 32 {
			t.Errorf("W=2: a launch of %d blocks, over the cap of 32", s.grid)
		}
	}
}

// TestLaunchShapes: each path's schedule (internal/core/proto) becomes these
// launches; the kernels take each launch's flags in the schedule's order.
func TestLaunchShapes(t *testing.T) {
	for _, tc := range []struct {
		path   proto.Path
		staged bool
		want   []uint32
	}{
		{proto.OneShot, false, []uint32{flagReserve | flagCopyIn | flagPublish, flagReady | flagCompute | flagDone}},
		{proto.OneShot, true, []uint32{flagPublish, flagReady | flagCompute | flagDone}},
		{proto.TwoPhase, true, []uint32{flagPublish, flagReady | flagCompute | flagReduced, flagWaitRed | flagCompute | flagDone}},
		{proto.Push, false, []uint32{flagReserve | flagPublish | flagCompute | flagSent, flagWaitSent | flagCompute | flagSent, flagWaitSent | flagCompute | flagDone}},
		{proto.PushScatter, false, []uint32{flagReserve | flagPublish | flagCompute | flagSent, flagWaitSent | flagCompute | flagDone}},
		{proto.ReserveOnly, false, []uint32{flagReserve}},
		{proto.Alone, false, []uint32{flagCompute | flagFromInput | flagDone}},
		{proto.Alone, true, []uint32{flagCompute | flagFromInput | flagDone}},
	} {
		var got []uint32
		var steps []proto.Step
		for _, sh := range launchShapes(tc.path, tc.staged) {
			got = append(got, sh.flags)
			steps = append(steps, sh.steps...)
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("%v staged=%v: flags %#x, want %#x", tc.path, tc.staged, got, tc.want)
		}
		if !slices.Equal(steps, proto.Schedule(tc.path, tc.staged)) {
			t.Errorf("%v staged=%v: the launches carry %v, not the schedule", tc.path, tc.staged, steps)
		}
	}
}

// TestCalcOf: what a reducing launch is told it computes, per operator
// and element type: the node operator, premulsum's leaves, avg's root,
// the integers' sign, and the type by its width.
func TestCalcOf(t *testing.T) {
	for _, c := range []struct {
		red  num.RedOp
		dt   num.DType
		want uint32
	}{
		{num.Sum, num.BFloat16Type, typeBF16 << calcTypeShift},
		{num.Sum, num.Float16Type, typeF16 << calcTypeShift},
		{num.Max, num.Float32Type, calcMax | typeF32<<calcTypeShift},
		{num.Min, num.Float64Type, calcMin | typeF64<<calcTypeShift},
		{num.PreMulSum, num.BFloat16Type, calcPre | typeBF16<<calcTypeShift},
		{num.Avg, num.Float32Type, calcPost | typeF32<<calcTypeShift},
		{num.Sum, num.Int8Type, calcSigned | typeI8<<calcTypeShift},
		{num.Max, num.Uint8Type, calcMax | typeI8<<calcTypeShift},
		{num.Min, num.Int16Type, calcMin | calcSigned | typeI16<<calcTypeShift},
		{num.Avg, num.Uint16Type, calcPost | typeI16<<calcTypeShift},
		{num.Avg, num.Int32Type, calcPost | calcSigned | typeI32<<calcTypeShift},
		{num.Max, num.Uint32Type, calcMax | typeI32<<calcTypeShift},
		{num.Min, num.Int64Type, calcMin | calcSigned | typeI64<<calcTypeShift},
		{num.Sum, num.Uint64Type, typeI64 << calcTypeShift},
	} {
		if got := calcOf(c.red, c.dt); got != c.want {
			t.Errorf("calcOf(%v, %v) = %#x; want %#x", c.red, c.dt, got, c.want)
		}
	}
	// Every type that reduces has a kernel type; the node operators fit
	// in calcNode, apart from the flags.
	for dt := num.BFloat16Type; dt <= num.Uint64Type; dt++ {
		if calcOf(num.Sum, dt)>>calcTypeShift&15 == 0 {
			t.Errorf("%v: no kernel type", dt)
		}
	}
	if calcMax&^calcNode != 0 || calcMin&^calcNode != 0 || calcNode&(calcPre|calcPost|calcSigned) != 0 {
		t.Errorf("the node operators and the flags overlap")
	}
}

// TestPlanReductionsTakeTheReducingKernel: a reduction's compute
// launches run the sum kernel of its type where it sums a floating type,
// dc_reduce for every other type and operator; the gathers and the
// staging copies run dc_copy.
func TestPlanReductionsTakeTheReducingKernel(t *testing.T) {
	p := testPlanner(0, 2)
	sums := map[num.DType]kernel{num.BFloat16Type: kernelSumBF16, num.Float16Type: kernelSumF16,
		num.Float32Type: kernelSumF32, num.Float64Type: kernelSumF64}
	for dt := num.BFloat16Type; dt <= num.Uint64Type; dt++ {
		for _, red := range []num.RedOp{num.Sum, num.Max, num.Avg} {
			want := kernelReduce
			if k, ok := sums[dt]; ok && red == num.Sum {
				want = k
			}
			n := 1000 * dt.Size()
			req := &base.DeviceRequest{Op: base.OpAllReduce, DType: dt, Red: red,
				In: []base.DeviceBuf{{Addr: 1 << 20, Len: n}}, Out: []base.DeviceBuf{{Addr: 2 << 20, Len: n}}}
			steps := p.plan(req)
			if len(steps) != 1 || steps[0].kernel != want {
				t.Errorf("AllReduce %v of %v: %d launches (%v); want one on %s", red, dt, len(steps), steps, kernelNames[want])
			}
			req.Op = base.OpAllGather
			for _, s := range p.plan(req) {
				if s.kernel != kernelCopy {
					t.Errorf("AllGather of %v: a launch on kernel %d; want dc_copy", dt, s.kernel)
				}
			}
		}
	}
}
