package cuda

import (
	"testing"

	"github.com/detcoll/detcoll/internal/core/base"
	"github.com/detcoll/detcoll/internal/core/num"
)

// TestPlanRegistered: an all-reduce past the LL threshold whose input and
// output lie in windows, 16-byte aligned, takes the registered path: three
// launches (reserve and stage; meet, sum into every output, sent2; await
// sent2, done), each carrying the buffers' regWords, the sum on the
// reducing kernel. Anything else takes the path it took before.
func TestPlanRegistered(t *testing.T) {
	p := testPlanner(1, 4)
	p.windows = []regWindow{{addr: 1 << 40, size: 64 << 20, row: 3}, {addr: 1 << 41, size: 1 << 20, row: 0}}
	const n = 1 << 20
	req := func(in, out uint64, size int) *base.DeviceRequest {
		return &base.DeviceRequest{Op: base.OpAllReduce, DType: num.BFloat16Type, In: buf(in, size), Out: buf(out, size)}
	}
	got := p.plan(req(1<<40+4096, 1<<41, n))
	want := []stepTable{
		{opAwaitAcks, opPublishStage},
		{opAwaitStage, opCheck, opReduceReg, opPublishSent2},
		{opAwaitSent2, opPublishDone},
	}
	if len(got) != len(want) {
		t.Fatalf("%d launches, want %d: %+v", len(got), len(want), got)
	}
	wantReg := [2]uint64{regWord(3, 4096), regWord(0, 0)}
	for i, l := range got {
		if l.table != want[i] {
			t.Errorf("launch %d: %v, want %v", i, l.table, want[i])
		}
		if l.reg != wantReg {
			t.Errorf("launch %d: regWords %#x, want %#x", i, l.reg, wantReg)
		}
	}
	if got[1].kernel != kernelSumBF16 || got[1].grid != p.grid(n/4) || got[0].grid != 1 || got[2].grid != 1 {
		t.Errorf("kernels %v %v %v, grids %d %d %d", got[0].kernel, got[1].kernel, got[2].kernel, got[0].grid, got[1].grid, got[2].grid)
	}
	// In place: one buffer, both words the same.
	if l := p.plan(req(1<<40+64, 1<<40+64, n)); len(l) != 3 || l[1].reg != [2]uint64{regWord(3, 64), regWord(3, 64)} {
		t.Errorf("in place: %+v", l)
	}

	for _, tc := range []struct {
		name string
		req  *base.DeviceRequest
		path string
	}{
		{"output outside every window", req(1<<40, 1<<42, n), "push"},
		{"output past its window's end", req(1<<40, 1<<41+16, n), "push"},
		{"input not 16-byte aligned", req(1<<40+8, 1<<41, n), "push"},
		{"small: LL", req(1<<40, 1<<41, 1024), "ll"},
	} {
		l := p.plan(tc.req)
		_, registered := p.registration(tc.req)
		if tr := p.traffic(tc.req, registered); tr.Path != tc.path {
			t.Errorf("%s: the path is %s, want %s", tc.name, tr.Path, tc.path)
		}
		for _, x := range l {
			if x.reg != [2]uint64{} || moveOf(x.table) == opReduceReg {
				t.Errorf("%s: a registered launch %+v", tc.name, x)
			}
		}
	}
	// W=1 never takes it (reduce-scatters and gathers:
	// TestPlanRegisteredScatter).
	one := testPlanner(0, 1)
	one.windows = p.windows
	if l := one.plan(req(1<<40, 1<<41, n)); len(l) != 1 || l[0].table[0] != opAlone {
		t.Errorf("W=1: %+v", l)
	}
}

