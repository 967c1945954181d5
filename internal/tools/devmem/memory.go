package devmem

import (
	"fmt"

	"github.com/detcoll/detcoll"
	"github.com/detcoll/detcoll/internal/binding/driver"
	"github.com/detcoll/detcoll/internal/testkit/check"
)

// Memory is device memory as a check.Memory: guarded buffers from an
// Arena, and the device calls of a communicator on Stream, each followed
// by Synchronize, so that a call returns with its results readable and
// its failure (a mismatch, a lost peer) reported.
//
// Buffers are filled and copied on the legacy default stream, then the
// context is synchronised: Stream may be one that does not wait for it
// (a fast kernel's output was once overwritten by its own guard fill).
type Memory struct {
	Arena  Arena
	Stream detcoll.Stream // 0: the legacy default stream
}

// NewMemory returns a Memory whose calls run on s, its buffers carved
// from 256 MiB allocations.
func NewMemory(s detcoll.Stream) *Memory {
	return &Memory{Arena: Arena{ChunkSize: 256 << 20}, Stream: s}
}

// Buffer is a Memory's buffer: n bytes between check.GuardLen guard bytes
// on each side, at an offset from an aligned start.
type Buffer struct {
	base  driver.DevicePtr // the allocation: guard, offset, buffer, guard
	total int              // its bytes
	// lo, hi are the buffer within the allocation; vlo, vhi this view (a
	// Slice of it, or all of it).
	lo, hi, vlo, vhi int
}

// Alloc returns n bytes at offset off from an aligned start, every byte
// check.GuardByte.
func (m *Memory) Alloc(n, off int) (check.Buffer, error) {
	total := check.GuardLen + off + n + check.GuardLen
	p, err := m.Arena.Alloc(total)
	if err != nil {
		return nil, err
	}
	if err := driver.MemsetD8(p, check.GuardByte, total); err != nil {
		return nil, err
	}
	if err := driver.CtxSynchronize(); err != nil {
		return nil, err
	}
	lo := check.GuardLen + off
	return &Buffer{base: p, total: total, lo: lo, hi: lo + n, vlo: lo, vhi: lo + n}, nil
}

// Reset makes the arena's memory free again.
func (m *Memory) Reset() { m.Arena.Reset() }

// Copy copies src into dst on the stream and waits for it.
func (m *Memory) Copy(dst, src check.Buffer) error {
	if src.Len() == 0 {
		return nil
	}
	if err := driver.MemcpyDtoDAsync(driver.DevicePtr(dev(dst)), driver.DevicePtr(dev(src)), src.Len(), driver.Stream(m.Stream)); err != nil {
		return err
	}
	return driver.Stream(m.Stream).Synchronize()
}

// Ptr returns the address of the view's first byte.
func (b *Buffer) Ptr() detcoll.DevicePtr { return detcoll.DevicePtr(b.base) + detcoll.DevicePtr(b.vlo) }

func (b *Buffer) Len() int { return b.vhi - b.vlo }

// Write copies data to the start of the view and waits for the copy (a
// copy from pageable memory may return before its DMA has finished).
func (b *Buffer) Write(data []byte) error {
	if len(data) > b.Len() {
		return fmt.Errorf("write of %d bytes into a buffer of %d", len(data), b.Len())
	}
	if err := Put(driver.DevicePtr(b.Ptr()), data); err != nil {
		return err
	}
	return driver.CtxSynchronize()
}

// Read copies the whole allocation back, checks the guards and returns
// the view's bytes.
func (b *Buffer) Read() ([]byte, error) {
	all, err := Get(b.base, b.total)
	if err != nil {
		return nil, err
	}
	return all[b.vlo:b.vhi:b.vhi], check.Guards(all, b.lo, b.hi)
}

// Slice returns bytes [lo, hi) of the view.
func (b *Buffer) Slice(lo, hi int) check.Buffer {
	if lo < 0 || hi < lo || hi > b.Len() {
		panic(fmt.Sprintf("devmem: Slice(%d, %d) of a buffer of %d bytes", lo, hi, b.Len()))
	}
	s := *b
	s.vlo, s.vhi = b.vlo+lo, b.vlo+hi
	return &s
}

// dev returns a buffer of this package's address.
func dev(b check.Buffer) detcoll.DevicePtr {
	d, ok := b.(*Buffer)
	if !ok {
		panic(fmt.Sprintf("devmem: a %T in device memory", b))
	}
	return d.Ptr()
}

func devEach(bs []check.Buffer) []detcoll.DevicePtr {
	out := make([]detcoll.DevicePtr, len(bs))
	for i, b := range bs {
		out[i] = dev(b)
	}
	return out
}

