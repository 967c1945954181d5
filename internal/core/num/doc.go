// Package num holds detcoll's element types and the one arithmetic the
// reduction tree is allowed to use.
//
// The contract (section 3) makes every tree node a single IEEE addition in
// the element type, rounded once to nearest-even, with subnormals kept and
// every NaN result replaced by its type's canonical NaN. Bitwise
// reproducibility across ranks, backends and message sizes rests on every
// backend computing exactly this, so it lives here once:
//
//   - BFloat16 and Float16 are raw bit patterns with correctly rounded
//     conversions from float32 and float64 (one rounding, never two).
//   - AddBFloat16, AddFloat16, AddFloat32 and AddFloat64 are the scalar node
//     operations; they are the definition the tests check everything against.
//   - AddBFloat16s and friends are the slice kernels for the CPU backend's hot
//     loop. Each element equals the scalar add bit for bit. On amd64 with
//     AVX2 (and F16C for float16) they run in assembly, which the purego
//     build tag turns off; it is there because Go does not vectorise, and
//     the scalar loops ran at about 1 ns an element.
//   - AsBFloat16s and friends view aligned byte buffers as typed slices, and
//     AlignedBytes allocates such buffers, so that callers such as
//     internal/core/tree need not import unsafe.
//
// Narrow adds are computed as float32(a)+float32(b) rounded once to the
// narrow type. float32 carries at least 2p+2 bits for both 16-bit formats
// (p = 8 and 11) and covers their exponent ranges, so this double rounding is
// innocuous: it equals the correctly rounded narrow sum, which is also what
// the GPU computes (measured exhaustively, contract section 3).
//
// The package does no I/O and keeps no state beyond a lazily built,
// read-only float16 table and the CPU features read at start; everything in
// it is safe for concurrent use.
//
// It imports nothing of the module: it is the bottom of the library, below
// internal/core/tree, internal/core/base and the backends, and must never import any
// of them or a tool's package.
package num
