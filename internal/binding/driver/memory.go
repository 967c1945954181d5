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

// MemGetInfo returns the free and total device memory of the current
// context's device, in bytes.
func MemGetInfo() (free, total int, err error) {
	var f, t C.size_t
	if r := C.dc_cuMemGetInfo(&f, &t); r != 0 {
		return 0, 0, cuErr(r, "cuMemGetInfo_v2")
	}
	return int(f), int(t), nil
}

// MemAlloc allocates size bytes of device memory in the current context.
// The memory is not cleared. It can be exported with IPCGetMemHandle.
func MemAlloc(size int) (DevicePtr, error) {
	if size < 0 {
		return 0, fmt.Errorf("detcoll/cuda: MemAlloc(%d): negative size", size)
	}
	var p C.CUdeviceptr
	if r := C.dc_cuMemAlloc(&p, C.size_t(size)); r != 0 {
		return 0, cuErr(r, "cuMemAlloc_v2", size)
	}
	return DevicePtr(p), nil
}

// MemFree frees memory from MemAlloc. It waits for no work: the caller
// makes sure no queued work still uses the memory.
func MemFree(p DevicePtr) error {
	if r := C.dc_cuMemFree(C.CUdeviceptr(p)); r != 0 {
		return cuErr(r, "cuMemFree_v2", p)
	}
	return nil
}

// MemsetD8 sets n bytes at p to v, synchronously.
func MemsetD8(p DevicePtr, v byte, n int) error {
	if n < 0 {
		return fmt.Errorf("detcoll/cuda: MemsetD8(%v, %d): negative length", p, n)
	}
	if r := C.dc_cuMemsetD8(C.CUdeviceptr(p), C.uchar(v), C.size_t(n)); r != 0 {
		return cuErr(r, "cuMemsetD8_v2", p, v, n)
	}
	return nil
}

// MemsetD32 sets n 32-bit words at p (4-byte aligned) to v, synchronously.
func MemsetD32(p DevicePtr, v uint32, n int) error {
	if n < 0 {
		return fmt.Errorf("detcoll/cuda: MemsetD32(%v, %d): negative length", p, n)
	}
	if r := C.dc_cuMemsetD32(C.CUdeviceptr(p), C.uint(v), C.size_t(n)); r != 0 {
		return cuErr(r, "cuMemsetD32_v2", p, v, n)
	}
	return nil
}

// MemsetD8Async queues setting n bytes at p to v on s.
func MemsetD8Async(p DevicePtr, v byte, n int, s Stream) error {
	if n < 0 {
		return fmt.Errorf("detcoll/cuda: MemsetD8Async(%v, %d): negative length", p, n)
	}
	if r := C.dc_cuMemsetD8Async(C.CUdeviceptr(p), C.uchar(v), C.size_t(n), C.CUstream(s)); r != 0 {
		return cuErr(r, "cuMemsetD8Async", p, v, n, uintptr(s))
	}
	return nil
}

// MemcpyHtoD copies src to dst and returns when src may be reused. src may
// be ordinary Go memory.
func MemcpyHtoD(dst DevicePtr, src []byte) error {
	if len(src) == 0 {
		return nil
	}
	if r := C.dc_cuMemcpyHtoD(C.CUdeviceptr(dst), unsafe.Pointer(&src[0]), C.size_t(len(src))); r != 0 {
		return cuErr(r, "cuMemcpyHtoD_v2", dst, len(src))
	}
	return nil
}

// MemcpyDtoH copies len(dst) bytes from src into dst and returns when they
// have arrived. dst may be ordinary Go memory.
func MemcpyDtoH(dst []byte, src DevicePtr) error {
	if len(dst) == 0 {
		return nil
	}
	if r := C.dc_cuMemcpyDtoH(unsafe.Pointer(&dst[0]), C.CUdeviceptr(src), C.size_t(len(dst))); r != 0 {
		return cuErr(r, "cuMemcpyDtoH_v2", src, len(dst))
	}
	return nil
}

// MemcpyDtoD copies n bytes from src to dst (possibly memory of another
// device opened by IPCOpenMemHandle).
func MemcpyDtoD(dst, src DevicePtr, n int) error {
	if n < 0 {
		return fmt.Errorf("detcoll/cuda: MemcpyDtoD(%v, %v, %d): negative length", dst, src, n)
	}
	if r := C.dc_cuMemcpyDtoD(C.CUdeviceptr(dst), C.CUdeviceptr(src), C.size_t(n)); r != 0 {
		return cuErr(r, "cuMemcpyDtoD_v2", dst, src, n)
	}
	return nil
}

// MemcpyHtoDAsync queues copying src to dst on s. src must stay untouched
// until the copy is done (synchronize s or an event recorded after it); it
// is HostMem because Go memory may not be used after the call returns.
func MemcpyHtoDAsync(dst DevicePtr, src HostMem, s Stream) error {
	if src.n == 0 {
		return nil
	}
	if r := C.dc_cuMemcpyHtoDAsync(C.CUdeviceptr(dst), src.ptr, C.size_t(src.n), C.CUstream(s)); r != 0 {
		return cuErr(r, "cuMemcpyHtoDAsync_v2", dst, src.n, uintptr(s))
	}
	return nil
}

// MemcpyDtoHAsync queues copying dst.Len() bytes from src into dst on s.
// dst holds the data once s reaches the end of the copy.
func MemcpyDtoHAsync(dst HostMem, src DevicePtr, s Stream) error {
	if dst.n == 0 {
		return nil
	}
	if r := C.dc_cuMemcpyDtoHAsync(dst.ptr, C.CUdeviceptr(src), C.size_t(dst.n), C.CUstream(s)); r != 0 {
		return cuErr(r, "cuMemcpyDtoHAsync_v2", src, dst.n, uintptr(s))
	}
	return nil
}

// MemcpyDtoDAsync queues copying n bytes from src to dst on s.
func MemcpyDtoDAsync(dst, src DevicePtr, n int, s Stream) error {
	if n < 0 {
		return fmt.Errorf("detcoll/cuda: MemcpyDtoDAsync(%v, %v, %d): negative length", dst, src, n)
	}
	if r := C.dc_cuMemcpyDtoDAsync(C.CUdeviceptr(dst), C.CUdeviceptr(src), C.size_t(n), C.CUstream(s)); r != 0 {
		return cuErr(r, "cuMemcpyDtoDAsync_v2", dst, src, n, uintptr(s))
	}
	return nil
}

// PointerRange returns the allocation that contains p: its base address and
// size. IPC exports whole allocations, so a buffer at an offset inside one
// is exported as (handle of base, p - base).
func PointerRange(p DevicePtr) (base DevicePtr, size int, err error) {
	var b C.CUdeviceptr
	if r := C.dc_cuPointerGetAttribute(unsafe.Pointer(&b), pointerRangeStart, C.CUdeviceptr(p)); r != 0 {
		return 0, 0, cuErr(r, "cuPointerGetAttribute", "CU_POINTER_ATTRIBUTE_RANGE_START_ADDR", p)
	}
	var n C.size_t
	if r := C.dc_cuPointerGetAttribute(unsafe.Pointer(&n), pointerRangeSize, C.CUdeviceptr(p)); r != 0 {
		return 0, 0, cuErr(r, "cuPointerGetAttribute", "CU_POINTER_ATTRIBUTE_RANGE_SIZE", p)
	}
	return DevicePtr(b), int(n), nil
}
