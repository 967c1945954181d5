package ncclshim

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/detcoll/detcoll"
	"github.com/detcoll/detcoll/internal/backend/cuda"
	"github.com/detcoll/detcoll/internal/binding/nccl"
)

// servedShim is one served rank of world, for the dispatch tests; its
// detcoll communicator's calls and its stream operations go to the job's
// event log of the rank.
func servedShim(t *testing.T, world, rank int, s Settings) (*Shim, *fakeComm) {
	t.Helper()
	j := newFakeJob(world)
	sh := j.newShim(rank, nil, s)
	fc := &fakeComm{rank: rank, events: &j.events[rank]}
	c := newComm(Handle(rank+1), world, rank, rank)
	c.state, c.dc, c.capacity = served, fc, sh.capacity(world)
	c.active.Store(&active{fc})
	sh.comms[c.h] = c
	return sh, fc
}

func events(sh *Shim) []string {
	f := sh.dev.(fakeRank)
	return f.j.events[f.r].get()
}

// TestDispatch: which calls detcoll takes, how they reach it, and what
// the others do in each mode.
func TestDispatch(t *testing.T) {
	s := testSettings()
	s.Capacity = 1000 // 250 float32s, 125 float64s
	call := func(kind Kind, send, recv uintptr, n int, dt nccl.DataType, op nccl.RedOp, h Handle, stream uintptr) Call {
		return Call{Kind: kind, Send: send, Recv: recv, Count: n, DType: dt, Op: op, Comm: h, Stream: stream}
	}
	for _, tc := range []struct {
		name string
		call Call
		// strict is the result in strict mode of a call handed in
		// delegate mode; Success means handed in both (an exact one).
		strict nccl.Result
		want   []string
	}{
		{"all-reduce split at the capacity", call(AllReduce, 0x10000, 0x20000, 600, nccl.Float32, nccl.Sum, 2, 7),
			0, []string{"allreduce 0x10000 0x20000 250 float32 0x7", "allreduce 0x103e8 0x203e8 250 float32 0x7", "allreduce 0x107d0 0x207d0 100 float32 0x7"}},
		{"in place", call(AllReduce, 0x10000, 0x10000, 8, nccl.Float64, nccl.Sum, 2, 0), 0, []string{"allreduce 0x10000 0x10000 8 float64 0x0"}},
		{"no elements", call(AllReduce, 0x10000, 0x10000, 0, nccl.Float16, nccl.Sum, 2, 0), 0, nil},
		{"bfloat16", call(AllReduce, 0x10000, 0x10000, 2, nccl.Bfloat16, nccl.Sum, 2, 0), 0, []string{"allreduce 0x10000 0x10000 2 bfloat16 0x0"}},
		{"float16", call(AllReduce, 0x10000, 0x10000, 2, nccl.Float16, nccl.Sum, 2, 0), 0, []string{"allreduce 0x10000 0x10000 2 float16 0x0"}},
		{"average of floats", call(AllReduce, 1, 2, 8, nccl.Float32, nccl.Avg, 2, 0), 0, []string{"allreduce 0x1 0x2 8 float32 0x0 avg"}},
		{"max of floats", call(AllReduce, 1, 2, 8, nccl.Bfloat16, nccl.Max, 2, 0), 0, []string{"allreduce 0x1 0x2 8 bfloat16 0x0 max"}},
		{"min of floats", call(ReduceScatter, 1, 2, 8, nccl.Float64, nccl.Min, 2, 0), 0, []string{"reducescatter 0x1 0x2 8 float64 0x0 min"}},
		{"integer sum", call(AllReduce, 1, 2, 8, nccl.Int32, nccl.Sum, 2, 0), 0, []string{"allreduce 0x1 0x2 8 int32 0x0"}},
		{"integer max", call(AllReduce, 1, 2, 8, nccl.Int64, nccl.Max, 2, 0), 0, []string{"allreduce 0x1 0x2 8 int64 0x0 max"}},
		{"integer min", call(ReduceScatter, 1, 2, 8, nccl.Uint8, nccl.Min, 2, 0), 0, []string{"reducescatter 0x1 0x2 8 uint8 0x0 min"}},
		{"integer average", call(AllReduce, 1, 2, 8, nccl.Uint64, nccl.Avg, 2, 0), 0, []string{"allreduce 0x1 0x2 8 uint64 0x0 avg"}},
		{"product of floats", call(AllReduce, 1, 2, 8, nccl.Float32, nccl.Prod, 2, 0), nccl.InvalidUsage, nil},
		{"integer product: exact", call(AllReduce, 1, 2, 8, nccl.Int32, nccl.Prod, 2, 0), nccl.Success, nil},
		{"an 8-bit float", call(AllReduce, 1, 2, 8, 10, nccl.Sum, 2, 0), nccl.InvalidUsage, nil},
		{"a dynamic op not made through the library", call(AllReduce, 1, 2, 8, nccl.Bfloat16, 5, 2, 0), nccl.InvalidUsage, nil},
		{"one of integers", call(AllReduce, 1, 2, 8, nccl.Int32, 5, 2, 0), nccl.InvalidUsage, nil},
		{"reduce-scatter", call(ReduceScatter, 0x10000, 0x20000, 100, nccl.Bfloat16, nccl.Sum, 2, 3),
			0, []string{"reducescatter 0x10000 0x20000 100 bfloat16 0x3"}},
		{"reduce at the root", Call{Kind: Reduce, Send: 0x10000, Recv: 0x20000, Count: 10, DType: nccl.Float32, Op: nccl.Sum, Root: 1, Comm: 2},
			0, []string{"allreduce 0x10000 0x20000 10 float32 0x0"}},
		{"an unknown communicator", call(AllReduce, 1, 2, 8, nccl.Float32, nccl.Sum, 99, 0), nccl.InvalidUsage, nil},
		{"an unknown communicator, exact", call(AllReduce, 1, 2, 8, nccl.Uint32, nccl.Sum, 99, 0), nccl.Success, nil},
	} {
		for _, mode := range []Mode{Delegate, Strict} {
			s.Mode = mode
			sh, fc := servedShim(t, 2, 1, s)
			var warned []string
			sh.Warn = func(why string, refused bool) { warned = append(warned, fmt.Sprint(refused, " ", why)) }
			res, v := sh.Do(tc.call, 0)
			if called := fc.log(); !slices.Equal(called, tc.want) {
				t.Errorf("%s, mode %d: detcoll saw %q, want %q", tc.name, mode, called, tc.want)
			}
			wantHanded := tc.want == nil && tc.name != "no elements"
			switch {
			case !wantHanded && (res != nccl.Success || v != Done):
				t.Errorf("%s, mode %d: %d, verdict %v; want detcoll's success", tc.name, mode, res, v)
			case wantHanded && tc.strict == nccl.Success && (v != Handed || res != nccl.Success || len(warned) != 0):
				t.Errorf("%s, mode %d: %d, verdict %v, warned %q; want it handed in every mode, silently", tc.name, mode, res, v, warned)
			case wantHanded && tc.strict != nccl.Success && mode == Delegate && (v != Handed || res != nccl.Success || len(warned) != 1):
				t.Errorf("%s: delegate mode: %d, verdict %v, warned %q; want handed with one warning", tc.name, res, v, warned)
			case wantHanded && tc.strict != nccl.Success && mode == Strict && (v != Done || res != tc.strict ||
				!strings.Contains(sh.LastError(), EnvMode) || len(warned) != 1 || !strings.HasPrefix(warned[0], "true")):
				t.Errorf("%s: strict mode: %d, verdict %v, last error %q, warned %q; want %d, said on stderr too", tc.name, res, v, sh.LastError(), warned, tc.strict)
			}
		}
	}
}

