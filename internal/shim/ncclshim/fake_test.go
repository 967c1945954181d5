package ncclshim

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/detcoll/detcoll"
	"github.com/detcoll/detcoll/internal/binding/nccl"
)

// fakeJob is the real NCCL and the device memory of W ranks that are
// goroutines of the test: each rank has its own Shim, as each process
// would, over one fakeJob. Handle r+1 is rank r's communicator.
type fakeJob struct {
	world int

	mu     sync.Mutex
	cond   *sync.Cond
	mem    map[uintptr][]byte // every allocation, by address
	next   uintptr
	rounds []*fakeRound        // all-gathers, in order
	seq    []int               // per rank: its next round
	queued map[uintptr]*fakeOp // per stream: the all-gather it waits for
	dead   map[int]bool        // ranks whose process is gone
	calls  []int               // per rank: all-gathers queued
	// capturing makes every stream report a CUDA graph capture.
	capturing bool
	// noDriver, if set, is what Ready says: no CUDA driver.
	noDriver error
	// nonblocking makes the all-gathers return InProgress and reach their
	// stream only after the rank's second AsyncError, as a nonblocking
	// communicator's do once NCCL has queued them.
	nonblocking bool
	deferred    map[int]*deferredOp // per rank: its all-gather not yet on its stream
	// events is per rank what its shim did to streams and to the real
	// NCCL, and what its detcoll communicator was asked, in order.
	events []eventLog
}

// eventLog is the order of one rank's stream operations and calls.
type eventLog struct {
	mu    sync.Mutex
	lines []string
}

func (l *eventLog) add(format string, args ...any) {
	if l == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lines = append(l.lines, fmt.Sprintf(format, args...))
}

func (l *eventLog) get() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string{}, l.lines...)
}

type deferredOp struct {
	stream uintptr
	op     *fakeOp
	part   []byte
	polls  int
}

type fakeRound struct {
	parts [][]byte
	n     int
}

type fakeOp struct {
	round *fakeRound
	rank  int
	recv  uintptr
}

func newFakeJob(world int) *fakeJob {
	j := &fakeJob{world: world, mem: map[uintptr][]byte{}, next: 1 << 20, seq: make([]int, world),
		queued: map[uintptr]*fakeOp{}, dead: map[int]bool{}, calls: make([]int, world), deferred: map[int]*deferredOp{},
		events: make([]eventLog, world)}
	j.cond = sync.NewCond(&j.mu)
	return j
}

// rank is rank r's view of the job: its Real and its Device.
type fakeRank struct {
	j *fakeJob
	r int
}

func (f fakeRank) AllGather(h Handle, send, recv uintptr, n int, s uintptr) nccl.Result {
	j := f.j
	j.mu.Lock()
	defer j.mu.Unlock()
	if int(h) != f.r+1 {
		return nccl.InvalidArgument
	}
	k := j.seq[f.r]
	j.seq[f.r]++
	j.calls[f.r]++
	for len(j.rounds) <= k {
		j.rounds = append(j.rounds, &fakeRound{parts: make([][]byte, j.world), n: -1})
	}
	rd := j.rounds[k]
	if rd.n >= 0 && rd.n != n {
		panic(fmt.Sprintf("round %d: rank %d gives %d bytes, another gave %d", k, f.r, n, rd.n))
	}
	rd.n = n
	part := append([]byte{}, j.mem[send][:n]...)
	op := &fakeOp{round: rd, rank: f.r, recv: recv}
	if j.nonblocking {
		j.deferred[f.r] = &deferredOp{stream: s, op: op, part: part, polls: 2}
		return nccl.InProgress
	}
	rd.parts[f.r] = part
	j.queued[s] = op
	j.cond.Broadcast()
	return nccl.Success
}

func (f fakeRank) AsyncError(Handle) nccl.Result {
	j := f.j
	j.mu.Lock()
	defer j.mu.Unlock()
	d := j.deferred[f.r]
	if d == nil {
		return nccl.Success
	}
	if d.polls--; d.polls > 0 {
		return nccl.InProgress
	}
	// Only now are the rank's bytes given: a read of the receive buffer
	// before this sees none of the round.
	d.op.round.parts[f.r] = d.part
	j.queued[d.stream] = d.op
	delete(j.deferred, f.r)
	j.cond.Broadcast()
	return nccl.Success
}

func (f fakeRank) CommCount(Handle) (int, nccl.Result)    { return f.j.world, nccl.Success }
func (f fakeRank) CommUserRank(Handle) (int, nccl.Result) { return f.r, nccl.Success }
func (f fakeRank) CommCuDevice(Handle) (int, nccl.Result) { return f.r, nccl.Success }

