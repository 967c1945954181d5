// Package nccl is the tools' binding of NCCL (libnccl.so.2), loaded at run
// time with dlopen: the reference that detcoll bench and the GPU tests
// compare detcoll with, and later the base of an NCCL-compatible C library.
//
// # Why it is not in the CUDA driver package
//
// Style rule 11 keeps every import "C" of the module in
// internal/binding/driver. NCCL is the exception (issue 10): the driver
// package is the library's, and NCCL is never a dependency of a
// collective, only of the tools that measure one. So this package has cgo
// of its own, a small dl.go (the thread locked around dlopen, dlsym and
// dlerror, as in the driver) and the shims for NCCL's functions, declared
// here so that no nccl.h is needed. Builds without cgo, or off Linux
// (stub.go), have the same API, and every call fails with an error
// matching ErrUnavailable.
//
// # Imports
//
// It imports internal/binding/driver for its Go types only (DevicePtr,
// Stream), internal/core/num for element types, and nothing else of the
// module. The library (the root
// package, internal/backend/cuda, internal/backend/cpu and what they import) must never
// import it: a machine without NCCL must lose nothing but the reference.
// Its users are the tools and package nccl, the adapter a program imports
// to run the cuda backend across hosts.
//
// # Threads
//
// Like every driver call that uses a context, CommInitRank and the
// collectives must run on a goroutine locked to its OS thread with the
// device's context current (see the driver's package doc): NCCL reads the
// calling thread's current device to place the communicator.
package nccl
