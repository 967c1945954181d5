// Package detcoll provides deterministic collective communication:
// all-reduce, reduce-scatter, all-gather and broadcast whose results are
// bitwise identical on every rank, on every run, for every message size and
// offset, and on every execution path.
//
// # Guarantee
//
// Sums follow one fixed tree T over the ranks, whatever the size of the
// message: over ranks [lo, hi), split at the largest power of two p < hi-lo
// and add T(lo, lo+p) + T(lo+p, hi), lower ranks on the left. For 4 ranks
// that is (r0+r1)+(r2+r3); for 3 ranks (r0+r1)+r2. Every node rounds once,
// to nearest even, in the element type itself (bfloat16 and float16 are
// added exactly in float32 and rounded once; float32 and float64 are plain
// IEEE adds with subnormals kept). Every NaN result is the canonical NaN of
// its type (all ones but the sign bit: 0x7FFF for bfloat16 and float16,
// 0x7FFFFFFF, 0x7FFFFFFFFFFFFFFF). So element i of a result depends only on
// the W inputs at i: not on the message size, its alignment, the chunking,
// the path taken or the backend. With a power-of-two world size the trees
// nest: W=k ranks that each hold the tree of their contiguous block of 8
// leaves produce the W=8 result bit for bit (tensor-parallel invariance).
//
// The requirement behind this, section by section (the "contract section
// N" of the code's comments), is docs/contract.md.
//
// # Reductions
//
// A reduction sums unless given another operator (RedOp); every rank of a
// call must pass the same one, or every rank gets a *MismatchError.
//
//   - Sum: the tree above. Integer types (int8 to uint64) sum too,
//     wrapping, exact in any order.
//   - Avg: the tree's sum, then one division by W rounded once in the
//     element type (bfloat16 and float16 divide in float32, float32 in
//     float64: the result is the correctly rounded quotient of the rounded
//     sum). NCCL's ncclAvg multiplies every input by 1/W rounded to the
//     type and sums; with W a power of two both scale exactly and differ
//     only where the sum's order does (or an input underflows), otherwise
//     ours rounds once where NCCL's rounds 1/W and W products. Integers:
//     the wrapped sum divided by W, truncated toward zero, as NCCL's.
//   - PreMulSum(s): each rank's input times its own s (s first rounded to
//     the element type), each product rounded once in the type (exact in
//     float32 for bfloat16 and float16, in float64 for float32), then the
//     tree's sum: NCCL's ncclRedOpCreatePreMulSum with a host scalar.
//     Floating types only.
//   - Max and Min: the larger or smaller operand at every node of the tree,
//     with -0 below +0, and a NaN operand making the canonical NaN: order-
//     free, so the tree's shape cannot show, and a NaN on any rank shows in
//     the result, as torch.maximum has it (NCCL's fmax-style max drops a
//     NaN: a rank's diverged loss would vanish from the maximum). Every type.
//
// Both backends serve every operator, with the same bits, on one host and
// across hosts; the cuda backend also takes PreMulSum's factor in device
// memory (PreMulSumDevice).
//
// # Usage
//
// Every rank opens a communicator and calls the same collectives in the
// same order:
//
//	c, err := detcoll.Open(ctx, detcoll.Options{}) // rank and peers from the environment
//	if err != nil { ... }
//	defer c.Close(ctx)
//	err = detcoll.AllReduce(c, grads, grads) // in place
//
// Launch ranks with "detcoll run -n 4 -- ./prog", torchrun, mpirun or srun.
// With no launcher variables set, Open makes a communicator of one rank.
//
// Host-memory calls take typed slices; the element type picks the
// arithmetic. Stage and AllReduceStaged let a rank write its input straight
// into the staging memory its peers read, saving a copy.
//
// # Failure
//
// Every wait is bounded by Options.Timeout. A rank that crashes, is killed,
// or fails a call makes every other rank's pending and later calls fail
// promptly (well within a second, through the rendezvous connection and the
// shared status words), never a hang and never wrong data reported as
// success. After a failure the communicator is poisoned: every call returns
// the cause (Err). Close it and Open a new one. Bad arguments are rejected
// before any work with ErrInvalid and leave the communicator usable.
//
// # Errors: one story on every rank
//
// Every error matches exactly one of the sentinels ErrInvalid, ErrClosed,
// ErrUnavailable, ErrPeerLost, ErrAborted, ErrTimeout and ErrMismatch
// (test with errors.Is; the text is not API). A communicator fails once, for
// one root cause, and every rank that lives reports that cause with the same
// type and the same words, the culprit named once, whichever rank found it
// first and however the news reached the others:
//
//   - a rank crashed, was killed, lost its connection or failed on its own:
//     a *RankError naming it, matching ErrPeerLost;
//   - Abort was called on a rank: a *RankError naming it, matching
//     ErrAborted (on that rank it also wraps the cause Abort was given);
//   - ranks did not arrive within the timeout (a skipped call, a rank that
//     never started): a *TimeoutError naming the operation, the phase and
//     the missing ranks, matching ErrTimeout and context.DeadlineExceeded;
//     a late rank that arrives afterwards gets the same error;
//   - ranks called different collectives: a *MismatchError listing every
//     rank's signature, matching ErrMismatch;
//   - ranks opened with options that disagree (Options.Capacity): a
//     *RankError naming the first rank that differs from rank 0, matching
//     ErrInvalid.
//
// Open follows the same rule, with "Open" as the operation: a rank killed
// while the others open is a lost rank, a rank that never started is
// missing from a *TimeoutError. A rank the rendezvous refuses (a wrong
// secret or world size) gets a *RankError naming itself, matching
// ErrInvalid; as it cannot prove it belongs to the job, its peers are not
// told and time out naming it. Close behaves the same on every rank: nil if
// the communicator never failed, its failure (what Err returns) if it failed
// before Close or while Close waited for the peers.
//
// # Backends
//
// "cpu" (the default) runs ranks as processes on one host that share
// memory. "cuda" runs one process per NVIDIA GPU of one host over CUDA IPC.
// Both give the same bits for the same inputs.
//
// # Imports
//
// The package and its backends import no tool of this module (no launcher,
// no benchmark, no NCCL or MPI binding, no test helper): a program that uses
// detcoll links the collectives, the rendezvous and the CUDA driver's
// loader, which opens libcuda only when a cuda communicator is opened.
// cmd/detcoll's imports test holds the library to this.
package detcoll
