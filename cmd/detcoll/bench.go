package main

import (
	"context"
	"errors"
	"flag"
	"io"
	"strings"
	"time"

	"github.com/detcoll/detcoll/internal/binding/mpiref"
	"github.com/detcoll/detcoll/internal/core/num"
	"github.com/detcoll/detcoll/internal/tools/bench"
	"github.com/detcoll/detcoll/internal/tools/report"
)

const benchSynopsis = `[-n N] [--backend cpu|cuda] [--dtype T] [--op sum|avg|premulsum|max|min] [--operations LIST] [--size-bytes LIST]
	[--warmup W] [--iterations I] [--reference mpi|nccl|none] [--nccl-deterministic]
	[--output FILE.json] [--benchfmt FILE]

Times detcoll's collectives against a reference on the same ranks, inputs
and sizes: Open MPI on the cpu backend, NCCL on cuda. For each operation and
size it takes --warmup untimed and --iterations timed samples of each side,
alternating which side goes first, each sample after a barrier; a row's time
is the slowest rank's median. Rank 0 prints a table on stdout and progress
on stderr, and writes the JSON report (--output, read by detcoll plot) and
Go benchmark lines (--benchfmt; compare the sides with benchstat -col /side).

The table's columns: detcoll's time in us, its spread (p10 us, p90 us: each
rank's 10th and 90th percentile, the largest over the ranks, as the time is
of medians), its algorithm and bus bandwidth in GB/s as nccl-tests reports
them (algbw = S / time, S the input per rank, for all_gather the output, W
times the input, *_many both buffers; busbw = algbw x 2(W-1)/W for
all_reduce, (W-1)/W for reduce_scatter and all_gather, 1 for broadcast);
then the reference's time and busbw, and detcoll/reference (below 1:
detcoll is faster). A time marked * is noisy: p90 above 1.5 x p10; take
more --iterations. The report has both sides' p10, p90 and busbw.

Sizes are input bytes per rank (reduce_scatter: the whole input, W times the
output); *_many pass the input as two buffers. Every argument is checked
before any rank starts.

On cuda each rank uses the GPU of its local rank; both sides run on device
buffers, each on a stream of its own, and every row is timed in four modes
(synchronised, pipelined, graph, and graph_steady: a graph replay queued
behind an untimed one, without the ranks' skew after the barrier; see the
report's notes). When ranks share a GPU the table and report say so. The default sizes
are 1 KiB to 256 MiB. --nccl-deterministic sets NCCL_ALGO=Ring
NCCL_PROTO=Simple NCCL_MIN_NCHANNELS=1 NCCL_MAX_NCHANNELS=1 before NCCL
starts: the settings deterministic users choose today. The report records
NCCL's version and its NCCL_* environment.

Started by itself it runs N local ranks: with --reference mpi through mpirun
(as root it adds --allow-run-as-root), else like detcoll run -n N. Started by
detcoll run, torchrun, mpirun or srun it is one of their ranks; the MPI
reference needs mpirun (export DETCOLL_SECRET with -x). The MPI reference is
in binaries built with -tags mpi (needs libopenmpi-dev).`

// defaultBenchSizes are 1 KiB to 64 MiB in powers of 4; on cuda 1 KiB to
// 256 MiB at the sizes of the performance anchors' NCCL table.
const (
	defaultBenchSizes     = "1KiB,4KiB,16KiB,64KiB,256KiB,1MiB,4MiB,16MiB,64MiB"
	defaultCUDABenchSizes = "1KiB,8KiB,64KiB,256KiB,1MiB,4MiB,16MiB,64MiB,256MiB"
)

