package bench

import (
	"encoding/binary"
	"fmt"
	"math"
	"time"

	"github.com/detcoll/detcoll/internal/binding/mpiref"
	"github.com/detcoll/detcoll/internal/core/num"
	"github.com/detcoll/detcoll/internal/tools/report"
)

// MPI is the Open MPI reference side (internal/binding/mpiref), on host memory,
// timed by the monotonic clock. Gathers and broadcasts move the same bytes
// as detcoll. Reductions sum float64 for float64 and float32 otherwise:
// Open MPI has no bfloat16 or float16, so for those it sums float32 of the
// same element count (the same values, widened; twice the bytes), which is
// what a program would do without a 16-bit reduction. Describe says so in
// the report.
type MPI struct {
	w    *mpiref.World
	call func() error // the prepared call; nil when none
}

// NewMPI returns the reference side on w.
func NewMPI(w *mpiref.World) *MPI { return &MPI{w: w} }

// Name is "mpi".
func (m *MPI) Name() string { return report.ReferenceMPI }

// Describe sets the MPI version and, for 16-bit types, the reference's
// element type and a note.
func (m *MPI) Describe(meta *report.Meta) {
	meta.MPIVersion = m.w.Version()
	if meta.DType == num.BFloat16Type.String() || meta.DType == num.Float16Type.String() {
		meta.ReferenceDType = num.Float32Type.String()
		meta.Notes = append(meta.Notes, fmt.Sprintf(
			"Open MPI has no %s: its reductions sum float32 of the same element count (the same values, widened: twice the bytes); its gathers and broadcasts move the same bytes as detcoll", meta.DType))
	}
	meta.Notes = append(meta.Notes, "Open MPI runs in the same processes as detcoll, under the same launcher and CPU binding")
	if meta.Reduction == num.Avg.String() || meta.Reduction == num.PreMulSum.String() {
		meta.Notes = append(meta.Notes, "Open MPI has no "+meta.Reduction+": its reductions are MPI_SUM")
	}
}

// Prepare allocates op's buffers at s and fills the input.
func (m *MPI) Prepare(op Op, s Shape, input []byte) error {
	inLens, outLens := Parts(op, s)
	in, dt, scale := m.widen(op, s.DType, input)
	ins := split(in, scaled(inLens, scale, 1))
	outs := make([][]byte, len(outLens))
	for i, n := range outLens {
		outs[i] = newTouched(n * scale)
	}
	w, mop := m.w, mpiOp(s.Red)
	switch op {
	case AllReduce:
		m.call = func() error { return w.Allreduce(dt, mop, in, outs[0]) }
	case ReduceScatter:
		m.call = func() error { return w.ReduceScatterBlock(dt, mop, in, outs[0]) }
	case AllGather:
		m.call = func() error { return w.Allgather(in, outs[0]) }
	case AllGatherMany:
		m.call = func() error {
			for i := range ins {
				if err := w.Allgather(ins[i], outs[i]); err != nil {
					return err
				}
			}
			return nil
		}
	case ReduceScatterMany:
		m.call = func() error {
			for i := range ins {
				if err := w.ReduceScatterBlock(dt, mop, ins[i], outs[i]); err != nil {
					return err
				}
			}
			return nil
		}
	case Broadcast:
		buf := outs[0]
		if s.Rank == BroadcastRoot {
			buf = in
		}
		m.call = func() error { return w.Bcast(buf, BroadcastRoot) }
	default:
		return fmt.Errorf("bench: mpi side: unknown operation %q", op)
	}
	return nil
}

// widen returns the reference's input for op: input itself, or for a
// reduction of a 16-bit type its values as float32. scale is the reference's
// bytes per detcoll byte.
func (m *MPI) widen(op Op, dt num.DType, input []byte) (in []byte, mdt mpiref.DType, scale int) {
	switch {
	case dt == num.Float64Type:
		return copyAligned(input), mpiref.Float64, 1
	case !op.Reduces() || dt == num.Float32Type:
		return copyAligned(input), mpiref.Float32, 1
	}
	n := len(input) / 2
	in = num.AlignedBytes(4 * n)
	for i := range n {
		bits := binary.NativeEndian.Uint16(input[2*i:])
		var f float32
		if dt == num.BFloat16Type {
			f = num.BFloat16(bits).Float32()
		} else {
			f = num.Float16(bits).Float32()
		}
		binary.NativeEndian.PutUint32(in[4*i:], math.Float32bits(f))
	}
	return in, mpiref.Float32, 2
}

// Barrier is MPI_Barrier.
func (m *MPI) Barrier() error { return m.w.Barrier() }

// Time runs the prepared call once; the one mode is wall clock.
func (m *MPI) Time(mode string) (time.Duration, error) {
	if mode != report.ModeWallClock {
		return 0, fmt.Errorf("bench: the mpi side has no timing mode %q", mode)
	}
	return wallClock(m.call)
}

// Release drops the buffers.
func (m *MPI) Release() { m.call = nil }

// mpiOp is the MPI_Op timed against red: MPI_MAX and MPI_MIN for Max and
// Min, MPI_SUM for the rest (MPI has no average or pre-multiplied sum;
// Describe notes it).
func mpiOp(red num.RedOp) mpiref.Op {
	switch red {
	case num.Max:
		return mpiref.Max
	case num.Min:
		return mpiref.Min
	}
	return mpiref.Sum
}
