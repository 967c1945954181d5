package hier_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/detcoll/detcoll"
	"github.com/detcoll/detcoll/internal/backend/cpu"
	"github.com/detcoll/detcoll/internal/backend/hier"
	"github.com/detcoll/detcoll/internal/core/base"
	"github.com/detcoll/detcoll/internal/core/num"
	"github.com/detcoll/detcoll/internal/testkit/check"
)

// The ranks of these tests are goroutines: each host's ranks share an
// in-memory rendezvous and a real cpu backend (shared memory), and the
// rails are in-memory all-gathers: the schedule is hier's, the engines
// are stand-ins. (The Open MPI rails run under mpirun in package mpi's tests.)

// group is an in-memory all-gather among n members: a rendezvous for a
// host's cpu backend, or a rail.
type group struct {
	n      int
	mu     sync.Mutex
	cond   *sync.Cond
	rounds map[string][][]byte
	count  map[string]int
	next   []int // per member: its next unnamed round (rails)
}

func newGroup(n int) *group {
	g := &group{n: n, rounds: map[string][][]byte{}, count: map[string]int{}, next: make([]int, n)}
	g.cond = sync.NewCond(&g.mu)
	return g
}

func (g *group) gather(ctx context.Context, name string, member int, v []byte) ([][]byte, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.rounds[name] == nil {
		g.rounds[name] = make([][]byte, g.n)
	}
	g.rounds[name][member] = append([]byte{}, v...)
	g.count[name]++
	g.cond.Broadcast()
	stop := context.AfterFunc(ctx, func() { g.mu.Lock(); g.cond.Broadcast(); g.mu.Unlock() })
	defer stop()
	for g.count[name] < g.n {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		g.cond.Wait()
	}
	return g.rounds[name], nil
}

// rdv is member r's base.Rendezvous of a host.
type rdv struct {
	g *group
	r int
}

func (v rdv) AllGather(ctx context.Context, name string, val []byte) ([][]byte, error) {
	return v.g.gather(ctx, name, v.r, val)
}
func (v rdv) Barrier(ctx context.Context, name string) error {
	_, err := v.g.gather(ctx, name, v.r, nil)
	return err
}
func (v rdv) Fail(string)           {}
func (v rdv) Done() <-chan struct{} { return nil }
func (v rdv) Err() error            { return nil }

// rail is host h's end of a rail; with x set it trades with one peer at a
// time too (hier.Exchanger), through a mailbox per ordered pair of hosts.
type rail struct {
	g *group
	h int
	x *mailboxes
}

type mailboxes struct {
	mu  sync.Mutex
	box map[[2]int]chan []byte
}

func (m *mailboxes) to(from, to int) chan []byte {
	m.mu.Lock()
	defer m.mu.Unlock()
	k := [2]int{from, to}
	if m.box[k] == nil {
		m.box[k] = make(chan []byte, 64)
	}
	return m.box[k]
}

// exchangingRail is a rail that is a hier.Exchanger.
type exchangingRail struct{ rail }

