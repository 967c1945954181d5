// Package ncclshim is the logic of libdetcoll-nccl (cmd/libdetcoll-nccl),
// the shared library that exports NCCL's C ABI so that PyTorch, vLLM and
// SGLang get detcoll's bits with no change to their code. The C boundary
// forwards every call to the real NCCL except the few this package decides:
// the sum reductions of floating-point types (AllReduce, ReduceScatter,
// Reduce), which go through a detcoll communicator, and the communicator's
// life (init, split, finalize, destroy, abort, async errors), which keeps
// that communicator beside the real one.
//
// # One communicator, two engines
//
// An application's ncclComm_t is the real NCCL communicator, unchanged:
// every forwarded call works as it would without the shim. The shim keeps,
// per real communicator, a detcoll communicator of the same ranks, opened
// over the real one: Open's setup exchange rides on the real NCCL's
// all-gather (rendezvous.go), so ncclGetUniqueId's 128 bytes are NCCL's
// own and a program that broadcasts them works unchanged. Every rank then
// takes the same decision for every call, because the decision depends
// only on the call's arguments and on an agreement round at the end of the
// setup (all ranks detcoll, or none).
//
// # What detcoll does, and what it hands back
//
// Sum reductions of bfloat16, float16, float32 and float64 get the fixed
// tree's bits (detcoll's contract); a call larger than the detcoll
// communicator's capacity is split into calls that fit, which changes
// nothing, since element i of a result depends only on the ranks' element
// i. Everything else (other operations and types, send and receive,
// all-gather, broadcast, all-to-all) goes to the real NCCL: gathers and
// broadcasts move bytes and are exact anyway. DETCOLL_NCCL_MODE says what
// happens to a reduction detcoll cannot make deterministic (a product,
// integers, a communicator detcoll cannot serve): "delegate" (the default)
// hands it to the real NCCL, "strict" fails it with ncclInvalidUsage.
//
// # Failures
//
// The detcoll communicator's kernels watch the peers' status words, the
// timeout (DETCOLL_TIMEOUT) and an abort word: ncclCommAbort raises it, so
// that spinning kernels stop at once. Without detcoll's store the shim
// learns of a dead peer process itself (liveness.go: the peers' process
// ids, polled) and aborts the communicator with a *detcoll.RankError
// naming it; ncclCommGetAsyncError then reports ncclRemoteError.
//
// # Imports
//
// It imports the root package (the detcoll communicator),
// internal/cuda/driver (device memory for the setup exchange) and
// internal/nccl for NCCL's ABI values (results, element types, ops; the
// binding's functions it never calls: the C boundary holds the real
// library). It never imports "C": the real NCCL reaches it through the Real interface, which
// the C boundary implements, so that everything here is tested without a
// GPU. The library must never import it.
package ncclshim