// TestDetcollTypes: the element types detcoll reduces are NCCL's four
// float types and six integer types, each as itself (float16 served as
// bfloat16 would give other bits), and no other.
func TestDetcollTypes(t *testing.T) {
	want := map[nccl.DataType]detcoll.DType{nccl.Bfloat16: detcoll.TypeBFloat16, nccl.Float16: detcoll.TypeFloat16,
		nccl.Float32: detcoll.TypeFloat32, nccl.Float64: detcoll.TypeFloat64, nccl.Int8: detcoll.TypeInt8,
		nccl.Uint8: detcoll.TypeUint8, nccl.Int32: detcoll.TypeInt32, nccl.Uint32: detcoll.TypeUint32,
		nccl.Int64: detcoll.TypeInt64, nccl.Uint64: detcoll.TypeUint64}
	for dt := nccl.DataType(-1); dt < 16; dt++ {
		got, ok := detcollType(dt)
		if w, served := want[dt]; ok != served || ok && got != w {
			t.Errorf("detcollType(%v) = %v, %v; want %v, %v", dt, got, ok, w, served)
		}
	}
}

// TestOperators: every operator detcoll has reaches it as itself, on each
// of the ten element types it reduces (the integer ones too: same bits as
// NCCL's, but served), in all-reduce, reduce-scatter and reduce alike; a
// product never does (detcoll has none), handed silently for integers
// (exact in any order) and said or refused for floats.
func TestOperators(t *testing.T) {
	ops := map[nccl.RedOp]detcoll.RedOp{nccl.Sum: detcoll.Sum, nccl.Avg: detcoll.Avg, nccl.Max: detcoll.Max, nccl.Min: detcoll.Min}
	types := []nccl.DataType{nccl.Bfloat16, nccl.Float16, nccl.Float32, nccl.Float64, nccl.Int8, nccl.Uint8,
		nccl.Int32, nccl.Uint32, nccl.Int64, nccl.Uint64}
	for _, mode := range []Mode{Delegate, Strict} {
		s := testSettings()
		s.Mode = mode
		for _, dt := range types {
			for _, kind := range []Kind{AllReduce, ReduceScatter, Reduce} {
				for op := nccl.Sum; op <= nccl.Avg; op++ {
					sh, fc := servedShim(t, 2, 0, s)
					warned := 0
					sh.Warn = func(string, bool) { warned++ }
					call := Call{Kind: kind, Send: 0x10000, Recv: 0x20000, Count: 4, DType: dt, Op: op, Comm: 1, Stream: 3}
					res, v := sh.Do(call, 0)
					want, served := ops[op]
					got := fc.opLog()
					switch {
					case served && (res != nccl.Success || v != Done || len(got) != 1 || got[0] != want):
						t.Errorf("mode %d: %v of %v with %v = %d, verdict %v, detcoll got %v; want it served with %v", mode, kind, dt, op, res, v, got, want)
					case !served && integer(dt) && (res != nccl.Success || v != Handed || len(got) != 0 || warned != 0):
						t.Errorf("mode %d: %v of %v with %v = %d, verdict %v, detcoll got %v, %d warnings; want it handed silently", mode, kind, dt, op, res, v, got, warned)
					case !served && !integer(dt) && (len(got) != 0 || warned != 1 || mode == Delegate && v != Handed || mode == Strict && res != nccl.InvalidUsage):
						t.Errorf("mode %d: %v of %v with %v = %d, verdict %v, detcoll got %v, %d warnings; want it handed or refused, saying so", mode, kind, dt, op, res, v, got, warned)
					}
				}
			}
		}
	}
}

