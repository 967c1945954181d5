// Package soak is the body of "detcoll soak": a long run of random
// collectives, every result checked bit for bit, that qualifies a machine,
// with optional fault injection.
//
// # Calls
//
// Every rank draws the same sequence of calls from the seed (plan.go): the
// operation (all-reduce out of place, in place and staged, reduce-scatter,
// all-gather out of place and in place, broadcast from a random root, the
// *Many forms), the element type, a size log-uniform from one element to
// Config.MaxBytes, the input and output offsets (whole elements past a
// 64-byte boundary: misaligned sub-slices), and each rank's host-side
// wait, which skews the ranks. Ranks agree on the calls without
// communicating; a run bounded by Duration agrees when to stop with a
// one-byte all-gather per batch.
//
// # Checks
//
// A call's input on rank r is a window of r's pool of seeded values
// (check.Input's mix of ordinary values and specials; zeros replaced),
// wrapping around, at a place drawn from the call. The reference sums of
// the pools are computed once, element by element with check.ReferenceSum
// (the tree with the scalar adds), so every rank knows every rank's input
// and the expected output of any call is a window of the pool sums (or of
// the pools, for gathers and broadcasts): a check is a byte comparison,
// however large the call. Calls run in batches laid out in two arenas,
// inputs and outputs, every byte outside the buffers a guard byte; after
// a batch every output, every input (unchanged) and every guard byte is
// checked. On the cpu backend a batch is one call by default; on cuda the
// batch's calls are queued on one stream back to back and checked after
// one synchronisation (executor: hostExec, deviceExec).
//
// # Faults
//
// RunRank is one process's rank: Open, RunComm, Close, a caught panic reported
// as an error, and the fault of Config.Kill: the chosen rank SIGKILLs
// itself during Open, amid the calls or as it enters Close, after writing
// the time to a shared directory; every other rank then judges its own
// error (detcoll.ErrPeerLost naming the rank, within the bound), closes,
// and writes its result there; a watchdog reports a survivor that hangs.
// The launching parent makes the Summary from those files and what is
// left of the job's shared memory (Collect, Build).
//
// # The command
//
// Run is detcoll soak as a whole, from a Config that its flags fill: the
// parent that starts the ranks and reports, one of its ranks, or one rank
// of another launcher's job. cmd/detcoll only parses the flags.
//
// # Imports
//
// It is a tool: it imports the root package, the launcher, internal/tools/coord,
// internal/testkit/check (the references), internal/tools/bench (the machine's
// description), internal/tools/devmem (a rank's GPU, its device buffers and its
// free memory) and the driver (the stream and copies). The library must
// never import it.
package soak
