// Package driver is the library's only cgo: a Go API over the CUDA driver
// API and NVRTC, loaded at run time with dlopen, so that building detcoll
// needs no CUDA headers, libraries or GPU.
//
// # Builds
//
// With cgo on Linux (driver.go and its siblings) the package declares the
// few CUDA types and functions it uses itself (cudrv.h) and resolves them
// with dlsym. Elsewhere (stub.go) it has the same API, and every function
// returns an error matching ErrUnavailable. The API uses only Go types:
// handles are integers, device addresses are DevicePtr, host memory handed
// to CUDA for asynchronous use is HostMem.
//
// # Loading
//
// Load opens libcuda ($DETCOLL_LIBCUDA, else libcuda.so.1) and NVRTC
// ($DETCOLL_LIBNVRTC, else libnvrtc.so.13, .12, .11.2, .11.1, .11.0, then
// libnvrtc.so and /usr/local/cuda/lib64/libnvrtc.so), resolves every symbol,
// and calls cuInit(0). Symbols are looked up by their exported, versioned
// names (cuMemAlloc_v2, cuStreamDestroy_v2, cuIpcOpenMemHandle_v2, ...), the
// names cuda.h maps its API to, rather than through cuGetProcAddress: dlsym
// works the same on every driver since CUDA 11, needs no per-symbol version
// argument, and a missing symbol fails Load with its name. One entry,
// cuEventElapsedTime, tries cuEventElapsedTime_v2 (CUDA 12.8 and later,
// which CUDA 13 headers use) and falls back to the unversioned name. Load is
// reference-counted: pair every successful Load with an Unload.
//
// # Errors
//
// Every failing call returns an error that names the driver function and its
// arguments and wraps the status: errors.As finds a Result (CUresult) or,
// for NVRTC, an *NVRTCError that carries the compile log. Result names and
// descriptions work without a loaded driver. A call before Load, or any call
// in a stub build, matches ErrUnavailable.
//
// # Threads and contexts
//
// A CUDA context is current per OS thread, and a goroutine may move between
// threads at any call. Every function that uses a context (all but Load,
// Unload, Libraries, DriverVersion, the Device queries and PrimaryCtx calls,
// and NVRTC) must therefore run on a goroutine that called
// runtime.LockOSThread and then made the context current with
// Context.SetCurrent (or PushCurrent). Otherwise calls fail with
// CUDA_ERROR_INVALID_CONTEXT, or worse, use another device's context.
//
// The package does not offer a helper that locks, pushes, runs and pops per
// call. detcoll's CUDA backend owns one goroutine per device that locks its
// thread and sets the context once (the goroutine-ownership rule), so a
// per-call push and pop would add two driver calls to every kernel enqueue
// on the latency-critical path for nothing; and a stream capture spans many
// calls that must all come from one thread (CaptureModeThreadLocal), which
// a per-call helper could not promise.
//
// The handle types are plain values and are not synchronized: the owning
// goroutine serializes its calls, as CUDA requires for a stream anyway.
//
// # Kernels
//
// Kernels are CUDA C++ compiled at run time by Compile (NVRTC) to a CUBIN
// for the device's architecture, cached on disk by CompileCached (key: the
// source, name, architecture, options and NVRTC version), loaded with
// ModuleLoadData and run with Function.Launch. BuildKernel does the compile
// and caching in one call.
//
// # Imports
//
// It imports the standard library only, nothing of the module, so that the
// library's cgo stays at the bottom of the import graph. internal/backend/cuda
// imports it; so do the tools that touch a GPU (devmem, bench, soak, verify,
// version, and internal/binding/nccl for its Go types).
package driver
