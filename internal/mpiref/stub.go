//go:build !mpi || !cgo

package mpiref

// Built reports whether this binary has the MPI reference.
const Built = false

// World is this process's MPI_COMM_WORLD; in this build there is none.
type World struct{}

// Init returns ErrNotBuilt: this binary was built without the mpi tag.
func Init() (*World, error) { return nil, ErrNotBuilt }

// Rank is this process's rank in MPI_COMM_WORLD.
func (w *World) Rank() int { return 0 }

// Size is the number of ranks in MPI_COMM_WORLD.
func (w *World) Size() int { return 1 }

// Version is MPI's library version.
func (w *World) Version() string { return "" }

// Finalize ends MPI for this process.
func (w *World) Finalize() error { return nil }

// Barrier is MPI_Barrier.
func (w *World) Barrier() error { return ErrNotBuilt }

// Allreduce is MPI_Allreduce with MPI_SUM.
func (w *World) Allreduce(dt DType, in, out []byte) error { return ErrNotBuilt }

// ReduceScatterBlock is MPI_Reduce_scatter_block with MPI_SUM.
func (w *World) ReduceScatterBlock(dt DType, in, out []byte) error { return ErrNotBuilt }

// Allgather is MPI_Allgather of bytes.
func (w *World) Allgather(in, out []byte) error { return ErrNotBuilt }

// Bcast is MPI_Bcast of bytes from root.
func (w *World) Bcast(buf []byte, root int) error { return ErrNotBuilt }
