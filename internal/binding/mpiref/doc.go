// Package mpiref is Open MPI through cgo on Go memory, for two users: the
// reference of "detcoll bench" on the cpu backend (MPI_Allreduce,
// MPI_Reduce_scatter_block, MPI_Allgather, MPI_Bcast and MPI_Barrier on
// MPI_COMM_WORLD), and package mpi's rails between hosts (Group: split
// communicators, a polled MPI_Iallgather and MPI_Isend/MPI_Irecv).
//
// It is built only with the build tag mpi (and cgo), which needs Open MPI's
// headers and library (Debian: libopenmpi-dev, found through pkg-config
// ompi-c). Without the tag the same API is there and Init returns
// ErrNotBuilt, so that the rest of detcoll builds everywhere.
//
// # Ranks
//
// MPI ranks come from mpirun, which also sets the OMPI_COMM_WORLD_*
// variables that detcoll's own rendezvous reads (internal/job/launch), so one
// mpirun job is both an MPI world and a detcoll world; give it the job's
// secret with mpirun -x DETCOLL_SECRET. Command builds such an mpirun
// command line.
//
// # Threads
//
// MPI is initialised with MPI_THREAD_SERIALIZED: calls may come from any
// OS thread, one at a time. Call it from one goroutine, ideally one locked
// to its thread (runtime.LockOSThread), which also keeps the timings free
// of thread migrations. Open MPI's own handlers for SIGSEGV and the like
// are turned off (OMPI_MCA_opal_signal), since they would take those
// signals from the Go runtime, which turns them into panics.
//
// # Element types
//
// MPI has no standard bfloat16 or float16. Reductions here take float32
// and float64 only; gathers and broadcasts move bytes.
//
// # Imports
//
// It imports nothing of the module. It is a tool of detcoll bench; the
// library must never import it.
package mpiref
