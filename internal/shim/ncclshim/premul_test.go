package ncclshim

import (
	"encoding/binary"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/detcoll/detcoll"
	"github.com/detcoll/detcoll/internal/binding/nccl"
)

// TestPreMulSumHost: an operator made with a host factor
// (ncclScalarHostImmediate) of each float type is served as detcoll's
// PreMulSum with the factor's value as NCCL read it at creation: the bytes
// are copied, so a later change to the caller's memory does not reach it.
func TestPreMulSumHost(t *testing.T) {
	third := float32(1.0 / 3)
	for _, tc := range []struct {
		dt    nccl.DataType
		bytes []byte
		value float64
	}{
		{nccl.Bfloat16, le16(0x3EC0), 0.375},
		{nccl.Float16, le16(0x3600), 0.375},
		{nccl.Float16, le16(0x0001), math.Ldexp(1, -24)}, // the least subnormal
		{nccl.Float32, le32(math.Float32bits(third)), float64(third)},
		{nccl.Float64, le64(math.Float64bits(0.1)), 0.1},
		{nccl.Float32, le32(math.Float32bits(-2.5)), -2.5},
	} {
		sh, fc := servedShim(t, 2, 1, testSettings())
		factor := append([]byte{}, tc.bytes...)
		sh.CreatePreMulSum(2, 7, tc.dt, ScalarHostImmediate, factor, 0)
		clear(factor) // the caller's memory, after creation
		for _, kind := range []Kind{AllReduce, ReduceScatter} {
			call := Call{Kind: kind, Send: 0x10000, Recv: 0x20000, Count: 8, DType: tc.dt, Op: 7, Comm: 2, Stream: 4}
			if res, v := sh.Do(call, 0); res != nccl.Success || v != Done {
				t.Errorf("%v %v: %d, verdict %v; want served", tc.dt, kind, res, v)
			}
		}
		want := detcoll.PreMulSum(tc.value)
		if got := fc.opLog(); !slices.Equal(got, []detcoll.RedOp{want, want}) {
			t.Errorf("%v factor %x: detcoll got %v; want PreMulSum(%v) twice", tc.dt, tc.bytes, got, tc.value)
		}
	}
}

// TestPreMulSumDevice: an operator with a device factor (ncclScalarDevice)
// is served as PreMulSumDevice at the factor's address, which detcoll's
// kernels read when the call runs; each piece of a call over the capacity
// gets it.
func TestPreMulSumDevice(t *testing.T) {
	s := testSettings()
	s.Capacity = 1000 // 250 float32s
	sh, fc := servedShim(t, 2, 0, s)
	sh.CreatePreMulSum(1, 5, nccl.Float32, ScalarDevice, nil, 0xfac000)
	if res, v := sh.Do(Call{Kind: AllReduce, Send: 0x10000, Recv: 0x20000, Count: 300, DType: nccl.Float32, Op: 5, Comm: 1}, 0); res != nccl.Success || v != Done {
		t.Fatalf("AllReduce = %d, verdict %v; want served", res, v)
	}
	want := detcoll.PreMulSumDevice(0xfac000)
	if got := fc.opLog(); !slices.Equal(got, []detcoll.RedOp{want, want}) {
		t.Errorf("detcoll got %v; want PreMulSumDevice(0xfac000) for each of 2 pieces", got)
	}
	// A device factor at address 0 is not served: detcoll would take no
	// address for a host factor of 0.
	sh.CreatePreMulSum(1, 6, nccl.Float32, ScalarDevice, nil, 0)
	if _, v := sh.Do(Call{Kind: AllReduce, Send: 0x10000, Recv: 0x20000, Count: 8, DType: nccl.Float32, Op: 6, Comm: 1}, 0); v != Handed {
		t.Errorf("a device factor at 0: verdict %v; want handed", v)
	}
}

