// Package ncclshim is the logic of libdetcoll-nccl (cmd/libdetcoll-nccl),
// the shared library that exports NCCL's C ABI so that PyTorch, vLLM and
// SGLang get detcoll's bits with no change to their code. The C boundary
// forwards every call to the real NCCL except the few this package decides:
// the reductions (AllReduce, ReduceScatter, Reduce), which go through a
// detcoll communicator; the PreMulSum operators, whose factors it keeps;
// and the communicator's life (init, split, finalize, destroy, abort,
// async errors), which keeps that communicator beside the real one.
//
// # One communicator, two engines
//
// An application's ncclComm_t is the real NCCL communicator, unchanged:
// every forwarded call works as it would without the shim. The shim keeps,
// per real communicator, a detcoll communicator of the same ranks, opened
// over the real one at its first served reduction (setup.go): Open's setup
// exchange rides on the real NCCL's all-gather (rendezvous.go), so
// ncclGetUniqueId's 128 bytes are NCCL's own. Every rank takes the same
// decision for every call, because the decision depends only on the
// call's arguments, on whether it is in a group or a graph capture, and on
// an agreement round at the end of the setup (all ranks detcoll, or none).
//
// # What detcoll does, and what it hands back
//
// Reductions of bfloat16, float16, float32 and float64 with sum, average,
// max and min, and with the PreMulSum operators made through the library
// (premul.go), get the fixed tree's bits (detcoll's contract; its average
// divides the tree's sum once, where NCCL's pre-multiplies by 1/W), at
// any size (calls.go: cut into pieces that fit the capacity; a
// reduce-scatter's pieces gathered first) and with any Reduce root (the
// ranks off the root reduce into a discard buffer the device's
// communicators share, memory.go). The integer types' sum, average, max
// and min are served too: NCCL's bits are the same in any order, but
// served they keep their place among the communicator's served calls and
// show in the record. The product stays NCCL's (detcoll has none; integer
// products are exact in any order; no gradient path multiplies): handed
// silently for integers, as is every integer reduction detcoll cannot
// serve. Everything else (floating-point products, operators the library
// did not see made or made for another type, communicators the shim did
// not see made) is handed to the real NCCL ("delegate") or refused
// ("strict"), saying why (DETCOLL_NCCL_MODE).
//
// # Several machines
//
// A communicator whose ranks are on several machines is handed to NCCL
// unless DETCOLL_NCCL_HOSTS=serve; then (hosts.go) it is served across
// hosts, each machine's ranks through CUDA IPC and the machines through
// rails of NCCL communicators of package nccl's, set up over the same
// rendezvous (Rails), when the machines hold equal powers of two of
// consecutive ranks.
//
// # NCCL's ordering
//
// A communicator's calls run in the order they are made whatever streams
// they are queued on (order.go: a stream switch waits for the last
// stream's work by an event), and the served calls of a group run at its
// end, beside its other operations (group.go), as NCCL runs its groups.
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
// It imports the root package (the detcoll communicator), package nccl
// (the rails across machines),
// internal/binding/driver (device memory, streams and events), internal/backend/cuda
// (the size of detcoll's buffer) and internal/binding/nccl for NCCL's ABI values
// (results, element types, ops; the binding's functions it never calls:
// the C boundary holds the real library). It never imports "C": the real
// NCCL reaches it through the Real interface, which the C boundary
// implements, so that everything here is tested without a GPU. The
// library must never import it.
package ncclshim
