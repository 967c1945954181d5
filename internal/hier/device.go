package hier

import (
	"context"
	"fmt"
	"time"

	"github.com/detcoll/detcoll/internal/base"
	"github.com/detcoll/detcoll/internal/num"
)

// DeviceLocal is a host's communicator of device memory (the cuda
// backend), with what a call across hosts needs of it besides its
// collectives: scratch memory, copies and T over the hosts' sums, all
// queued on the call's stream.
type DeviceLocal interface {
	Local
	Enqueue(req *base.DeviceRequest) error
	Synchronize(s uintptr) error
	Device() int
	Alloc(n int) (uint64, error)
	Free(p uint64) error
	Copy(dst, src uint64, n int, s uintptr) error
	Zero(dst uint64, n int, s uintptr) error
	Capturing(s uintptr) (bool, error)
	// Fence records the end of the work queued on s so far; WaitFence
	// waits for the last one (the caller may destroy s meanwhile), at most
	// timeout.
	Fence(s uintptr) error
	WaitFence(timeout time.Duration) error
	// TreeSum queues dst = T over srcs, element by element (n elements).
	TreeSum(dt num.DType, dst uint64, srcs []uint64, n int, s uintptr) error
}

// DeviceRail is a Rail that also gathers device memory, queued on a
// stream in order with the host's calls (NCCL's all-gather). The host
// AllGather still carries each call's signatures, before anything is
// queued.
type DeviceRail interface {
	Rail
	// AllGatherDevice queues on stream s the gathering of n bytes at
	// send from each rank of the rail into recv, in host order.
	AllGatherDevice(send, recv uint64, n int, s uintptr) error
}

// DeviceExchanger is a DeviceRail that also trades device memory with one
// rank of the rail at a time (NCCL's send and receive): with four or more
// hosts, a power of two, all-reduces and reduce-scatters then halve along
// the rail as the host path does (railSum), moving the bandwidth-optimal
// share. (With two hosts an all-reduce moves the same bytes either way,
// and the gathering path is the one that ran on a GPU.)
type DeviceExchanger interface {
	// ExchangeDevice queues on s the sending of sendN bytes at send to the
	// rail's rank on host peer and the receiving of recvN bytes from it
	// into recv.
	ExchangeDevice(peer int, send uint64, sendN int, recv uint64, recvN int, s uintptr) error
}

// What a Rail may also be: one that learns of failures by itself (NCCL's
// asynchronous errors, a lost process) is watched; one that can stop work
// it queued is aborted with the communicator; one that holds resources is
// closed with it.
type (
	watched interface {
		Done() <-chan struct{}
		Err() error
	}
	aborter interface{ Abort(cause error) }
	closer  interface{ Close() error }
	settler interface{ Settled(d time.Duration) bool }
)

// settleWait bounds Close's wait for a rail's abort to return. The rail's
// failure has given the abort its own bound already (package nccl: 2 s);
// one that outlives both is taken as stuck, and the scratch is left.
const settleWait = time.Second

// dbuf is a scratch buffer of device memory.
type dbuf struct {
	addr uint64
	n    int
}

// devBuf returns device scratch slot i with at least n bytes. A slot grows
// only after the work queued so far on the call's stream is done: the
// calls of a communicator are ordered (by one stream or the caller's
// events), so nothing queued still uses the old memory then.
func (c *Comm) devBuf(i, n int) (uint64, error) {
	b := &c.dscratch[i]
	if b.n >= n {
		return b.addr, nil
	}
	if b.addr != 0 {
		// Everything queued so far, this call's earlier steps included
		// (a Many call's previous buffer), may use the old memory.
		if err := c.dev.Fence(c.cur); err != nil {
			return 0, err
		}
		if err := c.dev.WaitFence(c.timeout); err != nil {
			return 0, err
		}
		if err := c.dev.Free(b.addr); err != nil {
			return 0, err
		}
		*b = dbuf{}
	}
	// Room to grow: a call a little larger than the last should not
	// drain the stream again.
	want := max(n, 4096) + n/4
	p, err := c.dev.Alloc(want)
	if err != nil {
		return 0, fmt.Errorf("hier: device scratch of %d bytes: %w", want, err)
	}
	*b = dbuf{p, want}
	return p, nil
}