// TestReduceEveryRoot: Reduce with roots 0, 1, 0 (vLLM's reduce-scatterv
// is a group of Reduce with every root): the root sums into its recvbuff,
// the others into the device's discard buffer, in pieces that fit it,
// never into the caller's buffers (NCCL lets recvbuff off the root be
// anything, NULL too).
func TestReduceEveryRoot(t *testing.T) {
	s := testSettings()
	s.Capacity = 1000
	for rank := range 2 {
		sh, fc := servedShim(t, 2, rank, s)
		var want []string
		for _, root := range []int{0, 1, 0} {
			call := Call{Kind: Reduce, Send: 0x10000, Recv: 0, Count: 300, DType: nccl.Float32, Op: nccl.Sum, Root: root, Comm: Handle(rank + 1), Stream: 5}
			if root == rank {
				call.Recv = 0x20000
			}
			if res, v := sh.Do(call, 0); res != nccl.Success || v != Done {
				t.Fatalf("rank %d: Reduce to %d = %d, verdict %v (%s)", rank, root, res, v, sh.LastError())
			}
			out, step := uintptr(0x20000), uintptr(1000)
			if root != rank {
				out, step = sh.discard[rank].ptr, 0
			}
			want = append(want, fmt.Sprintf("allreduce 0x10000 %#x 250 float32 0x5", out),
				fmt.Sprintf("allreduce 0x103e8 %#x 50 float32 0x5", out+step))
		}
		if got := fc.log(); !slices.Equal(got, want) {
			t.Errorf("rank %d: detcoll saw %q, want %q", rank, got, want)
		}
		if d := sh.discard[rank]; d.ptr == 0 || d.size < 1000 {
			t.Errorf("rank %d: discard %+v", rank, d)
		}
		if res := sh.Destroy(Handle(rank + 1)); res != nccl.Success || sh.lookup(Handle(rank+1)) != nil {
			t.Errorf("Destroy = %d", res)
		}
		if log := fc.log(); log[len(log)-1] != "close" {
			t.Errorf("Destroy did not close detcoll's communicator: %q", log)
		}
	}
}

