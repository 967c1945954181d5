package cuda

import (
	"slices"
	"testing"

	"github.com/detcoll/detcoll/internal/core/base"
	"github.com/detcoll/detcoll/internal/core/num"
)

// TestPlanPushByCopyEngines: with the copy engines making the push path's
// first copies, the launch that carried PUSH becomes the reserve and the
// stage, the copies, then sent1; the copies are push_compute's, worked out
// here by hand (odd sizes: the last shard shorter; a reduce-scatter's
// parts into the peers' slots).
func TestPlanPushByCopyEngines(t *testing.T) {
	const in, out = 1 << 40, 1 << 41
	staging := []uint64{1 << 30, 2 << 30, 3 << 30}
	for _, c := range []struct {
		name        string
		rank, world int
		req         *base.DeviceRequest
		push        stepOp
		after       stepTable
		copies      []peerCopy
	}{
		{
			// 2^20+6 bytes: shards of ceil(n/2) = 524291 bytes, in whole
			// 64-byte lines 524352; rank 0 keeps part 0 and sends part 1
			// to rank 1's slot 1 (recvSlot(1, 0) = 0).
			name: "all-reduce W=2", rank: 0, world: 2,
			req:  &base.DeviceRequest{Op: base.OpAllReduce, DType: num.BFloat16Type, In: buf(in, 1<<20+6), Out: buf(out, 1<<20+6)},
			push: opPush, after: stepTable{opAwaitSent1, opCheck, opReducePush, opPublishSent2},
			copies: []peerCopy{
				{dst: staging[0], src: in, n: 524352},
				{dst: staging[1] + 524352, src: in + 524352, n: 1<<20 + 6 - 524352},
			},
		},
		{
			// 480000 bytes over 3 ranks: parts of 160000; rank 1 sends part
			// 0 to rank 0's slot 1 (recvSlot(0, 1) = 0) and part 2 to rank
			// 2's slot 2 (recvSlot(2, 1) = 1).
			name: "reduce-scatter W=3", rank: 1, world: 3,
			req:  &base.DeviceRequest{Op: base.OpReduceScatter, DType: num.Float32Type, In: buf(in, 480000), Out: buf(out, 160000)},
			push: opPushScatter, after: stepTable{opAwaitSent1, opCheck, opReducePushScatter, opPublishDone},
			copies: []peerCopy{
				{dst: staging[0] + 160000, src: in, n: 160000},
				{dst: staging[1], src: in + 160000, n: 160000},
				{dst: staging[2] + 2*160000, src: in + 320000, n: 160000},
			},
		},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := testPlanner(c.rank, c.world)
			p.peerStaging = staging[:c.world]
			sm := p.plan(c.req)
			if len(sm) < 2 || sm[0].table != (stepTable{opAwaitAcks, opPublishStage, c.push, opPublishSent1}) {
				t.Fatalf("by the SMs: %+v", sm)
			}
			p.pushEngine = true
			ls := p.plan(c.req)
			if len(ls) != len(sm)+2 {
				t.Fatalf("%d launches, want %d: %+v", len(ls), len(sm)+2, ls)
			}
			if ls[0].table != (stepTable{opAwaitAcks, opPublishStage}) || ls[0].copies != nil || ls[0].grid != 1 {
				t.Errorf("launch 1: %+v", ls[0])
			}
			if !slices.Equal(ls[1].copies, c.copies) {
				t.Errorf("copies %+v, want %+v", ls[1].copies, c.copies)
			}
			if ls[2].table != (stepTable{opPublishSent1}) || ls[2].copies != nil {
				t.Errorf("launch 3: %+v", ls[2])
			}
			if ls[3].table != c.after {
				t.Errorf("launch 4: %v, want %v", ls[3].table, c.after)
			}
			for i, l := range ls {
				if l.copies == nil && slices.Contains(l.table[:], c.push) {
					t.Errorf("launch %d still pushes by the SMs: %v", i, l.table)
				}
			}
		})
	}
}

// TestPlanPushMisalignedKeepsTheKernel: an input that is not 16-byte
// aligned keeps the kernel's stores (pushcopy.go says why).
func TestPlanPushMisalignedKeepsTheKernel(t *testing.T) {
	p := testPlanner(0, 2)
	p.peerStaging = []uint64{1 << 30, 2 << 30}
	req := &base.DeviceRequest{Op: base.OpAllReduce, DType: num.BFloat16Type, In: buf(1<<40+2, 1<<20), Out: buf(1<<41, 1<<20)}
	sm := p.plan(req)
	p.pushEngine = true
	if got := p.plan(req); !slices.EqualFunc(got, sm, func(a, b launch) bool { return a.table == b.table && a.copies == nil }) {
		t.Errorf("misaligned input by the engines: %+v; want the kernel's launches %+v", got, sm)
	}
	req.In = buf(1<<40+16, 1<<20)
	if got := p.plan(req); len(got) != len(sm)+2 || got[1].copies == nil {
		t.Errorf("16-byte aligned input: %+v; want the engines' copies", got)
	}
}

// TestPushPartMatchesTheStaging: every part fits the push path's staging
// (pushStaging), whatever the size, so the copies never write past a
// peer's buffer.
func TestPushPartMatchesTheStaging(t *testing.T) {
	for _, world := range []int{2, 3, 4, 8} {
		for _, n := range []uint64{64, 1000, 1<<20 + 6, 3<<20 + 128*7} {
			lo0, hi0 := pushPart(n, world, 0, false)
			stride := (hi0 - lo0 + 63) &^ 63
			var sum uint64
			for q := range world {
				lo, hi := pushPart(n, world, q, false)
				if hi-lo > stride || lo > hi {
					t.Errorf("W=%d n=%d: part %d [%d, %d) over the stride %d", world, n, q, lo, hi, stride)
				}
				sum += hi - lo
			}
			if sum != n || uint64(2*world-1)*stride > uint64(pushStaging(int64(n), world)) {
				t.Errorf("W=%d n=%d: parts sum to %d; %d slots of %d over the staging %d", world, n, sum, 2*world-1, stride, pushStaging(int64(n), world))
			}
		}
	}
}

func TestPushEngineFromEnv(t *testing.T) {
	for v, want := range map[string]bool{"": false, "sm": false, "engine": true} {
		t.Setenv(envPushCopy, v)
		if got, err := pushEngineFromEnv(); err != nil || got != want {
			t.Errorf("%s=%q: %v, %v", envPushCopy, v, got, err)
		}
	}
	t.Setenv(envPushCopy, "ce")
	if _, err := pushEngineFromEnv(); err == nil {
		t.Errorf("%s=ce: no error", envPushCopy)
	}
}
