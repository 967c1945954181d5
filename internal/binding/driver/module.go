//go:build cgo && linux

package driver

/*
#include <stdlib.h>
#include "cudrv.h"
*/
import "C"

import (
	"fmt"
	"reflect"
	"sync"
	"unsafe"
)

// ModuleLoadData loads a module from a CUBIN image (from Compile) into the
// current context. The image is copied; it may be reused at once.
func ModuleLoadData(image []byte) (Module, error) {
	if len(image) == 0 {
		return 0, fmt.Errorf("detcoll/cuda: ModuleLoadData: empty image")
	}
	// A malloc'd copy is aligned for the ELF reader, as Go memory need not be.
	p := C.CBytes(image)
	defer C.free(p)
	var m C.CUmodule
	if r := C.dc_cuModuleLoadData(&m, p); r != 0 {
		return 0, cuErr(r, "cuModuleLoadData", fmt.Sprintf("%d bytes", len(image)))
	}
	return Module(m), nil
}

// Unload unloads the module; its functions become invalid.
func (m Module) Unload() error {
	if r := C.dc_cuModuleUnload(C.CUmodule(m)); r != 0 {
		return cuErr(r, "cuModuleUnload", uintptr(m))
	}
	return nil
}

// Function returns the kernel with the given name, which is the unmangled
// name for kernels declared extern "C".
func (m Module) Function(name string) (Function, error) {
	cname := C.CString(name)
	defer C.free(unsafe.Pointer(cname))
	var f C.CUfunction
	if r := C.dc_cuModuleGetFunction(&f, C.CUmodule(m), cname); r != 0 {
		return 0, cuErr(r, "cuModuleGetFunction", name)
	}
	return Function(f), nil
}

// SetAttribute sets one of the kernel's attributes, such as
// FuncAttrMaxDynamicSharedSizeBytes before a launch above 48 KiB of dynamic
// shared memory.
func (f Function) SetAttribute(a FuncAttribute, v int) error {
	if r := C.dc_cuFuncSetAttribute(C.CUfunction(f), C.int(a), C.int(v)); r != 0 {
		return cuErr(r, "cuFuncSetAttribute", int(a), v)
	}
	return nil
}

// MaxActiveBlocksPerSM returns how many blocks of block threads, with
// shmem bytes of dynamic shared memory, one multiprocessor holds at once
// (cuOccupancyMaxActiveBlocksPerMultiprocessor): with the multiprocessor
// count, the blocks of a launch that can all be resident together.
func (f Function) MaxActiveBlocksPerSM(block, shmem int) (int, error) {
	var n C.int
	if r := C.dc_cuOccupancyMaxActiveBlocksPerMultiprocessor(&n, C.CUfunction(f), C.int(block), C.size_t(shmem)); r != 0 {
		return 0, cuErr(r, "cuOccupancyMaxActiveBlocksPerMultiprocessor", block, shmem)
	}
	return int(n), nil
}

// plainChecked caches plainType's verdict on LaunchStruct's types.
var plainChecked sync.Map // reflect.Type -> error

// zeroOffset is LaunchStruct's one parameter offset.
var zeroOffset = [1]C.uint32_t{0}

// LaunchStruct queues the kernel f on cfg.Stream with one parameter, *arg,
// a struct with the C layout of the kernel's parameter and no Go pointers.
// Unlike Launch it neither allocates nor walks the type each time: it is
// the launch of every collective call, whose host cost is on the critical
// path of small messages.
func LaunchStruct[T any](f Function, cfg LaunchConfig, arg *T) error {
	t := reflect.TypeFor[T]()
	verdict, ok := plainChecked.Load(t)
	if !ok {
		err := plainType(t)
		if err == nil && t.Size() == 0 {
			err = fmt.Errorf("size 0")
		}
		verdict, _ = plainChecked.LoadOrStore(t, err)
	}
	if err, _ := verdict.(error); err != nil {
		return fmt.Errorf("detcoll/cuda: LaunchStruct of %v: %v", t, err)
	}
	if cfg.SharedMem < 0 {
		return fmt.Errorf("detcoll/cuda: Launch: negative shared memory %d", cfg.SharedMem)
	}
	gx, gy, gz := cfg.Grid.dims()
	bx, by, bz := cfg.Block.dims()
	r := C.dc_launch(C.CUfunction(f), C.uint(gx), C.uint(gy), C.uint(gz), C.uint(bx), C.uint(by), C.uint(bz),
		C.uint(cfg.SharedMem), C.CUstream(cfg.Stream), unsafe.Pointer(arg), &zeroOffset[0], 1)
	if r != 0 {
		return cuErr(r, "cuLaunchKernel", fmt.Sprintf("grid %dx%dx%d", gx, gy, gz),
			fmt.Sprintf("block %dx%dx%d", bx, by, bz), fmt.Sprintf("shared %d", cfg.SharedMem), t.String())
	}
	return nil
}

// Launch queues the kernel on cfg.Stream. Each argument is a pointer to its
// value, in the kernel's parameter order, with the kernel's C types:
// *DevicePtr for T*, *int32 for int, *uint64 for unsigned long long,
// *float32 for float, or a struct with the C layout. The values are copied
// during the call, so they may change afterwards.
func (f Function) Launch(cfg LaunchConfig, args ...any) error {
	p, err := packArgs(args)
	if err != nil {
		return err
	}
	if cfg.SharedMem < 0 {
		return fmt.Errorf("detcoll/cuda: Launch: negative shared memory %d", cfg.SharedMem)
	}
	gx, gy, gz := cfg.Grid.dims()
	bx, by, bz := cfg.Block.dims()
	var offs *C.uint32_t
	if len(p.offs) > 0 {
		offs = (*C.uint32_t)(unsafe.Pointer(&p.offs[0]))
	}
	r := C.dc_launch(C.CUfunction(f), C.uint(gx), C.uint(gy), C.uint(gz), C.uint(bx), C.uint(by), C.uint(bz),
		C.uint(cfg.SharedMem), C.CUstream(cfg.Stream), p.ptr(), offs, C.int(len(p.offs)))
	if r != 0 {
		return cuErr(r, "cuLaunchKernel", fmt.Sprintf("grid %dx%dx%d", gx, gy, gz),
			fmt.Sprintf("block %dx%dx%d", bx, by, bz), fmt.Sprintf("shared %d", cfg.SharedMem),
			fmt.Sprintf("%d args", len(args)))
	}
	return nil
}
