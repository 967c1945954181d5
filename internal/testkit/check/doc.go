// Package check is the one check engine of detcoll's tests and tools
// (the conformance suite, detcoll verify, detcoll soak): what a result
// is compared with, and how.
//
//   - input.go: seeded inputs, the same on every rank that asks, mixing
//     ordinary values (whose sums round) with special ones (NaN,
//     infinities, subnormals, signed zeros) and random bit patterns.
//   - reference.go: the reference evaluation of the tree T, element by
//     element with internal/core/num's scalar adds, and the first element
//     where a result differs from it.
//   - nan.go: inputs full of NaN payloads, and their canonical sums.
//   - guard.go: buffers with guard bytes around them, and Expect, the
//     bit-for-bit comparison that also checks the guards.
//   - memory.go: the memory a rank's buffers live in and the collectives
//     on it (Memory): host memory here, device memory in internal/tools/devmem,
//     so that one check runs on either backend.
//   - dispatch.go: calls of the typed API from raw bytes.
//
// The reference shares no code with the backends: it evaluates
// tree.Eval with scalar adds, never the vector paths or the chunked
// reducer. The package must not import a backend or the CUDA driver.
//
// It is a package of the tests and tools: it imports the root package (the
// public API it calls), internal/core/tree and internal/core/num; the library must
// never import it.
package check
