package hier

import (
	"fmt"
	"time"

	"github.com/detcoll/detcoll/internal/core/base"
	"github.com/detcoll/detcoll/internal/core/num"
	"github.com/detcoll/detcoll/internal/core/proto"
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
	// Idle reports whether the device finished all its work within d.
	Idle(d time.Duration) bool
	// Fence records the end of the work queued on s so far; WaitFence
	// waits for the last one (the caller may destroy s meanwhile), at most
	// timeout.
	Fence(s uintptr) error
	WaitFence(timeout time.Duration) error
	// TreeReduce queues dst = T over srcs, element by element (n
	// elements), node (Sum, Max or Min) at every node.
	TreeReduce(dt num.DType, node num.RedOp, dst uint64, srcs []uint64, n int, s uintptr) error
	// Average queues the division of the n elements at p by w, in place,
	// each rounded once (num.Average: Avg's last step).
	Average(dt num.DType, p uint64, n, w int, s uintptr) error

	// The signature check of every call across hosts, on the device:
	// PrepareRail sets it up for H hosts (at New, so that nothing is
	// allocated while a call is captured); SignRail queues this rank's
	// signature (its Seq is the device's count of calls) and returns
	// where the rail gathers n bytes from and into; CheckRail queues the
	// comparison of what the rail gathered with this rank's. A mismatch
	// fails the host's communicator, and through it every rank (the
	// cuda backend's monitor); an implementation may also return it.
	PrepareRail(hosts int) error
	SignRail(sig base.Signature, s uintptr) (send, recv uint64, n int, err error)
	CheckRail(s uintptr) error
}

// DeviceRail is a Rail that also gathers device memory, queued on a
// stream in order with the host's calls (NCCL's all-gather): each call's
// signatures and its data. The host AllGather carries Close's meeting.
type DeviceRail interface {
	Rail
	// AllGatherDevice queues on stream s the gathering of n bytes at
	// send from each rank of the rail into recv, in host order.
	AllGatherDevice(send, recv uint64, n int, s uintptr) error
}

// DeviceExchanger is a DeviceRail that also trades device memory with one
// rank of the rail at a time (NCCL's send and receive): with a power of
// two of hosts, reduce-scatters then halve along the rail as the host path
// does, and so do all-reduces from four hosts on, moving the
// bandwidth-optimal share (halvesDevice).
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

// settleWait bounds Close's wait for a rail's abort to return, and for
// the device to go idle after calls captured in graphs. The rail publishes
// its failure as its abort begins; NCCL's abort took up to 2.2 s on the
// GPU machine (package nccl). One that outlives this is taken as stuck,
// and the scratch is left.
const settleWait = 2 * time.Second

// dbuf is a scratch buffer of device memory.
type dbuf struct {
	addr uint64
	n    int
}

