package mpiref

import "errors"

// ErrNotBuilt is Init's error in a binary built without the mpi tag.
var ErrNotBuilt = errors.New("mpiref: the Open MPI reference is not built into this binary (build with -tags mpi; it needs libopenmpi-dev)")

// DType is an element type of the reductions.
type DType int

// The reduction types.
const (
	Float32 DType = iota + 1
	Float64
)

// Op is a reduction's MPI_Op.
type Op int

// The reductions' operators.
const (
	Sum Op = iota // MPI_SUM
	Max           // MPI_MAX
	Min           // MPI_MIN
)

func (d DType) size() int {
	switch d {
	case Float32:
		return 4
	case Float64:
		return 8
	}
	return 0
}
