package hier

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/detcoll/detcoll/internal/base"
	"github.com/detcoll/detcoll/internal/num"
	"github.com/detcoll/detcoll/internal/proto"
	"github.com/detcoll/detcoll/internal/tree"
)

// Local is the host's own communicator of G ranks: a backend.
type Local interface {
	Do(req *base.Request) error
	Abort(cause error)
	Err() error
	Close(ctx context.Context) error
	Reserved() base.Region
}

// Rail is the channel between the ranks of one local rank, one per host.
type Rail interface {
	// AllGather gathers len(send) bytes from each rank of the rail into
	// recv (H x len(send) bytes), in host order. It returns early with
	// an error when ctx ends.
	AllGather(ctx context.Context, send, recv []byte) error
}

// Exchanger is a Rail that also trades bytes with one peer of the rail at
// a time: then, with a power of two of hosts, an all-reduce moves the
// bandwidth-optimal share along the rail (railSum).
type Exchanger interface {
	// Exchange sends send to the rail's host peer and receives len(recv)
	// bytes from it, at once. It returns early with an error when ctx
	// ends.
	Exchange(ctx context.Context, peer int, send, recv []byte) error
}

// Config says where a rank is.
type Config struct {
	Hosts, Host int // H, and this rank's host
	PerHost     int // G, ranks per host: a power of two
	LocalRank   int // this rank's rank on its host
	Timeout     time.Duration
	Local       Local
	Rail        Rail
}

// Comm is one rank's communicator of several hosts. It runs one call at a
// time.
type Comm struct {
	hosts, host, g, G int
	timeout           time.Duration
	local             Local
	rail              Rail
	ex                Exchanger // the rail, when it halves: an Exchanger and H a power of two above 1

	cause atomic.Pointer[error]
	// ctx ends when the communicator fails, so that a call waiting on the
	// rail returns at once on Abort, not at its timeout.
	ctx    context.Context
	cancel context.CancelCauseFunc

	mu  sync.Mutex // one call at a time; guards the fields below
	seq uint64     // the call's number, for signatures and errors
	op  base.Op    // the call's operation, for errors
	// The call's operator as the steps apply it: the host's reduce-scatter
	// takes hostRed (and scalar: PreMulSum's, which every rank applies to
	// its own input there), the rail's steps node; Avg sums throughout and
	// divides once at the end (Do).
	hostRed num.RedOp
	scalar  []byte
	node    num.RedOp
	closed  bool
	stage   base.StagedCall
	staging []byte // Stage's memory
	reducer tree.Reducer
	scratch [5][]byte // grown, reused: see buf
	sigs    []byte    // meet's gathered signatures, grown, reused
	srcs    [][]byte  // hostSums' sources, reused
	ranges  []span    // halve's ranges, reused

	// Device calls (device.go), when the host's communicator is one.
	dev      DeviceLocal
	drail    DeviceRail
	dex      DeviceExchanger // the rail, when it halves: four or more hosts, a power of two
	dscratch [numSlots]dbuf
	dsrcs    []uint64 // hostArrays' addresses, reused
	stagedAt uint64   // StageDevice's memory
	cur      uintptr  // the stream of the device call in progress

	failMu   sync.Mutex     // one fail at a time: see fail
	watching sync.WaitGroup // the rail's watcher (New), waited for by Close
}