// counts returns the element counts of bs.
func counts(bs []check.Buffer, size int) []int {
	out := make([]int, len(bs))
	for i, b := range bs {
		out[i] = b.Len() / size
	}
	return out
}

// wait waits for the stream after a queued call, whose error comes first.
func (m *Memory) wait(c *detcoll.Comm, err error) error {
	if err != nil {
		return err
	}
	return c.Synchronize(m.Stream)
}

func (m *Memory) AllReduce(c *detcoll.Comm, dt detcoll.DType, in, out check.Buffer) error {
	return m.wait(c, c.AllReduceDevice(dev(in), dev(out), in.Len()/dt.Size(), dt, m.Stream))
}

func (m *Memory) AllReduceStaged(c *detcoll.Comm, dt detcoll.DType, in, out check.Buffer) error {
	n := in.Len() / dt.Size()
	st, err := c.StageDevice(n, dt, m.Stream)
	if err == nil && in.Len() > 0 {
		err = driver.MemcpyDtoDAsync(driver.DevicePtr(st), driver.DevicePtr(dev(in)), in.Len(), driver.Stream(m.Stream))
	}
	if err != nil {
		return err
	}
	return m.wait(c, c.AllReduceStagedDevice(dev(out), n, dt, m.Stream))
}

func (m *Memory) ReduceScatter(c *detcoll.Comm, dt detcoll.DType, in, out check.Buffer) error {
	return m.wait(c, c.ReduceScatterDevice(dev(in), dev(out), out.Len()/dt.Size(), dt, m.Stream))
}

func (m *Memory) ReduceScatterMany(c *detcoll.Comm, dt detcoll.DType, ins, outs []check.Buffer) error {
	return m.wait(c, c.ReduceScatterManyDevice(devEach(ins), devEach(outs), counts(outs, dt.Size()), dt, m.Stream))
}

func (m *Memory) AllGather(c *detcoll.Comm, dt detcoll.DType, in, out check.Buffer) error {
	return m.wait(c, c.AllGatherDevice(dev(in), dev(out), in.Len()/dt.Size(), dt, m.Stream))
}

func (m *Memory) AllGatherMany(c *detcoll.Comm, dt detcoll.DType, ins, outs []check.Buffer) error {
	return m.wait(c, c.AllGatherManyDevice(devEach(ins), devEach(outs), counts(ins, dt.Size()), dt, m.Stream))
}

func (m *Memory) Broadcast(c *detcoll.Comm, dt detcoll.DType, buf check.Buffer, root int) error {
	return m.wait(c, c.BroadcastDevice(dev(buf), buf.Len()/dt.Size(), dt, root, m.Stream))
}

func (m *Memory) Reduce(c *detcoll.Comm, k check.Reduction, dt detcoll.DType, op detcoll.RedOp, ins, outs []check.Buffer) error {
	switch k {
	case check.CallAllReduce:
		return m.wait(c, c.AllReduceDevice(dev(ins[0]), dev(outs[0]), ins[0].Len()/dt.Size(), dt, m.Stream, op))
	case check.CallReduceScatter:
		return m.wait(c, c.ReduceScatterDevice(dev(ins[0]), dev(outs[0]), outs[0].Len()/dt.Size(), dt, m.Stream, op))
	case check.CallReduceScatterMany:
		return m.wait(c, c.ReduceScatterManyDevice(devEach(ins), devEach(outs), counts(outs, dt.Size()), dt, m.Stream, op))
	case check.CallStaged:
		n := ins[0].Len() / dt.Size()
		st, err := c.StageDevice(n, dt, m.Stream)
		if err == nil && n > 0 {
			err = driver.MemcpyDtoDAsync(driver.DevicePtr(st), driver.DevicePtr(dev(ins[0])), ins[0].Len(), driver.Stream(m.Stream))
		}
		if err != nil {
			return err
		}
		return m.wait(c, c.AllReduceStagedDevice(dev(outs[0]), n, dt, m.Stream, op))
	}
	return fmt.Errorf("devmem: no reduction %d", k)
}

// PreMulSum returns PreMulSumDevice of f rounded to dt, in a buffer of
// the arena, where inMemory is set, else PreMulSum(f).
func (m *Memory) PreMulSum(dt detcoll.DType, f float64, inMemory bool) (detcoll.RedOp, error) {
	if !inMemory {
		return detcoll.PreMulSum(f), nil
	}
	b, err := m.Alloc(dt.Size(), 0)
	if err == nil {
		err = b.Write(check.ScalarBytes(dt, f))
	}
	if err != nil {
		return detcoll.RedOp{}, err
	}
	return detcoll.PreMulSumDevice(dev(b)), nil
}