func (f fakeRank) Alloc(n int) (uintptr, error) {
	j := f.j
	j.mu.Lock()
	defer j.mu.Unlock()
	p := j.next
	j.next += uintptr(n+4095) &^ 4095
	j.mem[p] = make([]byte, n)
	return p, nil
}

func (f fakeRank) Free(p uintptr) {
	f.j.mu.Lock()
	defer f.j.mu.Unlock()
	if _, ok := f.j.mem[p]; !ok {
		panic(fmt.Sprintf("free of %#x, not allocated", p))
	}
	delete(f.j.mem, p)
}

// buf finds the allocation holding p and p's offset in it.
func (j *fakeJob) buf(p uintptr) ([]byte, int) {
	for base, b := range j.mem {
		if p >= base && p < base+uintptr(len(b)) {
			return b, int(p - base)
		}
	}
	panic(fmt.Sprintf("no allocation holds %#x", p))
}

func (f fakeRank) CopyIn(dst uintptr, src []byte) error {
	f.j.mu.Lock()
	defer f.j.mu.Unlock()
	b, off := f.j.buf(dst)
	copy(b[off:], src)
	return nil
}

func (f fakeRank) CopyOut(dst []byte, src uintptr) error {
	f.j.mu.Lock()
	defer f.j.mu.Unlock()
	b, off := f.j.buf(src)
	copy(dst, b[off:])
	return nil
}

func (f fakeRank) Ready() error {
	f.j.mu.Lock()
	defer f.j.mu.Unlock()
	return f.j.noDriver
}

func (f fakeRank) NewStream() (uintptr, error) { return f.Alloc(1) }
func (f fakeRank) DestroyStream(s uintptr)     { f.Free(s) }

func (f fakeRank) Follow(ours, theirs uintptr) error {
	f.j.events[f.r].add("follow %#x %#x", ours, theirs)
	return nil
}

func (f fakeRank) Fork(ours, theirs uintptr) error {
	f.j.events[f.r].add("fork %#x %#x", ours, theirs)
	return nil
}

func (f fakeRank) CopyAsync(dst, src uintptr, n int, s uintptr) error {
	f.j.events[f.r].add("copy %#x %#x %d %#x", dst, src, n, s)
	return nil
}

func (f fakeRank) RedOpDestroy(h Handle, op nccl.RedOp) nccl.Result {
	f.j.events[f.r].add("real destroy %#x %v", h, op)
	return nccl.Success
}

func (f fakeRank) Reduction(c Call) nccl.Result {
	f.j.events[f.r].add("real %v %#x %#x %d %v %v %#x", c.Kind, c.Send, c.Recv, c.Count, c.DType, c.Op, c.Stream)
	return nccl.Success
}
func (f fakeRank) Capturing(uintptr) (bool, error) {
	f.j.mu.Lock()
	defer f.j.mu.Unlock()
	return f.j.capturing, nil
}

// Done completes the stream's all-gather once every rank gave its part.
func (f fakeRank) Done(s uintptr) (bool, error) {
	j := f.j
	j.mu.Lock()
	defer j.mu.Unlock()
	op := j.queued[s]
	if op == nil {
		return true, nil
	}
	for _, p := range op.round.parts {
		if p == nil {
			return false, nil
		}
	}
	b, off := j.buf(op.recv)
	for p, part := range op.round.parts {
		copy(b[off+p*len(part):], part)
	}
	delete(j.queued, s)
	return true, nil
}

// newShim is rank r's shim over the job, with fake process ids (1000 + r)
// that are alive until the rank is marked dead.
func (j *fakeJob) newShim(r int, open OpenFunc, s Settings) *Shim {
	f := fakeRank{j, r}
	sh := New(f, f, open, s)
	sh.getpid = func() int { return 1000 + r }
	sh.self = func(pid int) identity { return identity{Host: "h", Boot: "b", PIDNS: "pid:[1]", PID: pid} }
	sh.alive = func(id identity) bool {
		j.mu.Lock()
		defer j.mu.Unlock()
		return !j.dead[id.PID-1000]
	}
	return sh
}

func (j *fakeJob) kill(r int) {
	j.mu.Lock()
	j.dead[r] = true
	j.mu.Unlock()
}

// fakeComm is a detcoll communicator that records its calls.
type fakeComm struct {
	quiet  bool // records nothing (benchmarks)
	rank   int
	hosts  int       // Options.Hosts it was opened with
	events *eventLog // the rank's, if set: calls go there too
	mu     sync.Mutex
	calls  []string
	// ops is the operator of every reduction, in order: detcoll.Sum for
	// one given none. A call's line names an operator it was given.
	ops  []detcoll.RedOp
	err  error // returned by every later call, and by Err
	fail error // returned by the next call, once
}

