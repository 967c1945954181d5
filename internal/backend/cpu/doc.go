// Package cpu is detcoll's embedded default backend: ranks are processes on
// one host that exchange data through shared memory.
//
// Each rank owns one segment: a control block with its sequence words and
// signature, then its staging memory. Every peer maps every segment, so a
// rank reads its peers' inputs straight from their staging, and the
// protocol of the contract's section 4 runs on the control words with Go's
// atomics (sequentially consistent, which gives the release/acquire order
// the protocol needs). A rank that waits spins briefly (yielding its core
// between polls when ranks outnumber cores), then sleeps on the
// word with a futex, so waiting never burns a core and more ranks than cores
// work.
//
// Segments are files in /dev/shm created 0600 under unguessable names and
// unlinked as soon as every peer has mapped them (or, if setup fails, by
// any rank that knows the name), so a crash leaves nothing behind.
//
// Failures reach every rank three ways: the rendezvous store's connection
// drops (a crash or kill) or carries a rank's failure report, a failed rank
// sets the status word in its control block, and every wait is bounded by
// the communicator's timeout.
//
// # Imports
//
// It imports internal/core/base (errors, validation, the Rendezvous it is
// handed), internal/core/proto, internal/core/tree and internal/core/num. It must never
// import the root package (which imports it), internal/backend/cuda or the driver,
// the store (the root package gives it the rendezvous as a base.Rendezvous),
// or a tool's or test's package.
package cpu
