package ncclshim

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/detcoll/detcoll"
	"github.com/detcoll/detcoll/internal/nccl"
)

func testSettings() Settings {
	return Settings{Mode: Delegate, Capacity: 1 << 20, Timeout: 10 * time.Second}
}

// initAll runs Init on every rank's shim at once (ranks are processes: the
// inits meet in the setup's rounds), skipping the ranks in absent.
func initAll(t *testing.T, shims []*Shim, absent ...int) {
	t.Helper()
	var wg sync.WaitGroup
	for r, s := range shims {
		if slices.Contains(absent, r) {
			continue
		}
		wg.Go(func() {
			if res := s.Init(Handle(r+1), len(shims), r, true); res != nccl.Success {
				t.Errorf("rank %d: Init = %d", r, res)
			}
		})
	}
	wg.Wait()
}

func job(world int, open OpenFunc, s Settings) (*fakeJob, []*Shim) {
	j := newFakeJob(world)
	shims := make([]*Shim, world)
	for r := range shims {
		shims[r] = j.newShim(r, open, s)
	}
	return j, shims
}

func stateOf(s *Shim, h Handle) (state, string) {
	c := s.lookup(h)
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.state, c.why
}

// TestSetupServes: three ranks set up over the real NCCL's all-gather; each
// makes the same rounds; every sum reduction of a float type then goes to
// detcoll.
func TestSetupServes(t *testing.T) {
	o := &fakeOpen{steps: 3}
	j, shims := job(3, o.open, testSettings())
	initAll(t, shims)
	for r, s := range shims {
		if st, why := stateOf(s, Handle(r+1)); st != served {
			t.Fatalf("rank %d: state %d (%s); want served", r, st, why)
		}
	}
	// Identity, three rounds of Open, agreement: 5 exchanges, each a
	// header round and (except the agreement's) a payload round.
	for r, n := range j.calls {
		if n != j.calls[0] {
			t.Errorf("rank %d queued %d all-gathers, rank 0 %d", r, n, j.calls[0])
		}
	}
	if j.calls[0] != 9 {
		t.Errorf("%d all-gathers per rank; want 9", j.calls[0])
	}
	for r, s := range shims {
		res, handed := s.AllReduce(0x1000, 0x2000, 100, nccl.Bfloat16, nccl.Sum, Handle(r+1), 0x42, false)
		if res != nccl.Success || handed {
			t.Errorf("rank %d: AllReduce = %d, handed %v", r, res, handed)
		}
		if got := o.comms[r].log(); !slices.Equal(got, []string{"allreduce 0x1000 0x2000 100 bfloat16 0x42"}) {
			t.Errorf("rank %d: detcoll saw %q", r, got)
		}
	}
}

// TestSetupNonblocking: over a nonblocking communicator, whose all-gathers
// return InProgress and reach their streams later, the setup waits for
// each to be queued before it waits for its stream (an idle stream then
// means nothing), and serves.
func TestSetupNonblocking(t *testing.T) {
	o := &fakeOpen{steps: 3}
	j, shims := job(3, o.open, testSettings())
	j.nonblocking = true
	initAll(t, shims)
	for r, s := range shims {
		if st, why := stateOf(s, Handle(r+1)); st != served {
			t.Errorf("rank %d: state %d (%s); want served", r, st, why)
		}
	}
}

