package devmem

import (
	"github.com/detcoll/detcoll/internal/binding/driver"
)

// Arena hands out device memory, 256-byte aligned, from allocations it
// makes as needed: Reset makes all of it free again without giving it
// back (tests make thousands of buffers, and cuMemFree would also
// synchronise the device between them), Free gives it back. It is used
// from the goroutine of its GPU; its zero value is an Arena with
// ChunkSize 0.
type Arena struct {
	// ChunkSize is the least size of an allocation. 0 makes every Alloc
	// an allocation of its own, at cuMemAlloc's alignment, as a benchmark
	// wants its buffers.
	ChunkSize int
	// OnChunk, where set, is called with every allocation the arena makes
	// (a test registers each as a window); its error fails the Alloc.
	OnChunk func(base driver.DevicePtr, size int) error

	chunks []chunk
	cur    int // chunks before it are full
}

type chunk struct {
	base       driver.DevicePtr
	size, used int
}

// Alloc returns n bytes (at least one) of device memory.
func (a *Arena) Alloc(n int) (driver.DevicePtr, error) {
	need := (max(n, 1) + 255) &^ 255
	for ; a.cur < len(a.chunks); a.cur++ {
		c := &a.chunks[a.cur]
		if c.size-c.used >= need {
			p := c.base + driver.DevicePtr(c.used)
			c.used += need
			return p, nil
		}
	}
	size := max(a.ChunkSize, need)
	p, err := driver.MemAlloc(size)
	if err != nil {
		return 0, err
	}
	if a.OnChunk != nil {
		if err := a.OnChunk(p, size); err != nil {
			driver.MemFree(p)
			return 0, err
		}
	}
	a.chunks = append(a.chunks, chunk{base: p, size: size, used: need})
	a.cur = len(a.chunks) - 1
	return p, nil
}

// Reset makes every byte of the arena free again. No work may still use
// it.
func (a *Arena) Reset() {
	for i := range a.chunks {
		a.chunks[i].used = 0
	}
	a.cur = 0
}

// Free gives the arena's memory back. No work may still use it.
func (a *Arena) Free() {
	for _, c := range a.chunks {
		driver.MemFree(c.base)
	}
	a.chunks, a.cur = nil, 0
}

// Put copies b to p, waiting for the copy.
func Put(p driver.DevicePtr, b []byte) error {
	if len(b) == 0 {
		return nil
	}
	return driver.MemcpyHtoD(p, b)
}

// Get copies n bytes from p.
func Get(p driver.DevicePtr, n int) ([]byte, error) {
	b := make([]byte, n)
	if n == 0 {
		return b, nil
	}
	return b, driver.MemcpyDtoH(b, p)
}
