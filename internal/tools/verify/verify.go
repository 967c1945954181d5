// Package verify is "detcoll verify": each rank runs every operation over
// a sweep of sizes and offsets, checks each result bit for bit against the
// reference tree (or the exact concatenation, for gathers) and across
// offsets and repeats, and times the calls; rank 0 prints one table row
// per operation, type and size as soon as every rank has it: pass or fail
// on every rank, and the slowest rank's median time.
//
// The checks are internal/testkit/check's, on host memory (the cpu backend) or on
// device memory (internal/tools/devmem, the cuda backend): the same engine and
// the same reference the conformance suite tests the backends with.
//
// It imports the root package, the tools' packages (check, devmem,
// coord, jobenv, launch) and the driver (the device buffers' stream); the
// library must never import it.
package verify

import (
	"context"
	"fmt"
	"io"
	"os"
	"slices"
	"time"

	"github.com/detcoll/detcoll"
	"github.com/detcoll/detcoll/internal/binding/driver"
	"github.com/detcoll/detcoll/internal/binding/mpiref"
	"github.com/detcoll/detcoll/internal/job/jobenv"
	"github.com/detcoll/detcoll/internal/job/launch"
	"github.com/detcoll/detcoll/internal/testkit/check"
	"github.com/detcoll/detcoll/internal/tools/coord"
	"github.com/detcoll/detcoll/internal/tools/devmem"
	"github.com/detcoll/detcoll/mpi"
	"github.com/detcoll/detcoll/nccl"
)

// Config is what to check, and how to start the ranks.
type Config struct {
	// N local ranks run this program with Args when no launcher started
	// it.
	N    int
	Args []string

	Backend string // "cpu" or "cuda"
	// Hosts > 0 runs the ranks as that many hosts whose traffic goes
	// through Open MPI (package mpi; a -tags mpi build): started by
	// itself, verify starts its N ranks under mpirun with
	// DETCOLL_VIRTUAL_HOSTS=Hosts; under mpirun, it opens across the hosts
	// that mpi finds (DETCOLL_VIRTUAL_HOSTS, or the machines).
	Hosts   int
	Timeout time.Duration // bound on every wait for peers
	DTypes  []detcoll.DType
	Sizes   []int // approximate input bytes per rank
	Seed    uint64

	// hostMemory replaces the cpu backend's host memory (tests: one that
	// corrupts results).
	hostMemory check.Memory
}

// ConfigError is a bad Config: nothing ran.
type ConfigError struct{ Err error }

func (e *ConfigError) Error() string { return e.Err.Error() }
func (e *ConfigError) Unwrap() error { return e.Err }

func (cfg *Config) validate() error {
	bad := func(format string, args ...any) error { return &ConfigError{fmt.Errorf(format, args...)} }
	switch {
	case cfg.N < 1:
		return bad("-n must be at least 1, got %d", cfg.N)
	case cfg.Timeout <= 0:
		return bad("--timeout must be positive, got %v", cfg.Timeout)
	case cfg.Backend != "cpu" && cfg.Backend != "cuda":
		return bad("--backend %q: want cpu or cuda", cfg.Backend)
	case len(cfg.Sizes) == 0:
		return bad("--sizes: no sizes")
	case len(cfg.DTypes) == 0:
		return bad("--dtype: no element types")
	case cfg.Hosts < 0:
		return bad("--hosts %d: want a number of hosts, or 0 for one", cfg.Hosts)
	}
	for _, dt := range cfg.DTypes {
		if !dt.Reducible() {
			return bad("--dtype %v: want bfloat16, float16, float32 or float64", dt)
		}
	}
	return nil
}