// TestReduceRootOutOfRange: a bad root is refused, the communicator stays
// served.
func TestReduceRootOutOfRange(t *testing.T) {
	sh, fc := servedShim(t, 2, 0, testSettings())
	call := Call{Kind: Reduce, Send: 0x10000, Recv: 0x20000, Count: 4, DType: nccl.Float32, Op: nccl.Sum, Root: 2, Comm: 1}
	if res, _ := sh.Do(call, 0); res != nccl.InvalidArgument || len(fc.log()) != 0 {
		t.Errorf("Reduce to root 2 of 2 = %d, detcoll saw %q", res, fc.log())
	}
	if st, _ := stateOf(sh, 1); st != served {
		t.Errorf("state %d after a refused root; want served", st)
	}
}

// TestReduceScatterOverCapacity: a reduce-scatter larger than the capacity
// is cut into pieces of m elements per rank: each piece gathers the
// piece's part of every rank's block into the gathering memory (W copies
// on the call's stream), then reduce-scatters it into its place in
// recvbuff; the gathering memory is allocated once.
func TestReduceScatterOverCapacity(t *testing.T) {
	s := testSettings()
	s.Capacity = 1000 // 125 float32s per rank of 2: pieces of 125
	sh, _ := servedShim(t, 2, 1, s)
	const n = 300 // per rank: pieces of 125, 125, 50
	call := Call{Kind: ReduceScatter, Send: 0x100000, Recv: 0x200000, Count: n, DType: nccl.Float32, Op: nccl.Sum, Comm: 2, Stream: 9}
	for range 2 {
		if res, v := sh.Do(call, 0); res != nccl.Success || v != Done {
			t.Fatalf("ReduceScatter = %d, verdict %v (%s)", res, v, sh.LastError())
		}
	}
	g := sh.lookup(2).gather
	if g.ptr == 0 || g.size != 1000 {
		t.Fatalf("gathering memory %+v; want 1000 bytes", g)
	}
	var want []string
	for _, p := range []struct{ off, k int }{{0, 125}, {125, 125}, {250, 50}} {
		for r := range 2 {
			want = append(want, fmt.Sprintf("copy %#x %#x %d 0x9", g.ptr+uintptr(r*p.k*4), 0x100000+(r*n+p.off)*4, p.k*4))
		}
		want = append(want, fmt.Sprintf("reducescatter %#x %#x %d float32 0x9", g.ptr, 0x200000+p.off*4, p.k))
	}
	want = append(want, want...)
	if got := events(sh); !slices.Equal(got, want) {
		t.Errorf("events\n got %q\nwant %q", got, want)
	}
	if sh.gathering.Load() != 1000 {
		t.Errorf("gathering bytes %d", sh.gathering.Load())
	}
	sh.Destroy(2)
	if sh.gathering.Load() != 0 {
		t.Errorf("gathering bytes %d after Destroy", sh.gathering.Load())
	}
}