// devBuf returns device scratch slot i with at least n bytes. A slot grows
// only after the work queued so far on the call's stream is done: the
// calls of a communicator are ordered (by one stream or the caller's
// events), so nothing queued still uses the old memory then. Once a call
// has been captured in a CUDA graph, a graph may use any slot at any
// replay: a slot that grows then keeps its old memory till Close
// (retired), and a capture never waits.
func (c *Comm) devBuf(i, n int) (uint64, error) {
	b := &c.dscratch[i]
	if b.addr != 0 && b.n >= n {
		return b.addr, nil
	}
	if b.addr != 0 && c.captured {
		c.retired = append(c.retired, b.addr)
		*b = dbuf{}
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
	for _, p := range c.retired {
		c.dev.Free(p)
	}
	c.retired = nil
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
	if _, err := c.noteCapture(s); err != nil {
		return 0, err
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
// world of W ranks on the call's stream: the signature check along the
// rail (SignRail, the rail's gather, CheckRail), then the whole schedule.
// Nothing waits on the host, so the call may be captured in a CUDA graph:
// every replay is checked as an eager call is. A mismatch between hosts
// fails every rank once the check has run: at a later call or
// Synchronize, as a failure found by a kernel within a host does.
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
	capturing, err := c.noteCapture(req.Stream)
	if err != nil {
		return err
	}
	c.seq, c.op = c.seq+1, req.Op
	c.cur = req.Stream
	err = c.checkSignatures(req)
	for k := range req.Out {
		if err != nil {
			break
		}
		in := req.Out[k] // broadcast's buffer
		switch {
		case req.Op == base.OpAllReduceStaged:
			in = base.DeviceBuf{Addr: c.stagedAt, Len: req.Out[k].Len}
		case k < len(req.In):
			in = req.In[k]
		}
		if err = c.runDevice(req, in, req.Out[k]); err != nil {
			break
		}
		if req.Red == num.Avg {
			// The flat tree's sum, divided once (as Do's).
			o := req.Out[k]
			if err = c.dev.Average(req.DType, o.Addr, o.Len/req.DType.Size(), c.hosts*c.G, req.Stream); err != nil {
				break
			}
		}
	}
	if err == nil && !capturing { // an event recorded in a capture is no fence
		err = c.dev.Fence(req.Stream)
	}
	if err != nil {
		return c.fail(err)
	}
	return nil
}

// noteCapture reports whether stream s is capturing a CUDA graph now, and
// records whether any call of the communicator was (devBuf).
func (c *Comm) noteCapture(s uintptr) (bool, error) {
	capturing, err := c.dev.Capturing(s)
	if err != nil {
		return false, err
	}
	c.captured = c.captured || capturing
	return capturing, nil
}

// checkSignatures queues the call's signature check along the rail: a
// fixed number of bytes from every host, so that hosts that make
// different calls cannot hang in the gather.
func (c *Comm) checkSignatures(req *base.DeviceRequest) error {
	if c.hosts == 1 {
		return nil // the host's communicator checks its ranks' signatures
	}
	send, recv, n, err := c.dev.SignRail(req.Signature(), req.Stream)
	if err != nil {
		return err
	}
	if err := c.drail.AllGatherDevice(send, recv, n, req.Stream); err != nil {
		return err
	}
	return c.dev.CheckRail(req.Stream)
}

// halvesDevice says whether a device call of op halves along the rail: with
// a rail that is a DeviceExchanger and a power of two of hosts, a
// reduce-scatter always does (at two hosts it receives its share once
// instead of both hosts' partials); an all-reduce from four hosts on (at
// two it moves the same bytes either way, and the gathering schedule is
// the one that ran on a GPU).
func (c *Comm) halvesDevice(op base.Op) bool {
	switch {
	case c.dex == nil:
		return false
	case op == base.OpReduceScatter || op == base.OpReduceScatterMany:
		return true
	}
	return c.hosts >= 4
}

// slotStage is the staging's scratch slot; the others are indexed by the
// schedule's buffer (proto.HostBuf).
const (
	slotStage = int(proto.NumHostBufs)
	numSlots  = slotStage + 1
)

// runDevice queues the schedule of one buffer pair of req on its stream:
// in and out are the caller's (in, for a staged all-reduce, the staging).
func (c *Comm) runDevice(req *base.DeviceRequest, in, out base.DeviceBuf) error {
	dt, st := req.DType, req.Stream
	c.steps = proto.HostSchedule(c.steps[:0], c.hostCall(req.Op, dt, req.Red, scheduleBytes(req.Op, in.Len, out.Len), req.Root, c.halvesDevice(req.Op)))
	sizes, used := proto.ScratchSizes(c.steps)
	var at [proto.NumHostBufs]uint64
	at[proto.BufIn], at[proto.BufOut] = in.Addr, out.Addr
	for b := range at {
		if at[b] == 0 && used[b] {
			var err error
			if at[b], err = c.devBuf(b, sizes[b]); err != nil {
				return err
			}
		}
	}
	addr := func(r proto.Ref) uint64 { return at[r.Buf] + uint64(r.Off) }
	dbuf := func(r proto.Ref) []base.DeviceBuf { return []base.DeviceBuf{{Addr: addr(r), Len: r.N}} }
	for _, s := range c.steps {
		var err error
		switch s.Action {
		case proto.HostCopy:
			if addr(s.Dst) != addr(s.Src) {
				err = c.dev.Copy(addr(s.Dst), addr(s.Src), s.Dst.N, st)
			}
		case proto.HostZero:
			err = c.dev.Zero(addr(s.Dst), s.Dst.N, st)
		case proto.LocalReduceScatter:
			// The host's tree with the call's operator (PreMulSum scales
			// every leaf there; Avg sums, and divides at the end).
			red, scalar, at := req.Red, req.Scalar, req.ScalarAt
			if red == num.Avg {
				red = num.Sum
			}
			err = c.dev.Enqueue(&base.DeviceRequest{Op: base.OpReduceScatter, DType: dt, Red: red, Scalar: scalar, ScalarAt: at,
				Stream: st, In: dbuf(s.Src), Out: dbuf(s.Dst)})
		case proto.LocalAllGather:
			err = c.dev.Enqueue(&base.DeviceRequest{Op: base.OpAllGather, DType: dt, Stream: st, In: dbuf(s.Src), Out: dbuf(s.Dst)})
		case proto.LocalBroadcast:
			err = c.dev.Enqueue(&base.DeviceRequest{Op: base.OpBroadcast, DType: dt, Root: s.Root, Stream: st, In: dbuf(s.Dst), Out: dbuf(s.Dst)})
		case proto.RailGather:
			err = c.drail.AllGatherDevice(addr(s.Src), addr(s.Dst), s.Src.N, st)
		case proto.RailExchange:
			err = c.dex.ExchangeDevice(s.Peer, addr(s.Src), s.Src.N, addr(s.Dst), s.Dst.N, st)
		case proto.Tree:
			c.dsrcs = c.dsrcs[:0]
			for _, r := range s.Srcs {
				c.dsrcs = append(c.dsrcs, addr(r))
			}
			err = c.dev.TreeReduce(dt, req.Red.Node(), addr(s.Dst), c.dsrcs, s.Dst.N/dt.Size(), st)
		default:
			panic("hier: unknown step " + s.String())
		}
		if err != nil {
			return err
		}
	}
	return nil
}
