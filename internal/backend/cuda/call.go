package cuda

import (
	"encoding/binary"
	"errors"
	"fmt"
	"runtime"

	"github.com/detcoll/detcoll/internal/binding/driver"
	"github.com/detcoll/detcoll/internal/core/base"
)

// Enqueue queues one collective call that base.ValidateDevice accepted on
// its stream and returns without waiting for the GPU. It returns the
// communicator's failure, if an earlier kernel or a peer failed, and
// queues nothing then.
func (c *Comm) Enqueue(req *base.DeviceRequest) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.enqueue(req)
}

// enqueue is Enqueue with c.mu held.
func (c *Comm) enqueue(req *base.DeviceRequest) error {
	if err := c.usable(); err != nil {
		return err
	}
	out := 0
	if len(req.Out) > 0 {
		out = req.Out[0].Len
	}
	pending := c.stage
	if err := c.stage.Check(req.Op, out, true); err != nil {
		return err
	}
	if err := c.launch(req.Op, req.Signature(), operandOf(req), c.plan.plan(req), driver.Stream(req.Stream)); err != nil {
		c.stage = pending // nothing queued: the Stage still awaits its call
		return err
	}
	return nil
}

// Reserved is this rank's device buffer: no caller's buffer may lie in it.
func (c *Comm) Reserved() base.Region { return base.Region{Addr: uint64(c.buf), Len: c.bufLen} }

// StageDevice queues, on stream s, a wait until every peer has finished
// reading this rank's staging, and returns the staging's device address
// for the caller to write n bytes of all-reduce input into (on s, after
// the wait). AllReduceStagedDevice must follow.
func (c *Comm) StageDevice(n int, s uintptr) (uint64, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.usable(); err != nil {
		return 0, err
	}
	if !c.stage.Pending() {
		sig := base.Signature{Op: base.OpAllReduceStaged}
		if err := c.launch(base.OpAllReduceStaged, sig, operand{}, []launch{c.plan.reserve()}, driver.Stream(s)); err != nil {
			return 0, err
		}
	}
	c.stage.Begin(n)
	return uint64(c.buf + ctrlSize), nil
}

// operand is what a launch is given of its call's operator besides the
// signature: what it computes (calcOf) and premulsum's scalar, as its
// element's bits or at a device address.
type operand struct {
	calc             uint32
	scalar, scalarAt uint64
}

func operandOf(req *base.DeviceRequest) operand {
	if !req.Op.Reduces() {
		return operand{}
	}
	o := operand{calc: calcOf(req.Red, req.DType), scalarAt: req.ScalarAt}
	var b [8]byte
	copy(b[:], req.Scalar)
	o.scalar = binary.LittleEndian.Uint64(b[:])
	return o
}

