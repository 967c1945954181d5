//go:build cgo && linux

package driver

/*
#include "cudrv.h"
*/
import "C"

// SetCurrent makes c the current context of the calling OS thread. Call it
// with the goroutine locked to its thread (runtime.LockOSThread); see the
// package doc.
func (c Context) SetCurrent() error {
	if r := C.dc_cuCtxSetCurrent(C.CUcontext(c)); r != 0 {
		return cuErr(r, "cuCtxSetCurrent", uintptr(c))
	}
	return nil
}

// CurrentContext returns the calling OS thread's current context, or 0 if
// none. Use it to assert that a locked thread is set up.
func CurrentContext() (Context, error) {
	var c C.CUcontext
	if r := C.dc_cuCtxGetCurrent(&c); r != 0 {
		return 0, cuErr(r, "cuCtxGetCurrent")
	}
	return Context(c), nil
}

// PushCurrent pushes c on the calling OS thread's context stack, making it
// current until the matching PopCurrent.
func (c Context) PushCurrent() error {
	if r := C.dc_cuCtxPushCurrent(C.CUcontext(c)); r != 0 {
		return cuErr(r, "cuCtxPushCurrent_v2", uintptr(c))
	}
	return nil
}

// PopCurrent pops the calling OS thread's current context and returns it.
func PopCurrent() (Context, error) {
	var c C.CUcontext
	if r := C.dc_cuCtxPopCurrent(&c); r != 0 {
		return 0, cuErr(r, "cuCtxPopCurrent_v2")
	}
	return Context(c), nil
}

// CtxSynchronize waits until all work in the current context is done. It
// returns the error of any earlier asynchronous failure (a kernel fault).
func CtxSynchronize() error {
	if r := C.dc_cuCtxSynchronize(); r != 0 {
		return cuErr(r, "cuCtxSynchronize")
	}
	return nil
}
