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
	// A reduce-scatter, a gather and W=1 never take it.
	rs := &base.DeviceRequest{Op: base.OpReduceScatter, DType: num.Float32Type, In: buf(1<<40, n), Out: buf(1<<41, n/4)}
	for _, l := range p.plan(rs) {
		if l.reg != [2]uint64{} {
			t.Errorf("reduce-scatter: %+v", l)
		}
	}
	one := testPlanner(0, 1)
	one.windows = p.windows
	if l := one.plan(req(1<<40, 1<<41, n)); len(l) != 1 || l[0].table[0] != opAlone {
		t.Errorf("W=1: %+v", l)
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