// TestPreMulSumHanded: a call with an operator detcoll cannot serve goes
// to the real NCCL with NCCL's number for it (or is refused, strict): one
// made for another type (NCCL itself refuses that), one destroyed, one of
// another communicator, one the library did not see made. Integer
// operators are exact in any order: handed silently in both modes.
func TestPreMulSumHanded(t *testing.T) {
	for _, mode := range []Mode{Delegate, Strict} {
		s := testSettings()
		s.Mode = mode
		sh, fc := servedShim(t, 2, 0, s)
		var warned []string
		sh.Warn = func(why string, refused bool) { warned = append(warned, why) }
		sh.CreatePreMulSum(1, 5, nccl.Bfloat16, ScalarHostImmediate, le16(0x3F80), 0)
		sh.CreatePreMulSum(1, 6, nccl.Float32, ScalarHostImmediate, le32(math.Float32bits(0.5)), 0)
		sh.CreatePreMulSum(1, 7, nccl.Int32, ScalarHostImmediate, nil, 0)
		sh.CreatePreMulSum(99, 8, nccl.Float32, ScalarHostImmediate, le32(math.Float32bits(0.5)), 0) // no such communicator
		if sh.DestroyRedOp(1, 6, 0) {
			t.Errorf("mode %d: a destroy outside a group taken over", mode)
		}
		call := func(dt nccl.DataType, op nccl.RedOp) Call {
			return Call{Kind: AllReduce, Send: 0x1000, Recv: 0x1000, Count: 4, DType: dt, Op: op, Comm: 1}
		}
		for _, tc := range []struct {
			name   string
			call   Call
			exact  bool
			reason string
		}{
			{"made for bfloat16, called with float16", call(nccl.Float16, 5), false, "made for bfloat16"},
			{"destroyed", call(nccl.Float32, 6), false, "not made through libdetcoll-nccl"},
			{"of integers", call(nccl.Int32, 7), true, ""},
			{"made for integers, called with int64", call(nccl.Int64, 7), true, ""},
			{"of another communicator", call(nccl.Float32, 8), false, "not made through libdetcoll-nccl"},
		} {
			warned = nil
			res, v := sh.Do(tc.call, 0)
			switch {
			case tc.exact && (res != nccl.Success || v != Handed || len(warned) != 0):
				t.Errorf("mode %d, %s: %d, verdict %v, warned %q; want handed silently", mode, tc.name, res, v, warned)
			case !tc.exact && mode == Delegate && (res != nccl.Success || v != Handed):
				t.Errorf("mode %d, %s: %d, verdict %v; want handed", mode, tc.name, res, v)
			case !tc.exact && mode == Strict && (res != nccl.InvalidUsage || v != Done):
				t.Errorf("mode %d, %s: %d, verdict %v; want refused", mode, tc.name, res, v)
			case !tc.exact && (len(warned) != 1 || !strings.Contains(warned[0], tc.reason)):
				t.Errorf("mode %d, %s: warned %q; want %q said", mode, tc.name, warned, tc.reason)
			}
		}
		if got := fc.log(); len(got) != 0 {
			t.Errorf("mode %d: detcoll saw %q", mode, got)
		}
		// The number made again, after the destroy: the new operator.
		sh.CreatePreMulSum(1, 6, nccl.Float32, ScalarHostImmediate, le32(math.Float32bits(0.25)), 0)
		if res, v := sh.Do(call(nccl.Float32, 6), 0); res != nccl.Success || v != Done || !slices.Equal(fc.opLog(), []detcoll.RedOp{detcoll.PreMulSum(0.25)}) {
			t.Errorf("mode %d: op 6 made again: %d, verdict %v, detcoll got %v", mode, res, v, fc.opLog())
		}
	}
}

// TestPreMulSumGroup: NCCL lets an operator be destroyed as soon as the
// call that takes it returns, before its group ends (PyTorch does so): the
// deferred call keeps the factor it was made with.
func TestPreMulSumGroup(t *testing.T) {
	sh, fc := servedShim(t, 2, 0, testSettings())
	sh.CreatePreMulSum(1, 5, nccl.Float64, ScalarHostImmediate, le64(math.Float64bits(0.125)), 0)
	const group = 3
	call := Call{Kind: ReduceScatter, Send: 0x1000, Recv: 0x2000, Count: 4, DType: nccl.Float64, Op: 5, Comm: 1, Stream: 0xa}
	if res, v := sh.Do(call, group); res != nccl.Success || v != Deferred {
		t.Fatalf("in a group: %d, verdict %v; want deferred", res, v)
	}
	if !sh.DestroyRedOp(1, 5, group) {
		t.Errorf("the destroy of an operator a deferred call takes: not kept for the group's end")
	}
	if sh.DestroyRedOp(1, 7, group) {
		t.Errorf("the destroy of an operator no deferred call takes: kept for the group's end")
	}
	sum := call
	sum.Op = nccl.Sum
	if res, v := sh.Do(sum, group); res != nccl.Success || v != Deferred {
		t.Fatalf("a sum in the group: %d, verdict %v; want deferred", res, v)
	}
	if sh.DestroyRedOp(1, nccl.Sum, group) {
		t.Errorf("the destroy of a built-in operator: kept for the group's end (NCCL refuses it at once)")
	}
	if r, _ := sh.GroupEnd(group, 0, false); r != nccl.Success {
		t.Fatalf("GroupEnd = %d (%s)", r, sh.LastError())
	}
	if got := fc.opLog(); !slices.Equal(got, []detcoll.RedOp{detcoll.PreMulSum(0.125), detcoll.Sum}) {
		t.Errorf("detcoll got %v; want PreMulSum(0.125), then Sum", got)
	}
	if !slices.Contains(events(sh), "real destroy 0x1 ncclRedOp(5)") {
		t.Errorf("the real NCCL's destroy after the group: missing from %q", events(sh))
	}
}

