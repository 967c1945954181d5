//go:build cgo

package main

/*
#include "shim.h"
*/
import "C"

import (
	"fmt"
	"os"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync"
	"unsafe"

	"github.com/detcoll/detcoll/internal/binding/nccl"
	"github.com/detcoll/detcoll/internal/core/settings"
	"github.com/detcoll/detcoll/internal/shim/ncclshim"
)

// theShim is the library's state, made at the first call that needs it,
// with the settings of the environment then.
var theShim = sync.OnceValues(func() (*ncclshim.Shim, error) {
	s, err := ncclshim.SettingsFromEnv(os.Getenv)
	if err != nil {
		return nil, fmt.Errorf("detcoll: %w", err)
	}
	sh := ncclshim.New(realNCCL{}, ncclshim.DriverDevice{}, ncclshim.OpenDetcoll, s)
	sh.Warn = warnOnce
	if settings.Get(settings.NCCLDebug) == "1" {
		sh.Debug = func(line string) { fmt.Fprintf(os.Stderr, "libdetcoll-nccl: %s\n", line) }
	}
	startProfile()
	return sh, nil
})

// profile is the file DETCOLL_NCCL_CPUPROFILE names ("%p": the process
// id), open while the Go side is profiled.
var profile *os.File

func startProfile() {
	name := settings.Get(settings.NCCLCPUProfile)
	if name == "" {
		return
	}
	f, err := os.Create(strings.ReplaceAll(name, "%p", strconv.Itoa(os.Getpid())))
	if err == nil {
		err = pprof.StartCPUProfile(f)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "libdetcoll-nccl: DETCOLL_NCCL_CPUPROFILE: %v\n", err)
		return
	}
	profile = f
}

// dcgo_stop_profile ends the profile, at the process's exit.
//
//export dcgo_stop_profile
func dcgo_stop_profile() {
	if profile != nil {
		pprof.StopCPUProfile()
		profile.Close()
	}
}

// warned holds the reasons already printed, at most maxWarnings.
var warned struct {
	sync.Mutex
	seen map[string]bool
}

const maxWarnings = 10

// warnOnce tells the user, once per reason, that a call left detcoll:
// handed to the real NCCL (in delegate mode nothing else would say that
// its result is not detcoll's) or refused (strict mode: vLLM and SGLang
// print only ncclGetErrorString's text, not ncclGetLastError's). The
// library proper never prints; this is the tool's boundary.
func warnOnce(why string, refused bool) {
	warned.Lock()
	defer warned.Unlock()
	if warned.seen == nil {
		warned.seen = map[string]bool{}
	}
	if warned.seen[why] || len(warned.seen) > maxWarnings {
		return
	}
	warned.seen[why] = true
	if len(warned.seen) > maxWarnings {
		fmt.Fprintf(os.Stderr, "libdetcoll-nccl: more calls left detcoll; no more warnings\n")
		return
	}
	if refused {
		fmt.Fprintf(os.Stderr, "libdetcoll-nccl: %s; refused (%s=strict): ncclInvalidUsage\n", why, ncclshim.EnvMode)
		return
	}
	fmt.Fprintf(os.Stderr, "libdetcoll-nccl: %s; handed to the real NCCL (not deterministic; %s=strict refuses instead)\n", why, ncclshim.EnvMode)
}

// kindsAgree reports whether forward.c numbers the reductions, and the
// host factor's residence, as ncclshim does (TestKindsAgree).
func kindsAgree() bool {
	return C.DC_ALLREDUCE == int(ncclshim.AllReduce) && C.DC_REDUCESCATTER == int(ncclshim.ReduceScatter) &&
		C.DC_REDUCE == int(ncclshim.Reduce) && C.DC_SCALAR_HOST == int(ncclshim.ScalarHostImmediate)
}

// answer turns the shim's result and verdict into forward.c's answer.
func answer(r nccl.Result, v ncclshim.Verdict) C.int {
	switch v {
	case ncclshim.Handed:
		return C.DC_HANDED
	case ncclshim.Deferred:
		return C.DC_DEFERRED
	}
	return C.int(r)
}

// withShim runs f with the shim, or answers ncclInvalidUsage when the
// settings are bad.
func withShim(f func(*ncclshim.Shim) C.int) C.int {
	s, err := theShim()
	if err != nil {
		return C.int(nccl.InvalidUsage)
	}
	return f(s)
}

