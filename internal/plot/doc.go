// Package plot draws "detcoll plot" figures from bench reports: latency
// against input size, log-log, one panel per world size, each with the
// before and after runs of detcoll and the reference from the after run.
//
// Every check comes before any drawing, and all failures are reported
// together: a before/after pair must agree in everything that would make
// the comparison unfair or meaningless (world size, backend, dtype,
// device, driver, CUDA, NCCL, MPI and Go versions, warmup, iterations and
// the size sweep of the operation drawn), no selection may be empty, the
// counts of before and after reports must match, and no world size may
// appear twice. The reference plotting tool checked only the world size
// and the sweep; a plot that silently compared runs on different
// hardware or library versions would mislead.
//
// Run is detcoll plot as a whole, from a Config that its flags fill.
// It reads reports (internal/report) and draws with gonum's plot; it
// imports nothing of the library, which must never import it.
package plot
