//go:build cgo

// Command libdetcoll-nccl is a shared library that exports NCCL's C ABI
// (of the NCCL it finds, nccl.h 2.28 as the reference) and gives detcoll's
// bits to the reductions of PyTorch, vLLM, SGLang or any NCCL program,
// with no change to its code:
//
//	go build -buildmode=c-shared -o libdetcoll-nccl.so ./cmd/libdetcoll-nccl
//	LD_PRELOAD=$PWD/libdetcoll-nccl.so torchrun --nproc-per-node 2 train.py
//
// All-reductions, reduce-scatters and reduces of bfloat16, float16,
// float32 and float64 with sum, average, max, min or a PreMulSum operator,
// and of the integer types with sum, average, max or min, go through
// detcoll's fixed tree; products and every other call go to the real NCCL,
// which the library loads itself (libnccl.so.2, or the file
// DETCOLL_REAL_NCCL names), never its own symbols. The logic is
// in internal/shim/ncclshim; this package is only the C boundary: forward.c
// exports the functions (table.h lists them), exports.go is what forward.c
// asks of Go. docs/nccl.md says what each function does, the variables it
// reads and what a Go runtime in a Python process means.
//
// Of the module it imports internal/shim/ncclshim, internal/binding/nccl
// (NCCL's ABI values) and internal/core/settings (its debug variables);
// nothing imports it. Its C includes no NCCL or CUDA header (shim.h declares the
// types), so it builds anywhere cgo does.
package main

/*
#cgo CFLAGS: -O2 -fvisibility=hidden -Wall
#cgo LDFLAGS: -ldl -lpthread ${SRCDIR}/exports.so
#include "shim.h"
*/
import "C"

// main is never run: the package is built as a shared library.
func main() {}