// TestSetupFailureAgreed: one rank's Open fails, at its first round, in
// the middle or after its last: every rank ends unserved with the failure
// named, having made the same rounds (nobody waits for a round that no
// one else makes).
func TestSetupFailureAgreed(t *testing.T) {
	for _, at := range []int{0, 1, 3} {
		t.Run("", func(t *testing.T) {
			o := &fakeOpen{steps: 3, failAt: map[int]int{1: at}}
			j, shims := job(3, o.open, testSettings())
			done := make(chan struct{})
			go func() { initAll(t, shims); close(done) }()
			select {
			case <-done:
			case <-time.After(5 * time.Second):
				t.Fatalf("failure at round %d: setup hung", at)
			}
			for r, s := range shims {
				st, why := stateOf(s, Handle(r+1))
				if st != unserved || !strings.Contains(why, "rank 1") || !strings.Contains(why, "out of device memory") {
					t.Errorf("failure at round %d: rank %d: state %d, why %q", at, r, st, why)
				}
			}
			if !slices.Equal(j.calls, []int{j.calls[0], j.calls[0], j.calls[0]}) {
				t.Errorf("failure at round %d: all-gathers per rank %v", at, j.calls)
			}
			for r, c := range o.comms {
				if log := c.log(); !slices.Contains(log, "close") {
					t.Errorf("rank %d: the detcoll communicator of a failed setup was not closed: %q", r, log)
				}
			}
			// Every reduction is handed to the real NCCL now, on every
			// rank alike; strict mode refuses it, saying why.
			for r, s := range shims {
				if res, handed := s.AllReduce(1, 2, 3, nccl.Float32, nccl.Sum, Handle(r+1), 0, false); !handed || res != nccl.Success {
					t.Errorf("rank %d: unserved AllReduce = %d, handed %v", r, res, handed)
				}
				s.settings.Mode = Strict
				if res, handed := s.AllReduce(1, 2, 3, nccl.Float32, nccl.Sum, Handle(r+1), 0, false); handed || res != nccl.InvalidUsage ||
					!strings.Contains(s.LastError(), "out of device memory") {
					t.Errorf("rank %d: strict unserved AllReduce = %d, handed %v, last error %q", r, res, handed, s.LastError())
				}
			}
		})
	}
}

// TestSetupPeerDies: rank 2 dies after the first round; the others' setup
// ends at once (its process is seen gone), not at the timeout.
func TestSetupPeerDies(t *testing.T) {
	o := &fakeOpen{steps: 3}
	s := testSettings()
	s.Timeout = time.Minute
	j, shims := job(3, o.open, s)
	// Rank 2 takes part in the first round only.
	go func() {
		sh := shims[2]
		tr, _ := newDeviceTransport(sh.real, sh.dev, 3, 3, 0)
		r := newRendezvous(tr, 3, 2)
		r.identify(t.Context(), sh.getpid())
		j.kill(2)
	}()
	start := time.Now()
	initAll(t, shims, 2)
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("setup took %v after the peer died", d)
	}
	for r := range 2 {
		st, why := stateOf(shims[r], Handle(r+1))
		if st != unserved || !strings.Contains(why, "rank 2") || !strings.Contains(why, "exited") {
			t.Errorf("rank %d: state %d, why %q", r, st, why)
		}
	}
}

// TestAbortDuringSetup: a setup waiting for a peer that never comes ends
// when the communicator is aborted.
func TestAbortDuringSetup(t *testing.T) {
	o := &fakeOpen{steps: 1}
	s := testSettings()
	s.Timeout = time.Minute
	_, shims := job(2, o.open, s)
	done := make(chan nccl.Result)
	go func() { done <- shims[0].Init(1, 2, 0, true) }()
	for shims[0].lookup(1) == nil {
		time.Sleep(time.Millisecond)
	}
	time.Sleep(20 * time.Millisecond)
	shims[0].Abort(1)
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Init still waiting 5 s after Abort")
	}
}

// servedShim is one served rank of world, for the dispatch tests.
func servedShim(t *testing.T, world, rank int, s Settings) (*Shim, *fakeComm) {
	t.Helper()
	j := newFakeJob(world)
	sh := j.newShim(rank, nil, s)
	fc := &fakeComm{rank: rank}
	c := newComm(Handle(rank+1), world, rank, rank)
	c.state, c.dc = served, fc
	c.active.Store(&active{fc})
	sh.comms[c.h] = c
	return sh, fc
}