//export dcgo_init
func dcgo_init(comm C.uintptr_t, nranks, rank, ready C.int) {
	withShim(func(s *ncclshim.Shim) C.int {
		return C.int(s.Init(ncclshim.Handle(comm), int(nranks), int(rank), ready != 0))
	})
}

//export dcgo_init_all
func dcgo_init_all(comms *C.uintptr_t, n C.int, devlist *C.int) {
	hs := make([]ncclshim.Handle, n)
	devices := make([]int, n)
	for i, h := range unsafe.Slice(comms, n) {
		hs[i], devices[i] = ncclshim.Handle(h), i
	}
	if devlist != nil {
		for i, d := range unsafe.Slice(devlist, n) {
			devices[i] = int(d)
		}
	}
	withShim(func(s *ncclshim.Shim) C.int { s.InitAll(hs, devices); return 0 })
}

//export dcgo_finalize
func dcgo_finalize(comm C.uintptr_t) {
	withShim(func(s *ncclshim.Shim) C.int { return C.int(s.Finalize(ncclshim.Handle(comm))) })
}

//export dcgo_destroy
func dcgo_destroy(comm C.uintptr_t) {
	withShim(func(s *ncclshim.Shim) C.int { return C.int(s.Destroy(ncclshim.Handle(comm))) })
}

//export dcgo_abort
func dcgo_abort(comm C.uintptr_t) {
	withShim(func(s *ncclshim.Shim) C.int { s.Abort(ncclshim.Handle(comm)); return 0 })
}

//export dcgo_async_error
func dcgo_async_error(comm C.uintptr_t) C.int {
	return withShim(func(s *ncclshim.Shim) C.int { return C.int(s.AsyncError(ncclshim.Handle(comm))) })
}

//export dcgo_reduction
func dcgo_reduction(kind C.int, send, recv C.uintptr_t, count C.size_t, dt, op, root C.int, comm, stream C.uintptr_t, group C.uint64_t) C.int {
	return withShim(func(s *ncclshim.Shim) C.int {
		return answer(s.Do(ncclshim.Call{Kind: ncclshim.Kind(kind), Send: uintptr(send), Recv: uintptr(recv), Count: int(count),
			DType: nccl.DataType(dt), Op: nccl.RedOp(op), Root: int(root), Comm: ncclshim.Handle(comm), Stream: uintptr(stream)}, uint64(group)))
	})
}

// dcgo_premul_create tells the shim of an operator the real NCCL's
// ncclRedOpCreatePreMulSum made: a host factor (host, for
// ncclScalarHostImmediate) is copied now, as NCCL reads it now; a device
// one (ncclScalarDevice) is kept as its address, at. The address comes as
// an integer: a device address is no pointer Go may hold.
//
//export dcgo_premul_create
func dcgo_premul_create(comm C.uintptr_t, op C.int, host unsafe.Pointer, at C.uintptr_t, dt, residence C.int) {
	withShim(func(s *ncclshim.Shim) C.int {
		var b []byte
		if n := ncclshim.ScalarSize(nccl.DataType(dt)); n > 0 && host != nil {
			b = C.GoBytes(host, C.int(n))
		}
		s.CreatePreMulSum(ncclshim.Handle(comm), nccl.RedOp(op), nccl.DataType(dt), ncclshim.ScalarResidence(residence), b, uintptr(at))
		return 0
	})
}

//export dcgo_premul_destroy
func dcgo_premul_destroy(comm C.uintptr_t, op C.int, group C.uint64_t) C.int {
	return withShim(func(s *ncclshim.Shim) C.int {
		if s.DestroyRedOp(ncclshim.Handle(comm), nccl.RedOp(op), uint64(group)) {
			return 1
		}
		return 0
	})
}

// dcgo_window_register tells the shim of a window the real NCCL's
// ncclCommWindowRegister made over size bytes at buff (window.go of
// ncclshim); group is the caller's group, 0 outside one.
//
//export dcgo_window_register
func dcgo_window_register(comm, buff C.uintptr_t, size C.size_t, win C.uintptr_t, group C.uint64_t) {
	withShim(func(s *ncclshim.Shim) C.int {
		s.WindowRegister(ncclshim.Handle(comm), uintptr(buff), int(size), uintptr(win), uint64(group))
		return 0
	})
}