// freeDevice releases the device scratch (Close, once nothing runs).
func (c *Comm) freeDevice() {
	for i := range c.dscratch {
		if c.dscratch[i].addr != 0 {
			c.dev.Free(c.dscratch[i].addr)
			c.dscratch[i] = dbuf{}
		}
	}
}

// StageDevice returns device scratch for a staged all-reduce's input: the
// input goes through the host's reduce-scatter anyway.
func (c *Comm) StageDevice(n int, s uintptr) (uint64, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.usable(); err != nil {
		return 0, err
	}
	if c.dev == nil {
		return 0, base.Invalidf("StageDevice on a host communicator")
	}
	c.cur = s
	p, err := c.devBuf(slotStage, n)
	if err != nil {
		return 0, c.fail(err)
	}
	c.stage.Begin(n)
	c.stagedAt = p
	return p, nil
}

// Synchronize waits for stream s and returns the failure, if any: the
// host's or one the rail learnt of meanwhile.
func (c *Comm) Synchronize(s uintptr) error {
	if err := c.dev.Synchronize(s); err != nil {
		if lerr := c.local.Err(); lerr != nil {
			return c.fail(lerr) // the rail stops before the caller hears of it
		}
		return err // a bad stream, say: nothing failed
	}
	return c.Err()
}

// Device is the host communicator's GPU.
func (c *Comm) Device() int { return c.dev.Device() }

// Enqueue queues one device call that base.ValidateDevice accepted for the
// world of W ranks: it meets the other hosts on the host first (the
// signatures), then queues the whole schedule on the call's stream.
func (c *Comm) Enqueue(req *base.DeviceRequest) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.usable(); err != nil {
		return err
	}
	if c.dev == nil {
		return base.Invalidf("%vDevice on a host communicator", req.Op)
	}
	out := 0
	if len(req.Out) > 0 {
		out = req.Out[0].Len
	}
	if err := c.stage.Check(req.Op, out, true); err != nil {
		return err
	}
	if capturing, err := c.dev.Capturing(req.Stream); err != nil {
		return err
	} else if capturing {
		// A replay would skip the meeting on the host: the hosts could
		// pair different calls.
		return fmt.Errorf("%w: %vDevice across hosts cannot be captured into a CUDA graph: every call meets the other hosts on the host first", base.ErrUnavailable, req.Op)
	}
	c.seq, c.op = c.seq+1, req.Op
	ctx, cancel := context.WithTimeout(c.ctx, c.timeout)
	defer cancel()
	sig := req.Signature()
	sig.Seq = c.seq
	if err := c.meet(ctx, sig); err != nil {
		return c.fail(err)
	}
	s, dt := req.Stream, req.DType
	c.cur = s
	var err error
	switch req.Op {
	case base.OpAllReduce:
		err = c.allReduceDevice(dt, req.In[0].Addr, req.Out[0], s)
	case base.OpAllReduceStaged:
		err = c.allReduceDevice(dt, c.stagedAt, req.Out[0], s)
	case base.OpReduceScatter, base.OpReduceScatterMany:
		for k := range req.In {
			if err = c.reduceScatterDevice(dt, req.In[k], req.Out[k], s); err != nil {
				break
			}
		}
	case base.OpAllGather, base.OpAllGatherMany:
		for k := range req.In {
			if err = c.allGatherDevice(dt, req.In[k], req.Out[k], s); err != nil {
				break
			}
		}
	case base.OpBroadcast:
		err = c.broadcastDevice(dt, req.Out[0], req.Root, s)
	default:
		err = fmt.Errorf("hier: %v is not a device collective", req.Op)
	}
	if err == nil {
		err = c.dev.Fence(s)
	}
	if err != nil {
		return c.fail(err)
	}
	return nil
}

