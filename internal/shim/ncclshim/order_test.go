package ncclshim

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/detcoll/detcoll/internal/binding/nccl"
)

// TestStreamOrder: a communicator's calls run in the order they are made
// whatever stream each is queued on, as NCCL's do: a call on another
// stream than the last one's first makes its stream follow the last one
// (PyTorch's asynchronous collectives on the process group's stream
// between synchronous ones on the current stream, without a wait). Calls
// on one stream need nothing.
func TestStreamOrder(t *testing.T) {
	sh, _ := servedShim(t, 2, 0, testSettings())
	for _, stream := range []uintptr{0xa, 0xa, 0xb, 0xa, 0x0, 0x0} {
		if res, v := sh.Do(sum(1, 0x1000, 0x1000, 4, stream), 0); res != nccl.Success || v != Done {
			t.Fatalf("AllReduce on %#x = %d, verdict %v", stream, res, v)
		}
	}
	want := []string{
		"allreduce 0x1000 0x1000 4 float32 0xa",
		"allreduce 0x1000 0x1000 4 float32 0xa",
		"follow 0xb 0xa", "allreduce 0x1000 0x1000 4 float32 0xb",
		"follow 0xa 0xb", "allreduce 0x1000 0x1000 4 float32 0xa",
		"follow 0x0 0xa", "allreduce 0x1000 0x1000 4 float32 0x0",
		"allreduce 0x1000 0x1000 4 float32 0x0",
	}
	if got := events(sh); !slices.Equal(got, want) {
		t.Errorf("events\n got %q\nwant %q", got, want)
	}
}

// TestGroupRunsBesideForwarded: inside a group that also holds operations
// of the real NCCL, a served call is deferred (nothing reaches detcoll at
// the call), its communicator's side stream forks from the call's stream
// before the real group end queues the group's operations (phase 0), the
// call runs on the side stream after it (phase 1), and the call's stream
// joins the side stream: what follows the group follows both, and the
// served call never waits behind the group's receives, nor they behind it.
func TestGroupRunsBesideForwarded(t *testing.T) {
	sh, fc := servedShim(t, 2, 0, testSettings())
	const group = 7
	res, v := sh.Do(sum(1, 0x1000, 0x2000, 4, 0xa), group)
	if res != nccl.Success || v != Deferred || len(fc.log()) != 0 {
		t.Fatalf("AllReduce in a group = %d, verdict %v, detcoll saw %q; want it deferred", res, v, fc.log())
	}
	if r, left := sh.GroupEnd(group, 0, true); r != nccl.Success || !left {
		t.Fatalf("phase 0 = %d, left %v", r, left)
	}
	side := sh.lookup(1).side
	if side == 0 {
		t.Fatal("no side stream after phase 0")
	}
	if got, want := events(sh), []string{fmt.Sprintf("fork %#x 0xa", side)}; !slices.Equal(got, want) {
		t.Fatalf("phase 0 did %q; want %q (the fork only)", got, want)
	}
	if r, _ := sh.GroupEnd(group, 1, true); r != nccl.Success {
		t.Fatalf("phase 1 = %d", r)
	}
	want := []string{
		fmt.Sprintf("fork %#x 0xa", side),
		fmt.Sprintf("allreduce 0x1000 0x2000 4 float32 %#x", side),
		fmt.Sprintf("fork 0xa %#x", side),
	}
	if got := events(sh); !slices.Equal(got, want) {
		t.Errorf("events\n got %q\nwant %q", got, want)
	}
	// The next call, on the caller's stream, follows the side stream's.
	sh.Do(sum(1, 0x1000, 0x2000, 4, 0xa), 0)
	if got := events(sh)[3:]; !slices.Equal(got, []string{fmt.Sprintf("follow 0xa %#x", side), "allreduce 0x1000 0x2000 4 float32 0xa"}) {
		t.Errorf("after the group: %q", got)
	}
	if sh.groups.get(group) != nil {
		t.Error("the group's calls are still held")
	}
	sh.Destroy(1)
	if sh.lookup(1) != nil {
		t.Error("still known")
	}
}

// TestGroupOfServedOnly: a group that holds only served calls (PyTorch's
// coalesced collectives) runs them at phase 0, each on its own stream, in
// order, with no side stream.
func TestGroupOfServedOnly(t *testing.T) {
	sh, _ := servedShim(t, 2, 0, testSettings())
	const group = 3
	sh.Do(sum(1, 0x1000, 0x1000, 4, 0xa), group)
	rs := Call{Kind: ReduceScatter, Send: 0x3000, Recv: 0x4000, Count: 2, DType: nccl.Float32, Op: nccl.Sum, Comm: 1, Stream: 0xa}
	sh.Do(rs, group)
	if len(events(sh)) != 0 {
		t.Fatalf("calls ran inside the group: %q", events(sh))
	}
	if r, left := sh.GroupEnd(group, 0, false); r != nccl.Success || left {
		t.Fatalf("phase 0 = %d, left %v; want all run", r, left)
	}
	want := []string{"allreduce 0x1000 0x1000 4 float32 0xa", "reducescatter 0x3000 0x4000 2 float32 0xa"}
	if got := events(sh); !slices.Equal(got, want) {
		t.Errorf("phase 0 did %q; want %q", got, want)
	}
	if r, _ := sh.GroupEnd(group, 1, false); r != nccl.Success || len(events(sh)) != 2 || sh.lookup(1).side != 0 {
		t.Errorf("phase 1 = %d, events %q, side %#x; want nothing more", r, events(sh), sh.lookup(1).side)
	}
}

