package soak

import (
	"fmt"
	"os"
	"runtime"

	"github.com/detcoll/detcoll"
	"github.com/detcoll/detcoll/internal/cuda/driver"
	"github.com/detcoll/detcoll/internal/jobenv"
)

// deviceExec runs calls on device memory of a cuda communicator: the
// batch's arenas are copied to two device buffers, every call is queued
// on one non-blocking stream without waiting, and finish synchronises
// once and copies the arenas back for checking.
//
// Its calls must come from one goroutine, which it locks to its thread
// (the device's primary context is current there) until closed.
//
// TODO(soak): internal/verify (gpu, devBuf) and internal/bench (gpuSide)
// hold the same few driver calls unexported; when one of them is
// exported, use it here.
type deviceExec struct {
	c       *detcoll.Comm
	dev     driver.Device
	s       driver.Stream
	in, out driver.DevicePtr // the arenas' device copies
	inCap   int
	outCap  int
	flags   driver.DevicePtr // agree's byte and its gather: 1 + W bytes
	host    []byte           // agree's bytes
}

// openDevice prepares c's GPU on the calling goroutine's thread.
func openDevice(c *detcoll.Comm) (d *deviceExec, err error) {
	if c.Device() < 0 {
		return nil, fmt.Errorf("soak: device calls need a cuda communicator, not %s", c.Options().Backend)
	}
	runtime.LockOSThread()
	if err := driver.Load(); err != nil {
		runtime.UnlockOSThread()
		return nil, err
	}
	d = &deviceExec{c: c}
	defer func() {
		if err != nil {
			driver.Unload()
			runtime.UnlockOSThread()
		}
	}()
	if d.dev, err = driver.DeviceGet(c.Device()); err != nil {
		return nil, err
	}
	ctx, err := d.dev.PrimaryCtxRetain()
	if err != nil {
		return nil, err
	}
	if err = ctx.SetCurrent(); err == nil {
		d.s, err = driver.StreamCreate(driver.StreamNonBlocking)
	}
	if err == nil {
		d.flags, err = driver.MemAlloc(1 + c.WorldSize())
	}
	if err != nil {
		if d.s != 0 {
			d.s.Destroy()
		}
		d.dev.PrimaryCtxRelease()
		return nil, err
	}
	return d, nil
}

func (d *deviceExec) stream() detcoll.Stream { return detcoll.Stream(d.s) }

// ensure makes *p a device buffer of at least n bytes.
func ensure(p *driver.DevicePtr, capacity *int, n int) error {
	if n <= *capacity {
		return nil
	}
	if *p != 0 {
		driver.MemFree(*p)
		*p, *capacity = 0, 0
	}
	n += n / 4
	q, err := driver.MemAlloc(n)
	if err != nil {
		return err
	}
	*p, *capacity = q, n
	return nil
}

func (d *deviceExec) start(b *batch) error {
	if err := ensure(&d.in, &d.inCap, max(b.inLen, 1)); err != nil {
		return err
	}
	if err := ensure(&d.out, &d.outCap, max(b.outLen, 1)); err != nil {
		return err
	}
	if b.inLen > 0 {
		if err := driver.MemcpyHtoD(d.in, b.in[:b.inLen]); err != nil {
			return err
		}
	}
	if err := driver.MemcpyHtoD(d.out, b.out[:b.outLen]); err != nil {
		return err
	}
	// A copy from pageable memory may return before its DMA finished;
	// the calls run on a non-blocking stream, which does not wait for it.
	return driver.CtxSynchronize()
}

