package main

import (
	"context"
	"encoding/binary"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/detcoll/detcoll"
	"github.com/detcoll/detcoll/internal/bench"
	"github.com/detcoll/detcoll/internal/jobenv"
	"github.com/detcoll/detcoll/internal/mpiref"
	"github.com/detcoll/detcoll/internal/num"
	"github.com/detcoll/detcoll/internal/report"
)

const benchSynopsis = `[-n N] [--backend cpu|cuda] [--dtype T] [--operations LIST] [--size-bytes LIST]
	[--warmup W] [--iterations I] [--reference mpi|nccl|none] [--nccl-deterministic]
	[--output FILE.json] [--benchfmt FILE]

Times detcoll's collectives against a reference on the same ranks, inputs
and sizes: Open MPI on the cpu backend, NCCL on cuda. For each operation and
size it takes --warmup untimed and --iterations timed samples of each side,
alternating which side goes first, each sample after a barrier; a row's time
is the slowest rank's median. Rank 0 prints a table on stdout
(detcoll/reference below 1: detcoll is faster) and progress on stderr, and
writes the JSON report (--output, read by detcoll plot) and Go benchmark
lines (--benchfmt; compare the sides with benchstat -col /side).

Sizes are input bytes per rank (reduce_scatter: the whole input, W times the
output); *_many pass the input as two buffers. Every argument is checked
before any rank starts.

On cuda each rank uses the GPU of its local rank; both sides run on device
buffers, each on a stream of its own, and every row is timed in three modes
(synchronised, pipelined, graph: see the report's notes). The default sizes
are 1 KiB to 256 MiB. --nccl-deterministic sets NCCL_ALGO=Ring
NCCL_PROTO=Simple NCCL_MIN_NCHANNELS=1 NCCL_MAX_NCHANNELS=1 before NCCL
starts: the settings deterministic users choose today. The report records
NCCL's version and its NCCL_* environment.

Started by itself it runs N local ranks: with --reference mpi through mpirun
(as root it adds --allow-run-as-root), else like detcoll run -n N. Started by
detcoll run, torchrun, mpirun or srun it is one of their ranks; the MPI
reference needs mpirun (export DETCOLL_SECRET with -x). The MPI reference is
in binaries built with -tags mpi (needs libopenmpi-dev).`

// benchFlags are detcoll bench's settings.
type benchFlags struct {
	n                 int
	timeout           time.Duration
	output, benchfmt  string
	cfg               bench.Config
	dtype, ops, sizes string
	ncclDeterministic bool
}

// defaultBenchSizes are 1 KiB to 64 MiB in powers of 4; on cuda 1 KiB to
// 256 MiB at the sizes of the performance anchors' NCCL table.
const (
	defaultBenchSizes     = "1KiB,4KiB,16KiB,64KiB,256KiB,1MiB,4MiB,16MiB,64MiB"
	defaultCUDABenchSizes = "1KiB,8KiB,64KiB,256KiB,1MiB,4MiB,16MiB,64MiB,256MiB"
)