// New returns the communicator of cfg. G must be a power of two.
func New(cfg Config) (*Comm, error) {
	if cfg.PerHost < 1 || cfg.PerHost&(cfg.PerHost-1) != 0 {
		return nil, base.Invalidf("%d ranks per host: across hosts detcoll needs a power of two, so that the flat tree over all ranks is a tree over the hosts' trees (with %d the hosts' sums would not give the flat tree's bits)", cfg.PerHost, cfg.PerHost)
	}
	c := &Comm{hosts: cfg.Hosts, host: cfg.Host, g: cfg.LocalRank, G: cfg.PerHost,
		timeout: cfg.Timeout, local: cfg.Local, rail: cfg.Rail}
	if ex, ok := cfg.Rail.(Exchanger); ok && c.hosts > 1 && c.hosts&(c.hosts-1) == 0 {
		c.ex = ex
	}
	if dev, ok := cfg.Local.(DeviceLocal); ok {
		drail, ok := cfg.Rail.(DeviceRail)
		if !ok {
			return nil, base.Invalidf("a device communicator across hosts needs an interconnect that moves device memory (package nccl's); %T does not", cfg.Rail)
		}
		c.dev, c.drail = dev, drail
		c.ex = nil // the host path's; the device path halves through dex
		if dex, ok := cfg.Rail.(DeviceExchanger); ok && c.hosts >= 4 && c.hosts&(c.hosts-1) == 0 {
			c.dex = dex
		}
	}
	c.ctx, c.cancel = context.WithCancelCause(context.Background())
	if w, ok := cfg.Rail.(watched); ok {
		c.watching.Add(1)
		go func() {
			defer c.watching.Done()
			select {
			case <-w.Done():
				c.fail(w.Err())
			case <-c.ctx.Done():
			}
		}()
	}
	return c, nil
}

// Err is the communicator's failure, or nil. A failure of the host's
// communicator that hier has not seen yet (it learnt of a lost peer by
// itself) fails the communicator here, so that the rail is stopped before
// the caller hears of it.
func (c *Comm) Err() error {
	if p := c.cause.Load(); p != nil {
		return *p
	}
	if err := c.local.Err(); err != nil {
		return c.fail(err)
	}
	return nil
}

// Abort fails the communicator from any goroutine.
func (c *Comm) Abort(cause error) {
	err := base.Aborted(c.rank(), cause)
	c.fail(err)
}

// fail records err as the cause, unless one is recorded, and aborts the
// host's communicator with it, so that the local peers fail too, then the
// rail. The cause is published only after both: a caller that hears of
// the failure may free memory at once, and the driver's implicit wait for
// the device to go idle must not find a kernel still spinning (ours, or
// NCCL's waiting for a host that is gone).
func (c *Comm) fail(err error) error {
	c.failMu.Lock()
	defer c.failMu.Unlock()
	if p := c.cause.Load(); p != nil {
		return *p
	}
	err = base.Canonical(err, c.rank())
	c.local.Abort(err) // first: our kernels stop at once; the rail's abort may wait for the device
	if a, ok := c.rail.(aborter); ok {
		a.Abort(err)
	}
	c.cause.Store(&err)
	c.cancel(err)
	return err
}

func (c *Comm) rank() int { return c.host*c.G + c.g }

// Reserved is the host communicator's own memory.
func (c *Comm) Reserved() base.Region { return c.local.Reserved() }

// Close closes the host's communicator (acknowledged by the host's
// ranks), then the rail if it has a Close; it returns the failure, if
// any, as every rank's Close does.
func (c *Comm) Close(ctx context.Context) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil
	}
	c.closed = true
	if c.dev != nil && c.Err() == nil {
		// The scratch must outlive the work queued on it; after a
		// failure that work was aborted.
		if err := c.dev.WaitFence(c.timeout); err != nil {
			c.fail(err)
		}
	}
	if c.Err() == nil {
		if err := c.closeMeet(ctx); err != nil {
			c.fail(err)
		}
	}
	if c.dev != nil {
		// Before the host's communicator closes: its context goes with it.
		// Unless the rail's engine may still run kernels (an abort that has
		// not returned): then a free could wait for them forever, and the
		// scratch is left to the process's end instead.
		if st, ok := c.rail.(settler); !ok || st.Settled(settleWait) {
			c.freeDevice()
		}
	}
	c.cancel(base.ErrClosed)
	c.watching.Wait() // no fail may reach the host's communicator during its Close
	err := c.local.Close(ctx)
	if cl, ok := c.rail.(closer); ok {
		if cerr := cl.Close(); err == nil {
			err = cerr
		}
	}
	if ferr := c.Err(); ferr != nil {
		return ferr
	}
	return err
}

