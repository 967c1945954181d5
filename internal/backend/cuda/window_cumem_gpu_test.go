package cuda_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/detcoll/detcoll"
	"github.com/detcoll/detcoll/internal/binding/driver"
	"github.com/detcoll/detcoll/internal/core/num"
	"github.com/detcoll/detcoll/internal/testkit/check"
	"github.com/detcoll/detcoll/internal/testkit/conformance"
)

// Windows of cuMemCreate memory (TestDeviceWindowsCuMemGPU): windowRank
// on memory of driver.MemAllocShareable, which allocates as NCCL's
// ncclMemAlloc does, then cuMemRank.

// cuMemWindow is windowRank's memory when its window is cuMemCreate
// memory: one allocation, made and registered at the first Alloc, out of
// which Alloc carves guarded buffers as devmem.Memory does.
type cuMemWindow struct {
	dev      driver.Device
	size     int
	register func(p driver.DevicePtr, n int) error
	base     driver.DevicePtr // 0 until the first Alloc
	n, used  int              // the allocation's size, and what Alloc took of it
}

func newCuMemWindow(c *detcoll.Comm, size int, register func(driver.DevicePtr, int) error) (*cuMemWindow, error) {
	dev, err := driver.DeviceGet(c.Device())
	if err != nil {
		return nil, err
	}
	return &cuMemWindow{dev: dev, size: size, register: register}, nil
}

func (m *cuMemWindow) Alloc(n, off int) (check.Buffer, error) {
	if m.base == 0 {
		p, got, err := driver.MemAllocShareable(m.dev, m.size)
		if err != nil {
			return nil, err
		}
		if err := m.register(p, got); err != nil {
			driver.MemFreeShareable(p)
			return nil, err
		}
		m.base, m.n = p, got
	}
	total := check.GuardLen + off + n + check.GuardLen
	need := (total + 255) &^ 255
	if m.used+need > m.n {
		return nil, fmt.Errorf("cuMem window: %d bytes more do not fit (%d of %d taken)", need, m.used, m.n)
	}
	p := m.base + driver.DevicePtr(m.used)
	m.used += need
	if err := driver.MemsetD8(p, check.GuardByte, total); err != nil {
		return nil, err
	}
	if err := driver.CtxSynchronize(); err != nil {
		return nil, err
	}
	lo := check.GuardLen + off
	return &cuMemBuffer{base: p, total: total, lo: lo, hi: lo + n, vlo: lo, vhi: lo + n}, nil
}

func (m *cuMemWindow) Reset() { m.used = 0 }

// Free frees the allocation; its window must be deregistered first.
func (m *cuMemWindow) Free() error {
	if m.base == 0 {
		return nil
	}
	err := driver.MemFreeShareable(m.base)
	m.base, m.n, m.used = 0, 0, 0
	return err
}

// cuMemBuffer is a buffer of a cuMemWindow: n bytes between guards, as
// devmem.Buffer.
type cuMemBuffer struct {
	base             driver.DevicePtr // guard, offset, buffer, guard
	total            int
	lo, hi, vlo, vhi int // the buffer and this view of it, in [0, total)
}

func (b *cuMemBuffer) Ptr() detcoll.DevicePtr {
	return detcoll.DevicePtr(b.base) + detcoll.DevicePtr(b.vlo)
}

func (b *cuMemBuffer) Len() int { return b.vhi - b.vlo }

func (b *cuMemBuffer) Write(data []byte) error {
	if len(data) > b.Len() {
		return fmt.Errorf("write of %d bytes into a buffer of %d", len(data), b.Len())
	}
	if err := driver.MemcpyHtoD(driver.DevicePtr(b.Ptr()), data); err != nil {
		return err
	}
	return driver.CtxSynchronize()
}

func (b *cuMemBuffer) Read() ([]byte, error) {
	all := make([]byte, b.total)
	if err := driver.MemcpyDtoH(all, b.base); err != nil {
		return nil, err
	}
	return all[b.vlo:b.vhi:b.vhi], check.Guards(all, b.lo, b.hi)
}

