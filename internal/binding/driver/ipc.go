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

// IPCGetMemHandle returns a handle another process can open to map the
// allocation that starts at p. p must be the base of a MemAlloc allocation
// (see PointerRange for buffers at an offset).
func IPCGetMemHandle(p DevicePtr) (IPCMemHandle, error) {
	var h IPCMemHandle
	if r := C.dc_cuIpcGetMemHandle((*C.CUipcMemHandle)(unsafe.Pointer(&h)), C.CUdeviceptr(p)); r != 0 {
		return IPCMemHandle{}, cuErr(r, "cuIpcGetMemHandle", p)
	}
	return h, nil
}

// IPCOpenMemHandle maps another process's allocation into the current
// context, enabling peer access on demand (CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS).
// A process cannot open its own handles. Close with IPCCloseMemHandle before
// the exporter frees the memory.
func IPCOpenMemHandle(h IPCMemHandle) (DevicePtr, error) {
	var p C.CUdeviceptr
	ch := *(*C.CUipcMemHandle)(unsafe.Pointer(&h))
	if r := C.dc_cuIpcOpenMemHandle(&p, ch, ipcLazyPeerAccess); r != 0 {
		return 0, cuErr(r, "cuIpcOpenMemHandle_v2", fmt.Sprintf("%x…", h[:8]), "LAZY_ENABLE_PEER_ACCESS")
	}
	return DevicePtr(p), nil
}

// IPCCloseMemHandle unmaps memory from IPCOpenMemHandle.
func IPCCloseMemHandle(p DevicePtr) error {
	if r := C.dc_cuIpcCloseMemHandle(C.CUdeviceptr(p)); r != 0 {
		return cuErr(r, "cuIpcCloseMemHandle", p)
	}
	return nil
}
