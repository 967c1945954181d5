//go:build !mpi || !cgo

package mpiref

import "context"

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
func (w *World) Allreduce(dt DType, op Op, in, out []byte) error { return ErrNotBuilt }

// ReduceScatterBlock is MPI_Reduce_scatter_block with MPI_SUM.
func (w *World) ReduceScatterBlock(dt DType, op Op, in, out []byte) error { return ErrNotBuilt }

// Allgather is MPI_Allgather of bytes.
func (w *World) Allgather(in, out []byte) error { return ErrNotBuilt }

// Bcast is MPI_Bcast of bytes from root.
func (w *World) Bcast(buf []byte, root int) error { return ErrNotBuilt }

// Group is a communicator of some of the world's ranks; in this build there
// is none.
type Group struct{}

// Split is MPI_Comm_split of the world.
func (w *World) Split(color, key int) (*Group, error) { return nil, ErrNotBuilt }

// SharedHosts is MPI_Comm_split_type of the world by shared memory.
func (w *World) SharedHosts() (*Group, error) { return nil, ErrNotBuilt }

// Rank is this rank's rank in the group.
func (g *Group) Rank() int { return 0 }

// Size is the group's number of ranks.
func (g *Group) Size() int { return 1 }

// AllGather gathers len(send) bytes from every rank of the group into recv.
func (g *Group) AllGather(ctx context.Context, send, recv []byte) error { return ErrNotBuilt }

// Exchange sends send to the group's rank peer and receives recv from it.
func (g *Group) Exchange(ctx context.Context, peer int, send, recv []byte) error { return ErrNotBuilt }
