package bench

import (
	"time"

	"github.com/detcoll/detcoll/internal/tools/report"
)

// Impl is one side of the comparison on this rank: detcoll on a backend,
// or a reference library. The harness calls it from one goroutine, in
// this order for each operation and size: Prepare, then for each timing
// mode Barrier and Time once per sample (warmup samples included), then
// Release. Every rank makes the same calls in the same order, so a side
// may call collectives in any of them.
type Impl interface {
	// Name is how tables and benchmark lines call this side: "detcoll",
	// "mpi", "nccl".
	Name() string

	// Describe adds what this side knows to the report's metadata: the
	// device's name, library versions, detcoll's options, notes. It is
	// called once, after the harness has set the run's own fields (world
	// size, dtype, backend, reference, counts, modes).
	Describe(m *report.Meta)

	// Prepare makes op at s ready to run: it allocates this side's buffers
	// (host or device), fills the inputs from input (this rank's input
	// bytes in s.DType, s.Bytes of them, the same for both sides) and
	// allocates and touches the outputs, so that no sample pays for
	// allocation or first-touch page faults. It is not timed.
	Prepare(op Op, s Shape, input []byte) error

	// Barrier returns when every rank has called it, through this side's
	// own means (detcoll's Barrier, MPI_Barrier, a NCCL all-reduce of a
	// word, ...). The harness calls it before every sample so that ranks
	// start each sample together.
	Barrier() error

	// Time runs the prepared operation in the timing mode and returns one
	// sample: the time of one call. For report.ModeWallClock that is one
	// call timed by the monotonic clock. For report.ModeSynchronised,
	// device events around one call and the host waits for the end event;
	// for report.ModePipelined, many calls enqueued between two events,
	// the span divided by their count; for report.ModeGraph, many calls
	// captured in one CUDA graph (captured on first use: warmup samples
	// cover it), one replay's span divided by their count. An Impl
	// returns an error for a mode it lacks.
	Time(mode string) (time.Duration, error)

	// Release frees what Prepare allocated.
	Release()
}

// Group is what the harness needs of the ranks as a whole, apart from the
// timed sides: who this rank is, and a way to gather every rank's samples.
// CommGroup makes one of a detcoll communicator.
type Group interface {
	Rank() int
	WorldSize() int
	// AllGather concatenates every rank's mine into all, in rank order;
	// len(all) is WorldSize() * len(mine).
	AllGather(mine, all []float64) error
}

// wallClock times one call of run by the monotonic clock.
func wallClock(run func() error) (time.Duration, error) {
	start := time.Now()
	err := run()
	return time.Since(start), err
}
