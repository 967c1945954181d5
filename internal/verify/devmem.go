package verify

import (
	"fmt"
	"runtime"

	"github.com/detcoll/detcoll"
	"github.com/detcoll/detcoll/internal/check"
	"github.com/detcoll/detcoll/internal/cuda/driver"
)

// gpu is the device side of the checks: the communicator's GPU with its
// primary context current on the calling goroutine's thread (locked until
// close), and one stream for every call.
type gpu struct {
	dev driver.Device
	s   driver.Stream
}

// openGPU locks the calling goroutine to its thread, makes device's
// primary context current there and creates a non-blocking stream.
func openGPU(device int) (g *gpu, err error) {
	runtime.LockOSThread()
	if err := driver.Load(); err != nil {
		runtime.UnlockOSThread()
		return nil, err
	}
	defer func() {
		if err != nil {
			driver.Unload()
			runtime.UnlockOSThread()
		}
	}()
	dev, err := driver.DeviceGet(device)
	if err != nil {
		return nil, err
	}
	ctx, err := dev.PrimaryCtxRetain()
	if err != nil {
		return nil, err
	}
	g = &gpu{dev: dev}
	if err := ctx.SetCurrent(); err != nil {
		dev.PrimaryCtxRelease()
		return nil, err
	}
	if g.s, err = driver.StreamCreate(driver.StreamNonBlocking); err != nil {
		dev.PrimaryCtxRelease()
		return nil, err
	}
	return g, nil
}

func (g *gpu) stream() detcoll.Stream { return detcoll.Stream(g.s) }

func (g *gpu) close() {
	g.s.Destroy()
	g.dev.PrimaryCtxRelease()
	driver.Unload()
	runtime.UnlockOSThread()
}

// devBuf is n bytes of device memory at off bytes into an allocation that
// holds check.GuardLen guard bytes (0xA5) before and after them.
type devBuf struct {
	base   driver.DevicePtr
	off, n int
}

// newDevBuf allocates a guarded buffer of n bytes at offset off, every
// byte 0xA5 (so an output that is never written cannot pass).
func newDevBuf(n, off int) (*devBuf, error) {
	total := check.GuardLen + off + n + check.GuardLen
	p, err := driver.MemAlloc(total)
	if err != nil {
		return nil, err
	}
	if err := driver.MemsetD8(p, 0xA5, total); err != nil {
		driver.MemFree(p)
		return nil, err
	}
	// The memset runs on the legacy stream, and may still run when the
	// host returns; the calls under test run on a non-blocking stream,
	// which does not wait for it (a fast kernel's output was once
	// overwritten by its guard fill).
	if err := driver.CtxSynchronize(); err != nil {
		driver.MemFree(p)
		return nil, err
	}
	return &devBuf{base: p, off: off, n: n}, nil
}

// newDevInput allocates a guarded buffer holding b, at offset 0.
func newDevInput(b []byte) (*devBuf, error) {
	d, err := newDevBuf(len(b), 0)
	if err != nil {
		return nil, err
	}
	if len(b) > 0 {
		// As the memset: a copy from pageable memory may return before
		// its DMA has finished.
		if err := driver.MemcpyHtoD(d.dptr(), b); err != nil {
			d.free()
			return nil, err
		}
		if err := driver.CtxSynchronize(); err != nil {
			d.free()
			return nil, err
		}
	}
	return d, nil
}

func (d *devBuf) dptr() driver.DevicePtr {
	return d.base + driver.DevicePtr(check.GuardLen+d.off)
}

// ptr returns the address of byte at of the buffer.
func (d *devBuf) ptr(at int) detcoll.DevicePtr {
	return detcoll.DevicePtr(d.dptr()) + detcoll.DevicePtr(at)
}

// read returns the buffer's bytes, or an error if a guard byte changed.
func (d *devBuf) read() ([]byte, error) {
	all := make([]byte, check.GuardLen+d.off+d.n+check.GuardLen)
	if err := driver.MemcpyDtoH(all, d.base); err != nil {
		return nil, err
	}
	lo, hi := check.GuardLen+d.off, check.GuardLen+d.off+d.n
	for i, b := range all {
		if (i < lo || i >= hi) && b != 0xA5 {
			return all[lo:hi], fmt.Errorf("guard byte %d (buffer is [%d, %d)) changed to %#x", i, lo, hi, b)
		}
	}
	return all[lo:hi], nil
}

func (d *devBuf) free() { driver.MemFree(d.base) }

// copyOn queues copying n bytes from src to dst on s.
func copyOn(dst, src detcoll.DevicePtr, n int, s detcoll.Stream) error {
	if n == 0 {
		return nil
	}
	return driver.MemcpyDtoDAsync(driver.DevicePtr(dst), driver.DevicePtr(src), n, driver.Stream(s))
}
