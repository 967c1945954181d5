// Package plot draws "detcoll plot" figures from bench reports: latency
// against input size, log-log, with a shaded band around each detcoll
// line (the spread of the samples, see band). A figure draws one
// operation in one timing mode, in one of two ways:
//
//   - reports on their own (Request.Reports): one panel, each report's
//     detcoll line and band and its reference in a colour of its own,
//     labelled from the report (commit, backend, world size, and what else
//     tells the reports apart); below it, each one's time over its
//     reference's;
//   - before/after pairs: one panel per world size, each with the before
//     and after runs of detcoll and the reference from the after run, and
//     below it the after run's time over each reference's.
//
// Every check comes before any drawing, and all failures are reported
// together: a before/after pair must agree in everything that would make
// the comparison unfair or meaningless (world size, backend, dtype,
// device, driver, CUDA, NCCL, MPI and Go versions, warmup, iterations and
// the size sweep of the operation drawn), no selection may be empty, the
// counts of before and after reports must match, and no world size may
// appear twice. The reference plotting tool checked only the world size
// and the sweep; a plot that silently compared runs on different
// hardware or library versions would mislead. Nor may a file come twice:
// its lines would lie on each other and one would hide. An operation that
// no report has is refused with the names of those they have.
//
// Run is detcoll plot as a whole, from a Config that its flags fill; with
// OperationAll it draws a figure per operation of the reports. It reads
// reports (internal/tools/report) and draws with gonum's plot; it imports
// nothing of the library, which must never import it.
package plot