// TestDispatch: which calls detcoll takes, how they reach it, and what
// the others do in each mode.
func TestDispatch(t *testing.T) {
	s := testSettings()
	s.Capacity = 1000 // 250 float32s, 125 float64s
	for _, tc := range []struct {
		name   string
		call   func(*Shim) (nccl.Result, bool)
		strict nccl.Result // the result in strict mode when it is handed in delegate mode
		want   []string
	}{
		{"all-reduce split at the capacity", func(sh *Shim) (nccl.Result, bool) {
			return sh.AllReduce(0x10000, 0x20000, 600, nccl.Float32, nccl.Sum, 2, 7, false)
		}, 0, []string{"allreduce 0x10000 0x20000 250 float32 0x7", "allreduce 0x103e8 0x203e8 250 float32 0x7", "allreduce 0x107d0 0x207d0 100 float32 0x7"}},
		{"in place", func(sh *Shim) (nccl.Result, bool) {
			return sh.AllReduce(0x10000, 0x10000, 8, nccl.Float64, nccl.Sum, 2, 0, false)
		},
			0, []string{"allreduce 0x10000 0x10000 8 float64 0x0"}},
		{"no elements", func(sh *Shim) (nccl.Result, bool) {
			return sh.AllReduce(0x10000, 0x10000, 0, nccl.Float16, nccl.Sum, 2, 0, false)
		}, 0, nil},
		{"product", func(sh *Shim) (nccl.Result, bool) { return sh.AllReduce(1, 2, 8, nccl.Float32, nccl.Prod, 2, 0, false) }, nccl.InvalidUsage, nil},
		{"average", func(sh *Shim) (nccl.Result, bool) { return sh.AllReduce(1, 2, 8, nccl.Float32, nccl.Avg, 2, 0, false) }, nccl.InvalidUsage, nil},
		{"integers", func(sh *Shim) (nccl.Result, bool) { return sh.AllReduce(1, 2, 8, nccl.Int32, nccl.Sum, 2, 0, false) }, nccl.InvalidUsage, nil},
		{"a premul-sum op", func(sh *Shim) (nccl.Result, bool) { return sh.AllReduce(1, 2, 8, nccl.Bfloat16, 5, 2, 0, false) }, nccl.InvalidUsage, nil},
		{"reduce-scatter", func(sh *Shim) (nccl.Result, bool) {
			return sh.ReduceScatter(0x10000, 0x20000, 100, nccl.Bfloat16, nccl.Sum, 2, 3, false)
		},
			0, []string{"reducescatter 0x10000 0x20000 100 bfloat16 0x3"}},
		{"reduce-scatter over the capacity", func(sh *Shim) (nccl.Result, bool) {
			return sh.ReduceScatter(0x10000, 0x20000, 126, nccl.Float32, nccl.Sum, 2, 3, false)
		}, nccl.InvalidUsage, nil},
		{"reduce at the root", func(sh *Shim) (nccl.Result, bool) {
			return sh.Reduce(0x10000, 0x20000, 10, nccl.Float32, nccl.Sum, 1, 2, 0, false)
		},
			0, []string{"allreduce 0x10000 0x20000 10 float32 0x0"}},
		{"an unknown communicator", func(sh *Shim) (nccl.Result, bool) { return sh.AllReduce(1, 2, 8, nccl.Float32, nccl.Sum, 99, 0, false) }, nccl.Success, nil},
	} {
		for _, mode := range []Mode{Delegate, Strict} {
			s.Mode = mode
			sh, fc := servedShim(t, 2, 1, s)
			res, handed := tc.call(sh)
			called := fc.log()
			if !slices.Equal(called, tc.want) {
				t.Errorf("%s, mode %d: detcoll saw %q, want %q", tc.name, mode, called, tc.want)
			}
			wantHanded := tc.want == nil && tc.name != "no elements"
			switch {
			case !wantHanded && (res != nccl.Success || handed):
				t.Errorf("%s, mode %d: %d, handed %v; want detcoll's success", tc.name, mode, res, handed)
			case wantHanded && tc.strict == nccl.Success && (!handed || res != nccl.Success):
				t.Errorf("%s, mode %d: %d, handed %v; want it handed in every mode", tc.name, mode, res, handed)
			case wantHanded && tc.strict != nccl.Success && mode == Delegate && (!handed || res != nccl.Success):
				t.Errorf("%s: delegate mode: %d, handed %v; want handed", tc.name, res, handed)
			case wantHanded && tc.strict != nccl.Success && mode == Strict && (handed || res != tc.strict || !strings.Contains(sh.LastError(), EnvMode)):
				t.Errorf("%s: strict mode: %d, handed %v, last error %q; want %d", tc.name, res, handed, sh.LastError(), tc.strict)
			}
		}
	}
}

