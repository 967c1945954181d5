package driver

import (
	"syscall"
	"testing"
	"unsafe"
)

func TestGPUHostRegister(t *testing.T) {
	dev := gpuTest(t)
	fill := function(t, gpuModule(t, dev), "fill")
	if v, err := dev.Attribute(AttrHostRegisterSupported); err != nil || v == 0 {
		t.Skipf("HostRegisterSupported = %d, %v", v, err)
	}
	const size = 1 << 20
	b, err := syscall.Mmap(-1, 0, size, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
	check(t, err)
	defer syscall.Munmap(b)
	h, err := MemHostRegister(b, HostRegisterPortable|HostRegisterDeviceMap)
	check(t, err)
	defer func() {
		if err := MemHostUnregister(h); err != nil {
			t.Errorf("MemHostUnregister: %v", err)
		}
	}()
	dp, err := MemHostGetDevicePointer(h)
	check(t, err)

	// A kernel writes the registered memory through its device address.
	n, seed := int32(size/4), uint32(0x9e3779b9)
	check(t, fill.Launch(LaunchConfig{Grid: Dim3{X: 64}, Block: Dim3{X: 256}}, &dp, &n, &seed))
	check(t, CtxSynchronize())
	words := unsafe.Slice((*uint32)(h.Ptr()), size/4)
	for i, v := range words {
		if want := seed ^ uint32(i)*2654435761; v != want {
			t.Fatalf("word %d = %#x; want %#x", i, v, want)
		}
	}

	// Registered memory is a source for asynchronous copies.
	s, err := StreamCreate(StreamNonBlocking)
	check(t, err)
	defer s.Destroy()
	d := alloc(t, size/2)
	check(t, MemcpyHtoDAsync(d, h.Slice(size/2, size/2), s))
	check(t, s.Synchronize())
	got := make([]byte, size/2)
	check(t, MemcpyDtoH(got, d))
	for i := range got {
		if got[i] != b[size/2+i] {
			t.Fatalf("byte %d copied from registered memory = %#x; want %#x", i, got[i], b[size/2+i])
		}
	}
}