// The device scratch slots.
const (
	slotIn = iota // the padded input, or a reduce-scatter's reordered one
	slotPart
	slotAll // what the rail gathered
	slotSum
	slotOut // the padded output
	slotStage
	numSlots
)

// allReduceDevice is allReduce on the GPU (see there), of the in's
// out.Len bytes. With one rank per host the host's calls are copies, and
// go: the rail gathers the input and T over the hosts writes the output.
func (c *Comm) allReduceDevice(dt num.DType, in uint64, out base.DeviceBuf, s uintptr) error {
	size := dt.Size()
	n := out.Len / size
	padded := (n + c.G - 1) / c.G * c.G
	shard := padded / c.G * size
	pin, pout := in, out.Addr
	var err error
	if padded != n {
		if pin, err = c.devBuf(slotIn, padded*size); err != nil {
			return err
		}
		if pout, err = c.devBuf(slotOut, padded*size); err != nil {
			return err
		}
		if err := c.dev.Copy(pin, in, out.Len, s); err != nil {
			return err
		}
		if err := c.dev.Zero(pin+uint64(out.Len), padded*size-out.Len, s); err != nil {
			return err
		}
	}
	if c.dex != nil {
		return c.allReduceHalving(dt, pin, pout, out, padded*size, shard, s)
	}
	part, sum := pin, pout
	if c.G > 1 {
		if part, err = c.devBuf(slotPart, shard); err != nil {
			return err
		}
		if sum, err = c.devBuf(slotSum, shard); err != nil {
			return err
		}
		if err := c.dev.Enqueue(&base.DeviceRequest{Op: base.OpReduceScatter, DType: dt, Stream: s,
			In: []base.DeviceBuf{{Addr: pin, Len: padded * size}}, Out: []base.DeviceBuf{{Addr: part, Len: shard}}}); err != nil {
			return err
		}
	}
	all, err := c.devBuf(slotAll, c.hosts*shard)
	if err != nil {
		return err
	}
	if err := c.drail.AllGatherDevice(part, all, shard, s); err != nil {
		return err
	}
	if err := c.dev.TreeSum(dt, sum, c.hostArrays(all, shard, 0), shard/size, s); err != nil {
		return err
	}
	if c.G > 1 {
		if err := c.dev.Enqueue(&base.DeviceRequest{Op: base.OpAllGather, DType: dt, Stream: s,
			In: []base.DeviceBuf{{Addr: sum, Len: shard}}, Out: []base.DeviceBuf{{Addr: pout, Len: padded * size}}}); err != nil {
			return err
		}
	}
	if padded != n {
		return c.dev.Copy(out.Addr, pout, out.Len, s)
	}
	return nil
}

// allReduceHalving is allReduceDevice with the rail halving (railSum):
// the host's reduce-scatter into scratch (with one rank per host, a copy
// of the input into the output, which then holds the work), halving and
// doubling back along the rail, the host's all-gather.
func (c *Comm) allReduceHalving(dt num.DType, pin, pout uint64, out base.DeviceBuf, paddedBytes, shard int, s uintptr) error {
	work := pout
	if c.G == 1 {
		if pin != pout {
			if err := c.dev.Copy(pout, pin, shard, s); err != nil {
				return err
			}
		}
	} else {
		var err error
		if work, err = c.devBuf(slotPart, shard); err != nil {
			return err
		}
		if err := c.dev.Enqueue(&base.DeviceRequest{Op: base.OpReduceScatter, DType: dt, Stream: s,
			In: []base.DeviceBuf{{Addr: pin, Len: paddedBytes}}, Out: []base.DeviceBuf{{Addr: work, Len: shard}}}); err != nil {
			return err
		}
	}
	ranges, r, err := c.halveDevice(dt, work, shard, s)
	if err != nil {
		return err
	}
	size := dt.Size()
	at := func(sp span) uint64 { return work + uint64(sp.lo*size) }
	for k := len(ranges) - 1; k >= 0; k-- {
		d := 1 << k
		whole := ranges[k]
		mid := whole.lo + (whole.hi-whole.lo)/2
		other := span{mid, whole.hi}
		if c.host&d != 0 {
			other = span{whole.lo, mid}
		}
		if err := c.dex.ExchangeDevice(c.host^d, at(r), (r.hi-r.lo)*size, at(other), (other.hi-other.lo)*size, s); err != nil {
			return err
		}
		r = whole
	}
	if c.G > 1 {
		if err := c.dev.Enqueue(&base.DeviceRequest{Op: base.OpAllGather, DType: dt, Stream: s,
			In: []base.DeviceBuf{{Addr: work, Len: shard}}, Out: []base.DeviceBuf{{Addr: pout, Len: paddedBytes}}}); err != nil {
			return err
		}
	}
	if pout != out.Addr {
		return c.dev.Copy(out.Addr, pout, out.Len, s)
	}
	return nil
}

