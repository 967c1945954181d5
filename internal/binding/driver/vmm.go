//go:build cgo && linux

package driver

/*
#include "cudrv.h"
*/
import "C"

import (
	"errors"
	"fmt"
	"unsafe"
)

// The virtual memory management API: physical memory (MemCreate) apart
// from the addresses it is mapped at (MemAddressReserve, MemMap), which is
// what NCCL's ncclMemAlloc hands out. Such memory does not share over
// IPCGetMemHandle; an allocation created with MemHandlePosixFD shares as a
// file descriptor instead (MemExportFD), which another process imports
// (MemImportFD) and maps at an address of its own.

// allocationProp is a pinned allocation on dev that can be exported as
// types.
func allocationProp(dev Device, types MemHandleType) C.CUmemAllocationProp {
	var prop C.CUmemAllocationProp
	prop._type = memAllocationTypePinned
	prop.requestedHandleTypes = C.int(types)
	prop.location._type = memLocationTypeDevice
	prop.location.id = C.int(dev)
	return prop
}

// MemAllocationGranularity returns the granularity of a pinned allocation
// on dev exportable as types: sizes given to MemCreate and MemMap, and
// the addresses mapped, are multiples of the minimum one.
func MemAllocationGranularity(dev Device, types MemHandleType, which Granularity) (int, error) {
	prop := allocationProp(dev, types)
	var g C.size_t
	if r := C.dc_cuMemGetAllocationGranularity(&g, &prop, C.int(which)); r != 0 {
		return 0, cuErr(r, "cuMemGetAllocationGranularity", int(dev), int(types), int(which))
	}
	return int(g), nil
}

// MemCreate creates size bytes of pinned physical memory on dev, which
// can be exported as types. size must be a multiple of the minimum
// granularity. Map it with MemMap; give the handle back with MemRelease.
func MemCreate(size int, dev Device, types MemHandleType) (MemHandle, error) {
	if size <= 0 {
		return 0, fmt.Errorf("detcoll/cuda: MemCreate(%d): size must be positive", size)
	}
	prop := allocationProp(dev, types)
	var h C.CUmemGenericAllocationHandle
	if r := C.dc_cuMemCreate(&h, C.size_t(size), &prop, 0); r != 0 {
		return 0, cuErr(r, "cuMemCreate", size, int(dev), int(types))
	}
	return MemHandle(h), nil
}

// MemRelease gives back a handle from MemCreate, MemImportFD or
// MemRetainAllocationHandle. The memory goes when no handle and no
// mapping holds it.
func MemRelease(h MemHandle) error {
	if r := C.dc_cuMemRelease(C.CUmemGenericAllocationHandle(h)); r != 0 {
		return cuErr(r, "cuMemRelease", uint64(h))
	}
	return nil
}

// MemRetainAllocationHandle returns a new handle to the physical memory
// mapped at p, any address inside a mapping of MemMap. It fails for every
// other memory (MemAlloc's among it), which is how a caller tells the
// two apart. Release the handle with MemRelease.
func MemRetainAllocationHandle(p DevicePtr) (MemHandle, error) {
	var h C.CUmemGenericAllocationHandle
	if r := C.dc_cuMemRetainAllocationHandle(&h, C.uintptr_t(p)); r != 0 {
		return 0, cuErr(r, "cuMemRetainAllocationHandle", p)
	}
	return MemHandle(h), nil
}

// MemGetAddressRange returns the allocation that contains p: for memory
// of MemMap, the mapping of one physical allocation.
func MemGetAddressRange(p DevicePtr) (base DevicePtr, size int, err error) {
	var b C.CUdeviceptr
	var n C.size_t
	if r := C.dc_cuMemGetAddressRange(&b, &n, C.CUdeviceptr(p)); r != 0 {
		return 0, 0, cuErr(r, "cuMemGetAddressRange_v2", p)
	}
	return DevicePtr(b), int(n), nil
}

// MemExportFD exports h's memory as a POSIX file descriptor, which another
// process on this host receives (over a Unix socket, SCM_RIGHTS) and gives
// to MemImportFD. It fails unless the memory was created with
// MemHandlePosixFD among its types. The caller closes the descriptor; the
// memory stays while it is open.
func MemExportFD(h MemHandle) (int, error) {
	var fd C.int
	if r := C.dc_cuMemExportToShareableHandle(unsafe.Pointer(&fd), C.CUmemGenericAllocationHandle(h), C.int(MemHandlePosixFD), 0); r != 0 {
		return -1, cuErr(r, "cuMemExportToShareableHandle", uint64(h), "POSIX_FILE_DESCRIPTOR")
	}
	return int(fd), nil
}

// MemImportFD returns a handle to the memory that fd, from MemExportFD in
// this or another process, stands for. The caller still closes fd, which
// the handle does not need. Map the memory with MemAddressReserve, MemMap
// and MemSetAccess, then release the handle.
func MemImportFD(fd int) (MemHandle, error) {
	if fd < 0 {
		return 0, fmt.Errorf("detcoll/cuda: MemImportFD(%d): not a file descriptor", fd)
	}
	var h C.CUmemGenericAllocationHandle
	if r := C.dc_cuMemImportFromShareableHandle(&h, C.uintptr_t(fd), C.int(MemHandlePosixFD)); r != 0 {
		return 0, cuErr(r, "cuMemImportFromShareableHandle", fd, "POSIX_FILE_DESCRIPTOR")
	}
	return MemHandle(h), nil
}