// runBench is "detcoll bench".
func runBench(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("bench", benchSynopsis, stderr)
	var f benchFlags
	defaultRef := report.ReferenceNone
	if mpiref.Built {
		defaultRef = report.ReferenceMPI
	}
	opNames := make([]string, len(bench.Ops))
	for i, op := range bench.Ops {
		opNames[i] = string(op)
	}
	fs.IntVar(&f.n, "n", 2, "number of local ranks to start when not launched as a rank")
	fs.StringVar(&f.cfg.Backend, "backend", "cpu", `backend: "cpu" or "cuda"`)
	fs.StringVar(&f.dtype, "dtype", "", "element type: bfloat16, float16, float32 or float64 (default float32 on cpu, where Open MPI has no bfloat16; bfloat16 on cuda)")
	fs.StringVar(&f.ops, "operations", strings.Join(opNames, ","), "operations to time")
	fs.StringVar(&f.sizes, "size-bytes", defaultBenchSizes, "input bytes per rank, a list (units KiB, MiB, GiB; default on cuda: "+defaultCUDABenchSizes+")")
	fs.IntVar(&f.cfg.Warmup, "warmup", 20, "untimed samples per operation and size, >= 0")
	fs.IntVar(&f.cfg.Iterations, "iterations", 100, "timed samples per operation and size, > 0")
	fs.StringVar(&f.cfg.Reference, "reference", defaultRef, `what to compare with: "mpi" (Open MPI; cpu), "nccl" (cuda) or "none" (default: nccl on cuda; on cpu mpi when this binary has it)`)
	fs.BoolVar(&f.ncclDeterministic, "nccl-deterministic", false, "run NCCL with "+strings.Join(bench.NCCLDeterministicEnv, " "))
	fs.Uint64Var(&f.cfg.Seed, "seed", 1, "seed of the random inputs")
	fs.StringVar(&f.output, "output", "", "write the JSON report here (parent directories are created)")
	fs.StringVar(&f.benchfmt, "benchfmt", "", "write Go benchmark lines here, for benchstat")
	fs.DurationVar(&f.timeout, "timeout", time.Minute, "bound on every wait for peers")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	set := map[string]bool{}
	fs.Visit(func(fl *flag.Flag) { set[fl.Name] = true })
	if f.cfg.Backend == "cuda" {
		if !set["size-bytes"] {
			f.sizes = defaultCUDABenchSizes
		}
		if !set["reference"] {
			f.cfg.Reference = report.ReferenceNCCL
		}
	}
	if err := f.parse(); err != nil {
		return err
	}
	if f.ncclDeterministic && f.cfg.Reference != report.ReferenceNCCL {
		return usagef("--nccl-deterministic: the reference is %q, not nccl", f.cfg.Reference)
	}

	job, launched, err := jobenv.FromEnv(os.Getenv)
	if err != nil {
		return err
	}
	world := f.n
	if launched {
		world = job.World
	} else if f.n < 1 {
		return usagef("-n must be at least 1, got %d", f.n)
	}
	if err := f.cfg.Validate(world); err != nil {
		return usagef("%v", err)
	}
	if f.timeout <= 0 {
		return usagef("--timeout must be positive, got %v", f.timeout)
	}
	if f.cfg.Reference == report.ReferenceMPI && !mpiref.Built {
		return fmt.Errorf("--reference mpi: %w; or use --reference none", mpiref.ErrNotBuilt)
	}

	if !launched {
		if f.cfg.Reference == report.ReferenceMPI {
			return spawnMPI(ctx, world, args, stdout, stderr)
		}
		return spawnSelf(ctx, world, "bench", args, stdout, stderr)
	}
	return benchRank(ctx, f, job, stdout, stderr)
}

// parse turns the flags' strings into the config.
func (f *benchFlags) parse() error {
	c := &f.cfg
	c.Modes = []string{report.ModeWallClock}
	if c.Backend == "cuda" {
		c.Modes = []string{report.ModeSynchronised, report.ModePipelined, report.ModeGraph}
	}
	if f.dtype == "" {
		f.dtype = "float32"
		if c.Backend == "cuda" {
			f.dtype = "bfloat16"
		}
	}
	var err error
	if c.DType, err = num.ParseDType(f.dtype); err != nil || !c.DType.Reducible() {
		return usagef("--dtype %q: want bfloat16, float16, float32 or float64", f.dtype)
	}
	if c.Sizes, err = parseSizes(f.sizes); err != nil {
		return usagef("--size-bytes: %v", err)
	}
	for _, name := range strings.Split(f.ops, ",") {
		c.Ops = append(c.Ops, bench.Op(strings.TrimSpace(name)))
	}
	return nil
}

// spawnMPI runs n local ranks of this same command under mpirun.
func spawnMPI(ctx context.Context, n int, args []string, stdout, stderr io.Writer) error {
	exe, err := os.Executable()
	if err != nil {
		return fmt.Errorf("find this program to start its ranks: %w", err)
	}
	cmd, err := mpiref.Command(ctx, n, exe, append([]string{"bench"}, args...), os.Environ())
	if err != nil {
		return err
	}
	cmd.Stdout, cmd.Stderr = stdout, stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("mpirun: %w", err)
	}
	return nil
}