func (v exchangingRail) Exchange(ctx context.Context, peer int, send, recv []byte) error {
	v.x.to(v.h, peer) <- append([]byte{}, send...)
	select {
	case got := <-v.x.to(peer, v.h):
		if len(got) != len(recv) {
			return fmt.Errorf("host %d sent %d bytes, want %d", peer, len(got), len(recv))
		}
		copy(recv, got)
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (v rail) AllGather(ctx context.Context, send, recv []byte) error {
	v.g.mu.Lock()
	k := v.g.next[v.h]
	v.g.next[v.h]++
	v.g.mu.Unlock()
	all, err := v.g.gather(ctx, fmt.Sprint(k), v.h, send)
	if err != nil {
		return err
	}
	for h, part := range all {
		copy(recv[h*len(send):], part)
	}
	return nil
}

// job opens W = hosts x perHost ranks; comms[r] is rank r's. Its rails
// are exchanging ones (hier.Exchanger); jobWith chooses.
func job(t *testing.T, hosts, perHost int, capacity int64) []*hier.Comm {
	return jobWith(t, hosts, perHost, capacity, true)
}

func jobWith(t *testing.T, hosts, perHost int, capacity int64, exchange bool) []*hier.Comm {
	return jobOf(t, hosts, perHost, capacity, func(local *cpu.Comm, rl rail, boxes *mailboxes) (hier.Local, hier.Rail) {
		if exchange {
			rl.x = boxes
			return local, exchangingRail{rl}
		}
		return local, rl
	})
}

// jobOf opens W = hosts x perHost ranks: per host an in-memory rendezvous
// and a real cpu backend, per local rank a rail and its mailboxes; wrap
// makes each rank's Local and Rail from them (the device tests wrap them
// in stand-ins of device memory).
func jobOf(t *testing.T, hosts, perHost int, capacity int64, wrap func(*cpu.Comm, rail, *mailboxes) (hier.Local, hier.Rail)) []*hier.Comm {
	t.Helper()
	t.Setenv("DETCOLL_SHM_DIR", t.TempDir())
	hostGroups := make([]*group, hosts)
	for h := range hostGroups {
		hostGroups[h] = newGroup(perHost)
	}
	rails := make([]*group, perHost)
	boxes := make([]*mailboxes, perHost)
	for g := range rails {
		rails[g] = newGroup(hosts)
		boxes[g] = &mailboxes{box: map[[2]int]chan []byte{}}
	}
	comms := make([]*hier.Comm, hosts*perHost)
	errs := make([]error, len(comms))
	var wg sync.WaitGroup
	for r := range comms {
		h, g := r/perHost, r%perHost
		wg.Go(func() {
			local, err := cpu.Open(context.Background(), cpu.Config{Rank: g, World: perHost, Capacity: capacity + 64*int64(perHost),
				Timeout: 10 * time.Second, Rendezvous: rdv{hostGroups[h], g}})
			if err != nil {
				errs[r] = err
				return
			}
			l, rl := wrap(local, rail{rails[g], h, nil}, boxes[g])
			comms[r], errs[r] = hier.New(hier.Config{Hosts: hosts, Host: h, PerHost: perHost, LocalRank: g,
				Timeout: 10 * time.Second, Local: l, Rail: rl})
		})
	}
	wg.Wait()
	for r, err := range errs {
		if err != nil {
			t.Fatalf("open rank %d: %v", r, err)
		}
	}
	t.Cleanup(func() {
		each(comms, func(r int, c *hier.Comm) error { return c.Close(context.Background()) })
	})
	return comms
}

// each runs f on every rank at once and returns the errors by rank.
func each(comms []*hier.Comm, f func(r int, c *hier.Comm) error) []error {
	errs := make([]error, len(comms))
	var wg sync.WaitGroup
	for r, c := range comms {
		wg.Go(func() { errs[r] = f(r, c) })
	}
	wg.Wait()
	return errs
}

func noErrors(t *testing.T, what string, errs []error) {
	t.Helper()
	for r, err := range errs {
		if err != nil {
			t.Fatalf("%s: rank %d: %v", what, r, err)
		}
	}
}

var layouts = []struct{ hosts, perHost int }{{2, 2}, {2, 4}, {4, 2}, {3, 2}, {2, 1}, {3, 1}, {1, 4}, {5, 2}, {8, 1}, {4, 1}}

var floats = []num.DType{num.BFloat16Type, num.Float16Type, num.Float32Type, num.Float64Type}

// TestSumsAreTheFlatTree: every reduction over several hosts gives the bits
// of the flat tree over all W ranks (check.ReferenceSum, evaluated element
// by element), for sizes that are and are not multiples of the ranks per
// host, with NaNs, infinities, subnormals and signed zeros in the inputs.
func TestSumsAreTheFlatTree(t *testing.T) {
	for _, l := range layouts {
		for _, exchange := range []bool{true, false} {
			t.Run(fmt.Sprintf("%dx%d/exchange=%v", l.hosts, l.perHost, exchange), func(t *testing.T) {
				sumsAreTheFlatTree(t, l.hosts, l.perHost, exchange)
			})
		}
	}
}

func sumsAreTheFlatTree(t *testing.T, hosts, perHost int, exchange bool) {
	w := hosts * perHost
	comms := jobWith(t, hosts, perHost, 4097*8*int64(w), exchange) // the largest reduce-scatter's input
	call := 0
	for _, dt := range floats {
		for _, n := range []int{0, 1, 3, 7, 64, 1000, 4097} {
			call++
			ins := make([][]byte, w)
			for r := range ins {
				ins[r] = check.Input(1, call, r, n, dt)
			}
			want := check.ReferenceSum(dt, ins)
			outs := make([][]byte, w)
			noErrors(t, "AllReduce", each(comms, func(r int, c *hier.Comm) error {
				outs[r] = make([]byte, len(ins[r]))
				return c.Do(&base.Request{Op: base.OpAllReduce, DType: dt, In: [][]byte{ins[r]}, Out: [][]byte{outs[r]}})
			}))
			for r := range outs {
				if err := check.FirstDiff(dt, outs[r], want); err != nil {
					t.Fatalf("AllReduce %v n=%d rank %d: %v", dt, n, r, err)
				}
			}
			// ReduceScatter of W blocks of n: rank r's block.
			call++
			big := make([][]byte, w)
			for r := range big {
				big[r] = check.Input(1, call, r, n*w, dt)
			}
			wantBig := check.ReferenceSum(dt, big)
			noErrors(t, "ReduceScatter", each(comms, func(r int, c *hier.Comm) error {
				outs[r] = make([]byte, n*dt.Size())
				return c.Do(&base.Request{Op: base.OpReduceScatter, DType: dt, In: [][]byte{big[r]}, Out: [][]byte{outs[r]}})
			}))
			for r := range outs {
				m := n * dt.Size()
				if err := check.FirstDiff(dt, outs[r], wantBig[r*m:(r+1)*m]); err != nil {
					t.Fatalf("ReduceScatter %v n=%d rank %d: %v", dt, n, r, err)
				}
			}
		}
	}
}

// TestSameAsOneHost: the same inputs summed by one host of W ranks (the
// cpu backend alone, no hier) give the same bits as by several hosts.
func TestSameAsOneHost(t *testing.T) {
	const hosts, perHost = 4, 2
	w := hosts * perHost
	multi := job(t, hosts, perHost, 1<<16)
	one := make([]*cpu.Comm, w)
	errs := make([]error, w)
	ranks := newGroup(w)
	var wg sync.WaitGroup
	for r := range one {
		wg.Go(func() {
			one[r], errs[r] = cpu.Open(context.Background(), cpu.Config{Rank: r, World: w, Capacity: 1 << 16,
				Timeout: 10 * time.Second, Rendezvous: rdv{ranks, r}})
		})
	}
	wg.Wait()
	noErrors(t, "open one host", errs)
	t.Cleanup(func() {
		for r := range one {
			wg.Go(func() { one[r].Close(context.Background()) })
		}
		wg.Wait()
	})
	for _, dt := range floats {
		ins := make([][]byte, w)
		for r := range ins {
			ins[r] = check.Input(2, 1, r, 5000, dt)
		}
		var got [2][][]byte
		for i := range got {
			got[i] = make([][]byte, w)
			noErrors(t, "AllReduce", each(multi, func(r int, c *hier.Comm) error {
				got[i][r] = make([]byte, len(ins[r]))
				req := &base.Request{Op: base.OpAllReduce, DType: dt, In: [][]byte{ins[r]}, Out: [][]byte{got[i][r]}}
				if i == 1 {
					return one[r].Do(req)
				}
				return c.Do(req)
			}))
		}
		for r := range w {
			if !bytes.Equal(got[0][r], got[1][r]) {
				t.Fatalf("%v rank %d: %d hosts and one host differ: %v", dt, r, hosts, check.FirstDiff(dt, got[0][r], got[1][r]))
			}
		}
	}
}

// TestGathersAndBroadcast: all-gather (also in place and many), broadcast
// from every root and a barrier, byte exact.
func TestGathersAndBroadcast(t *testing.T) {
	for _, l := range layouts {
		t.Run(fmt.Sprintf("%dx%d", l.hosts, l.perHost), func(t *testing.T) {
			w := l.hosts * l.perHost
			comms := job(t, l.hosts, l.perHost, 1<<16)
			for _, n := range []int{0, 1, 13, 1000} {
				ins := make([][]byte, w)
				want := []byte{}
				for r := range ins {
					ins[r] = check.Input(3, n, r, n, num.Uint8Type)
					want = append(want, ins[r]...)
				}
				outs := make([][]byte, w)
				noErrors(t, "AllGather", each(comms, func(r int, c *hier.Comm) error {
					outs[r] = make([]byte, w*n)
					return c.Do(&base.Request{Op: base.OpAllGather, DType: num.Uint8Type, In: [][]byte{ins[r]}, Out: [][]byte{outs[r]}})
				}))
				noErrors(t, "in place AllGather", each(comms, func(r int, c *hier.Comm) error {
					if !bytes.Equal(outs[r], want) {
						return fmt.Errorf("AllGather n=%d: got %x..., want %x...", n, outs[r][:min(8, len(outs[r]))], want[:min(8, len(want))])
					}
					o := make([]byte, w*n)
					copy(o[r*n:], ins[r])
					if err := c.Do(&base.Request{Op: base.OpAllGather, DType: num.Uint8Type, In: [][]byte{o[r*n : (r+1)*n]}, Out: [][]byte{o}}); err != nil {
						return err
					}
					if !bytes.Equal(o, want) {
						return fmt.Errorf("in place AllGather n=%d differs", n)
					}
					return nil
				}))
				for root := range w {
					noErrors(t, "Broadcast", each(comms, func(r int, c *hier.Comm) error {
						buf := append([]byte{}, ins[r]...)
						if err := c.Do(&base.Request{Op: base.OpBroadcast, DType: num.Uint8Type, Root: root, In: [][]byte{buf}, Out: [][]byte{buf}}); err != nil {
							return err
						}
						if !bytes.Equal(buf, ins[root]) {
							return fmt.Errorf("Broadcast n=%d from %d: got rank %d's", n, root, r)
						}
						return nil
					}))
				}
			}
			noErrors(t, "Barrier", each(comms, func(r int, c *hier.Comm) error {
				return c.Do(&base.Request{Op: base.OpBarrier})
			}))
		})
	}
}

// TestManyAndStaged: the *Many calls equal one call per buffer, and a
// staged all-reduce equals AllReduce.
func TestManyAndStaged(t *testing.T) {
	const hosts, perHost = 3, 2
	w := hosts * perHost
	comms := job(t, hosts, perHost, 1<<16)
	dt := num.Float32Type
	sizes := []int{5, 64, 0, 333}
	noErrors(t, "Many", each(comms, func(r int, c *hier.Comm) error {
		var ins, outs, gins, gouts [][]byte
		for _, n := range sizes {
			ins = append(ins, check.Input(4, n, r, n*w, dt))
			outs = append(outs, make([]byte, n*dt.Size()))
			gins = append(gins, check.Input(5, n, r, n, dt))
			gouts = append(gouts, make([]byte, n*w*dt.Size()))
		}
		if err := c.Do(&base.Request{Op: base.OpReduceScatterMany, DType: dt, In: ins, Out: outs}); err != nil {
			return err
		}
		if err := c.Do(&base.Request{Op: base.OpAllGatherMany, DType: dt, In: gins, Out: gouts}); err != nil {
			return err
		}
		for k, n := range sizes {
			one := make([]byte, n*dt.Size())
			if err := c.Do(&base.Request{Op: base.OpReduceScatter, DType: dt, In: [][]byte{ins[k]}, Out: [][]byte{one}}); err != nil {
				return err
			}
			if !bytes.Equal(one, outs[k]) {
				return fmt.Errorf("ReduceScatterMany buffer %d differs from its own call", k)
			}
			gathered := make([]byte, len(gouts[k]))
			if err := c.Do(&base.Request{Op: base.OpAllGather, DType: dt, In: [][]byte{gins[k]}, Out: [][]byte{gathered}}); err != nil {
				return err
			}
			if !bytes.Equal(gathered, gouts[k]) {
				return fmt.Errorf("AllGatherMany buffer %d differs from its own call", k)
			}
		}
		in := check.Input(6, 1, r, 100, dt)
		st, err := c.Stage(len(in))
		if err != nil {
			return err
		}
		copy(st, in)
		staged, plain := make([]byte, len(in)), make([]byte, len(in))
		if err := c.Do(&base.Request{Op: base.OpAllReduceStaged, DType: dt, Out: [][]byte{staged}}); err != nil {
			return err
		}
		if err := c.Do(&base.Request{Op: base.OpAllReduce, DType: dt, In: [][]byte{in}, Out: [][]byte{plain}}); err != nil {
			return err
		}
		if !bytes.Equal(staged, plain) {
			return errors.New("staged all-reduce differs from AllReduce")
		}
		return nil
	}))
}

// TestHostsMismatch: hosts that call different collectives fail, every
// rank with a *MismatchError, before any output is written.
func TestHostsMismatch(t *testing.T) {
	comms := job(t, 2, 2, 1<<16)
	dt := num.Float32Type
	errs := each(comms, func(r int, c *hier.Comm) error {
		n := 8
		if r >= 2 {
			n = 9 // the second host sums more
		}
		in, out := check.Input(7, 1, r, n, dt), make([]byte, n*dt.Size())
		for i := range out {
			out[i] = 0xA5
		}
		err := c.Do(&base.Request{Op: base.OpAllReduce, DType: dt, In: [][]byte{in}, Out: [][]byte{out}})
		if bytes.Count(out, []byte{0xA5}) != len(out) {
			return fmt.Errorf("the output changed: %v", err)
		}
		return err
	})
	for r, err := range errs {
		var me *detcoll.MismatchError
		if !errors.As(err, &me) {
			t.Errorf("rank %d: %v; want a *MismatchError", r, err)
		}
	}
}

// TestAbortEndsARailWait: a rank waiting on the rail for a host that never
// calls returns at once when aborted, not at its timeout.
func TestAbortEndsARailWait(t *testing.T) {
	comms := job(t, 2, 1, 1<<16)
	dt := num.Float32Type
	in, out := check.Input(8, 1, 0, 64, dt), make([]byte, 64*dt.Size())
	done := make(chan error, 1)
	start := time.Now()
	go func() {
		done <- comms[0].Do(&base.Request{Op: base.OpAllReduce, DType: dt, In: [][]byte{in}, Out: [][]byte{out}})
	}()
	time.Sleep(100 * time.Millisecond) // rank 0 waits for host 1, which does not call
	comms[0].Abort(errors.New("the test's"))
	select {
	case err := <-done:
		if !errors.Is(err, detcoll.ErrAborted) {
			t.Errorf("aborted call: %v; want ErrAborted", err)
		}
		if d := time.Since(start); d > 5*time.Second {
			t.Errorf("aborted call returned after %v", d)
		}
	case <-time.After(8 * time.Second):
		t.Fatal("the aborted call still waits (the rail's timeout is 10 s)")
	}
}

// TestCloseMeetsTheRail: Close is collective across hosts too: a rank
// whose rail peer never closes (one lost on the way to its Close) fails
// its Close, at the caller's deadline, rather than return as if every
// peer had acknowledged it.
func TestCloseMeetsTheRail(t *testing.T) {
	comms := job(t, 2, 1, 1<<16)
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	start := time.Now()
	err := comms[0].Close(ctx)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Close without its peer's: %v; want the deadline", err)
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("Close returned after %v", d)
	}
	// Both closing: the second host's Close meets the first's.
	if err := comms[1].Close(context.Background()); err != nil {
		t.Errorf("the peer's Close: %v", err)
	}
}

// TestCloseAgainstACall: a host that closes while another makes a call
// meets it along the rail with Close's signature: both get a
// *MismatchError, neither waits out its timeout.
func TestCloseAgainstACall(t *testing.T) {
	comms := job(t, 2, 1, 1<<16)
	dt := num.Float32Type
	start := time.Now()
	errs := each(comms, func(r int, c *hier.Comm) error {
		if r == 0 {
			return c.Close(context.Background())
		}
		in, out := check.Input(9, 1, r, 16, dt), make([]byte, 16*dt.Size())
		return c.Do(&base.Request{Op: base.OpAllReduce, DType: dt, In: [][]byte{in}, Out: [][]byte{out}})
	})
	for r, err := range errs {
		var me *detcoll.MismatchError
		if !errors.As(err, &me) {
			t.Errorf("rank %d: %v; want a *MismatchError", r, err)
		}
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("took %v (the timeout is 10 s)", d)
	}
}

// TestNotPowerOfTwo: three ranks per host are refused, saying why.
func TestNotPowerOfTwo(t *testing.T) {
	_, err := hier.New(hier.Config{Hosts: 2, PerHost: 3})
	if !errors.Is(err, detcoll.ErrInvalid) {
		t.Errorf("3 ranks per host: %v; want ErrInvalid", err)
	}
}

// TestOperatorsAreTheFlatTree: every operator across hosts gives the bits
// of check.ReferenceReduce over all ranks: the hosts' reduce-scatters
// take the operator (PreMulSum's factors there), the rails' steps its
// node, and Avg divides once at the end.
func TestOperatorsAreTheFlatTree(t *testing.T) {
	for _, l := range layouts {
		for _, exchange := range []bool{true, false} {
			t.Run(fmt.Sprintf("%dx%d/exchange=%v", l.hosts, l.perHost, exchange), func(t *testing.T) {
				w := l.hosts * l.perHost
				comms := jobWith(t, l.hosts, l.perHost, 1000*8*int64(w), exchange)
				call := 0
				for _, op := range num.RedOps() {
					for _, dt := range []num.DType{num.BFloat16Type, num.Float32Type, num.Float64Type, num.Int32Type, num.Uint8Type} {
						if !op.Supports(dt) {
							continue
						}
						scalars, scalarBytes := check.PremulFactors(dt, w), make([][]byte, w)
						for r := range w {
							if op == num.PreMulSum {
								scalarBytes[r] = elementOf(dt, scalars[r])
							}
						}
						for _, n := range []int{1, 7, 1000} {
							call++
							ins := make([][]byte, w)
							for r := range ins {
								ins[r] = aligned(check.Input(1, call, r, n*w, dt))
							}
							want := check.ReferenceReduce(dt, op, ins, scalars)
							outs := make([][]byte, w)
							noErrors(t, "AllReduce", each(comms, func(r int, c *hier.Comm) error {
								outs[r] = num.AlignedBytes(len(ins[r]))
								return c.Do(&base.Request{Op: base.OpAllReduce, DType: dt, Red: op, Scalar: scalarBytes[r],
									In: [][]byte{ins[r]}, Out: [][]byte{outs[r]}})
							}))
							for r := range outs {
								if err := check.FirstDiff(dt, outs[r], want); err != nil {
									t.Fatalf("AllReduce/%v %v n=%d rank %d: %v", op, dt, n, r, err)
								}
							}
							noErrors(t, "ReduceScatter", each(comms, func(r int, c *hier.Comm) error {
								outs[r] = num.AlignedBytes(n * dt.Size())
								return c.Do(&base.Request{Op: base.OpReduceScatter, DType: dt, Red: op, Scalar: scalarBytes[r],
									In: [][]byte{ins[r]}, Out: [][]byte{outs[r]}})
							}))
							m := n * dt.Size()
							for r := range outs {
								if err := check.FirstDiff(dt, outs[r], want[r*m:(r+1)*m]); err != nil {
									t.Fatalf("ReduceScatter/%v %v n=%d rank %d: %v", op, dt, n, r, err)
								}
							}
						}
					}
				}
			})
		}
	}
}

// aligned copies b into memory aligned for any element type.
func aligned(b []byte) []byte {
	out := num.AlignedBytes(len(b))
	copy(out, b)
	return out
}

// elementOf is v, a value of the float type dt, as one element.
func elementOf(dt num.DType, v float64) []byte {
	b := num.AlignedBytes(dt.Size())
	switch dt {
	case num.BFloat16Type:
		num.AsBFloat16s(b)[0] = num.BFloat16FromFloat64(v)
	case num.Float16Type:
		num.AsFloat16s(b)[0] = num.Float16FromFloat64(v)
	case num.Float32Type:
		num.AsFloat32s(b)[0] = float32(v)
	case num.Float64Type:
		num.AsFloat64s(b)[0] = v
	}
	return b
}