// TestGroupFailureAtEnd: a served call that fails at the group's end fails
// the group end, with the reason as the last error.
func TestGroupFailureAtEnd(t *testing.T) {
	sh, fc := servedShim(t, 2, 0, testSettings())
	fc.fail = fmt.Errorf("peer gone: %w", errNoCall)
	sh.Do(sum(1, 0x1000, 0x1000, 4, 0xa), 9)
	if r, _ := sh.GroupEnd(9, 0, false); r == nccl.Success {
		t.Errorf("GroupEnd = %d; want the call's failure", r)
	}
	if sh.LastError() == "" {
		t.Error("no last error")
	}
}

// TestGroupSimulateDrops: ncclGroupSimulateEnd runs nothing; the group's
// deferred calls are forgotten.
func TestGroupSimulateDrops(t *testing.T) {
	sh, fc := servedShim(t, 2, 0, testSettings())
	sh.Do(sum(1, 0x1000, 0x1000, 4, 0xa), 4)
	sh.GroupDrop(4)
	if r, _ := sh.GroupEnd(4, 1, true); r != nccl.Success || len(fc.log()) != 0 {
		t.Errorf("after the drop: %d, detcoll saw %q", r, fc.log())
	}
}

// TestGroupFirstUse: a communicator whose first served reduction is in a
// group sets up at the group's end, after the real group end (its setup's
// NCCL calls cannot join the group), on every rank, and serves the call;
// one whose setup fails makes the call with the real NCCL there instead.
func TestGroupFirstUse(t *testing.T) {
	for _, fail := range []bool{false, true} {
		o := &fakeOpen{steps: 1}
		if fail {
			o.failAt = map[int]int{1: 0}
		}
		j, shims := job(2, o.open, testSettings())
		o.job = j
		initAll(t, shims)
		var wg sync.WaitGroup
		for r, s := range shims {
			wg.Go(func() {
				if res, v := s.Do(sum(Handle(r+1), 0x1000, 0x2000, 4, 0xa), 11); res != nccl.Success || v != Deferred {
					t.Errorf("rank %d: first AllReduce in a group = %d, verdict %v; want deferred", r, res, v)
				}
				if res, left := s.GroupEnd(11, 0, true); res != nccl.Success || !left {
					t.Errorf("rank %d: phase 0 = %d, left %v", r, res, left)
				}
				if n := j.calls[r]; n != 0 {
					t.Errorf("rank %d: %d setup rounds inside the group", r, n)
				}
				if res, _ := s.GroupEnd(11, 1, true); res != nccl.Success {
					t.Errorf("rank %d: phase 1 = %d (%s)", r, res, s.LastError())
				}
			})
		}
		wg.Wait()
		for r, s := range shims {
			st, _ := stateOf(s, Handle(r+1))
			side := s.lookup(Handle(r + 1)).side
			var want []string
			if fail {
				want = []string{fmt.Sprintf("fork %#x 0xa", side), "real AllReduce 0x1000 0x2000 4 float32 sum 0xa", fmt.Sprintf("fork 0xa %#x", side)}
			} else {
				want = []string{fmt.Sprintf("fork %#x 0xa", side), fmt.Sprintf("allreduce 0x1000 0x2000 4 float32 %#x", side), fmt.Sprintf("fork 0xa %#x", side)}
			}
			// The setup's own stream follows the side stream, as it
			// follows the stream of a first call outside a group.
			got := j.events[r].get()
			if len(got) > 1 && strings.HasPrefix(got[1], "follow ") && strings.HasSuffix(got[1], fmt.Sprintf(" %#x", side)) {
				got = slices.Delete(got, 1, 2)
			}
			if fail != (st == unserved) || !slices.Equal(got, want) {
				t.Errorf("setup fails %v: rank %d: state %d, events\n got %q\nwant %q", fail, r, st, got, want)
			}
		}
	}
}

// TestGroupNoDriver: where detcoll can never be set up (no CUDA driver), a
// pending communicator's sum in a group is handed at once, inside the
// group, as it would be made without the library, not deferred.
func TestGroupNoDriver(t *testing.T) {
	j := newFakeJob(2)
	j.noDriver = fmt.Errorf("no libcuda.so.1")
	sh := j.newShim(0, (&fakeOpen{}).open, testSettings())
	sh.Init(1, 2, 0, true)
	if res, v := sh.Do(sum(1, 8, 8, 4, 0xa), 5); res != nccl.Success || v != Handed {
		t.Errorf("sum in a group without a driver = %d, verdict %v; want handed now", res, v)
	}
	if st, why := stateOf(sh, 1); st != unserved || !strings.Contains(why, "no libcuda") {
		t.Errorf("state %d (%s)", st, why)
	}
}