// closeMeet is Close's meeting along the rail: Close is collective
// (contract section 1), and the host's communicator's Close has only the
// host's ranks acknowledge it, so the rail's ranks acknowledge it here. A
// rank lost before its Close fails every other rank's (a kill as the
// victim entered Close went unnoticed: run 13, results/gpu/levers-2026-12-02).
// It is a call's meeting, with Close's signature (as the cpu backend's
// Close has): a host that makes another call meanwhile gets the same bytes
// along the rail and a *MismatchError on every rank, not a short read.
func (c *Comm) closeMeet(ctx context.Context) error {
	mctx, cancel := context.WithTimeout(c.ctx, c.timeout)
	defer cancel()
	defer context.AfterFunc(ctx, cancel)()
	c.seq, c.op = c.seq+1, base.OpClose
	start := time.Now()
	err := c.meet(mctx, base.Signature{Op: base.OpClose, Buffers: 1, Seq: c.seq})
	if err != nil && errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return &base.TimeoutError{Op: base.OpClose, Seq: c.seq, After: time.Since(start).Round(time.Millisecond),
			Phase: fmt.Sprintf("waiting for the other hosts to close (the rail of local rank %d)", c.g)}
	}
	return err
}

// Stage hands out memory for a staged all-reduce's input: the shim's own,
// since the input goes through the host's reduce-scatter anyway.
func (c *Comm) Stage(n int) ([]byte, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.usable(); err != nil {
		return nil, err
	}
	if c.dev != nil {
		return nil, base.Invalidf("Stage on a device communicator: its staging is StageDevice's")
	}
	if cap(c.staging) < n {
		c.staging = num.AlignedBytes(n)
	}
	c.stage.Begin(n)
	return c.staging[:n:n], nil
}

func (c *Comm) usable() error {
	if c.closed {
		return base.ErrClosed
	}
	return c.Err()
}

// Do runs one call that base.Validate accepted for the world of W ranks.
func (c *Comm) Do(req *base.Request) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.usable(); err != nil {
		return err
	}
	if c.dev != nil && req.Op != base.OpBarrier {
		return c.local.Do(req) // which refuses host memory, saying why
	}
	if c.dev != nil && req.Red != num.Sum {
		return base.Invalidf("%v/%v: across hosts on GPUs detcoll sums only, so far", req.Op, req.Red)
	}
	c.hostRed, c.scalar, c.node = req.Red, req.Scalar, req.Red.Node()
	if req.Red == num.Avg {
		c.hostRed = num.Sum
	}
	if err := c.stage.CheckRequest(req); err != nil {
		return err
	}
	c.seq, c.op = c.seq+1, req.Op
	ctx, cancel := context.WithTimeout(c.ctx, c.timeout)
	defer cancel()
	sig := req.Signature()
	sig.Seq = c.seq
	if err := c.meet(ctx, sig); err != nil {
		return c.fail(err)
	}
	var err error
	switch req.Op {
	case base.OpAllReduce:
		err = c.allReduce(ctx, req.DType, req.In[0], req.Out[0])
	case base.OpAllReduceStaged:
		err = c.allReduce(ctx, req.DType, c.staging[:len(req.Out[0])], req.Out[0])
	case base.OpReduceScatter, base.OpReduceScatterMany:
		for k := range req.In {
			if err = c.reduceScatter(ctx, req.DType, req.In[k], req.Out[k]); err != nil {
				break
			}
		}
	case base.OpAllGather, base.OpAllGatherMany:
		for k := range req.In {
			if err = c.allGather(ctx, req.DType, req.In[k], req.Out[k]); err != nil {
				break
			}
		}
	case base.OpBroadcast:
		err = c.broadcast(ctx, req.DType, req.Out[0], req.Root)
	case base.OpBarrier:
		err = c.local.Do(&base.Request{Op: base.OpBarrier})
	default:
		err = fmt.Errorf("hier: %v is not a collective", req.Op)
	}
	if err != nil {
		return c.fail(err)
	}
	if req.Red == num.Avg {
		for _, out := range req.Out {
			num.Average(req.DType, out, c.hosts*c.G)
		}
	}
	return nil
}