// TestReduceOffRoot: a rank other than the root sums into the shim's
// scratch memory, in pieces that fit it, never into the caller's buffers.
func TestReduceOffRoot(t *testing.T) {
	s := testSettings()
	s.Capacity = 1000
	sh, fc := servedShim(t, 2, 1, s)
	if res, handed := sh.Reduce(0x10000, 0x10000, 300, nccl.Float32, nccl.Sum, 0, 2, 5, false); res != nccl.Success || handed {
		t.Fatalf("Reduce = %d, handed %v", res, handed)
	}
	scratch := sh.lookup(2).scratch
	if scratch == 0 {
		t.Fatal("no scratch memory")
	}
	want := []string{
		fmt.Sprintf("allreduce 0x10000 %#x 250 float32 0x5", scratch),
		fmt.Sprintf("allreduce 0x103e8 %#x 50 float32 0x5", scratch),
	}
	if got := fc.log(); !slices.Equal(got, want) {
		t.Errorf("detcoll saw %q, want %q", got, want)
	}
	if res := sh.Destroy(2); res != nccl.Success || sh.lookup(2) != nil {
		t.Errorf("Destroy = %d", res)
	}
	if log := fc.log(); log[len(log)-1] != "close" {
		t.Errorf("Destroy did not close detcoll's communicator: %q", log)
	}
}

// TestFirstReduceNotCaptured: a communicator's first Reduce, which
// allocates the scratch memory off the root, is handed to NCCL on every
// rank when captured in a CUDA graph (an allocation would break the
// capture); once one ran, captured ones are detcoll's.
func TestFirstReduceNotCaptured(t *testing.T) {
	for _, rank := range []int{0, 1} { // the root, and the other rank
		sh, fc := servedShim(t, 2, rank, testSettings())
		j := sh.dev.(fakeRank).j
		capture := func(on bool) {
			j.mu.Lock()
			j.capturing = on
			j.mu.Unlock()
		}
		reduce := func() (nccl.Result, bool) {
			return sh.Reduce(0x10000, 0x20000, 10, nccl.Float32, nccl.Sum, 0, Handle(rank+1), 5, false)
		}
		capture(true)
		if res, handed := reduce(); res != nccl.Success || !handed || len(fc.log()) != 0 || sh.lookup(Handle(rank+1)).scratch != 0 {
			t.Errorf("rank %d: captured first Reduce = %d, handed %v, detcoll saw %q; want it handed, nothing allocated", rank, res, handed, fc.log())
		}
		capture(false)
		if res, handed := reduce(); res != nccl.Success || handed {
			t.Errorf("rank %d: first Reduce = %d, handed %v; want detcoll's", rank, res, handed)
		}
		capture(true)
		if res, handed := reduce(); res != nccl.Success || handed || len(fc.log()) != 2 {
			t.Errorf("rank %d: captured second Reduce = %d, handed %v, detcoll saw %q; want detcoll's", rank, res, handed, fc.log())
		}
	}
}

// TestFailurePoisons: a failed detcoll call poisons the communicator (every
// later reduction returns the failure, ncclCommGetAsyncError reports it);
// a refused argument does not.
func TestFailurePoisons(t *testing.T) {
	sh, fc := servedShim(t, 2, 0, testSettings())
	fc.fail = fmt.Errorf("%w: device address 0x3 is not aligned", detcoll.ErrInvalid)
	if res, _ := sh.AllReduce(3, 3, 4, nccl.Float32, nccl.Sum, 1, 0, false); res != nccl.InvalidArgument {
		t.Errorf("misaligned AllReduce = %d; want InvalidArgument", res)
	}
	if res, _ := sh.AllReduce(8, 8, 4, nccl.Float32, nccl.Sum, 1, 0, false); res != nccl.Success {
		t.Errorf("AllReduce after a refused one = %d", res)
	}
	lost := &detcoll.RankError{Rank: 1, Err: detcoll.ErrPeerLost, Reason: "its process 1001 exited"}
	fc.fail = lost
	if res, _ := sh.AllReduce(8, 8, 4, nccl.Float32, nccl.Sum, 1, 0, false); res != nccl.RemoteError {
		t.Errorf("AllReduce that lost its peer = %d; want RemoteError", res)
	}
	n := len(fc.log())
	if res, handed := sh.ReduceScatter(8, 8, 4, nccl.Float32, nccl.Sum, 1, 0, false); res != nccl.RemoteError || handed || len(fc.log()) != n {
		t.Errorf("a call on the poisoned communicator = %d, handed %v, reached detcoll: %v", res, handed, len(fc.log()) != n)
	}
	if !strings.Contains(sh.LastError(), "its process 1001 exited") {
		t.Errorf("last error %q", sh.LastError())
	}
	fc.err = lost
	if res := sh.AsyncError(1); res != nccl.RemoteError {
		t.Errorf("AsyncError = %d; want RemoteError", res)
	}
}

