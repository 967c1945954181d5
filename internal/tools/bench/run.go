package bench

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"

	"github.com/detcoll/detcoll"
	"github.com/detcoll/detcoll/internal/binding/mpiref"
	"github.com/detcoll/detcoll/internal/job/jobenv"
	"github.com/detcoll/detcoll/internal/job/launch"
	"github.com/detcoll/detcoll/internal/tools/coord"
	"github.com/detcoll/detcoll/internal/tools/report"
	"github.com/detcoll/detcoll/mpi"
	"github.com/detcoll/detcoll/nccl"
)

// Run is detcoll bench. Started by a launcher (jobenv.FromEnv finds a
// job: detcoll run, torchrun, mpirun, srun) it is one rank of the job:
// it opens the communicators, measures cfg with Measure, and rank 0
// prints the table on stdout, progress on stderr, and writes cfg.Output
// and cfg.Benchfmt. Started by itself it runs cfg.N local ranks of this
// program with cfg.Args (under mpirun for the mpi reference, else as
// detcoll run does) and returns what the launcher says: a
// *launch.RankError when a rank failed.
//
// Every setting is checked before any rank starts; a bad one is a
// *ConfigError. Zero Modes mean every mode of the backend.
func Run(ctx context.Context, cfg Config, stdout, stderr io.Writer) error {
	if len(cfg.Modes) == 0 {
		cfg.Modes = backendModes[cfg.Backend]
	}
	if cfg.NCCLDeterministic && cfg.Reference != report.ReferenceNCCL {
		return configErrorf("--nccl-deterministic: the reference is %q, not nccl", cfg.Reference)
	}
	job, launched, err := jobenv.FromEnv(os.Getenv)
	if err != nil {
		return err
	}
	world := cfg.N
	if launched {
		world = job.World
	} else if cfg.N < 1 {
		return configErrorf("-n must be at least 1, got %d", cfg.N)
	}
	if err := cfg.Validate(world); err != nil {
		return &ConfigError{err}
	}
	if cfg.Timeout <= 0 {
		return configErrorf("--timeout must be positive, got %v", cfg.Timeout)
	}
	if cfg.Reference == report.ReferenceMPI && !mpiref.Built {
		return fmt.Errorf("--reference mpi: %w; or use --reference none", mpiref.ErrNotBuilt)
	}
	if cfg.Hosts < 0 || cfg.Hosts > 0 && world%cfg.Hosts != 0 {
		return configErrorf("--hosts %d: want a divisor of the %d ranks", cfg.Hosts, world)
	}
	if !launched {
		if cfg.Backend == "cuda" {
			if err := launch.NeedCUDA(); err != nil {
				return err
			}
		}
		if cfg.Hosts > 0 && cfg.Backend == "cuda" {
			// The rails go through NCCL: detcoll's own launcher starts the ranks.
			return launch.SelfEnv(ctx, world, cfg.Args, append(os.Environ(), fmt.Sprintf("%s=%d", nccl.EnvVirtualHosts, cfg.Hosts)), stdout, stderr)
		}
		if cfg.Hosts > 0 {
			return mpiref.RunSelf(ctx, world, cfg.Args, append(os.Environ(), fmt.Sprintf("%s=%d", mpi.EnvVirtualHosts, cfg.Hosts)), stdout, stderr)
		}
		if cfg.Reference == report.ReferenceMPI {
			return mpiref.RunSelf(ctx, world, cfg.Args, os.Environ(), stdout, stderr)
		}
		return launch.Self(ctx, world, cfg.Args, stdout, stderr)
	}
	switch {
	case cfg.Backend == "cuda":
		return cudaRank(ctx, cfg, job, stdout, stderr)
	case cfg.Reference == report.ReferenceMPI:
		return mpiRank(ctx, cfg, job, stdout, stderr)
	}
	return hostRank(ctx, cfg, job, nil, stdout, stderr)
}

// mpiRank is one rank of a cpu benchmark against Open MPI.
func mpiRank(ctx context.Context, cfg Config, job jobenv.Job, stdout, stderr io.Writer) error {
	// MPI is initialised for serialized threads: keep its calls, and the
	// timings, on one thread.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	w, err := mpiref.Init()
	if err != nil {
		return err
	}
	if w.Size() != job.World || w.Rank() != job.Rank {
		return fmt.Errorf("--reference mpi needs ranks started by mpirun: MPI sees rank %d of %d, the %s launcher rank %d of %d",
			w.Rank(), w.Size(), job.Source, job.Rank, job.World)
	}
	if err := hostRank(ctx, cfg, job, NewMPI(w), stdout, stderr); err != nil {
		// No MPI_Finalize: a peer may wait in an MPI call that will never
		// complete, and Finalize with it. Exiting without it makes mpirun
		// end the job.
		return err
	}
	return w.Finalize()
}

