package ncclshim

import (
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/detcoll/detcoll/internal/binding/nccl"
)

func testSettings() Settings {
	return Settings{Mode: Delegate, Capacity: 1 << 20, Memory: DefaultMemory, Timeout: 10 * time.Second}
}

// atInit is testSettings with the setup at init.
func atInit() Settings {
	s := testSettings()
	s.Setup = SetupAtInit
	return s
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

// sum is an AllReduce call of count float32s on comm h.
func sum(h Handle, send, recv uintptr, count int, stream uintptr) Call {
	return Call{Kind: AllReduce, Send: send, Recv: recv, Count: count, DType: nccl.Float32, Op: nccl.Sum, Comm: h, Stream: stream}
}

// TestSetupServes: three ranks set up over the real NCCL's all-gather at
// init; each makes the same rounds; every sum reduction of a float type
// then goes to detcoll.
func TestSetupServes(t *testing.T) {
	o := &fakeOpen{steps: 3}
	j, shims := job(3, o.open, atInit())
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
		call := Call{Kind: AllReduce, Send: 0x1000, Recv: 0x2000, Count: 100, DType: nccl.Bfloat16, Op: nccl.Sum, Comm: Handle(r + 1), Stream: 0x42}
		if res, v := s.Do(call, 0); res != nccl.Success || v != Done {
			t.Errorf("rank %d: AllReduce = %d, verdict %v", r, res, v)
		}
		if got := o.comms[r].log(); !slices.Equal(got, []string{"allreduce 0x1000 0x2000 100 bfloat16 0x42"}) {
			t.Errorf("rank %d: detcoll saw %q", r, got)
		}
	}
}

// TestLazySetup: by default a communicator costs nothing until its first
// served reduction: Init exchanges nothing and opens nothing; the first
// sum sets detcoll up on every rank (they meet in its rounds) and is
// served; a communicator that only gathers never sets up.
func TestLazySetup(t *testing.T) {
	o := &fakeOpen{steps: 2}
	j, shims := job(2, o.open, testSettings())
	initAll(t, shims)
	if !slices.Equal(j.calls, []int{0, 0}) || len(o.comms) != 0 {
		t.Fatalf("Init exchanged %v all-gathers and opened %d communicators; want none", j.calls, len(o.comms))
	}
	for r, s := range shims {
		if st, _ := stateOf(s, Handle(r+1)); st != pending {
			t.Errorf("rank %d: state %d after Init; want pending", r, st)
		}
	}
	var wg sync.WaitGroup
	for r, s := range shims {
		wg.Go(func() {
			if res, v := s.Do(sum(Handle(r+1), 0x1000, 0x1000, 8, 5), 0); res != nccl.Success || v != Done {
				t.Errorf("rank %d: first AllReduce = %d, verdict %v", r, res, v)
			}
		})
	}
	wg.Wait()
	for r, s := range shims {
		if st, why := stateOf(s, Handle(r+1)); st != served {
			t.Errorf("rank %d: state %d (%s) after the first sum; want served", r, st, why)
		}
		if got := o.comms[r].log(); !slices.Equal(got, []string{"allreduce 0x1000 0x1000 8 float32 0x5"}) {
			t.Errorf("rank %d: detcoll saw %q", r, got)
		}
		if c := s.lookup(Handle(r + 1)); c.capacity != 1<<20 {
			t.Errorf("rank %d: capacity %d; want the setting's", r, c.capacity)
		}
	}
}

// TestSetupNonblocking: over a nonblocking communicator, whose all-gathers
// return InProgress and reach their streams later, the setup waits for
// each to be queued before it waits for its stream (an idle stream then
// means nothing), and serves.
func TestSetupNonblocking(t *testing.T) {
	o := &fakeOpen{steps: 3}
	j, shims := job(3, o.open, atInit())
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
			j, shims := job(3, o.open, atInit())
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
				if res, v := s.Do(sum(Handle(r+1), 1, 2, 3, 0), 0); v != Handed || res != nccl.Success {
					t.Errorf("rank %d: unserved AllReduce = %d, verdict %v", r, res, v)
				}
				s.settings.Mode = Strict
				if res, v := s.Do(sum(Handle(r+1), 1, 2, 3, 0), 0); v != Done || res != nccl.InvalidUsage ||
					!strings.Contains(s.LastError(), "out of device memory") {
					t.Errorf("rank %d: strict unserved AllReduce = %d, verdict %v, last error %q", r, res, v, s.LastError())
				}
			}
		})
	}
}

