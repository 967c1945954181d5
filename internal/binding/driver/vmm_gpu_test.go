//go:build linux

package driver

import (
	"bytes"
	"errors"
	"os"
	"syscall"
	"testing"
)

// TestGPUMemShareable: memory of MemAllocShareable is told from
// MemAlloc's by MemRetainAllocationHandle; MemGetAddressRange finds its
// one allocation, also where two are mapped back to back; it exports as
// a descriptor that MemImportFD maps a second time, the two mappings
// showing the same bytes; an allocation created without MemHandlePosixFD
// does not export. Importing in the exporting process stands in for the
// peer process here (the backend's windows test imports across
// processes). Many rounds leave no descriptor open and no memory held.
func TestGPUMemShareable(t *testing.T) {
	dev := gpuTest(t)

	plain := alloc(t, 1<<20)
	if h, err := MemRetainAllocationHandle(plain + 64); err == nil {
		MemRelease(h)
		t.Errorf("MemRetainAllocationHandle of MemAlloc memory succeeded; the windows take such memory for cuMemCreate's")
	} else {
		t.Logf("MemAlloc memory: %v", err)
	}

	g, err := MemAllocationGranularity(dev, MemHandlePosixFD, GranularityMinimum)
	check(t, err)
	rec, err := MemAllocationGranularity(dev, MemHandlePosixFD, GranularityRecommended)
	check(t, err)
	t.Logf("granularity: minimum %d, recommended %d", g, rec)

	const size = 3<<20 + 5
	p, n, err := MemAllocShareable(dev, size)
	check(t, err)
	if n < size || n%rec != 0 {
		t.Errorf("MemAllocShareable(%d) gave %d bytes; want a multiple of %d at least as large", size, n, rec)
	}
	if base, m, err := MemGetAddressRange(p + 12345); err != nil || base != p || m != n {
		t.Errorf("MemGetAddressRange(p+12345) = %v, %d, %v; want %v, %d", base, m, err, p, n)
	}

	q := exportAndMap(t, p+4096, n, g, dev)
	if q == p {
		t.Fatalf("the import is mapped at the exporter's address %v", p)
	}
	want := bytes.Repeat([]byte{0xc3, 0x17, 0x5e}, 1000)
	check(t, MemcpyHtoD(p+DevicePtr(n)-DevicePtr(len(want)), want))
	got := make([]byte, len(want))
	check(t, MemcpyDtoH(got, q+DevicePtr(n)-DevicePtr(len(want))))
	if !bytes.Equal(got, want) {
		t.Errorf("the import reads %x…, the exporter wrote %x…", got[:6], want[:6])
	}
	check(t, MemsetD8(q, 0x77, 256))
	check(t, CtxSynchronize())
	check(t, MemcpyDtoH(got[:256], p))
	if !bytes.Equal(got[:256], bytes.Repeat([]byte{0x77}, 256)) {
		t.Errorf("the exporter reads %x…, the import wrote 77…", got[:6])
	}
	check(t, MemUnmap(q, n))
	check(t, MemAddressFree(q, n))
	check(t, MemFreeShareable(p))

	// Not created with MemHandlePosixFD: retained, not exported.
	gn, err := MemAllocationGranularity(dev, MemHandleNone, GranularityMinimum)
	check(t, err)
	hn, err := MemCreate(gn, dev, MemHandleNone)
	check(t, err)
	pn, err := MemMapNew(hn, gn, gn, dev)
	check(t, MemRelease(hn))
	check(t, err)
	hr, err := MemRetainAllocationHandle(pn)
	check(t, err)
	if fd, err := MemExportFD(hr); err == nil {
		syscall.Close(fd)
		t.Errorf("an allocation without MemHandlePosixFD exported as descriptor %d", fd)
	} else {
		t.Logf("without POSIX_FD: %v", err)
	}
	check(t, MemRelease(hr))
	check(t, errors.Join(MemUnmap(pn, gn), MemAddressFree(pn, gn)))

	// Two allocations back to back: the range of each is its own.
	two, err := MemAddressReserve(2*g, g)
	check(t, err)
	for i := range 2 {
		h, err := MemCreate(g, dev, MemHandlePosixFD)
		check(t, err)
		check(t, MemMap(two+DevicePtr(i*g), g, h))
		check(t, MemRelease(h))
		check(t, MemSetAccess(two+DevicePtr(i*g), g, dev))
	}
	for i := range 2 {
		at := two + DevicePtr(i*g) + DevicePtr(g/2)
		if base, m, err := MemGetAddressRange(at); err != nil || base != two+DevicePtr(i*g) || m != g {
			t.Errorf("MemGetAddressRange(%v) in the %d. of two allocations = %v, %d, %v; want %v, %d (the windows check that a window lies in one allocation by it)",
				at, i+1, base, m, err, two+DevicePtr(i*g), g)
		}
	}
	for i := range 2 {
		check(t, MemUnmap(two+DevicePtr(i*g), g))
	}
	check(t, MemAddressFree(two, 2*g))

	// Rounds of allocate, export, import, map, unmap, free.
	const rounds, roundSize = 16, 64 << 20
	countFDs := func() int {
		es, err := os.ReadDir("/proc/self/fd")
		check(t, err)
		return len(es)
	}
	fds0 := countFDs()
	free0, _, err := MemGetInfo()
	check(t, err)
	for range rounds {
		p, n, err := MemAllocShareable(dev, roundSize)
		check(t, err)
		q := exportAndMap(t, p, n, g, dev)
		check(t, MemsetD8(q, 1, n))
		check(t, CtxSynchronize())
		check(t, errors.Join(MemUnmap(q, n), MemAddressFree(q, n)))
		check(t, MemFreeShareable(p))
	}
	free1, _, err := MemGetInfo()
	check(t, err)
	// A leak is one or more a round; the driver may open one now and then.
	if fds1 := countFDs(); fds1-fds0 >= rounds/2 {
		t.Errorf("%d descriptors open after %d rounds, %d before", fds1, rounds, fds0)
	}
	if lost := free0 - free1; lost > 2*roundSize {
		t.Errorf("%d MiB of device memory gone after %d rounds of %d MiB", lost>>20, rounds, roundSize>>20)
	}
	t.Logf("%d rounds: free %d -> %d MiB", rounds, free0>>20, free1>>20)
}

// exportAndMap exports the allocation that holds at as a descriptor,
// imports it back and maps all n bytes of it at a new address (alignment
// g), as a peer does, releasing every handle and the descriptor on the way.
func exportAndMap(t *testing.T, at DevicePtr, n int, g int, dev Device) DevicePtr {
	t.Helper()
	h, err := MemRetainAllocationHandle(at)
	check(t, err)
	fd, err := MemExportFD(h)
	check(t, MemRelease(h))
	check(t, err)
	h2, err := MemImportFD(fd)
	check(t, syscall.Close(fd))
	check(t, err)
	q, err := MemMapNew(h2, n, g, dev)
	check(t, MemRelease(h2))
	check(t, err)
	return q
}
