package bench

import (
	"fmt"
	"slices"
	"time"

	"github.com/detcoll/detcoll/internal/core/num"
	"github.com/detcoll/detcoll/internal/tools/report"
)

// Config selects what to measure, and for Run where. Validate checks what
// Measure reads; Measure calls it first, and Run before it starts any rank
// or opens any communicator, so that a bad argument costs nothing.
type Config struct {
	Backend   string // "cpu" or "cuda", as detcoll.Options.Backend
	Reference string // report.ReferenceMPI (cpu), report.ReferenceNCCL (cuda) or report.ReferenceNone

	DType num.DType // element type of every call
	Red   num.RedOp // the reductions' operator
	Ops   []Op
	Sizes []int // input bytes per rank (reduce-scatter: the whole input)
	// Modes are the timing modes: report.ModeWallClock on cpu; on cuda any
	// of report.ModeSynchronised, ModePipelined, ModeGraph and
	// ModeGraphSteady.
	Modes []string

	Warmup     int // untimed samples per row and mode, >= 0
	Iterations int // timed samples per row and mode, > 0
	Seed       uint64

	// The run, read by Run and not by Measure. Run's errors name these
	// settings by the flags of detcoll bench, which sets them.

	// N is the number of local ranks Run starts when no launcher started
	// this process, >= 1; under a launcher the world is the launcher's.
	N int
	// Hosts > 0 runs detcoll's side as that many hosts talking through
	// Open MPI (package mpi): Run starts the N ranks under mpirun as
	// virtual hosts (DETCOLL_VIRTUAL_HOSTS); under mpirun, the hosts are
	// those package mpi finds.
	Hosts int
	// Timeout bounds every wait for peers (detcoll.Options.Timeout), > 0.
	Timeout time.Duration
	// Output and Benchfmt are the files where rank 0 writes the JSON
	// report and Go benchmark lines; "" writes none. Run makes their
	// directories before the sweep, so that it fails at once if it cannot.
	Output, Benchfmt string
	// NCCLDeterministic runs NCCL with NCCLDeterministicEnv; only with
	// the nccl reference.
	NCCLDeterministic bool
	// Registered registers detcoll's all-reduce and reduce-scatter
	// buffers as windows (detcoll.Comm.RegisterDevice): the registered
	// path; cuda only.
	Registered bool
	// Args are the arguments that make this program run one rank of the
	// same benchmark ("bench" and its flags, for detcoll), for the ranks
	// Run starts when no launcher started this process.
	Args []string
}

// ConfigError is a bad setting of a Config, reported by Run before any
// rank starts (detcoll bench's usage error).
type ConfigError struct{ Err error }

func (e *ConfigError) Error() string { return e.Err.Error() }

// Unwrap returns e.Err.
func (e *ConfigError) Unwrap() error { return e.Err }

func configErrorf(format string, args ...any) error {
	return &ConfigError{fmt.Errorf(format, args...)}
}

// backendModes are the timing modes each backend has.
var backendModes = map[string][]string{
	"cpu":  {report.ModeWallClock},
	"cuda": {report.ModeSynchronised, report.ModePipelined, report.ModeGraph, report.ModeGraphSteady},
}

// backendReferences are the references each backend may be compared with.
var backendReferences = map[string][]string{
	"cpu":  {report.ReferenceMPI, report.ReferenceNone},
	"cuda": {report.ReferenceNCCL, report.ReferenceNone},
}

// Validate reports the first bad setting for a run of world ranks, or nil.
// It allocates nothing that depends on the sizes.
func (c Config) Validate(world int) error {
	modes, ok := backendModes[c.Backend]
	switch {
	case !ok:
		return fmt.Errorf("backend %q: want cpu or cuda", c.Backend)
	case !slices.Contains(backendReferences[c.Backend], c.Reference):
		return fmt.Errorf("reference %q: the %s backend is compared with one of %v", c.Reference, c.Backend, backendReferences[c.Backend])
	case world < 1:
		return fmt.Errorf("world size %d: want >= 1", world)
	case !c.DType.Reducible():
		return fmt.Errorf("dtype %v: want bfloat16, float16, float32 or float64", c.DType)
	case !c.Red.Valid():
		return fmt.Errorf("reduction %v: want sum, avg, premulsum, max or min", c.Red)
	case c.Warmup < 0:
		return fmt.Errorf("warmup %d: want >= 0", c.Warmup)
	case c.Iterations <= 0:
		return fmt.Errorf("iterations %d: want > 0", c.Iterations)
	case len(c.Ops) == 0:
		return fmt.Errorf("no operations")
	case len(c.Sizes) == 0:
		return fmt.Errorf("no sizes")
	case len(c.Modes) == 0:
		return fmt.Errorf("no timing modes")
	}
	for i, m := range c.Modes {
		if !slices.Contains(modes, m) {
			return fmt.Errorf("timing mode %q: the %s backend has %v", m, c.Backend, modes)
		}
		if slices.Contains(c.Modes[:i], m) {
			return fmt.Errorf("timing mode %q listed twice", m)
		}
	}
	for i, op := range c.Ops {
		if !op.known() {
			return fmt.Errorf("operation %q: want one of %v", op, Ops)
		}
		if slices.Contains(c.Ops[:i], op) {
			return fmt.Errorf("operation %s listed twice", op)
		}
	}
	for i, size := range c.Sizes {
		if slices.Contains(c.Sizes[:i], size) {
			return fmt.Errorf("size %d bytes listed twice", size)
		}
		for _, op := range c.Ops {
			if err := op.check(Shape{DType: c.DType, Bytes: size, World: world}); err != nil {
				return err
			}
		}
	}
	return nil
}

// Capacity is the detcoll capacity a run needs, in bytes per rank: the
// largest input of any call, with room for the *Many forms' padding and
// for the gather of one row's samples.
func (c Config) Capacity() int64 {
	// Each buffer of a *Many call is rounded up to 64 bytes; two buffers.
	const manyPadding = 2 * 64
	largest := int64(slices.Max(c.Sizes)) + manyPadding
	samples := int64(len(c.Modes)) * 2 * int64(c.Iterations) * 8
	return max(largest, samples)
}
