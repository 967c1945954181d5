//go:build cgo && linux

package driver

/*
#include "cudrv.h"
*/
import "C"

import (
	"fmt"
	"unsafe"
)

// MemHostAllocMapped allocates size bytes of page-locked host memory that
// every context can use and that is mapped into the device address space
// (cuMemHostAlloc with DEVICEMAP|PORTABLE): the host writes a word with an
// atomic store and a kernel reads it through MemHostGetDevicePointer, which
// is how a host-side abort reaches a spinning kernel. The memory is zeroed
// by the operating system, not by CUDA; free it with MemFreeHost.
func MemHostAllocMapped(size int) (HostMem, error) {
	if size <= 0 {
		return HostMem{}, fmt.Errorf("detcoll/cuda: MemHostAllocMapped(%d): size must be positive", size)
	}
	var p unsafe.Pointer
	if r := C.dc_cuMemHostAlloc(&p, C.size_t(size), memHostAllocDeviceMap|memHostAllocPortable); r != 0 {
		return HostMem{}, cuErr(r, "cuMemHostAlloc", size, "DEVICEMAP|PORTABLE")
	}
	return HostMem{ptr: p, n: size}, nil
}

// MemFreeHost frees memory from MemHostAllocMapped. No queued work may still
// use it.
func MemFreeHost(h HostMem) error {
	if r := C.dc_cuMemFreeHost(h.ptr); r != 0 {
		return cuErr(r, "cuMemFreeHost", h.ptr)
	}
	return nil
}

// MemHostGetDevicePointer returns the device address of mapped host memory
// (from MemHostAllocMapped, or MemHostRegister with HostRegisterDeviceMap).
func MemHostGetDevicePointer(h HostMem) (DevicePtr, error) {
	var d C.CUdeviceptr
	if r := C.dc_cuMemHostGetDevicePointer(&d, h.ptr, 0); r != 0 {
		return 0, cuErr(r, "cuMemHostGetDevicePointer_v2", h.ptr)
	}
	return DevicePtr(d), nil
}

// MemHostRegister page-locks b, which must be memory Go does not manage: a
// mapping from syscall.Mmap (shared memory, a file), never a Go slice from
// make or a Go variable, since the driver and the GPU keep using it after
// the call (cgo pointer rules), and page-aligned for portability. Undo with
// MemHostUnregister before unmapping it.
func MemHostRegister(b []byte, flags HostRegisterFlags) (HostMem, error) {
	if len(b) == 0 {
		return HostMem{}, fmt.Errorf("detcoll/cuda: MemHostRegister: empty range")
	}
	p := unsafe.Pointer(&b[0])
	if r := C.dc_cuMemHostRegister(p, C.size_t(len(b)), C.uint(flags)); r != 0 {
		return HostMem{}, cuErr(r, "cuMemHostRegister_v2", p, len(b), uint32(flags))
	}
	return HostMem{ptr: p, n: len(b)}, nil
}

// MemHostUnregister undoes MemHostRegister; h must be what it returned.
func MemHostUnregister(h HostMem) error {
	if r := C.dc_cuMemHostUnregister(h.ptr); r != 0 {
		return cuErr(r, "cuMemHostUnregister", h.ptr)
	}
	return nil
}