// TestPlanRegisteredScatter: a reduce-scatter past the LL threshold whose
// input and output lie in windows, 16-byte aligned, and whose output (the
// part of every input this rank reads) is whole 16-byte vectors, takes
// the registered path: the all-reduce's three launches, the second
// summing into this rank's output alone (REDUCE_REG_SCATTER) on the
// reducing kernel, a grid for its part. Anything else takes the path it
// took before, and an all-gather in windows stays on the staging path.
func TestPlanRegisteredScatter(t *testing.T) {
	p := testPlanner(2, 4)
	p.windows = []regWindow{{addr: 1 << 40, size: 64 << 20, row: 3}, {addr: 1 << 41, size: 1 << 20, row: 0}}
	const n = 1 << 20 // the output; the input is 4n
	rs := func(op base.Op, in, out uint64, part int) *base.DeviceRequest {
		return &base.DeviceRequest{Op: op, DType: num.Float32Type, In: buf(in, 4*part), Out: buf(out, part)}
	}
	want := []stepTable{
		{opAwaitAcks, opPublishStage},
		{opAwaitStage, opCheck, opReduceRegScatter, opPublishSent2},
		{opAwaitSent2, opPublishDone},
	}
	for _, op := range []base.Op{base.OpReduceScatter, base.OpReduceScatterMany} {
		got := p.plan(rs(op, 1<<40+4096, 1<<41, n))
		if len(got) != len(want) {
			t.Fatalf("%v: %d launches, want %d: %+v", op, len(got), len(want), got)
		}
		wantReg := [2]uint64{regWord(3, 4096), regWord(0, 0)}
		for i, l := range got {
			if l.table != want[i] || l.reg != wantReg {
				t.Errorf("%v, launch %d: %v with regWords %#x, want %v with %#x", op, i, l.table, l.reg, want[i], wantReg)
			}
		}
		if got[1].kernel != kernelSumF32 || got[1].grid != p.grid(n) || got[0].grid != 1 || got[2].grid != 1 {
			t.Errorf("%v: kernels %v %v %v, grids %d %d %d", op, got[0].kernel, got[1].kernel, got[2].kernel, got[0].grid, got[1].grid, got[2].grid)
		}
	}

	for _, tc := range []struct {
		name string
		req  *base.DeviceRequest
		path string
	}{
		{"output outside every window", rs(base.OpReduceScatter, 1<<40, 1<<42, n), "push-scatter"},
		{"input not 16-byte aligned", rs(base.OpReduceScatter, 1<<40+8, 1<<41, n), "push-scatter"},
		{"output not 16-byte aligned", rs(base.OpReduceScatter, 1<<40, 1<<41+8, n-16), "push-scatter"},
		{"parts of 8 bytes past a vector", rs(base.OpReduceScatter, 1<<40, 1<<41, n-8), "push-scatter"},
		{"small: LL", rs(base.OpReduceScatter, 1<<40, 1<<41, 1024), "ll"},
		{"two buffers", &base.DeviceRequest{Op: base.OpReduceScatterMany, DType: num.Float32Type,
			In: append(buf(1<<40, 2*n), buf(1<<40+2*n, 2*n)...), Out: append(buf(1<<41, n/2), buf(1<<41+n/2, n/2)...)}, "one-shot"},
		{"all-gather", &base.DeviceRequest{Op: base.OpAllGather, DType: num.Float32Type, In: buf(1<<41, n/4), Out: buf(1<<40, n)}, "one-shot"},
		{"all-gather in place", &base.DeviceRequest{Op: base.OpAllGather, DType: num.Float32Type, In: buf(1<<40+n/2, n/4), Out: buf(1<<40, n)}, "one-shot"},
	} {
		l := p.plan(tc.req)
		_, registered := p.registration(tc.req)
		if tr := p.traffic(tc.req, registered); tr.Path != tc.path {
			t.Errorf("%s: the path is %s, want %s", tc.name, tr.Path, tc.path)
		}
		for _, x := range l {
			if m := moveOf(x.table); x.reg != [2]uint64{} || m == opReduceReg || m == opReduceRegScatter {
				t.Errorf("%s: a registered launch %+v", tc.name, x)
			}
		}
	}
}

// TestRegOf: a buffer is registered where it lies whole in a window and
// starts 16-byte aligned; its regWord holds the window's row + 1 and the
// offset.
func TestRegOf(t *testing.T) {
	ws := []regWindow{{addr: 4096, size: 1000, row: 7}}
	for _, tc := range []struct {
		addr uint64
		n    int
		want uint64
		ok   bool
	}{
		{4096, 1000, 8<<regOffBits | 0, true},
		{4096 + 992, 8, 8<<regOffBits | 992, true},
		{4096 + 992, 9, 0, false},
		{4096 - 16, 16, 0, false},
		{4096 + 8, 8, 0, false},
	} {
		got, ok := regOf(ws, base.DeviceBuf{Addr: tc.addr, Len: tc.n})
		if got != tc.want || ok != tc.ok {
			t.Errorf("%#x+%d: %#x %v, want %#x %v", tc.addr, tc.n, got, ok, tc.want, tc.ok)
		}
	}
}