// meet gathers every host's signature of this call along the rail: hosts
// that call different collectives (or the same with other arguments) fail
// here, before any output is written, each with every host's signature.
// A host's ranks agree among themselves: the host's communicator checks
// that at its first step.
func (c *Comm) meet(ctx context.Context, sig base.Signature) error {
	const n = 8 * proto.SignatureWords
	if len(c.sigs) < (c.hosts+1)*n {
		c.sigs = make([]byte, (c.hosts+1)*n)
	}
	mine, all := c.sigs[:n], c.sigs[n:(c.hosts+1)*n]
	for i, w := range proto.EncodeSignature(sig) {
		binary.LittleEndian.PutUint64(mine[8*i:], w)
	}
	if err := c.railGather(ctx, mine, all); err != nil {
		return err
	}
	host := func(h int) base.Signature {
		var w [proto.SignatureWords]uint64
		for i := range w {
			w[i] = binary.LittleEndian.Uint64(all[h*n+8*i:])
		}
		return proto.DecodeSignature(w)
	}
	for h := range c.hosts {
		if host(h) == sig {
			continue
		}
		// The rail knows one rank per host; the host's others called what
		// it did, or their host's communicator will say so.
		sigs := make([]base.Signature, c.hosts*c.G)
		for h := range c.hosts {
			for g := range c.G {
				sigs[h*c.G+g] = host(h)
			}
		}
		return &base.MismatchError{Signatures: sigs}
	}
	return nil
}

// railGather is Rail.AllGather, its wait bounded by ctx (the timeout). A
// rail that outlives it is a *TimeoutError; which host is missing the
// engine does not say.
func (c *Comm) railGather(ctx context.Context, send, recv []byte) error {
	err := c.rail.AllGather(ctx, send, recv)
	if err != nil && errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return &base.TimeoutError{Op: c.op, Seq: c.seq, After: c.timeout,
			Phase: fmt.Sprintf("waiting for the other hosts (the rail of local rank %d)", c.g)}
	}
	return err
}

// buf returns scratch slot i with n bytes, 8-byte aligned.
func (c *Comm) buf(i, n int) []byte {
	if cap(c.scratch[i]) < n {
		c.scratch[i] = num.AlignedBytes(n)
	}
	return c.scratch[i][:n]
}

// hostSums evaluates T over the H host sums gathered along the rail, each
// of len(dst) bytes at stride within all.
func (c *Comm) hostSums(dt num.DType, dst, all []byte, stride, off int) {
	c.srcs = c.srcs[:0]
	for h := range c.hosts {
		c.srcs = append(c.srcs, all[h*stride+off:h*stride+off+len(dst)])
	}
	c.reducer.Reduce(dt, c.node, dst, c.srcs)
}

// allReduce: the host's reduce-scatter of the input padded to a multiple
// of G elements, the rail's all-gather of this rank's shard, T over the
// hosts, the host's all-gather.
func (c *Comm) allReduce(ctx context.Context, dt num.DType, in, out []byte) error {
	size := dt.Size()
	n := len(in) / size
	padded := (n + c.G - 1) / c.G * c.G
	shard := padded / c.G * size
	// Padding needs copies; without it the host's calls use the caller's
	// buffers (in place too: the reduce-scatter has read in before the
	// all-gather writes out).
	pin, pout := in, out
	if padded != n {
		pin, pout = c.buf(0, padded*size), c.buf(4, padded*size)
		copy(pin, in)
		clear(pin[len(in):])
	}
	part := c.buf(1, shard)
	if err := c.local.Do(&base.Request{Op: base.OpReduceScatter, DType: dt, Red: c.hostRed, Scalar: c.scalar, In: [][]byte{pin}, Out: [][]byte{part}}); err != nil {
		return err
	}
	sum, err := c.railSum(ctx, dt, part)
	if err != nil {
		return err
	}
	if err := c.local.Do(&base.Request{Op: base.OpAllGather, DType: dt, In: [][]byte{sum}, Out: [][]byte{pout}}); err != nil {
		return err
	}
	if padded != n {
		copy(out, pout[:len(in)])
	}
	return nil
}