// TestSetupPeerDies: rank 2 dies after the first round; the others' setup
// ends at once (its process is seen gone), not at the timeout.
func TestSetupPeerDies(t *testing.T) {
	o := &fakeOpen{steps: 3}
	s := atInit()
	s.Timeout = time.Minute
	j, shims := job(3, o.open, s)
	// Rank 2 takes part in the first round only.
	go func() {
		sh := shims[2]
		tr, _ := newDeviceTransport(sh.real, sh.dev, 3, 3, 0)
		r := newRendezvous(tr, 3, 2)
		r.identify(t.Context(), sh.self(sh.getpid()))
		j.kill(2)
	}()
	start := time.Now()
	initAll(t, shims, 2)
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("setup took %v after the peer died", d)
	}
	for r := range 2 {
		st, why := stateOf(shims[r], Handle(r+1))
		if st != unserved || !strings.Contains(why, "rank 2") || !strings.Contains(why, "exiting or gone") {
			t.Errorf("rank %d: state %d, why %q", r, st, why)
		}
	}
}

// TestAbortDuringSetup: a setup waiting for a peer that never comes ends
// when the communicator is aborted.
func TestAbortDuringSetup(t *testing.T) {
	o := &fakeOpen{steps: 1}
	s := atInit()
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

// TestSplitCommunicator: a communicator from ncclCommSplit comes with world
// and rank unknown (-1); its setup asks the real NCCL for them.
func TestSplitCommunicator(t *testing.T) {
	o := &fakeOpen{steps: 1}
	_, shims := job(2, o.open, atInit())
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
		call := Call{Kind: Reduce, Send: 0x10000, Recv: 0x20000, Count: 10, DType: nccl.Float32, Op: nccl.Sum, Root: 1, Comm: Handle(r + 1)}
		if res, v := s.Do(call, 0); res != nccl.Success || v != Done {
			t.Errorf("rank %d: Reduce on the split communicator = %d, verdict %v", r, res, v)
		}
	}
}

// TestUnservable: ranks that a hostname alone would call one machine, but
// whose kernels' boot ids or PID namespaces differ, are not served: every
// rank computes the same reason from the same round. The same process
// twice is not served either.
func TestUnservable(t *testing.T) {
	base := identity{Host: "gpu1", Boot: "b1", PIDNS: "pid:[1]"}
	for _, tc := range []struct {
		name string
		edit func(*identity)
		want string // "" means servable
	}{
		{"one machine", func(*identity) {}, ""},
		{"another host", func(id *identity) { id.Host = "gpu2" }, "several hosts"},
		{"another kernel, same hostname", func(id *identity) { id.Boot = "b2" }, "do not share a kernel"},
		{"no boot id", func(id *identity) { id.Boot = "" }, "do not share a kernel"},
		{"another PID namespace", func(id *identity) { id.PIDNS = "pid:[2]" }, "PID namespaces"},
		{"the same process", func(id *identity) { id.PID = 10 }, "one process"},
	} {
		a, b := base, base
		a.PID, b.PID = 10, 11
		tc.edit(&b)
		got := unservable([]identity{a, b})
		if tc.want == "" && got != "" || tc.want != "" && !strings.Contains(got, tc.want) {
			t.Errorf("%s: unservable = %q; want %q", tc.name, got, tc.want)
		}
	}
	if got := selfIdentity(1); got.Boot == "" || got.PIDNS == "" || got.Host == "" {
		t.Errorf("selfIdentity = %+v: boot id, PID namespace and host must be read (Linux)", got)
	}
}

// TestInitAll: the ranks of one process are never served.
func TestInitAll(t *testing.T) {
	j := newFakeJob(2)
	sh := j.newShim(0, nil, testSettings())
	sh.InitAll([]Handle{7, 8}, []int{0, 1})
	for _, h := range []Handle{7, 8} {
		if res, v := sh.Do(sum(h, 8, 8, 4, 0), 0); v != Handed || res != nccl.Success {
			t.Errorf("comm %d: AllReduce = %d, verdict %v", h, res, v)
		}
	}
}