// TestFirstUseNotReady: a communicator set up lazily (a nonblocking or
// grouped init) cannot set up inside a group: its first reduction there is
// handed off (delegate) or refused (strict), and it stays pending.
func TestFirstUseNotReady(t *testing.T) {
	for _, mode := range []Mode{Delegate, Strict} {
		s := testSettings()
		s.Mode = mode
		j := newFakeJob(2)
		sh := j.newShim(0, (&fakeOpen{}).open, s)
		sh.Init(1, 2, 0, false)
		res, handed := sh.AllReduce(8, 8, 4, nccl.Float32, nccl.Sum, 1, 0, true)
		if mode == Delegate && (!handed || res != nccl.Success) || mode == Strict && (handed || res != nccl.InvalidUsage) {
			t.Errorf("mode %d: first reduction in a group = %d, handed %v", mode, res, handed)
		}
		if st, _ := stateOf(sh, 1); st != pending {
			t.Errorf("mode %d: state %d after a grouped first use; want pending", mode, st)
		}
	}
}

// TestInitAll: the ranks of one process are never served.
func TestInitAll(t *testing.T) {
	j := newFakeJob(2)
	sh := j.newShim(0, nil, testSettings())
	sh.InitAll([]Handle{7, 8}, []int{0, 1})
	for _, h := range []Handle{7, 8} {
		if res, handed := sh.AllReduce(8, 8, 4, nccl.Float32, nccl.Sum, h, 0, false); !handed || res != nccl.Success {
			t.Errorf("comm %d: AllReduce = %d, handed %v", h, res, handed)
		}
	}
}

// TestAbortStopsDetcoll: ncclCommAbort aborts detcoll's communicator first
// (its kernels stop at the abort word), then closes it, and forgets the
// handle: later calls on it go to the real NCCL, which aborted it too.
func TestAbortStopsDetcoll(t *testing.T) {
	sh, fc := servedShim(t, 2, 0, testSettings())
	sh.Abort(1)
	if got := fc.log(); !slices.Equal(got, []string{"abort", "close"}) {
		t.Errorf("Abort did %q to detcoll's communicator; want abort, then close", got)
	}
	if sh.lookup(1) != nil {
		t.Error("the aborted communicator is still known")
	}
	if res, handed := sh.AllReduce(8, 8, 4, nccl.Float32, nccl.Sum, 1, 0, false); !handed || res != nccl.Success {
		t.Errorf("AllReduce after Abort = %d, handed %v", res, handed)
	}
}

// TestSplitCommunicator: a communicator from ncclCommSplit comes with world
// and rank unknown (-1); its setup asks the real NCCL for them.
func TestSplitCommunicator(t *testing.T) {
	o := &fakeOpen{steps: 1}
	_, shims := job(2, o.open, testSettings())
	var wg sync.WaitGroup
	for r, s := range shims {
		wg.Go(func() {
			if res := s.Init(Handle(r+1), -1, -1, true); res != nccl.Success {
				t.Errorf("rank %d: Init = %d", r, res)
			}
		})
	}
	wg.Wait()
	for r, s := range shims {
		c := s.lookup(Handle(r + 1))
		if st, why := stateOf(s, c.h); st != served || c.world != 2 || c.rank != r || c.device != r {
			t.Errorf("rank %d: state %d (%s), world %d, rank %d, device %d", r, st, why, c.world, c.rank, c.device)
		}
		if res, handed := s.Reduce(0x10000, 0x20000, 10, nccl.Float32, nccl.Sum, 1, Handle(r+1), 0, false); res != nccl.Success || handed {
			t.Errorf("rank %d: Reduce on the split communicator = %d, handed %v", r, res, handed)
		}
	}
}