// railSum returns T over the rail's H host sums of part, element by
// element. With a power of two of hosts and an Exchanger it halves: at
// distance d = 1, 2, 4, ... each rank trades half of its range with the
// host d away and keeps the sum of the two blocks of d hosts, the lower
// block's on the left; those blocks are T's subtrees (it splits a power of
// two of leaves in halves), so after log2(H) steps each rank holds T over
// all hosts for its 1/H of the range, and the steps back, in reverse,
// gather the rest. Each rank moves 2(H-1)/H of part, the bandwidth
// optimum. Otherwise every rank gathers every host's part and evaluates T
// itself: H-1 parts.
func (c *Comm) railSum(ctx context.Context, dt num.DType, part []byte) ([]byte, error) {
	if c.ex == nil {
		all := c.buf(2, c.hosts*len(part))
		if err := c.railGather(ctx, part, all); err != nil {
			return nil, err
		}
		sum := c.buf(3, len(part))
		c.hostSums(dt, sum, all, len(part), 0)
		return sum, nil
	}
	sum := c.buf(3, len(part))
	copy(sum, part)
	ranges, r, err := c.halve(ctx, dt, sum)
	if err != nil {
		return nil, err
	}
	size := dt.Size()
	for k := len(ranges) - 1; k >= 0; k-- {
		d := 1 << k
		whole := ranges[k]
		mid := whole.lo + (whole.hi-whole.lo)/2
		other := span{mid, whole.hi}
		if c.host&d != 0 {
			other = span{whole.lo, mid}
		}
		if err := c.exchange(ctx, c.host^d, sum[r.lo*size:r.hi*size], sum[other.lo*size:other.hi*size]); err != nil {
			return nil, err
		}
		r = whole
	}
	return sum, nil
}

// span is a range of elements.
type span struct{ lo, hi int }

// halve sums buf along the rail by recursive halving (see railSum): at
// distance d = 1, 2, 4, ... this rank keeps half of its range (the lower
// half when its host's bit d is 0), trades the other half with host
// host^d and adds, the lower hosts' block on the left. It returns the
// range before each step and the one it ends with, which holds T over
// every host: for 2^k hosts of equal blocks, block bitrev(host) of them.
func (c *Comm) halve(ctx context.Context, dt num.DType, buf []byte) (ranges []span, r span, err error) {
	size := dt.Size()
	theirs := c.buf(2, len(buf))
	r = span{0, len(buf) / size}
	b := func(s span) []byte { return buf[s.lo*size : s.hi*size] }
	ranges = c.ranges[:0]
	for d := 1; d < c.hosts; d *= 2 {
		ranges = append(ranges, r)
		mid := r.lo + (r.hi-r.lo)/2
		lower := c.host&d == 0
		keep, give := span{r.lo, mid}, span{mid, r.hi}
		if !lower {
			keep, give = give, keep
		}
		in := theirs[keep.lo*size : keep.hi*size]
		if err := c.exchange(ctx, c.host^d, b(give), in); err != nil {
			return nil, r, err
		}
		left, right := b(keep), in
		if !lower {
			left, right = in, b(keep)
		}
		c.reducer.Reduce(dt, c.node, b(keep), [][]byte{left, right})
		r = keep
	}
	c.ranges = ranges
	return ranges, r, nil
}