// TestPreMulSumGroupHanded: a deferred call that is handed to the real
// NCCL at its group's end (its communicator could not be served) names
// an operator the real NCCL still has: the destroy made inside the group
// reaches NCCL after the call, not before.
func TestPreMulSumGroupHanded(t *testing.T) {
	sh, _ := servedShim(t, 2, 0, testSettings())
	sh.CreatePreMulSum(1, 5, nccl.Float32, ScalarHostImmediate, le32(math.Float32bits(0.5)), 0)
	const group = 4
	call := Call{Kind: AllReduce, Send: 0x1000, Recv: 0x2000, Count: 4, DType: nccl.Float32, Op: 5, Comm: 1, Stream: 0xa}
	if res, v := sh.Do(call, group); res != nccl.Success || v != Deferred {
		t.Fatalf("in a group: %d, verdict %v; want deferred", res, v)
	}
	if !sh.DestroyRedOp(1, 5, group) {
		t.Fatalf("the destroy of an operator a deferred call takes: not kept for the group's end")
	}
	c := sh.comms[1]
	c.mu.Lock()
	c.state, c.why = unserved, "a test's"
	c.mu.Unlock()
	r, more := sh.GroupEnd(group, 0, false)
	if r == nccl.Success && more {
		r, _ = sh.GroupEnd(group, 1, false)
	}
	ev := events(sh)
	handed := slices.IndexFunc(ev, func(e string) bool { return strings.HasPrefix(e, "real AllReduce") })
	destroyed := slices.Index(ev, "real destroy 0x1 ncclRedOp(5)")
	if handed < 0 || destroyed < 0 || destroyed < handed {
		t.Errorf("GroupEnd = %d; events %q: want the handed call, then the real destroy", r, ev)
	}
}

// TestOperatorsAcrossHosts: across machines every operator is served
// too, a PreMulSum operator with its factor, on every rank.
func TestOperatorsAcrossHosts(t *testing.T) {
	s := atInit()
	s.AcrossHosts = true
	o, shims := acrossJob(t, 4, func(r int) int { return r / 2 }, s, &fakeRails{})
	initAll(t, shims)
	for r, sh := range shims {
		h := Handle(r + 1)
		sh.CreatePreMulSum(h, 5, nccl.Bfloat16, ScalarHostImmediate, le16(0x3F00), 0)
		var want []detcoll.RedOp
		for _, tc := range []struct {
			dt nccl.DataType
			op nccl.RedOp
			as detcoll.RedOp
		}{{nccl.Float32, nccl.Max, detcoll.Max}, {nccl.Bfloat16, nccl.Avg, detcoll.Avg}, {nccl.Bfloat16, 5, detcoll.PreMulSum(0.5)},
			{nccl.Int32, nccl.Sum, detcoll.Sum}, {nccl.Int64, nccl.Min, detcoll.Min}} {
			if res, v := sh.Do(Call{Kind: AllReduce, Send: 0x1000, Recv: 0x2000, Count: 64, DType: tc.dt, Op: tc.op, Comm: h}, 0); res != nccl.Success || v != Done {
				t.Errorf("rank %d: %v with %v = %d, verdict %v; want served", r, tc.dt, tc.op, res, v)
			}
			want = append(want, tc.as)
		}
		if got := o.comms[r].opLog(); !slices.Equal(got, want) {
			t.Errorf("rank %d: detcoll got %v; want %v", r, got, want)
		}
	}
}

func le16(v uint16) []byte { return binary.LittleEndian.AppendUint16(nil, v) }
func le32(v uint32) []byte { return binary.LittleEndian.AppendUint32(nil, v) }
func le64(v uint64) []byte { return binary.LittleEndian.AppendUint64(nil, v) }