func (c *fakeComm) record(format string, args ...any) error {
	if c.quiet {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.calls = append(c.calls, fmt.Sprintf(format, args...))
	c.events.add(format, args...)
	if c.fail != nil {
		err := c.fail
		c.fail = nil
		return err
	}
	return c.err
}

func (c *fakeComm) AllReduceDevice(in, out detcoll.DevicePtr, count int, dt detcoll.DType, s detcoll.Stream, op ...detcoll.RedOp) error {
	return c.reduction(op, "allreduce %#x %#x %d %v %#x", in, out, count, dt, s)
}

func (c *fakeComm) ReduceScatterDevice(in, out detcoll.DevicePtr, n int, dt detcoll.DType, s detcoll.Stream, op ...detcoll.RedOp) error {
	return c.reduction(op, "reducescatter %#x %#x %d %v %#x", in, out, n, dt, s)
}

// reduction records a reduction given ops: its operator, and its line
// with the operator's name at the end where it was given one.
func (c *fakeComm) reduction(ops []detcoll.RedOp, format string, args ...any) error {
	if len(ops) > 1 {
		panic(fmt.Sprintf("a reduction given %d operators", len(ops)))
	}
	op := detcoll.Sum
	if len(ops) == 1 {
		op = ops[0]
		format += " " + op.String()
	}
	if !c.quiet {
		c.mu.Lock()
		c.ops = append(c.ops, op)
		c.mu.Unlock()
	}
	return c.record(format, args...)
}

func (c *fakeComm) opLog() []detcoll.RedOp {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]detcoll.RedOp{}, c.ops...)
}

func (c *fakeComm) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

func (c *fakeComm) Abort(cause error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.calls = append(c.calls, "abort")
	if c.err == nil {
		c.err = fmt.Errorf("%w: %v", detcoll.ErrAborted, cause)
	}
}

func (c *fakeComm) Close(context.Context) error {
	c.record("close")
	return nil
}

func (c *fakeComm) log() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string{}, c.calls...)
}

// fakeOpen opens fakeComms after steps rounds of the rendezvous, as
// detcoll's Open exchanges its setup. failAt[rank] = k makes that rank
// fail just before its round k (k == steps: after its last round), as a
// real Open does: it tells the peers (Fail) and returns the error.
type fakeOpen struct {
	steps  int
	failAt map[int]int
	job    *fakeJob // whose event logs the communicators write to, if set
	mu     sync.Mutex
	comms  map[int]*fakeComm
}

func (o *fakeOpen) open(ctx context.Context, opts detcoll.Options) (Collectives, error) {
	rdv := opts.Rendezvous
	if opts.Hosts > 1 {
		rdv = opts.Interconnect.Host() // across hosts, the setup rides on the rails' view
	}
	fd := rdv.(detcoll.FailureDetector)
	for k := 0; k <= o.steps; k++ {
		if at, ok := o.failAt[opts.Rank]; ok && at == k {
			err := &detcoll.RankError{Rank: opts.Rank, Err: detcoll.ErrUnavailable, Reason: "out of device memory"}
			fd.Fail(err.Error())
			return nil, err
		}
		if k == o.steps {
			break
		}
		if _, err := rdv.AllGather(ctx, fmt.Sprintf("open/%d", k), []byte{byte(opts.Rank), byte(k)}); err != nil {
			return nil, err
		}
	}
	c := &fakeComm{rank: opts.Rank, hosts: opts.Hosts, events: o.events(opts.Rank)}
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.comms == nil {
		o.comms = map[int]*fakeComm{}
	}
	o.comms[opts.Rank] = c
	return c, nil
}

func (o *fakeOpen) events(rank int) *eventLog {
	if o.job == nil {
		return nil
	}
	return &o.job.events[rank]
}

var errNoCall = errors.New("no call")

// RegisterWindow records a window (detcoll's RegisterDevice).
func (c *fakeComm) RegisterWindow(ctx context.Context, addr uintptr, size int) (Deregisterer, error) {
	if err := c.record("register %#x %d", addr, size); err != nil {
		return nil, err
	}
	return fakeWindow{c, addr}, nil
}

type fakeWindow struct {
	c    *fakeComm
	addr uintptr
}

func (w fakeWindow) Deregister(context.Context) error { return w.c.record("deregister %#x", w.addr) }
