// Package cuda is detcoll's backend for NVIDIA GPUs of one host: one
// process per GPU, the ranks' staging memory shared through CUDA IPC, the
// protocol of the contract's section 4 run by the kernels themselves.
//
// # Memory
//
// Each rank allocates one buffer on its GPU: a control block (the sequence
// words stage, done and reduced, the status word, the signature, the
// launch counters and the table of every rank's buffer as mapped here),
// then Capacity bytes of staging. Ranks exchange IPC handles through the
// rendezvous store and map each other's buffers, so a kernel reads its
// peers' staging and polls their words directly, over NVLink or PCIe.
// Host-mapped pinned memory holds the abort word, which the host raises to
// stop spinning kernels, and the error record, which a failing kernel
// fills.
//
// # Calls
//
// A call validates its arguments on the host, checks that no earlier
// kernel failed, and queues one kernel (small messages) or a few (large
// ones) on the caller's stream; it never waits for the GPU. Sequence
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
package cuda