// TestFirstBigReduceScatterNotCaptured: the first reduce-scatter over the
// capacity allocates; inside a graph capture it is handed (delegate) or
// refused (strict) on every rank alike, and nothing is allocated; once
// one ran, captured ones are detcoll's.
func TestFirstBigReduceScatterNotCaptured(t *testing.T) {
	s := testSettings()
	s.Capacity = 1000
	for _, mode := range []Mode{Delegate, Strict} {
		s.Mode = mode
		sh, fc := servedShim(t, 2, 0, s)
		j := sh.dev.(fakeRank).j
		capture := func(on bool) {
			j.mu.Lock()
			j.capturing = on
			j.mu.Unlock()
		}
		call := Call{Kind: ReduceScatter, Send: 0x100000, Recv: 0x200000, Count: 300, DType: nccl.Float32, Op: nccl.Sum, Comm: 1, Stream: 9}
		capture(true)
		res, v := sh.Do(call, 0)
		if mode == Delegate && (v != Handed || res != nccl.Success) || mode == Strict && (v != Done || res != nccl.InvalidUsage) ||
			len(fc.log()) != 0 || sh.lookup(1).gather.ptr != 0 {
			t.Errorf("mode %d: captured first big ReduceScatter = %d, verdict %v, detcoll saw %q", mode, res, v, fc.log())
		}
		capture(false)
		if res, v := sh.Do(call, 0); res != nccl.Success || v != Done {
			t.Errorf("mode %d: first big ReduceScatter = %d, verdict %v", mode, res, v)
		}
		capture(true)
		if res, v := sh.Do(call, 0); res != nccl.Success || v != Done || len(fc.log()) != 6 {
			t.Errorf("mode %d: captured second one = %d, verdict %v, detcoll saw %q", mode, res, v, fc.log())
		}
	}
}

// TestFirstUseCaptured: a pending communicator cannot set up inside a
// graph capture: its first sum there is handed (delegate) or refused
// (strict), and it stays pending.
func TestFirstUseCaptured(t *testing.T) {
	for _, mode := range []Mode{Delegate, Strict} {
		s := testSettings()
		s.Mode = mode
		j := newFakeJob(2)
		j.capturing = true
		sh := j.newShim(0, (&fakeOpen{}).open, s)
		sh.Init(1, 2, 0, true)
		res, v := sh.Do(sum(1, 8, 8, 4, 0), 0)
		if mode == Delegate && (v != Handed || res != nccl.Success) || mode == Strict && (v != Done || res != nccl.InvalidUsage) {
			t.Errorf("mode %d: first reduction captured = %d, verdict %v", mode, res, v)
		}
		if st, _ := stateOf(sh, 1); st != pending {
			t.Errorf("mode %d: state %d; want pending", mode, st)
		}
	}
}

