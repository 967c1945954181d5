//go:build cgo && linux

package driver

/*
#include "cudrv.h"
*/
import "C"

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"unsafe"

	"github.com/detcoll/detcoll/internal/binding/dl"
	"github.com/detcoll/detcoll/internal/core/settings"
)

// lib is the loading state shared by Load, Unload and Libraries.
var lib struct {
	mu    sync.Mutex
	refs  int    // Load calls not yet matched by Unload; guarded by mu
	cuda  string // name of the loaded libcuda, "" when unloaded; guarded by mu
	nvrtc string // name of the loaded NVRTC, "" when unloaded or missing; guarded by mu
	// noNVRTC is why Load found no NVRTC, while the driver is loaded
	// without it; guarded by mu.
	noNVRTC error
}

// Load makes the CUDA driver and NVRTC usable: it dlopens them (see the
// package doc for the search), resolves every symbol this package calls, and
// calls cuInit(0). NVRTC is optional: without it the driver still loads
// (kernels built ahead of time need no compiler), and NVRTCVersion,
// Compile and BuildKernel return why it is missing. It is reference-counted and safe for concurrent use: only
// the first of several Loads does the work, and each successful Load must be
// matched by one Unload. On failure nothing stays loaded, and the error
// matches ErrUnavailable and says which library or symbol was missing.
func Load() error {
	lib.mu.Lock()
	defer lib.mu.Unlock()
	if lib.refs > 0 {
		lib.refs++
		return nil
	}
	cuda, err := openLibrary(C.DC_LIB_CUDA, "libcuda", cudaCandidates())
	if err != nil {
		return err
	}
	if r := C.dc_cuInit(0); r != 0 {
		C.dc_sym_clear(C.DC_LIB_CUDA)
		return fmt.Errorf("%w: %w", ErrUnavailable, cuErr(r, "cuInit", 0))
	}
	nvrtc, err := openLibrary(C.DC_LIB_NVRTC, "NVRTC", nvrtcCandidates())
	lib.refs, lib.cuda, lib.nvrtc, lib.noNVRTC = 1, cuda, nvrtc, err
	return nil
}

// Unload drops one reference taken by Load. When the last one goes, every
// function of this package returns an error matching ErrUnavailable again.
// The caller must have released what it made (contexts, memory, modules)
// and must not call into the package concurrently with the last Unload.
//
// The libraries themselves stay mapped: libcuda starts threads and registers
// exit handlers that must not outlive its code, so dlclose after cuInit is
// unsafe. A later Load dlopens them again, which costs only a lookup.
func Unload() error {
	lib.mu.Lock()
	defer lib.mu.Unlock()
	if lib.refs == 0 {
		return errors.New("detcoll/cuda: Unload without a matching Load")
	}
	lib.refs--
	if lib.refs == 0 {
		C.dc_sym_clear(C.DC_LIB_CUDA)
		C.dc_sym_clear(C.DC_LIB_NVRTC)
		lib.cuda, lib.nvrtc, lib.noNVRTC = "", "", nil
	}
	return nil
}

// missingNVRTC returns why NVRTC is not there while the driver is loaded,
// or nil.
func missingNVRTC() error {
	lib.mu.Lock()
	defer lib.mu.Unlock()
	if lib.refs > 0 && lib.noNVRTC != nil {
		return lib.noNVRTC
	}
	return nil
}

// Libraries returns the names of the libcuda and NVRTC that Load opened, or
// empty strings when not loaded. Reports record them.
func Libraries() (cuda, nvrtc string) {
	lib.mu.Lock()
	defer lib.mu.Unlock()
	return lib.cuda, lib.nvrtc
}

// openLibrary opens the first candidate that dlopen accepts and resolves all
// of which's symbols in it. It returns the candidate's name.
func openLibrary(which C.int, what string, candidates []string) (string, error) {
	var tried []string
	for _, name := range candidates {
		h, err := dl.Open(name)
		if err != nil {
			tried = append(tried, err.Error())
			continue
		}
		if err := resolve(which, h, name); err != nil {
			dl.Close(h) // nothing of it was called, so closing is safe
			return "", fmt.Errorf("%w: %s %s: %v", ErrUnavailable, what, name, err)
		}
		return name, nil
	}
	return "", fmt.Errorf("%w: no %s found (%s): %s", ErrUnavailable, what, envHint(which), Tried(candidates, tried))
}

// envHint says how the candidates were chosen, or how to choose another.
func envHint(which C.int) string {
	env := EnvLibNVRTC
	if which == C.DC_LIB_CUDA {
		env = EnvLibCUDA
	}
	if settings.Get(env) != "" {
		return "from " + env
	}
	return "set " + env + " to its path"
}

// resolve fills which's symbol table from h, trying each entry's
// alternative names in order. On failure it leaves the table empty.
func resolve(which C.int, h unsafe.Pointer, name string) error {
	n := int(C.dc_sym_count(which))
	for i := 0; i < n; i++ {
		var p unsafe.Pointer
		var errs []string
		for alt := 0; ; alt++ {
			sym := C.dc_sym_name(which, C.int(i), C.int(alt))
			if sym == nil {
				break
			}
			q, err := dl.Sym(h, name, C.GoString(sym))
			if err == nil {
				p = q
				break
			}
			errs = append(errs, err.Error())
		}
		if p == nil {
			C.dc_sym_clear(which)
			return errors.New(strings.Join(errs, "; "))
		}
		C.dc_sym_set(which, C.int(i), p)
	}
	return nil
}