// runBench is "detcoll bench": its flags make a bench.Config.
func runBench(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("bench", benchSynopsis, stderr)
	cfg := bench.Config{Args: append([]string{"bench"}, args...)}
	var dtype, red, ops, sizes string
	defaultRef := report.ReferenceNone
	if mpiref.Built {
		defaultRef = report.ReferenceMPI
	}
	opNames := make([]string, len(bench.Ops))
	for i, op := range bench.Ops {
		opNames[i] = string(op)
	}
	fs.IntVar(&cfg.N, "n", 2, "number of local ranks to start when not launched as a rank")
	fs.IntVar(&cfg.Hosts, "hosts", 0, "run detcoll's ranks as this many virtual hosts: through Open MPI for cpu (a -tags mpi build), NCCL for cuda")
	fs.StringVar(&cfg.Backend, "backend", "cpu", `backend: "cpu" or "cuda"`)
	fs.StringVar(&dtype, "dtype", "", "element type: bfloat16, float16, float32 or float64 (default float32 on cpu, where Open MPI has no bfloat16; bfloat16 on cuda)")
	fs.StringVar(&red, "op", "sum", "the reductions' operator: sum, avg, premulsum, max or min (the reference takes its own, or sums where it has none: the report says)")
	fs.StringVar(&ops, "operations", strings.Join(opNames, ","), "operations to time")
	fs.StringVar(&sizes, "size-bytes", defaultBenchSizes, "input bytes per rank, a list (units KiB, MiB, GiB; default on cuda: "+defaultCUDABenchSizes+")")
	fs.IntVar(&cfg.Warmup, "warmup", 20, "untimed samples per operation and size, >= 0")
	fs.IntVar(&cfg.Iterations, "iterations", 100, "timed samples per operation and size, > 0")
	fs.StringVar(&cfg.Reference, "reference", defaultRef, `what to compare with: "mpi" (Open MPI; cpu), "nccl" (cuda) or "none"; nccl by default on cuda, and on cpu mpi when this binary has it`)
	fs.BoolVar(&cfg.Registered, "registered", false, "cuda: register detcoll's all-reduce and reduce-scatter buffers as windows (RegisterDevice), which takes the registered path above the LL threshold")
	fs.BoolVar(&cfg.NCCLDeterministic, "nccl-deterministic", false, "run NCCL with "+strings.Join(bench.NCCLDeterministicEnv, " "))
	fs.Uint64Var(&cfg.Seed, "seed", 1, "seed of the random inputs")
	fs.StringVar(&cfg.Output, "output", "", "write the JSON report here (parent directories are created)")
	fs.StringVar(&cfg.Benchfmt, "benchfmt", "", "write Go benchmark lines here, for benchstat")
	fs.DurationVar(&cfg.Timeout, "timeout", time.Minute, "bound on every wait for peers")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	// The defaults of --size-bytes, --reference and --dtype depend on
	// --backend.
	set := map[string]bool{}
	fs.Visit(func(fl *flag.Flag) { set[fl.Name] = true })
	if cfg.Backend == "cuda" {
		if !set["size-bytes"] {
			sizes = defaultCUDABenchSizes
		}
		if !set["reference"] {
			cfg.Reference = report.ReferenceNCCL
		}
	}
	if dtype == "" {
		dtype = "float32"
		if cfg.Backend == "cuda" {
			dtype = "bfloat16"
		}
	}
	var err error
	if cfg.Red, err = num.ParseRedOp(red); err != nil {
		return usagef("--op %q: want sum, avg, premulsum, max or min", red)
	}
	if cfg.DType, err = num.ParseDType(dtype); err != nil || !cfg.DType.Reducible() {
		return usagef("--dtype %q: want bfloat16, float16, float32 or float64", dtype)
	}
	if cfg.Sizes, err = parseSizes(sizes); err != nil {
		return usagef("--size-bytes: %v", err)
	}
	for _, name := range strings.Split(ops, ",") {
		cfg.Ops = append(cfg.Ops, bench.Op(strings.TrimSpace(name)))
	}

	err = bench.Run(ctx, cfg, stdout, stderr)
	var ce *bench.ConfigError
	if errors.As(err, &ce) {
		return badFlag(err) // the Config mirrors the flags: a bad setting is a bad flag
	}
	return err
}