// TestFailurePoisons: a failed detcoll call poisons the communicator (every
// later reduction returns the failure, ncclCommGetAsyncError reports it);
// a refused argument does not.
func TestFailurePoisons(t *testing.T) {
	sh, fc := servedShim(t, 2, 0, testSettings())
	fc.fail = fmt.Errorf("%w: device address 0x3 is not aligned", detcoll.ErrInvalid)
	if res, _ := sh.Do(sum(1, 3, 3, 4, 0), 0); res != nccl.InvalidArgument {
		t.Errorf("misaligned AllReduce = %d; want InvalidArgument", res)
	}
	if res, _ := sh.Do(sum(1, 8, 8, 4, 0), 0); res != nccl.Success {
		t.Errorf("AllReduce after a refused one = %d", res)
	}
	lost := &detcoll.RankError{Rank: 1, Err: detcoll.ErrPeerLost, Reason: "its process 1001 exited"}
	fc.fail = lost
	if res, _ := sh.Do(sum(1, 8, 8, 4, 0), 0); res != nccl.RemoteError {
		t.Errorf("AllReduce that lost its peer = %d; want RemoteError", res)
	}
	n := len(fc.log())
	rs := Call{Kind: ReduceScatter, Send: 8, Recv: 8, Count: 4, DType: nccl.Float32, Op: nccl.Sum, Comm: 1}
	if res, v := sh.Do(rs, 0); res != nccl.RemoteError || v != Done || len(fc.log()) != n {
		t.Errorf("a call on the poisoned communicator = %d, verdict %v, reached detcoll: %v", res, v, len(fc.log()) != n)
	}
	if !strings.Contains(sh.LastError(), "its process 1001 exited") {
		t.Errorf("last error %q", sh.LastError())
	}
	fc.err = lost
	if res := sh.AsyncError(1); res != nccl.RemoteError {
		t.Errorf("AsyncError = %d; want RemoteError", res)
	}
}

// TestAbortStopsDetcoll: ncclCommAbort aborts detcoll's communicator first
// (its kernels stop at the abort word), then closes it, and forgets the
// handle: later calls on it go to the real NCCL (delegate), which aborted
// it too.
func TestAbortStopsDetcoll(t *testing.T) {
	sh, fc := servedShim(t, 2, 0, testSettings())
	sh.Abort(1)
	if got := fc.log(); !slices.Equal(got, []string{"abort", "close"}) {
		t.Errorf("Abort did %q to detcoll's communicator; want abort, then close", got)
	}
	if sh.lookup(1) != nil {
		t.Error("the aborted communicator is still known")
	}
	if res, v := sh.Do(sum(1, 8, 8, 4, 0), 0); v != Handed || res != nccl.Success {
		t.Errorf("AllReduce after Abort = %d, verdict %v", res, v)
	}
}

// TestCapacityFor: the capacity derived from the memory setting fits it
// with the reduce-scatter's gathering memory, is the largest whole MiB
// that does, and is largest for one rank (the discard buffer, sized for
// one rank, holds a piece of any communicator's).
func TestCapacityFor(t *testing.T) {
	const mib = 1 << 20
	for _, memory := range []int64{32 * mib, DefaultMemory, 256 * mib} {
		one := capacityFor(memory, 1)
		for _, w := range []int{1, 2, 3, 4, 8, 16, 64} {
			c := capacityFor(memory, w)
			used := func(c int64) int64 { return cuda.BufferBytes(c, w) + c }
			if c%mib != 0 || c > one || used(c) > memory && c > mib || used(c+mib) <= memory {
				t.Errorf("memory %d MiB, %d ranks: capacity %d MiB uses %d MiB; one more would use %d", memory/mib, w, c/mib, used(c)/mib, used(c+mib)/mib)
			}
		}
	}
	if c := capacityFor(DefaultMemory, 2); c != 17*mib {
		t.Errorf("the default capacity at 2 ranks is %d MiB; the docs say 17", c/mib)
	}
}

// BenchmarkDo is the shim's own host cost of a served all-reduce (the
// detcoll communicator a fake that records nothing): the lookups, locks
// and checks a call pays before and after detcoll's device call.
func BenchmarkDo(b *testing.B) {
	sh, fc := servedShim(&testing.T{}, 2, 0, testSettings())
	fc.quiet = true
	call := sum(1, 0x1000, 0x1000, 512, 0xa)
	b.ReportAllocs()
	for b.Loop() {
		sh.Do(call, 0)
	}
}