//export dcgo_window_deregister
func dcgo_window_deregister(comm, win C.uintptr_t) {
	withShim(func(s *ncclshim.Shim) C.int {
		s.WindowDeregister(ncclshim.Handle(comm), uintptr(win))
		return 0
	})
}

// dcgo_group_end is the shim's part of a group's end (phase 0 before the
// real ncclGroupEnd, 1 after); *left says whether phase 1 has work.
//
//export dcgo_group_end
func dcgo_group_end(group C.uint64_t, phase, forwarded C.int, left *C.int) C.int {
	return withShim(func(s *ncclshim.Shim) C.int {
		r, more := s.GroupEnd(uint64(group), int(phase), forwarded != 0)
		*left = 0
		if more {
			*left = 1
		}
		return C.int(r)
	})
}

//export dcgo_group_drop
func dcgo_group_drop(group C.uint64_t) {
	withShim(func(s *ncclshim.Shim) C.int { s.GroupDrop(uint64(group)); return 0 })
}

// dcgo_write_report writes DETCOLL_NCCL_REPORT's record, at the process's
// exit (forward.c registers it with atexit).
//
//export dcgo_write_report
func dcgo_write_report() {
	s, err := theShim()
	if err != nil {
		return
	}
	forwarded := map[string]int64{}
	for i := C.int(0); ; i++ {
		var name *C.char
		var calls C.uint64_t
		if C.dc_pass_count(i, &name, &calls) == 0 {
			break
		}
		if calls > 0 {
			forwarded[C.GoString(name)] = int64(calls)
		}
	}
	if err := s.WriteReport(forwarded, float64(C.dc_boundary_us())); err != nil {
		fmt.Fprintf(os.Stderr, "libdetcoll-nccl: %s: %v\n", ncclshim.EnvReport, err)
	}
}

// dcgo_last_error copies the text of the shim's last error into buf (n
// bytes, NUL-terminated).
//
//export dcgo_last_error
func dcgo_last_error(buf *C.char, n C.int) {
	text := ""
	if s, err := theShim(); err != nil {
		text = err.Error()
	} else {
		text = s.LastError()
	}
	b := unsafe.Slice((*byte)(unsafe.Pointer(buf)), n)
	copy(b[:n-1], text)
	b[min(len(text), int(n)-1)] = 0
}

// realNCCL is the shim's Real: the real NCCL, through forward.c's pointers.
type realNCCL struct{}

func (realNCCL) AllGather(h ncclshim.Handle, send, recv uintptr, n int, s uintptr) nccl.Result {
	return nccl.Result(C.dc_real_allgather(C.uintptr_t(h), C.uintptr_t(send), C.uintptr_t(recv), C.size_t(n), C.uintptr_t(s)))
}

func (realNCCL) RedOpDestroy(h ncclshim.Handle, op nccl.RedOp) nccl.Result {
	return nccl.Result(C.dc_real_redop_destroy(C.uintptr_t(h), C.int(op)))
}

func (realNCCL) Reduction(c ncclshim.Call) nccl.Result {
	return nccl.Result(C.dc_real_reduction(C.int(c.Kind), C.uintptr_t(c.Send), C.uintptr_t(c.Recv), C.size_t(c.Count),
		C.int(c.DType), C.int(c.Op), C.int(c.Root), C.uintptr_t(c.Comm), C.uintptr_t(c.Stream)))
}

func (realNCCL) query(h ncclshim.Handle, what C.int) (int, nccl.Result) {
	var v C.int
	r := C.dc_real_comm_query(C.uintptr_t(h), what, &v)
	return int(v), nccl.Result(r)
}

func (n realNCCL) CommCount(h ncclshim.Handle) (int, nccl.Result)    { return n.query(h, 0) }
func (n realNCCL) CommUserRank(h ncclshim.Handle) (int, nccl.Result) { return n.query(h, 1) }
func (n realNCCL) CommCuDevice(h ncclshim.Handle) (int, nccl.Result) { return n.query(h, 2) }

func (n realNCCL) AsyncError(h ncclshim.Handle) nccl.Result {
	state, r := n.query(h, 3)
	if r != nccl.Success {
		return r
	}
	return nccl.Result(state)
}