// bitrev reverses the low k bits of x (2^k hosts).
func bitrev(x, hosts int) int {
	y := 0
	for d := 1; d < hosts; d *= 2 {
		y <<= 1
		if x&d != 0 {
			y |= 1
		}
	}
	return y
}

// exchange is Exchanger.Exchange, its wait bounded as railGather's.
func (c *Comm) exchange(ctx context.Context, peer int, send, recv []byte) error {
	err := c.ex.Exchange(ctx, peer, send, recv)
	if err != nil && errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return &base.TimeoutError{Op: c.op, Seq: c.seq, After: c.timeout,
			Phase: fmt.Sprintf("waiting for host %d (the rail of local rank %d)", peer, c.g)}
	}
	return err
}

// reduceScatter of W blocks of m: the host's reduce-scatter of the input
// reordered so that local rank g's share is block h*G+g of every host h;
// then along the rail either halving (a power of two of hosts and an
// Exchanger: each rank ends with its own block, 2(H-1)/H of a share
// moved) or an all-gather of those partial sums and T over the hosts of
// this rank's block.
func (c *Comm) reduceScatter(ctx context.Context, dt num.DType, in, out []byte) error {
	m := len(out)
	if m == 0 {
		return nil // every rank's is empty: nothing to move
	}
	// Halving leaves host h the block at position bitrev(h) of its part:
	// put block h there (bitrev is its own inverse).
	halving := c.ex != nil
	pos := func(h int) int { return h }
	if halving {
		pos = func(h int) int { return bitrev(h, c.hosts) }
	}
	perm := c.buf(0, len(in))
	for g := range c.G {
		for h := range c.hosts {
			copy(perm[(g*c.hosts+pos(h))*m:], in[(h*c.G+g)*m:(h*c.G+g+1)*m])
		}
	}
	part := c.buf(1, c.hosts*m)
	if err := c.local.Do(&base.Request{Op: base.OpReduceScatter, DType: dt, Red: c.hostRed, Scalar: c.scalar, In: [][]byte{perm}, Out: [][]byte{part}}); err != nil {
		return err
	}
	if halving {
		_, r, err := c.halve(ctx, dt, part)
		if err != nil {
			return err
		}
		size := dt.Size()
		if r.lo*size != pos(c.host)*m || r.hi*size != (pos(c.host)+1)*m {
			panic(fmt.Sprintf("hier: halving ended at elements [%d, %d), not block %d", r.lo, r.hi, pos(c.host)))
		}
		copy(out, part[r.lo*size:r.hi*size])
		return nil
	}
	all := c.buf(2, c.hosts*c.hosts*m)
	if err := c.railGather(ctx, part, all); err != nil {
		return err
	}
	sum := c.buf(3, m)
	c.hostSums(dt, sum, all, c.hosts*m, c.host*m)
	copy(out, sum)
	return nil
}

// allGather: the host's all-gather, then the rail's, straight into out:
// host-major numbering makes that the ranks' order.
func (c *Comm) allGather(ctx context.Context, dt num.DType, in, out []byte) error {
	mine := c.buf(0, c.G*len(in))
	if err := c.local.Do(&base.Request{Op: base.OpAllGather, DType: dt, In: [][]byte{in}, Out: [][]byte{mine}}); err != nil {
		return err
	}
	return c.railGather(ctx, mine, out)
}

// broadcast from root: the root's rail gathers its buffer from every host
// (and keeps the root host's), then every host broadcasts from that local
// rank.
func (c *Comm) broadcast(ctx context.Context, dt num.DType, buf []byte, root int) error {
	rootHost, rootLocal := root/c.G, root%c.G
	if c.g == rootLocal && c.hosts > 1 {
		all := c.buf(0, c.hosts*len(buf))
		if err := c.railGather(ctx, buf, all); err != nil {
			return err
		}
		copy(buf, all[rootHost*len(buf):])
	}
	return c.local.Do(&base.Request{Op: base.OpBroadcast, DType: dt, Root: rootLocal, In: [][]byte{buf}, Out: [][]byte{buf}})
}