// halveDevice is halve on the GPU: at distance d = 1, 2, 4, ... this rank
// keeps half of its range of the n bytes at buf (the lower half when its
// host's bit d is 0), trades the other half with host host^d and adds,
// the lower hosts' block on the left (T's subtrees).
func (c *Comm) halveDevice(dt num.DType, buf uint64, n int, s uintptr) (ranges []span, r span, err error) {
	size := dt.Size()
	theirs, err := c.devBuf(slotAll, n)
	if err != nil {
		return nil, r, err
	}
	at := func(base uint64, sp span) uint64 { return base + uint64(sp.lo*size) }
	r = span{0, n / size}
	for d := 1; d < c.hosts; d *= 2 {
		ranges = append(ranges, r)
		mid := r.lo + (r.hi-r.lo)/2
		lower := c.host&d == 0
		keep, give := span{r.lo, mid}, span{mid, r.hi}
		if !lower {
			keep, give = give, keep
		}
		if err := c.dex.ExchangeDevice(c.host^d, at(buf, give), (give.hi-give.lo)*size, at(theirs, keep), (keep.hi-keep.lo)*size, s); err != nil {
			return nil, r, err
		}
		left, right := at(buf, keep), at(theirs, keep)
		if !lower {
			left, right = right, left
		}
		if err := c.dev.TreeSum(dt, at(buf, keep), []uint64{left, right}, keep.hi-keep.lo, s); err != nil {
			return nil, r, err
		}
		r = keep
	}
	return ranges, r, nil
}

// hostArrays returns the H addresses all + h*stride + off.
func (c *Comm) hostArrays(all uint64, stride, off int) []uint64 {
	c.dsrcs = c.dsrcs[:0]
	for h := range c.hosts {
		c.dsrcs = append(c.dsrcs, all+uint64(h*stride+off))
	}
	return c.dsrcs
}

// reduceScatterDevice is reduceScatter on the GPU, without halving: the
// host's reduce-scatter of the input reordered so that local rank g's
// share is block h*G+g of every host h, the rail's all-gather of those
// partial sums, T over the hosts of this rank's block.
func (c *Comm) reduceScatterDevice(dt num.DType, in, out base.DeviceBuf, s uintptr) error {
	m := out.Len
	if m == 0 {
		return nil
	}
	if c.dex != nil {
		return c.reduceScatterHalving(dt, in, out, s)
	}
	part := in.Addr // with one rank per host, the input is already in host order
	if c.G > 1 {
		perm, err := c.devBuf(slotIn, in.Len)
		if err != nil {
			return err
		}
		for g := range c.G {
			for h := range c.hosts {
				if err := c.dev.Copy(perm+uint64((g*c.hosts+h)*m), in.Addr+uint64((h*c.G+g)*m), m, s); err != nil {
					return err
				}
			}
		}
		if part, err = c.devBuf(slotPart, c.hosts*m); err != nil {
			return err
		}
		if err := c.dev.Enqueue(&base.DeviceRequest{Op: base.OpReduceScatter, DType: dt, Stream: s,
			In: []base.DeviceBuf{{Addr: perm, Len: in.Len}}, Out: []base.DeviceBuf{{Addr: part, Len: c.hosts * m}}}); err != nil {
			return err
		}
	}
	all, err := c.devBuf(slotAll, c.hosts*c.hosts*m)
	if err != nil {
		return err
	}
	if err := c.drail.AllGatherDevice(part, all, c.hosts*m, s); err != nil {
		return err
	}
	return c.dev.TreeSum(dt, out.Addr, c.hostArrays(all, c.hosts*m, c.host*m), m/dt.Size(), s)
}