// Run is detcoll verify. Started by a launcher (jobenv finds a job:
// detcoll run, torchrun, mpirun, srun) it is one rank of the job, and
// rank 0 prints the table on stdout, row by row; started by itself it
// runs cfg.N local ranks of this program with cfg.Args and returns what
// the launcher says (a *launch.RankError when a rank failed). A bad
// setting is a *ConfigError, before anything runs; a failed check makes
// Run return an error on every rank, after the table.
func Run(ctx context.Context, cfg Config, stdout, stderr io.Writer) error {
	if err := cfg.validate(); err != nil {
		return err
	}
	job, launched, err := jobenv.FromEnv(os.Getenv)
	if err != nil {
		return err
	}
	acrossHosts := cfg.Hosts > 0 || os.Getenv(mpi.EnvVirtualHosts) != ""
	if !launched && cfg.Hosts > 0 && cfg.N%cfg.Hosts != 0 {
		return &ConfigError{fmt.Errorf("--hosts %d: want a divisor of -n %d", cfg.Hosts, cfg.N)}
	}
	if !launched && cfg.Backend == "cuda" {
		if err := launch.NeedCUDA(); err != nil {
			return err
		}
	}
	switch {
	case !launched && cfg.Hosts > 0:
		env := append(os.Environ(), fmt.Sprintf("%s=%d", mpi.EnvVirtualHosts, cfg.Hosts))
		if cfg.Backend == "cuda" {
			// The hosts' traffic goes through NCCL, which needs no
			// mpirun: detcoll's own launcher starts the ranks.
			return launch.SelfEnv(ctx, cfg.N, cfg.Args, env, stdout, stderr)
		}
		return mpiref.RunSelf(ctx, cfg.N, cfg.Args, env, stdout, stderr)
	case !launched:
		return launch.Self(ctx, cfg.N, cfg.Args, stdout, stderr)
	}
	opts := detcoll.Options{Backend: cfg.Backend, Timeout: cfg.Timeout, Capacity: int64(slices.Max(cfg.Sizes)) + 4096}
	if cfg.Backend == "cuda" {
		var prepare func(context.Context, detcoll.Options) (detcoll.Options, error)
		if acrossHosts {
			prepare = nccl.Options
		}
		return cudaRank(ctx, cfg, job, opts, prepare, stdout)
	}
	if acrossHosts {
		if opts, err = mpi.Options(opts); err != nil {
			return err
		}
		defer mpi.Finalize()
	}
	return hostRank(ctx, cfg, opts, stdout)
}

// hostRank is one rank of detcoll verify on the cpu backend.
func hostRank(ctx context.Context, cfg Config, opts detcoll.Options, stdout io.Writer) error {
	c, err := detcoll.Open(ctx, opts)
	if err != nil {
		return err
	}
	defer c.Close(ctx)
	m := cfg.hostMemory
	if m == nil {
		m = check.Host{}
	}
	t := newTable(c, stdout)
	t.header(opts.Backend)
	if err := rows(&rowRun{c: c, m: m, seed: cfg.Seed}, cfg, t); err != nil {
		return err
	}
	t.summary()
	if err := c.Close(ctx); err != nil {
		return err
	}
	return t.err()
}

// cudaRank is one rank of detcoll verify --backend cuda: the checks run on
// a cuda communicator, beside a cpu one of the same ranks that agrees on
// the rows (host calls) and runs the cross-backend calls.
func cudaRank(ctx context.Context, cfg Config, job jobenv.Job, opts detcoll.Options,
	prepare func(context.Context, detcoll.Options) (detcoll.Options, error), stdout io.Writer) error {
	host, c, err := coord.OpenWith(ctx, job, max(opts.Capacity, 64<<10), opts, prepare)
	if err != nil {
		return err
	}
	defer host.Close(ctx)
	defer c.Close(ctx)
	fail := func(err error) error {
		c.Abort(err) // peers waiting in a kernel or a host call fail now, naming this rank
		host.Abort(err)
		return err
	}
	g, err := devmem.Open(c.Device())
	if err != nil {
		return fail(fmt.Errorf("verify: GPU %d: %w", c.Device(), err))
	}
	defer g.Close()
	s, err := driver.StreamCreate(driver.StreamNonBlocking)
	if err != nil {
		return fail(fmt.Errorf("verify: GPU %d: %w", c.Device(), err))
	}
	defer s.Destroy()
	m := devmem.NewMemory(detcoll.Stream(s))
	defer m.Arena.Free()

	t := newTable(host, stdout)
	t.header(opts.Backend)
	if err := rows(&rowRun{c: c, host: host, m: m, seed: cfg.Seed}, cfg, t); err != nil {
		return fail(err)
	}
	t.summary()
	if !nestable(c.WorldSize()) {
		t.printf("tensor-parallel nesting not checked: the world size %d is not a power of two up to 8\n", c.WorldSize())
	}
	verdict := "PASS"
	if t.failed > 0 {
		verdict = "FAIL"
	}
	gpus, most, err := devmem.GPUsOf(host, g)
	if err != nil {
		return fail(err)
	}
	where := fmt.Sprintf("%d GPUs", gpus)
	if gpus == 1 {
		where = "1 GPU"
	}
	if most > 1 {
		where = fmt.Sprintf("%d ranks on %d GPUs", c.WorldSize(), gpus)
	}
	t.printf("%s: cuda backend, %s, bit for bit against the reference tree\n", verdict, where)
	if err := c.Close(ctx); err != nil {
		host.Abort(err)
		return err
	}
	if err := host.Close(ctx); err != nil {
		return err
	}
	return t.err()
}

