//go:build cgo && linux

package driver

/*
#include <dlfcn.h>
#include <stdlib.h>
*/
import "C"

import (
	"fmt"
	"runtime"
	"unsafe"
)

// The dl* wrappers lock the OS thread around each call and its dlerror,
// because dlerror reports the last failure of the calling thread, and a
// goroutine may otherwise move between threads in between.

// dlopen opens name (a path or a soname) with every symbol bound now, so
// that a broken library fails here rather than at its first call.
func dlopen(name string) (unsafe.Pointer, error) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	cname := C.CString(name)
	defer C.free(unsafe.Pointer(cname))
	C.dlerror() // clear a stale error
	h := C.dlopen(cname, C.RTLD_NOW|C.RTLD_LOCAL)
	if h == nil {
		return nil, fmt.Errorf("dlopen %s: %s", name, dlerror())
	}
	return h, nil
}

// dlsym resolves sym in the library h opened as lib.
func dlsym(h unsafe.Pointer, lib string, sym *C.char) (unsafe.Pointer, error) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	C.dlerror()
	p := C.dlsym(h, sym)
	if p == nil {
		return nil, fmt.Errorf("dlsym %s in %s: %s", C.GoString(sym), lib, dlerror())
	}
	return p, nil
}

// dlclose drops a handle whose symbols are no longer referenced.
func dlclose(h unsafe.Pointer) {
	C.dlclose(h)
}

// dlerror must run on the thread of the failed call.
func dlerror() string {
	if e := C.dlerror(); e != nil {
		return C.GoString(e)
	}
	return "unknown dl error"
}
