// Package cuda is detcoll's backend for NVIDIA GPUs of one host: one
// process per GPU, the ranks' staging memory shared through CUDA IPC, the
// protocol of the contract's section 4 run by the kernels themselves.
//
// # Memory
//
// Each rank allocates one buffer on its GPU: a control block (the sequence
// words stage, done and reduced, the status word, the signature, the
// launch counters, the table of every rank's buffer as mapped here, and the
// words peers push here: acks, sent1, sent2), then the staging (Capacity
// bytes, or (2W-1)/W of it where the push path needs more), then the LL
// area (receive slots and scratch images, layout.go). Ranks exchange IPC
// handles through the rendezvous store and map each other's buffers, so a
// kernel writes into its peers' memory, and reads it where a path needs
// to, over NVLink or PCIe.
//
// Host-mapped pinned memory holds the abort word, which the host raises to
// stop spinning kernels, and the error record, which a failing kernel
// fills.
//
// Sequence numbers start at a random seq0 that rank 0 draws at Open (seq.go),
// so that a rebuilt communicator never takes a stale LL line of an earlier
// one for its own. Close frees the buffer only when no peer can touch it:
// on a healthy communicator after a barrier, the unmapping of every peer's
// mappings and a second barrier; on a failed one after every live peer has
// confirmed that its kernels stopped, or a bound (close.go).
//
// # Paths
//
// Which path a call takes depends only on its signature (operation, type,
// sizes) and the world size, so every rank takes the same one; all of them
// evaluate the same tree on the same values (kernels/tree.h).
//   - LL (images up to llMax, 2 MiB at W=2): one launch; every rank pushes
//     its input as flagged lines into each peer's memory and polls its own.
//   - push (larger all-reduces and single-buffer reduce-scatters): the
//     input's parts, then the sums, written into the peers' staging.
//   - staging (the rest: larger gathers, broadcasts, *Many reduce-scatters,
//     staged all-reduces): copy into the own staging, read the peers'.
//
// # Calls
//
// A call validates its arguments on the host, checks that no earlier
// kernel failed, and queues one kernel (small messages) or a few (large
// ones) on the caller's stream; it never waits for the GPU. Each launch
// carries its steps of proto's schedule as a table of the kernels'
// primitives, which the kernel runs in order (steptable.go, plan.go). A
// launch that may wait takes a few dozen blocks at most, so that the
// kernels of several ranks or communicators on one GPU are resident
// together (share.go, docs/gpu-sharing.md).
// Barrier runs on the stream of the last call and waits for it alone,
// never for the whole device. Sequence
// values live in device memory and are read when the kernels run, so calls
// can be captured in CUDA graphs, and replays mix with eager calls. Every
// call of a communicator must go to one stream, or to streams the caller
// orders, since the kernels of consecutive calls follow each other.
//
// # Failure
//
// Kernels bound every wait by the timeout, the abort word and the peers'
// status words. The first failure is written to the error record and the
// rank's status word; every later kernel exits at once. The host reads the
// record before each call, in Err and Synchronize, and from a monitor
// goroutine that also raises the abort word when the rendezvous reports a
// lost or failed peer, and tells the peers when a kernel of this rank
// failed.
//
// # Threads
//
// Each call locks its goroutine to its OS thread for the duration of the
// call and makes the device's primary context current there (the driver's
// rule); the context is left current, which is harmless for a primary
// context and saves two driver calls per call.
//
// # Imports
//
// It imports internal/core/base, internal/core/proto, internal/core/num and
// internal/binding/driver, its one way to the GPU and the library's only cgo.
// It must never import the root package (which imports it), internal/backend/cpu,
// the store (the rendezvous arrives as a base.Rendezvous), internal/binding/nccl,
// internal/tools/devmem (the tools' device memory: this package manages its own)
// or any other tool's or test's package. Its external tests (package
// cuda_test) run the conformance suite and the GPU tests over devmem, check,
// ranktest and nccl.
package cuda