// reduceScatterHalving is reduceScatter's halving on the GPU: the input
// reordered so that, for each local rank g, host h's block lies where
// halving leaves host h (bitrev(h)), the host's reduce-scatter, halving,
// this host's block copied out.
func (c *Comm) reduceScatterHalving(dt num.DType, in, out base.DeviceBuf, s uintptr) error {
	m := out.Len
	perm, err := c.devBuf(slotIn, in.Len)
	if err != nil {
		return err
	}
	for g := range c.G {
		for h := range c.hosts {
			if err := c.dev.Copy(perm+uint64((g*c.hosts+bitrev(h, c.hosts))*m), in.Addr+uint64((h*c.G+g)*m), m, s); err != nil {
				return err
			}
		}
	}
	part := perm
	if c.G > 1 {
		if part, err = c.devBuf(slotPart, c.hosts*m); err != nil {
			return err
		}
		if err := c.dev.Enqueue(&base.DeviceRequest{Op: base.OpReduceScatter, DType: dt, Stream: s,
			In: []base.DeviceBuf{{Addr: perm, Len: in.Len}}, Out: []base.DeviceBuf{{Addr: part, Len: c.hosts * m}}}); err != nil {
			return err
		}
	}
	_, r, err := c.halveDevice(dt, part, c.hosts*m, s)
	if err != nil {
		return err
	}
	size := dt.Size()
	if want := bitrev(c.host, c.hosts); r.lo*size != want*m || r.hi*size != (want+1)*m {
		panic(fmt.Sprintf("hier: halving ended at elements [%d, %d), not block %d", r.lo, r.hi, want))
	}
	return c.dev.Copy(out.Addr, part+uint64(r.lo*size), m, s)
}

// allGatherDevice: the host's all-gather, then the rail's, straight into
// out.
func (c *Comm) allGatherDevice(dt num.DType, in, out base.DeviceBuf, s uintptr) error {
	mine := in.Addr
	if c.G > 1 {
		var err error
		if mine, err = c.devBuf(slotIn, c.G*in.Len); err != nil {
			return err
		}
		if err := c.dev.Enqueue(&base.DeviceRequest{Op: base.OpAllGather, DType: dt, Stream: s,
			In: []base.DeviceBuf{in}, Out: []base.DeviceBuf{{Addr: mine, Len: c.G * in.Len}}}); err != nil {
			return err
		}
	}
	return c.drail.AllGatherDevice(mine, out.Addr, c.G*in.Len, s)
}

// broadcastDevice: as broadcast, the root's rail gathers its buffer from
// every host, then every host broadcasts from that local rank.
func (c *Comm) broadcastDevice(dt num.DType, buf base.DeviceBuf, root int, s uintptr) error {
	rootHost, rootLocal := root/c.G, root%c.G
	if c.g == rootLocal {
		all, err := c.devBuf(slotAll, c.hosts*buf.Len)
		if err != nil {
			return err
		}
		if err := c.drail.AllGatherDevice(buf.Addr, all, buf.Len, s); err != nil {
			return err
		}
		if c.host != rootHost {
			if err := c.dev.Copy(buf.Addr, all+uint64(rootHost*buf.Len), buf.Len, s); err != nil {
				return err
			}
		}
	}
	if c.G == 1 {
		return nil
	}
	return c.dev.Enqueue(&base.DeviceRequest{Op: base.OpBroadcast, DType: dt, Root: rootLocal, Stream: s,
		In: []base.DeviceBuf{buf}, Out: []base.DeviceBuf{buf}})
}
