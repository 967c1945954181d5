package soak

import (
	"fmt"
	"os"

	"github.com/detcoll/detcoll"
	"github.com/detcoll/detcoll/internal/binding/driver"
	"github.com/detcoll/detcoll/internal/job/jobenv"
	"github.com/detcoll/detcoll/internal/testkit/check"
	"github.com/detcoll/detcoll/internal/tools/devmem"
)

// deviceExec runs calls on device memory of a cuda communicator: the
// batch's arenas are copied to two device buffers, every call is queued
// on one non-blocking stream without waiting, and finish synchronises
// once and copies the arenas back for checking.
//
// Its calls must come from one goroutine, which it locks to its thread
// (the device's primary context is current there: devmem.Open) until
// closed.
type deviceExec struct {
	c       *detcoll.Comm
	gpu     *devmem.GPU
	s       driver.Stream
	in, out deviceBuf        // the arenas' device copies
	flagMem devmem.Arena     // flags' allocation
	flags   driver.DevicePtr // agree's byte and its gather: 1 + W bytes
	host    []byte           // agree's bytes
}

// deviceBuf is a device buffer that grows as needed, never shrinking.
type deviceBuf struct {
	mem  devmem.Arena // its one allocation
	p    driver.DevicePtr
	size int
}

// ensure makes b at least n bytes, a quarter more when it must grow; n
// of 0 leaves b without memory.
func (b *deviceBuf) ensure(n int) error {
	if n <= b.size {
		return nil
	}
	b.mem.Free()
	b.p, b.size = 0, 0
	n += n / 4
	p, err := b.mem.Alloc(n)
	if err != nil {
		return err
	}
	b.p, b.size = p, n
	return nil
}

// openDevice prepares c's GPU on the calling goroutine's thread.
func openDevice(c *detcoll.Comm) (d *deviceExec, err error) {
	if c.Device() < 0 {
		return nil, fmt.Errorf("soak: device calls need a cuda communicator, not %s", c.Options().Backend)
	}
	gpu, err := devmem.Open(c.Device())
	if err != nil {
		return nil, err
	}
	d = &deviceExec{c: c, gpu: gpu}
	defer func() {
		if err != nil {
			d.close()
		}
	}()
	if d.s, err = driver.StreamCreate(driver.StreamNonBlocking); err != nil {
		return nil, err
	}
	if d.flags, err = d.flagMem.Alloc(1 + c.WorldSize()); err != nil {
		return nil, err
	}
	return d, nil
}

func (d *deviceExec) stream() detcoll.Stream { return detcoll.Stream(d.s) }

func (d *deviceExec) start(b *batch) error {
	if err := d.in.ensure(max(b.inLen, 1)); err != nil {
		return err
	}
	if err := d.out.ensure(max(b.outLen, 1)); err != nil {
		return err
	}
	if err := devmem.Put(d.in.p, b.in[:b.inLen]); err != nil {
		return err
	}
	if err := devmem.Put(d.out.p, b.out[:b.outLen]); err != nil {
		return err
	}
	// A copy from pageable memory may return before its DMA finished;
	// the calls run on a non-blocking stream, which does not wait for it.
	return driver.CtxSynchronize()
}

func (d *deviceExec) issue(b *batch, p *placed) error {
	c, dt, s, size := d.c, p.DType, d.stream(), p.DType.Size()
	in := func(k int) detcoll.DevicePtr {
		return detcoll.DevicePtr(d.in.p) + detcoll.DevicePtr(p.in.off+p.inPart[k])
	}
	out := func(k int) detcoll.DevicePtr {
		return detcoll.DevicePtr(d.out.p) + detcoll.DevicePtr(p.out.off+p.outPart[k])
	}
	ptrs := func(f func(int) detcoll.DevicePtr) []detcoll.DevicePtr {
		var s []detcoll.DevicePtr
		for k := range p.Counts {
			s = append(s, f(k))
		}
		return s
	}
	n, op := p.Counts[0], check.RedOpOf(p.Red, b.rank)
	switch p.Op {
	case OpAllReduce:
		return c.AllReduceDevice(in(0), out(0), n, dt, s, op)
	case OpAllReduceInPlace:
		return c.AllReduceDevice(out(0), out(0), n, dt, s, op)
	case OpAllReduceStaged:
		st, err := c.StageDevice(n, dt, s)
		if err != nil {
			return err
		}
		err = driver.MemcpyDtoDAsync(driver.DevicePtr(st), driver.DevicePtr(in(0)), n*size, d.s)
		if err != nil {
			return err
		}
		return c.AllReduceStagedDevice(out(0), n, dt, s, op)
	case OpReduceScatter:
		return c.ReduceScatterDevice(in(0), out(0), n, dt, s, op)
	case OpReduceScatterMany:
		return c.ReduceScatterManyDevice(ptrs(in), ptrs(out), p.Counts, dt, s, op)
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
		if err := driver.MemcpyDtoH(b.in[:b.inLen], d.in.p); err != nil {
			return err
		}
	}
	if b.outLen == 0 {
		return nil
	}
	return driver.MemcpyDtoH(b.out[:b.outLen], d.out.p)
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
	if err := devmem.Put(d.flags, h); err != nil {
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

// close frees the buffers and the stream, and releases the GPU and the
// thread.
func (d *deviceExec) close() {
	d.in.mem.Free()
	d.out.mem.Free()
	d.flagMem.Free()
	if d.s != 0 {
		d.s.Destroy()
	}
	d.gpu.Close()
}

// deviceFree returns the free memory of the GPU that Open with opts
// takes (devmem.FreeBytes, so the figure before Open and after Close is
// taken alike); 0 when that fails.
func deviceFree(opts detcoll.Options) int64 {
	ordinal := opts.Device
	if ordinal <= 0 && opts.Hosts <= 1 { // across hosts package nccl has chosen it
		ordinal = 0
		if job, found, err := jobenv.FromEnv(os.Getenv); err == nil && found {
			ordinal = job.LocalRank
		}
	}
	free, err := devmem.FreeBytes(ordinal)
	if err != nil {
		return 0
	}
	return free
}