// benchRank is one rank of detcoll bench.
func benchRank(ctx context.Context, f benchFlags, job jobenv.Job, stdout, stderr io.Writer) error {
	if f.cfg.Backend == "cuda" {
		return benchCUDA(ctx, f, job, stdout, stderr)
	}
	if f.cfg.Reference != report.ReferenceMPI {
		return benchComm(ctx, f, job, nil, stdout, stderr)
	}
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
	if err := benchComm(ctx, f, job, bench.NewMPI(w), stdout, stderr); err != nil {
		// No MPI_Finalize: a peer may wait in an MPI call that will never
		// complete, and Finalize with it. Exiting without it makes mpirun
		// end the job.
		return err
	}
	return w.Finalize()
}

// benchComm runs the benchmark on a detcoll communicator of this job, with
// ref as the reference (nil for none).
func benchComm(ctx context.Context, f benchFlags, job jobenv.Job, ref bench.Impl, stdout, stderr io.Writer) error {
	if err := f.outputDirs(job.Rank); err != nil {
		return err
	}
	c, err := detcoll.Open(ctx, detcoll.Options{Backend: f.cfg.Backend, Capacity: f.cfg.Capacity(), Timeout: f.timeout})
	if err != nil {
		return err
	}
	defer c.Close(ctx)
	var out bench.Output
	if c.Rank() == 0 {
		out = bench.Output{Progress: stderr, Table: stdout}
		fmt.Fprintf(stderr, "bench: %d ranks, %s backend, %v, reference %s, %d warmup + %d timed samples per row\n",
			c.WorldSize(), f.cfg.Backend, f.cfg.DType, f.cfg.Reference, f.cfg.Warmup, f.cfg.Iterations)
		if cpus := runtime.NumCPU(); f.cfg.Backend == "cpu" && cpus < job.LocalWorld {
			fmt.Fprintf(stderr, "bench: warning: this rank may run on %d CPUs for %d local ranks (bound to cores?): the cpu backend then waits as if oversubscribed; mpirun --bind-to none avoids it\n",
				cpus, job.LocalWorld)
		}
	}
	rep, err := bench.Run(f.cfg, bench.CommGroup(c), bench.NewHost(c), ref, out)
	if err != nil {
		c.Abort(err) // peers waiting in a barrier fail now, naming this rank
		return err
	}
	if c.Rank() == 0 {
		if err := writeBenchOutputs(f, rep, stderr); err != nil {
			return err
		}
	}
	return c.Close(ctx)
}

// outputDirs makes the outputs' directories on rank 0, so that a run
// fails now, not after the sweep, if they cannot be written.
func (f benchFlags) outputDirs(rank int) error {
	if rank != 0 {
		return nil
	}
	for _, path := range []string{f.output, f.benchfmt} {
		if path != "" {
			if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
				return err
			}
		}
	}
	return nil
}

// writeBenchOutputs writes the report and the benchmark lines.
func writeBenchOutputs(f benchFlags, rep *report.Report, stderr io.Writer) error {
	if f.output != "" {
		if err := report.WriteFile(f.output, rep); err != nil {
			return err
		}
		fmt.Fprintf(stderr, "bench: wrote %s\n", f.output)
	}
	if f.benchfmt != "" {
		file, err := os.Create(f.benchfmt)
		if err != nil {
			return err
		}
		err = bench.WriteBenchfmt(file, rep)
		if cerr := file.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return fmt.Errorf("write %s: %w", f.benchfmt, err)
		}
		fmt.Fprintf(stderr, "bench: wrote %s\n", f.benchfmt)
	}
	return nil
}