// hostRank is one rank of a cpu benchmark on a detcoll communicator of
// the job, with ref as the reference (nil for none).
func hostRank(ctx context.Context, cfg Config, job jobenv.Job, ref Impl, stdout, stderr io.Writer) error {
	if err := cfg.outputDirs(job.Rank); err != nil {
		return err
	}
	opts := detcoll.Options{Backend: cfg.Backend, Capacity: cfg.Capacity(), Timeout: cfg.Timeout}
	if cfg.Hosts > 0 || os.Getenv(mpi.EnvVirtualHosts) != "" {
		var err error
		if opts, err = mpi.Options(opts); err != nil {
			return err
		}
		if ref == nil {
			defer mpi.Finalize() // mpiRank finalises when MPI is the reference too
		}
	}
	c, err := detcoll.Open(ctx, opts)
	if err != nil {
		return err
	}
	defer c.Close(ctx)
	var out Output
	if c.Rank() == 0 {
		out = Output{Progress: stderr, Table: stdout}
		fmt.Fprintf(stderr, "bench: %d ranks, %s backend, %v, reference %s, %d warmup + %d timed samples per row\n",
			c.WorldSize(), cfg.Backend, cfg.DType, cfg.Reference, cfg.Warmup, cfg.Iterations)
		if cpus := runtime.NumCPU(); cfg.Backend == "cpu" && cpus < job.LocalWorld {
			fmt.Fprintf(stderr, "bench: warning: this rank may run on %d CPUs for %d local ranks (bound to cores?): the cpu backend then waits as if oversubscribed; mpirun --bind-to none avoids it\n",
				cpus, job.LocalWorld)
		}
	}
	rep, err := Measure(cfg, CommGroup(c), NewHost(c), ref, out)
	if err != nil {
		c.Abort(err) // peers waiting in a barrier fail now, naming this rank
		return err
	}
	if c.Rank() == 0 {
		if err := cfg.writeOutputs(rep, stderr); err != nil {
			return err
		}
	}
	return c.Close(ctx)
}

// cudaRank is one rank of a cuda benchmark. It opens a cpu communicator
// for the harness's own traffic (gathering samples, NCCL's id: host calls,
// which a cuda communicator refuses), then the cuda one, then the sides,
// all on this goroutine's locked thread, where the sides keep the GPU's
// context current.
func cudaRank(ctx context.Context, cfg Config, job jobenv.Job, stdout, stderr io.Writer) error {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if cfg.NCCLDeterministic {
		// Before NCCL is loaded or asked anything.
		if err := SetNCCLDeterministic(); err != nil {
			return err
		}
	}
	if err := cfg.outputDirs(job.Rank); err != nil {
		return err
	}
	// The coordinator gathers each row's samples: every mode, both sides.
	coordCapacity := int64(len(cfg.Modes)*2*cfg.Iterations*8) + 4096
	var prepare func(context.Context, detcoll.Options) (detcoll.Options, error)
	if cfg.Hosts > 0 || os.Getenv(nccl.EnvVirtualHosts) != "" {
		prepare = nccl.Options // the rails through NCCL, whose reference then runs on the same transport
	}
	host, c, err := coord.OpenWith(ctx, job, coordCapacity,
		detcoll.Options{Backend: "cuda", Capacity: cfg.Capacity(), Timeout: cfg.Timeout}, prepare)
	if err != nil {
		return err
	}
	defer host.Close(ctx)
	defer c.Close(ctx)
	fail := func(err error) error {
		c.Abort(err) // peers waiting in a barrier or kernel fail now, naming this rank
		host.Abort(err)
		return err
	}
	det, err := NewCUDA(c)
	if err != nil {
		return fail(err)
	}
	det.registered = cfg.Registered
	defer det.Close()
	if err := det.shareGPUs(host); err != nil {
		return fail(err)
	}
	var ref Impl
	var nccl *NCCL
	if cfg.Reference == report.ReferenceNCCL {
		id, err := NCCLUniqueID(host)
		if err != nil {
			return fail(fmt.Errorf("NCCL's unique id: %w", err))
		}
		if nccl, err = NewNCCL(c.Device(), c.Rank(), c.WorldSize(), id); err != nil {
			return fail(err)
		}
		defer nccl.Close()
		ref = nccl
	}
	var out Output
	if c.Rank() == 0 {
		out = Output{Progress: stderr, Table: stdout}
		extra := ""
		if cfg.NCCLDeterministic {
			extra = " (" + strings.Join(NCCLDeterministicEnv, " ") + ")"
		}
		fmt.Fprintf(stderr, "bench: %d ranks, cuda backend on GPU %d of rank 0, %v, reference %s%s, %d warmup + %d timed samples per row and mode\n",
			c.WorldSize(), c.Device(), cfg.DType, cfg.Reference, extra, cfg.Warmup, cfg.Iterations)
		if det.sharing != "" {
			fmt.Fprintf(stderr, "bench: %d ranks per GPU (%s): times are one GPU's, not NVLink's\n", det.perGPU, det.sharing)
		}
	}
	rep, err := Measure(cfg, CommGroup(host), det, ref, out)
	if err != nil {
		if nccl != nil {
			nccl.Abort() // a peer may never come: do not wait for it
		}
		return fail(err)
	}
	if c.Rank() == 0 {
		if err := cfg.writeOutputs(rep, stderr); err != nil {
			return fail(err)
		}
	}
	if nccl != nil {
		if err := nccl.Close(); err != nil {
			return fail(err)
		}
	}
	det.Close()
	if err := c.Close(ctx); err != nil {
		host.Abort(err)
		return err
	}
	return host.Close(ctx)
}

// outputDirs makes the outputs' directories on rank 0, so that a run
// fails now, not after the sweep, if they cannot be written.
func (c Config) outputDirs(rank int) error {
	if rank != 0 {
		return nil
	}
	for _, path := range []string{c.Output, c.Benchfmt} {
		if path != "" {
			if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
				return err
			}
		}
	}
	return nil
}

// writeOutputs writes the report and the benchmark lines.
func (c Config) writeOutputs(rep *report.Report, stderr io.Writer) error {
	if c.Output != "" {
		if err := report.WriteFile(c.Output, rep); err != nil {
			return err
		}
		fmt.Fprintf(stderr, "bench: wrote %s\n", c.Output)
	}
	if c.Benchfmt != "" {
		file, err := os.Create(c.Benchfmt)
		if err != nil {
			return err
		}
		err = WriteBenchfmt(file, rep)
		if cerr := file.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return fmt.Errorf("write %s: %w", c.Benchfmt, err)
		}
		fmt.Fprintf(stderr, "bench: wrote %s\n", c.Benchfmt)
	}
	return nil
}
