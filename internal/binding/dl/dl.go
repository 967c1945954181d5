//go:build cgo && linux

package dl

/*
#cgo LDFLAGS: -ldl
#include <dlfcn.h>
#include <stdlib.h>
*/
import "C"

import (
	"fmt"
	"runtime"
	"unsafe"
)

// Each call locks the OS thread around itself and its dlerror, because
// dlerror reports the last failure of the calling thread, and a goroutine
// may otherwise move between threads in between.

// Open opens name (a path or a soname) with every symbol bound now, so
// that a broken library fails here rather than at its first call.
func Open(name string) (unsafe.Pointer, error) {
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

// Sym resolves sym in the library h, which Open opened as lib.
func Sym(h unsafe.Pointer, lib, sym string) (unsafe.Pointer, error) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	csym := C.CString(sym)
	defer C.free(unsafe.Pointer(csym))
	C.dlerror()
	p := C.dlsym(h, csym)
	if p == nil {
		return nil, fmt.Errorf("dlsym %s in %s: %s", sym, lib, dlerror())
	}
	return p, nil
}

// Close drops a handle whose symbols are no longer referenced.
func Close(h unsafe.Pointer) { C.dlclose(h) }

// dlerror must run on the thread of the failed call.
func dlerror() string {
	if e := C.dlerror(); e != nil {
		return C.GoString(e)
	}
	return "unknown dl error"
}