// MemAddressReserve reserves size bytes of device addresses, aligned to
// align (0: the driver's default), to map memory at. Free them with
// MemAddressFree once nothing is mapped there.
func MemAddressReserve(size, align int) (DevicePtr, error) {
	if size <= 0 || align < 0 {
		return 0, fmt.Errorf("detcoll/cuda: MemAddressReserve(%d, %d): bad size or alignment", size, align)
	}
	var p C.CUdeviceptr
	if r := C.dc_cuMemAddressReserve(&p, C.size_t(size), C.size_t(align), 0, 0); r != 0 {
		return 0, cuErr(r, "cuMemAddressReserve", size, align)
	}
	return DevicePtr(p), nil
}

// MemAddressFree gives back addresses of MemAddressReserve: p and size
// are what it was given and returned.
func MemAddressFree(p DevicePtr, size int) error {
	if r := C.dc_cuMemAddressFree(C.CUdeviceptr(p), C.size_t(size)); r != 0 {
		return cuErr(r, "cuMemAddressFree", p, size)
	}
	return nil
}

// MemMap maps size bytes of h's memory, from its start, at p (reserved by
// MemAddressReserve). No device may use it before MemSetAccess.
func MemMap(p DevicePtr, size int, h MemHandle) error {
	if r := C.dc_cuMemMap(C.CUdeviceptr(p), C.size_t(size), 0, C.CUmemGenericAllocationHandle(h), 0); r != 0 {
		return cuErr(r, "cuMemMap", p, size, uint64(h))
	}
	return nil
}

// MemUnmap undoes MemMap. No queued work may still use the memory.
func MemUnmap(p DevicePtr, size int) error {
	if r := C.dc_cuMemUnmap(C.CUdeviceptr(p), C.size_t(size)); r != 0 {
		return cuErr(r, "cuMemUnmap", p, size)
	}
	return nil
}

// MemSetAccess lets dev read and write the size bytes mapped at p.
func MemSetAccess(p DevicePtr, size int, dev Device) error {
	var d C.CUmemAccessDesc
	d.location._type = memLocationTypeDevice
	d.location.id = C.int(dev)
	d.flags = memAccessReadWrite
	if r := C.dc_cuMemSetAccess(C.CUdeviceptr(p), C.size_t(size), &d, 1); r != 0 {
		return cuErr(r, "cuMemSetAccess", p, size, int(dev), "READWRITE")
	}
	return nil
}

// MemAllocShareable allocates at least size bytes of device memory on dev
// the way NCCL's ncclMemAlloc does: physical memory of MemCreate,
// exportable as a POSIX file descriptor, its size rounded up to the
// recommended granularity, mapped at addresses of its own that dev may
// read and write. It returns the address and the rounded size. Free it
// with MemFreeShareable, not MemFree. Tests use it for windows of such
// memory.
func MemAllocShareable(dev Device, size int) (DevicePtr, int, error) {
	if size <= 0 {
		return 0, 0, fmt.Errorf("detcoll/cuda: MemAllocShareable(%d): size must be positive", size)
	}
	g, err := MemAllocationGranularity(dev, MemHandlePosixFD, GranularityRecommended)
	if err != nil {
		return 0, 0, err
	}
	n := (size + g - 1) / g * g
	h, err := MemCreate(n, dev, MemHandlePosixFD)
	if err != nil {
		return 0, 0, err
	}
	// The mapping holds the memory: the handle goes whatever happens.
	defer MemRelease(h)
	p, err := MemMapNew(h, n, g, dev)
	if err != nil {
		return 0, 0, err
	}
	return p, n, nil
}

// MemMapNew maps the size bytes of h's memory at new addresses aligned to
// align, which dev may read and write, and returns them. On failure it
// leaves nothing reserved or mapped. The caller still releases h; undo
// with MemUnmap and MemAddressFree.
func MemMapNew(h MemHandle, size, align int, dev Device) (DevicePtr, error) {
	p, err := MemAddressReserve(size, align)
	if err != nil {
		return 0, err
	}
	if err := MemMap(p, size, h); err != nil {
		MemAddressFree(p, size)
		return 0, err
	}
	if err := MemSetAccess(p, size, dev); err != nil {
		MemUnmap(p, size)
		MemAddressFree(p, size)
		return 0, err
	}
	return p, nil
}

// MemFreeShareable frees memory of MemAllocShareable: p is the address it
// returned. No queued work may still use it; memory that another process
// imported stays until that process unmaps it.
func MemFreeShareable(p DevicePtr) error {
	base, n, err := MemGetAddressRange(p)
	if err != nil {
		return err
	}
	if base != p {
		return fmt.Errorf("detcoll/cuda: MemFreeShareable(%v): not the start of its allocation (%v)", p, base)
	}
	return errors.Join(MemUnmap(p, n), MemAddressFree(p, n))
}
