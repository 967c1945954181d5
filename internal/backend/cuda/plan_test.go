package cuda

import (
	"slices"
	"strings"
	"testing"

	"github.com/detcoll/detcoll/internal/core/base"
	"github.com/detcoll/detcoll/internal/core/num"
	"github.com/detcoll/detcoll/internal/core/proto"
)

func testPlanner(rank, world int) planner {
	return planner{rank: rank, world: world, llMax: 64 << 10, llWindow: 16 << 10, staging: 1 << 40, block: 512, maxBlocks: 32, resident: 528}
}

func buf(addr uint64, n int) []base.DeviceBuf { return []base.DeviceBuf{{Addr: addr, Len: n}} }

// moveOf is the primitive of t that moves data (the compute of an LL or
// Alone launch), or opEnd.
func moveOf(t stepTable) stepOp {
	if t[0] == opLL || t[0] == opAlone {
		return t[1]
	}
	for _, o := range t {
		if o != opEnd && !o.waits() && !o.publishes() {
			return o
		}
	}
	return opEnd
}

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
		moves []stepOp
	}{
		{"small all-reduce", &base.DeviceRequest{Op: base.OpAllReduce, DType: num.BFloat16Type, In: buf(4096, 1000), Out: buf(8192, 1000)}, 2, []stepOp{opReduce}},
		{"large all-reduce", &base.DeviceRequest{Op: base.OpAllReduce, DType: num.BFloat16Type, In: buf(4096, 1<<20), Out: buf(4096, 1<<20)}, 2, []stepOp{opPush, opReducePush, opGatherPushed}},
		{"large reduce-scatter", &base.DeviceRequest{Op: base.OpReduceScatter, DType: num.BFloat16Type, In: buf(4096, 1<<20), Out: buf(1<<30, 1<<19)}, 2, []stepOp{opPushScatter, opReducePushScatter}},
		{"large all-reduce W=1", &base.DeviceRequest{Op: base.OpAllReduce, DType: num.Float64Type, In: buf(4096, 1<<20), Out: buf(4096, 1<<20)}, 1, []stepOp{opReduce}},
		{"small all-reduce W=1", &base.DeviceRequest{Op: base.OpAllReduce, DType: num.BFloat16Type, In: buf(4096, 1000), Out: buf(8192, 1000)}, 1, []stepOp{opReduce}},
		{"gather many W=1, chunked", many(base.OpAllGatherMany, 10, 64, 1), 1, []stepOp{opGather, opGather}},
		{"large staged W=1", &base.DeviceRequest{Op: base.OpAllReduceStaged, DType: num.Float32Type, Out: buf(4096, 1<<20)}, 1, []stepOp{opReduce}},
		{"large staged", &base.DeviceRequest{Op: base.OpAllReduceStaged, DType: num.Float32Type, Out: buf(4096, 1<<20)}, 2, []stepOp{opEnd, opReduceInPlace, opGatherShards}},
		{"small staged", &base.DeviceRequest{Op: base.OpAllReduceStaged, DType: num.Float32Type, Out: buf(4096, 100)}, 2, []stepOp{opReduce}},
		{"gather at the threshold", &base.DeviceRequest{Op: base.OpAllGather, DType: num.Uint8Type, In: buf(4096, 64<<10), Out: buf(1<<20, 128<<10)}, 2, []stepOp{opGather}},
		{"gather over it", &base.DeviceRequest{Op: base.OpAllGather, DType: num.Uint8Type, In: buf(4096, 64<<10+1), Out: buf(1<<20, 128<<10+2)}, 2, []stepOp{opCopyIn, opGather}},
		{"barrier", &base.DeviceRequest{Op: base.OpBarrier}, 3, []stepOp{opReduce}},
		{"barrier W=1", &base.DeviceRequest{Op: base.OpBarrier}, 1, []stepOp{opReduce}},
		{"reduce-scatter many, chunked", many(base.OpReduceScatterMany, 10, 64, 2), 2, []stepOp{opCopyIn, opCopyIn, opReduceShard, opReduceShard}},
		{"gather many, LL", many(base.OpAllGatherMany, 8, 64, 4), 4, []stepOp{opGather}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			steps := testPlanner(0, tc.world).plan(tc.req)
			if len(steps) != len(tc.moves) {
				t.Fatalf("%d launches, want %d: %+v", len(steps), len(tc.moves), steps)
			}
			if steps[0].table[0] == opLL {
				if len(steps) != 1 || steps[0].table != (stepTable{opLL, tc.moves[0]}) {
					t.Fatalf("an LL call is one launch of LL and its compute: %+v", steps)
				}
				_, total := base.StagingLayout(tc.req.InputSizes())
				if g, w := steps[0].grid, steps[0].window; g < 1 || g > 264 || w%64 != 0 || g*w < total {
					t.Errorf("LL launch of %d blocks of %d bytes", g, w)
				}
				return
			}
			count := map[stepOp]int{}
			for i, s := range steps {
				if m := moveOf(s.table); m != tc.moves[i] {
					t.Errorf("launch %d: moves by %v, want %v (%v)", i, m, tc.moves[i], s.table)
				}
				if s.grid < 1 || s.grid > 264 {
					t.Errorf("launch %d: grid %d", i, s.grid)
				}
				if len(s.work) > maxWork {
					t.Errorf("launch %d: %d buffers", i, len(s.work))
				}
				for _, o := range s.table {
					count[o]++
				}
			}
			if last := steps[len(steps)-1]; !slices.Contains(last.table[:], opPublishDone) {
				t.Errorf("last launch does not publish done: %v", last.table)
			}
			staged := tc.req.Op == base.OpAllReduceStaged
			if tc.world == 1 {
				// Alone: no peer to meet, the outputs straight from the
				// inputs, in one launch per chunk.
				for i, s := range steps {
					if s.table[0] != opAlone || moveOf(s.table) != tc.moves[i] {
						t.Errorf("alone, launch %d: %v", i, s.table)
					}
				}
				if count[opPublishDone] != 1 {
					t.Errorf("steps per call: %v", count)
				}
				return
			}
			waits := count[opAwaitStage] == 1 && count[opCheck] == 1 // the staging path
			if steps[0].table[2] == opPush || steps[0].table[2] == opPushScatter {
				waits = count[opAwaitStage] == 0 && count[opAwaitSent1] == 1 && count[opCheck] == 1 &&
					count[opAwaitSent1]+count[opAwaitSent2] == len(steps)-1 && count[opPublishSent1]+count[opPublishSent2] == len(steps)-1
			}
			if count[opPublishStage] != 1 || !waits || count[opPublishDone] != 1 || (count[opAwaitAcks] != 1) == !staged {
				t.Errorf("steps per call: %v", count)
			}
			// Every launch counts its seq from done: only the last one
			// may publish it.
			for i, s := range steps[:len(steps)-1] {
				if slices.Contains(s.table[:], opPublishDone) {
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

// TestPlanLLThreads: an LL launch starts a thread per line of its window,
// in whole warps, no fewer than the signature needs and no more than a
// block; the plan of a small call carries them.
func TestPlanLLThreads(t *testing.T) {
	p := testPlanner(0, 2)
	for _, tc := range []struct{ n, window, threads int }{
		{0, 4096, 64}, {8, 4096, 64}, {512, 4096, 64}, {513, 4096, 96}, {1024, 4096, 128},
		{4096, 4096, 512}, {1 << 20, 4096, 512}, {1 << 20, 1 << 16, 512},
	} {
		if got := p.llThreads(tc.n, tc.window); got != tc.threads {
			t.Errorf("llThreads(%d, %d) = %d, want %d", tc.n, tc.window, got, tc.threads)
		}
	}
	s := p.plan(&base.DeviceRequest{Op: base.OpAllReduce, DType: num.BFloat16Type, In: buf(4096, 1024), Out: buf(8192, 1024)})
	if len(s) != 1 || s[0].threads != 128 {
		t.Errorf("1 KiB all-reduce: %d launches, the first of %d threads; want 1 of 128", len(s), s[0].threads)
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

// TestLaunchShapes: each path's schedule, as proto.Launches cuts it,
// becomes these step tables; the kernels take each table's steps in
// order, which is the schedule's.
func TestLaunchShapes(t *testing.T) {
	type tab = stepTable
	for _, tc := range []struct {
		path   proto.Path
		staged bool
		k      kind
		want   []stepTable
	}{
		{proto.OneShot, false, kindReduce, []tab{{opAwaitAcks, opCopyIn, opPublishStage}, {opAwaitStage, opCheck, opReduce, opPublishDone}}},
		{proto.OneShot, false, kindReduceScatter, []tab{{opAwaitAcks, opCopyIn, opPublishStage}, {opAwaitStage, opCheck, opReduceShard, opPublishDone}}},
		{proto.OneShot, false, kindGather, []tab{{opAwaitAcks, opCopyIn, opPublishStage}, {opAwaitStage, opCheck, opGather, opPublishDone}}},
		{proto.OneShot, false, kindBroadcast, []tab{{opAwaitAcks, opCopyIn, opPublishStage}, {opAwaitStage, opCheck, opBroadcast, opPublishDone}}},
		{proto.OneShot, false, kindNone, []tab{{opAwaitAcks, opCopyIn, opPublishStage}, {opAwaitStage, opCheck, opReduce, opPublishDone}}},
		{proto.OneShot, true, kindReduce, []tab{{opPublishStage}, {opAwaitStage, opCheck, opReduce, opPublishDone}}},
		{proto.TwoPhase, true, kindReduce, []tab{{opPublishStage}, {opAwaitStage, opCheck, opReduceInPlace, opPublishReduced}, {opAwaitReduced, opGatherShards, opPublishDone}}},
		{proto.Push, false, kindReduce, []tab{{opAwaitAcks, opPublishStage, opPush, opPublishSent1}, {opAwaitSent1, opCheck, opReducePush, opPublishSent2}, {opAwaitSent2, opGatherPushed, opPublishDone}}},
		{proto.PushScatter, false, kindReduceScatter, []tab{{opAwaitAcks, opPublishStage, opPushScatter, opPublishSent1}, {opAwaitSent1, opCheck, opReducePushScatter, opPublishDone}}},
		{proto.ReserveOnly, false, kindNone, []tab{{opAwaitAcks}}},
		{proto.LL, false, kindReduce, []tab{{opLL, opReduce}}},
		{proto.LL, true, kindReduce, []tab{{opLL, opReduce}}},
		{proto.LL, false, kindBroadcast, []tab{{opLL, opBroadcast}}},
		{proto.Alone, false, kindGather, []tab{{opAlone, opGather, opPublishDone}}},
		// A barrier is an all-reduce of no buffers: its LL and Alone
		// launches carry a compute, as kernels/ll.h and alone.h read them
		// (run_alone publishes done after its second entry; ll_refresh
		// spares the header of an LL call only).
		{proto.Alone, false, kindNone, []tab{{opAlone, opReduce, opPublishDone}}},
		{proto.LL, false, kindNone, []tab{{opLL, opReduce}}},
		{proto.Alone, true, kindReduce, []tab{{opAlone, opReduce, opPublishDone}}},
	} {
		var got []stepTable
		var steps []proto.Step
		for _, sh := range launchShapes(tc.path, tc.staged, tc.k) {
			got = append(got, sh.table)
			steps = append(steps, sh.steps...)
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("%v staged=%v kind %d: tables %v, want %v", tc.path, tc.staged, tc.k, got, tc.want)
		}
		if !slices.Equal(steps, proto.Schedule(tc.path, tc.staged)) {
			t.Errorf("%v staged=%v: the launches carry %v, not the schedule", tc.path, tc.staged, steps)
		}
	}
}

// TestChunkTable: of the launches of a call's chunks, the first waits
// and checks, the last publishes, and every one moves its data.
func TestChunkTable(t *testing.T) {
	full := stepTable{opAwaitStage, opCheck, opReduceShard, opPublishDone}
	for _, c := range []struct {
		i, n int
		want stepTable
	}{
		{0, 1, full},
		{0, 2, stepTable{opAwaitStage, opCheck, opReduceShard}},
		{1, 3, stepTable{opReduceShard}},
		{2, 3, stepTable{opReduceShard, opPublishDone}},
	} {
		if got := chunkTable(full, c.i, c.n); got != c.want {
			t.Errorf("chunk %d of %d: %v, want %v", c.i, c.n, got, c.want)
		}
	}
}

// TestStepOpsNamed: every primitive has a name in the kernels' header,
// and the waits and publishes are where waits and publishes think.
func TestStepOpsNamed(t *testing.T) {
	seen := map[string]bool{}
	for o := range numStepOps {
		n := stepOpDocs[o].name
		if n == "" || seen[n] {
			t.Errorf("step op %d: name %q", o, n)
		}
		seen[n] = true
		name := o.String()
		waits := strings.HasPrefix(name, "AWAIT_") || name == "CHECK"
		if o.waits() != waits || o.publishes() != strings.HasPrefix(name, "PUBLISH_") {
			t.Errorf("%v: waits %v, publishes %v", o, o.waits(), o.publishes())
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
// staging copies run dc_copy; an LL launch (these small calls) runs the
// LL twin of its kernel, and no other launch does.
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
			if len(steps) != 1 || steps[0].kernel != llKernel(want) || steps[0].table[0] != opLL {
				t.Errorf("AllReduce %v of %v: %d launches (%v); want one LL launch on %s", red, dt, len(steps), steps, kernelNames[llKernel(want)])
			}
			req.In[0].Len, req.Out[0].Len = 1<<20, 1<<20
			for _, s := range p.plan(req) {
				if s.kernel != want && s.kernel != kernelCopy {
					t.Errorf("AllReduce %v of %v, push path: a launch on %s; want %s or dc_copy", red, dt, kernelNames[s.kernel], kernelNames[want])
				}
			}
			req.Op = base.OpAllGather
			for _, s := range p.plan(req) {
				if s.kernel != kernelCopy {
					t.Errorf("AllGather of %v: a launch on kernel %s; want dc_copy", dt, kernelNames[s.kernel])
				}
			}
			req.In[0].Len, req.Out[0].Len = 8, 16
			for _, s := range p.plan(req) {
				if s.kernel != llKernel(kernelCopy) {
					t.Errorf("small AllGather of %v: a launch on kernel %s; want dc_ll_copy", dt, kernelNames[s.kernel])
				}
			}
		}
	}
}