func (b *cuMemBuffer) Slice(lo, hi int) check.Buffer {
	if lo < 0 || hi < lo || hi > b.Len() {
		panic(fmt.Sprintf("cuMemBuffer: Slice(%d, %d) of a buffer of %d bytes", lo, hi, b.Len()))
	}
	s := *b
	s.vlo, s.vhi = b.vlo+lo, b.vlo+hi
	return &s
}

// cuMemRank checks, on g's communicator (still usable), what windows of
// cuMemCreate memory alone meet:
//   - the last rank's allocation does not export as a descriptor (no
//     POSIX_FD handle type): the registration fails on every rank with
//     ErrUnavailable naming that rank;
//   - each rank's window spans two allocations mapped back to back: it
//     fails on every rank with ErrUnavailable;
//   - then cuMemRounds registrations, each of a fresh allocation with one
//     all-reduce on the registered path in it checked bit for bit, then
//     deregistered and freed, leave no descriptor open and no device
//     memory held.
func cuMemRank(r *conformance.Rank, g *gpuRank) error {
	c, rank, w := g.c, r.Rank, r.World
	ctx := context.Background()
	dev, err := driver.DeviceGet(c.Device())
	if err != nil {
		return err
	}

	bad := w - 1
	var p driver.DevicePtr
	var n int
	var undo func()
	if rank == bad {
		p, n, undo, err = cuMemUnshareable(dev, 4<<20)
	} else {
		p, n, err = driver.MemAllocShareable(dev, 4<<20)
		undo = func() { driver.MemFreeShareable(p) }
	}
	if err != nil {
		return err
	}
	err = wantUnavailable(ctx, c, p, n, fmt.Sprintf("rank %d cannot share", bad))
	undo()
	if err != nil {
		return fmt.Errorf("rank %d's allocation without POSIX_FD: %w", bad, err)
	}

	p, n, undo, err = cuMemTwoAllocations(dev)
	if err != nil {
		return err
	}
	err = wantUnavailable(ctx, c, p, n, "")
	undo()
	if err != nil {
		return fmt.Errorf("a window over two allocations: %w", err)
	}

	var fdsBefore, freeBefore int
	for round := range cuMemRounds + 1 {
		if round == 1 { // after a first round, which may open what the driver keeps
			if fdsBefore, freeBefore, err = cuMemHeld(c); err != nil {
				return err
			}
		}
		if err := cuMemRound(ctx, c, dev, rank, w, round); err != nil {
			return fmt.Errorf("registration %d: %w", round, err)
		}
	}
	fdsAfter, freeAfter, err := cuMemHeld(c)
	if err != nil {
		return err
	}
	// A leak is one or more a registration; the driver may open one now
	// and then.
	if fdsAfter-fdsBefore >= cuMemRounds/2 {
		return fmt.Errorf("%d descriptors open after %d registrations of cuMem windows, %d before", fdsAfter, cuMemRounds, fdsBefore)
	}
	if lost, slack := freeBefore-freeAfter, 2*cuMemRoundSize; lost > slack {
		return fmt.Errorf("%d MiB of device memory gone after %d registrations of %d MiB: a mapping or descriptor leaks",
			lost>>20, cuMemRounds, cuMemRoundSize>>20)
	}
	fmt.Printf("rank %d: cuMem windows: unshareable and split windows refused on every rank; %d registrations, descriptors %d -> %d, free %d -> %d MiB\n",
		rank, cuMemRounds, fdsBefore, fdsAfter, freeBefore>>20, freeAfter>>20)
	return nil
}

const (
	cuMemRounds    = 24
	cuMemRoundSize = 64 << 20
)

// cuMemHeld counts this process's open descriptors and the free memory
// of its GPU, between two barriers: while every rank of c, which may
// share the GPU, holds no allocation of cuMemRound and makes none.
func cuMemHeld(c *detcoll.Comm) (fds, free int, err error) {
	if err := c.Barrier(); err != nil {
		return 0, 0, err
	}
	if fds, err = openFDs(); err != nil {
		return 0, 0, err
	}
	if free, _, err = driver.MemGetInfo(); err != nil {
		return 0, 0, err
	}
	return fds, free, c.Barrier()
}

