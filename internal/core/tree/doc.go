// Package tree is the fixed reduction tree T of the contract (section 3), the
// one order in which detcoll ever adds the W contributions to an element.
//
// Reproducibility rests on every rank, backend and message size adding in
// exactly this order, each node rounding once in the element type: T over
// ranks [lo, hi) is the rank's value when hi-lo = 1, and otherwise splits at
// p, the largest power of two strictly below hi-lo, into T(lo, lo+p) +
// T(lo+p, hi), lower ranks always on the left. W=3 is (r0+r1)+r2 and W=6 is
// ((r0+r1)+(r2+r3))+(r4+r5). With power-of-two W the trees nest, which is
// what makes results independent of the tensor-parallel size.
//
// Split and String describe the shape; Eval is the plain recursive evaluation
// the tests treat as the definition; Reducer applies T elementwise to byte
// buffers for the CPU backend's hot path, in cache-sized chunks, with the
// adds of internal/core/num.
//
// The package is pure: no I/O, no clocks, no unsafe (typed views of byte
// buffers come from internal/core/num). It imports only internal/core/num and must
// never import a backend, internal/core/proto, the store or a tool's package;
// internal/testkit/check's reference evaluates its Eval.
package tree