// benchCUDA is one rank of detcoll bench on the cuda backend. It opens a
// cpu communicator for the harness's own traffic (gathering samples, NCCL's
// id: host calls, which a cuda communicator refuses), then the cuda one,
// then the sides, all on this goroutine's locked thread, where the sides
// keep the GPU's context current.
func benchCUDA(ctx context.Context, f benchFlags, job jobenv.Job, stdout, stderr io.Writer) error {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if f.ncclDeterministic {
		// Before NCCL is loaded or asked anything.
		if err := bench.SetNCCLDeterministic(); err != nil {
			return err
		}
	}
	if err := f.outputDirs(job.Rank); err != nil {
		return err
	}
	// The coordinator gathers each row's samples: every mode, both sides.
	coordCapacity := int64(len(f.cfg.Modes)*2*f.cfg.Iterations*8) + 4096
	coord, c, err := openWithCoordinator(ctx, job, coordCapacity,
		detcoll.Options{Backend: "cuda", Capacity: f.cfg.Capacity(), Timeout: f.timeout})
	if err != nil {
		return err
	}
	defer coord.Close(ctx)
	defer c.Close(ctx)
	fail := func(err error) error {
		c.Abort(err) // peers waiting in a barrier or kernel fail now, naming this rank
		coord.Abort(err)
		return err
	}
	det, err := bench.NewCUDA(c)
	if err != nil {
		return fail(err)
	}
	defer det.Close()
	var ref bench.Impl
	var nccl *bench.NCCL
	if f.cfg.Reference == report.ReferenceNCCL {
		id, err := bench.NCCLUniqueID(coord)
		if err != nil {
			return fail(fmt.Errorf("NCCL's unique id: %w", err))
		}
		if nccl, err = bench.NewNCCL(c.Device(), c.Rank(), c.WorldSize(), id); err != nil {
			return fail(err)
		}
		defer nccl.Close()
		ref = nccl
	}
	var out bench.Output
	if c.Rank() == 0 {
		out = bench.Output{Progress: stderr, Table: stdout}
		extra := ""
		if f.ncclDeterministic {
			extra = " (" + strings.Join(bench.NCCLDeterministicEnv, " ") + ")"
		}
		fmt.Fprintf(stderr, "bench: %d ranks, cuda backend on GPU %d of rank 0, %v, reference %s%s, %d warmup + %d timed samples per row and mode\n",
			c.WorldSize(), c.Device(), f.cfg.DType, f.cfg.Reference, extra, f.cfg.Warmup, f.cfg.Iterations)
	}
	rep, err := bench.Run(f.cfg, bench.CommGroup(coord), det, ref, out)
	if err != nil {
		if nccl != nil {
			nccl.Abort() // a peer may never come: do not wait for it
		}
		return fail(err)
	}
	if c.Rank() == 0 {
		if err := writeBenchOutputs(f, rep, stderr); err != nil {
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
		coord.Abort(err)
		return err
	}
	return coord.Close(ctx)
}

// openWithCoordinator opens a cpu communicator of the job at its
// rendezvous, with coordCapacity bytes, for what the caller does on host
// memory, then the communicator opts describes at a second rendezvous
// address that rank 0 picks (a free port on the rendezvous host) and
// passes on through the first: two stores cannot share a port. On error
// nothing stays open.
func openWithCoordinator(ctx context.Context, job jobenv.Job, coordCapacity int64, opts detcoll.Options) (coord, c *detcoll.Comm, err error) {
	coord, err = detcoll.Open(ctx, detcoll.Options{Backend: "cpu", Capacity: coordCapacity, Timeout: opts.Timeout})
	if err != nil {
		return nil, nil, fmt.Errorf("open the coordinating cpu communicator: %w", err)
	}
	host, _, err := net.SplitHostPort(job.Addr)
	if err != nil {
		coord.Close(ctx)
		return nil, nil, fmt.Errorf("rendezvous address %q: %w", job.Addr, err)
	}
	var port [8]byte
	if coord.Rank() == 0 {
		p, err := freePort(host)
		if err != nil {
			coord.Abort(err)
			coord.Close(ctx)
			return nil, nil, err
		}
		binary.LittleEndian.PutUint64(port[:], uint64(p))
	}
	if err := detcoll.Broadcast(coord, port[:], 0); err != nil {
		coord.Close(ctx)
		return nil, nil, fmt.Errorf("pass on the %s communicator's address: %w", opts.Backend, err)
	}
	opts.Addr = net.JoinHostPort(host, strconv.FormatUint(binary.LittleEndian.Uint64(port[:]), 10))
	c, err = detcoll.Open(ctx, opts)
	if err != nil {
		coord.Abort(err)
		coord.Close(ctx)
		return nil, nil, err
	}
	return coord, c, nil
}

// freePort returns a TCP port on host that nothing listens on now.
func freePort(host string) (int, error) {
	l, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
	if err != nil {
		return 0, fmt.Errorf("find a free port for a second rendezvous: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