// cuMemRound registers a fresh allocation of cuMemRoundSize, checks one
// all-reduce in it that takes the registered path, deregisters and frees
// it.
func cuMemRound(ctx context.Context, c *detcoll.Comm, dev driver.Device, rank, w, round int) error {
	var win *detcoll.Window
	m := &cuMemWindow{dev: dev, size: cuMemRoundSize, register: func(p driver.DevicePtr, n int) error {
		var err error
		win, err = c.RegisterDevice(ctx, detcoll.DevicePtr(p), n)
		return err
	}}
	defer m.Free()
	dt, n := detcoll.TypeBFloat16, llMax/2+1+round
	all := make([][]byte, w)
	for p := range all {
		all[p] = check.Input(seed, 5000+round, p, n, dt)
	}
	want := check.ReferenceReduce(dt, num.Sum, all, nil)
	buf, err := m.Alloc(n*dt.Size(), 16*(rank+1))
	if err != nil {
		return err
	}
	if err := buf.Write(all[rank]); err != nil {
		return err
	}
	ptr := ptrOf(buf)
	err = c.AllReduceDevice(ptr, ptr, n, dt, 0)
	if err == nil {
		err = c.Synchronize(0)
	}
	if err == nil {
		err = check.Expect(dt, buf, want)
	}
	return errors.Join(err, win.Deregister(ctx))
}

// wantUnavailable registers [p, p+n) and wants ErrUnavailable whose text
// holds say; a window that registers is given back.
func wantUnavailable(ctx context.Context, c *detcoll.Comm, p driver.DevicePtr, n int, say string) error {
	win, err := c.RegisterDevice(ctx, detcoll.DevicePtr(p), n)
	if err == nil {
		win.Deregister(ctx)
		return errors.New("registered")
	}
	if !errors.Is(err, detcoll.ErrUnavailable) || !strings.Contains(err.Error(), say) {
		return fmt.Errorf("%v; want ErrUnavailable saying %q", err, say)
	}
	fmt.Printf("as expected: %v\n", err)
	return nil
}

// cuMemUnshareable maps at least size bytes of cuMemCreate memory that
// exports as no descriptor, and returns it, its size and its undoing.
func cuMemUnshareable(dev driver.Device, size int) (driver.DevicePtr, int, func(), error) {
	g, err := driver.MemAllocationGranularity(dev, driver.MemHandleNone, driver.GranularityMinimum)
	if err != nil {
		return 0, 0, nil, err
	}
	n := (size + g - 1) / g * g
	h, err := driver.MemCreate(n, dev, driver.MemHandleNone)
	if err != nil {
		return 0, 0, nil, err
	}
	defer driver.MemRelease(h)
	p, err := driver.MemMapNew(h, n, g, dev)
	if err != nil {
		return 0, 0, nil, err
	}
	return p, n, func() { driver.MemUnmap(p, n); driver.MemAddressFree(p, n) }, nil
}

// cuMemTwoAllocations maps two shareable allocations of the granularity
// back to back and returns the range over both, its size and its
// undoing.
func cuMemTwoAllocations(dev driver.Device) (driver.DevicePtr, int, func(), error) {
	g, err := driver.MemAllocationGranularity(dev, driver.MemHandlePosixFD, driver.GranularityMinimum)
	if err != nil {
		return 0, 0, nil, err
	}
	p, err := driver.MemAddressReserve(2*g, g)
	if err != nil {
		return 0, 0, nil, err
	}
	var mapped []driver.DevicePtr
	undo := func() {
		for _, q := range mapped {
			driver.MemUnmap(q, g)
		}
		driver.MemAddressFree(p, 2*g)
	}
	for _, q := range []driver.DevicePtr{p, p + driver.DevicePtr(g)} {
		h, err := driver.MemCreate(g, dev, driver.MemHandlePosixFD)
		if err == nil {
			err = driver.MemMap(q, g, h)
			driver.MemRelease(h)
		}
		if err == nil {
			mapped = append(mapped, q)
			err = driver.MemSetAccess(q, g, dev)
		}
		if err != nil {
			undo()
			return 0, 0, nil, err
		}
	}
	return p, 2 * g, undo, nil
}

// openFDs counts this process's open descriptors.
func openFDs() (int, error) {
	es, err := os.ReadDir("/proc/self/fd")
	return len(es), err
}