// rows runs every row of cfg on r and adds each to t as it completes. A
// failed check is a row that failed; an error that ends the run (a failed
// communicator or driver call) is returned.
//
// The rows: for each element type, every reduction at every size (on a
// device also the window and, beside a cpu communicator, the cross-backend
// rows), then on a device the nesting rows where the world size allows;
// then every gather at every size, of odd byte counts.
func rows(r *rowRun, cfg Config, t *table) error {
	device := r.c.Device() >= 0
	w := r.c.WorldSize()
	reduce := append(slices.Clone(reduceOps), operatorOps()...)
	if device {
		reduce = append(reduce, windowOp)
		if r.host != nil {
			reduce = append(reduce, crossOps()...)
		}
	}
	call := 0
	add := func(name string, dt detcoll.DType, bytes int, run func() (time.Duration, error, error)) error {
		row := Row{Op: name, DType: dt, Bytes: bytes}
		var err error
		row.PerCall, row.Err, err = run()
		if err != nil {
			return fmt.Errorf("verify: %s, %v, %d bytes: %w", name, dt, bytes, err)
		}
		return t.add(row)
	}
	for _, dt := range cfg.DTypes {
		for _, op := range reduce {
			for _, sz := range cfg.Sizes {
				call++
				n := elements(sz, dt, op.inScale(w), w)
				err := add(op.name, dt, n*dt.Size()*op.inScale(w), func() (time.Duration, error, error) {
					return r.run(op, dt, n, call)
				})
				if err != nil {
					return err
				}
			}
		}
		if !device || !nestable(w) {
			continue
		}
		for _, scatter := range []bool{false, true} {
			name, scale := "AllReduce/nest8", 1
			if scatter {
				name, scale = "ReduceScatter/nest8", w
			}
			for _, sz := range cfg.Sizes {
				call++
				n := elements(sz, dt, scale, w)
				err := add(name, dt, n*dt.Size()*scale, func() (time.Duration, error, error) {
					return r.nested(scatter, dt, n, call)
				})
				if err != nil {
					return err
				}
			}
		}
	}
	for _, op := range gatherOps {
		for _, sz := range cfg.Sizes {
			call++
			n := sz + 1 // odd byte counts
			err := add(op.name, detcoll.TypeUint8, n, func() (time.Duration, error, error) {
				return r.run(op, detcoll.TypeUint8, n, call)
			})
			if err != nil {
				return err
			}
		}
	}
	return nil
}

// elements turns an approximate byte size into an odd element count (a
// tail that no vector width divides), rounded for an input of scale
// outputs (ReduceScatter: the world size) to a multiple of it.
func elements(bytes int, dt detcoll.DType, scale, w int) int {
	n := max(bytes/dt.Size(), 1) | 1
	if scale > 1 {
		n = max(n/w, 1) | 1
	}
	return n
}