// launch queues the launches of one call. A failure to queue the first one
// leaves the protocol as it was and is returned as is; a failure after
// that leaves this rank half way through a call, which poisons the
// communicator.
func (c *Comm) launch(op base.Op, sig base.Signature, o operand, launches []launch, s driver.Stream) error {
	if err := c.current(); err != nil {
		runtime.UnlockOSThread()
		return err
	}
	defer runtime.UnlockOSThread()
	c.last = s
	args := c.args
	*args = kernelArgs{
		Self: uint64(c.buf), Host: uint64(c.hostDev), Timeout: uint64(c.timeout.Nanoseconds()),
		Count: sig.Count, Layout: sig.Layout, LL: uint64(c.llOff), Op: uint32(sig.Op), DType: uint32(sig.DType),
		Root: sig.Root, NBuf: sig.Buffers, Rank: uint32(c.rank),
		Red: uint32(sig.Red), Calc: o.calc, Scalar: o.scalar, ScalarAt: o.scalarAt, Wins: uint64(c.wins.table),
	}
	for i, l := range launches {
		if l.copies != nil {
			for _, cp := range l.copies {
				if err := driver.MemcpyDtoDAsync(driver.DevicePtr(cp.dst), driver.DevicePtr(cp.src), cp.n, s); err != nil {
					err = fmt.Errorf("cuda: %v: the copies of launch %d of %d: %w", op, i+1, len(launches), err)
					if i > 0 {
						c.poison(err, true)
					}
					return err
				}
			}
			continue
		}
		if l.table[0] != opAlone && l.grid > c.plan.maxBlocks {
			// A planner bug, caught before it can starve a peer's kernel
			// (share.go): no launch that waits may take more.
			err := fmt.Errorf("cuda: %v: launch %d of %d blocks, over the cap of %d", op, i+1, l.grid, c.plan.maxBlocks)
			if i > 0 {
				c.poison(err, true)
			}
			return err
		}
		args.Steps, args.NWork, args.Window = l.table, uint32(len(l.work)), uint64(l.window)
		args.RegIn, args.RegOut = l.reg[0], l.reg[1]
		args.Work = [maxWork]work{}
		copy(args.Work[:], l.work)
		threads := c.plan.block
		if l.threads > 0 {
			threads = l.threads
		}
		cfg := driver.LaunchConfig{Grid: driver.Dim3{X: uint32(l.grid)}, Block: driver.Dim3{X: uint32(threads)}, Stream: s}
		if err := driver.LaunchStruct(c.fns[l.kernel], cfg, args); err != nil {
			err = fmt.Errorf("cuda: %v: launch %d of %d: %w", op, i+1, len(launches), err)
			if i > 0 {
				c.poison(err, true)
			}
			return err
		}
	}
	return nil
}

// Synchronize waits until the work queued on stream s is done and returns
// the communicator's failure, if any: the way to learn that a call queued
// earlier failed.
func (c *Comm) Synchronize(s uintptr) error {
	c.mu.Lock()
	closed := c.closed
	c.mu.Unlock()
	if closed {
		return base.ErrClosed
	}
	if err := c.current(); err != nil {
		runtime.UnlockOSThread()
		return err
	}
	// Relaxed for this wait: another thread's capture in global mode
	// would refuse it (and be broken by it), though a wait for a stream
	// that is not capturing cannot disturb a capture. A wait for a
	// capturing stream still fails.
	prev, merr := driver.ExchangeCaptureMode(driver.CaptureModeRelaxed)
	err := driver.Stream(s).Synchronize()
	if merr == nil {
		driver.ExchangeCaptureMode(prev)
	}
	runtime.UnlockOSThread()
	var r driver.Result
	if err != nil && errors.As(err, &r) && (r == driver.ResultInvalidHandle || r == driver.ResultInvalidValue) {
		return fmt.Errorf("%w: cuda: synchronize stream %#x: %w", base.ErrInvalid, s, err)
	}
	if err != nil {
		// A fault in a kernel leaves the context unusable.
		c.poison(fmt.Errorf("cuda: synchronize: %w", err), true)
	}
	return c.Err()
}

// Do runs a host-memory call. A cuda communicator takes device memory,
// except for Barrier, which it queues on the stream of the communicator's
// last call (its own non-blocking stream before any call) and waits for
// that stream alone. The barrier's kernel must follow the calls in flight
// (every launch counts its seq from the last call's done), and the
// communicator's calls go to one stream, or to streams the caller orders,
// so the last call's stream is behind all of them. Waiting for the whole
// device instead (cuCtxSynchronize) would fail while another thread
// captures a graph in global mode, and break that capture; the wait for
// the stream relaxes the thread's capture mode for the wait (Synchronize).
func (c *Comm) Do(req *base.Request) error {
	if req.Op != base.OpBarrier {
		return base.Invalidf("%v on host memory: a cuda communicator takes device memory (use the Device calls)", req.Op)
	}
	c.mu.Lock()
	s := c.last
	err := c.enqueue(&base.DeviceRequest{Op: base.OpBarrier, Stream: uintptr(s)})
	c.mu.Unlock()
	if err != nil {
		return err
	}
	return c.Synchronize(uintptr(s))
}

// Stage refuses: a cuda communicator's staging is device memory
// (StageDevice).
func (c *Comm) Stage(n int) ([]byte, error) {
	return nil, base.Invalidf("Stage of host memory: a cuda communicator's staging is device memory (use StageDevice)")
}