func (d *deviceExec) issue(b *batch, p *placed) error {
	c, dt, s, size := d.c, p.DType, d.stream(), p.DType.Size()
	in := func(k int) detcoll.DevicePtr {
		return detcoll.DevicePtr(d.in) + detcoll.DevicePtr(p.in.off+p.inPart[k])
	}
	out := func(k int) detcoll.DevicePtr {
		return detcoll.DevicePtr(d.out) + detcoll.DevicePtr(p.out.off+p.outPart[k])
	}
	ptrs := func(f func(int) detcoll.DevicePtr) []detcoll.DevicePtr {
		var s []detcoll.DevicePtr
		for k := range p.Counts {
			s = append(s, f(k))
		}
		return s
	}
	n := p.Counts[0]
	switch p.Op {
	case OpAllReduce:
		return c.AllReduceDevice(in(0), out(0), n, dt, s)
	case OpAllReduceInPlace:
		return c.AllReduceDevice(out(0), out(0), n, dt, s)
	case OpAllReduceStaged:
		st, err := c.StageDevice(n, dt, s)
		if err != nil {
			return err
		}
		err = driver.MemcpyDtoDAsync(driver.DevicePtr(st), driver.DevicePtr(in(0)), n*size, d.s)
		if err != nil {
			return err
		}
		return c.AllReduceStagedDevice(out(0), n, dt, s)
	case OpReduceScatter:
		return c.ReduceScatterDevice(in(0), out(0), n, dt, s)
	case OpReduceScatterMany:
		return c.ReduceScatterManyDevice(ptrs(in), ptrs(out), p.Counts, dt, s)
	case OpAllGather:
		return c.AllGatherDevice(in(0), out(0), n, dt, s)
	case OpAllGatherInPlace:
		return c.AllGatherDevice(out(0)+detcoll.DevicePtr(b.rank*n*size), out(0), n, dt, s)
	case OpAllGatherMany:
		return c.AllGatherManyDevice(ptrs(in), ptrs(out), p.Counts, dt, s)
	case OpBroadcast:
		return c.BroadcastDevice(out(0), n, dt, p.Root, s)
	}
	return fmt.Errorf("soak: no device form of %v", p.Op)
}

func (d *deviceExec) finish(b *batch) error {
	if err := d.c.Synchronize(d.stream()); err != nil {
		return err
	}
	if b.inLen > 0 {
		if err := driver.MemcpyDtoH(b.in[:b.inLen], d.in); err != nil {
			return err
		}
	}
	return driver.MemcpyDtoH(b.out[:b.outLen], d.out)
}

func (d *deviceExec) agree(stop bool) (bool, error) {
	w := d.c.WorldSize()
	if cap(d.host) < 1+w {
		d.host = make([]byte, 1+w)
	}
	h := d.host[:1+w]
	clear(h)
	if stop {
		h[0] = 1
	}
	if err := driver.MemcpyHtoD(d.flags, h); err != nil {
		return false, err
	}
	if err := driver.CtxSynchronize(); err != nil {
		return false, err
	}
	p := detcoll.DevicePtr(d.flags)
	if err := d.c.AllGatherDevice(p, p+1, 1, detcoll.TypeUint8, d.stream()); err != nil {
		return false, err
	}
	if err := d.c.Synchronize(d.stream()); err != nil {
		return false, err
	}
	if err := driver.MemcpyDtoH(h, d.flags); err != nil {
		return false, err
	}
	for _, f := range h[1:] {
		if f != 0 {
			return true, nil
		}
	}
	return false, nil
}

// close frees the buffers and the stream, and releases the context and
// the thread.
func (d *deviceExec) close() {
	for _, p := range []driver.DevicePtr{d.in, d.out, d.flags} {
		if p != 0 {
			driver.MemFree(p)
		}
	}
	d.in, d.out, d.flags = 0, 0, 0
	d.s.Destroy()
	d.dev.PrimaryCtxRelease()
	driver.Unload()
	runtime.UnlockOSThread()
}

// deviceFree returns the free memory of the GPU that Open with opts
// takes, read in its primary context (retained for the purpose, so the
// figure before Open and after Close is taken alike); 0 when that fails.
// The caller's goroutine must be locked to its thread.
func deviceFree(opts detcoll.Options) int64 {
	ordinal := opts.Device
	if ordinal <= 0 {
		ordinal = 0
		if job, found, err := jobenv.FromEnv(os.Getenv); err == nil && found {
			ordinal = job.LocalRank
		}
	}
	if driver.Load() != nil {
		return 0
	}
	defer driver.Unload()
	dev, err := driver.DeviceGet(ordinal)
	if err != nil {
		return 0
	}
	ctx, err := dev.PrimaryCtxRetain()
	if err != nil {
		return 0
	}
	defer dev.PrimaryCtxRelease()
	if ctx.PushCurrent() != nil {
		return 0
	}
	defer driver.PopCurrent()
	free, _, err := driver.MemGetInfo()
	if err != nil {
		return 0
	}
	return int64(free)
}
