// Package bench is "detcoll bench": it times detcoll's collectives
// against a reference library on the same ranks, the same inputs and the
// same sizes, and returns a report (internal/tools/report). Run is the command
// as a whole (starting the ranks, or being one, and writing the outputs);
// Measure is the harness one rank runs; cmd/detcoll only parses flags.
//
// # Method
//
// For each operation and input size, every rank prepares both sides
// (buffers allocated and filled with non-zero random values, outputs
// allocated and touched), then takes Warmup untimed and Iterations timed
// samples per timing mode. Before each sample each side passes its own
// barrier, so that the ranks start together. Which side runs first
// alternates from sample to sample (detcoll first on even samples), the
// order a function of the sample index alone and so the same on every
// rank: neither side always inherits the other's cache state or the
// ranks' skew. Afterwards every rank's samples are gathered; a row's time
// is the slowest rank's median (report.Slowest), its spread the same of
// their 10th and 90th percentiles, and its bus bandwidths those of
// nccl-tests (report.Row.Summarise). The table marks a side whose p90 is
// more than 1.5 times its p10: its median may not repeat.
//
// # Sides
//
// A side is an Impl: detcoll on a backend (Host for cpu, the cuda side
// for GPUs), or a reference (MPI for Open MPI, NCCL for GPUs). The harness
// knows nothing of memory or clocks: an Impl allocates its own buffers
// (host or device) in Prepare and times one sample of a mode in Time. On
// the cpu backend the one mode is report.ModeWallClock, one call timed by
// the monotonic clock; on GPUs the three modes of the performance anchors
// (report.ModeSynchronised, ModePipelined, ModeGraph) and ModeGraphSteady.
//
// Arguments are checked by Config.Validate before any buffer or
// communicator exists.
//
// # Imports
//
// It is a tool: it imports the root package, the launcher and
// internal/job/jobenv, internal/tools/coord, internal/testkit/check (typed views of bytes),
// internal/tools/report, the GPU sides' internal/tools/devmem and driver, the NCCL
// binding (internal/binding/nccl) and the Open MPI one (internal/binding/mpiref). The
// library must never import it.
package bench
