package main

import (
	"context"
	"errors"
	"io"
	"strings"
	"time"

	"github.com/detcoll/detcoll/internal/core/num"
	"github.com/detcoll/detcoll/internal/tools/verify"
)

const verifySynopsis = `[-n N] [--backend cpu|cuda] [--hosts H] [--dtype LIST] [--sizes LIST] [--seed S] [--timeout D]

Checks determinism on this machine: every operation (all-reduce out of place,
in place and staged, reduce-scatter, the *Many forms, all-gather, broadcast)
over a sweep of sizes and output offsets, each result compared bit for bit
with the reference tree evaluated element by element (or the exact
concatenation), across offsets and across repeats. Rank 0 prints one row per
operation, type and size: pass on every rank, and the slowest rank's median
time per call. Exit status 1 if any check failed.

With --backend cuda each rank runs on the GPU of its local rank, on device
memory, with the same checks and reference (the one the cpu backend is
tested against), plus: an all-reduce of a window of the input one element
off its alignment and shorter; an all-reduce and a reduce-scatter run on
both backends (cuda, and cpu through a second communicator) on the same
inputs and compared byte for byte; and, when the world size is a power of
two up to 8, the tensor-parallel nesting check (each element has 8 leaves,
rank r passes the tree of its block of 8/W of them, and the result must be
the 8-leaf tree).

Started by itself it runs N local ranks (like detcoll run -n N); started by
detcoll run, torchrun, mpirun or srun it is one of their ranks.

With --hosts H the ranks are H hosts of N/H ranks: each host's ranks talk
through the backend, the hosts through Open MPI (cpu, a build with -tags
mpi) or NCCL (cuda). Started by itself it runs the N ranks as H virtual
hosts on this machine (cpu: under mpirun); under your own mpirun across
machines, each machine's ranks are a host. For cuda, NCCL's transport is
its choice: NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1 sends the virtual hosts'
traffic through its network transport, as between machines.`

// runVerify is "detcoll verify": its flags, then verify.Run.
func runVerify(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("verify", verifySynopsis, stderr)
	cfg := verify.Config{Args: append([]string{"verify"}, args...)}
	fs.IntVar(&cfg.N, "n", 2, "number of local ranks to start when not launched as a rank")
	fs.StringVar(&cfg.Backend, "backend", "cpu", `backend: "cpu" or "cuda"`)
	fs.IntVar(&cfg.Hosts, "hosts", 0, "run the ranks as this many hosts: through Open MPI for cpu (a -tags mpi build; started by itself, under mpirun), NCCL for cuda")
	dtypes := fs.String("dtype", "bfloat16,float16,float32,float64", "element types of the reductions")
	sizes := fs.String("sizes", "4,200,8000,64KiB,1MiB,4MiB", "approximate input bytes per rank (the defaults straddle the cpu backend's thresholds)")
	fs.Uint64Var(&cfg.Seed, "seed", 1, "seed of the random inputs")
	fs.DurationVar(&cfg.Timeout, "timeout", time.Minute, "bound on every wait for peers")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	var err error
	if cfg.Sizes, err = parseSizes(*sizes); err != nil {
		return usagef("--sizes: %v", err)
	}
	for _, name := range strings.Split(*dtypes, ",") {
		dt, err := num.ParseDType(strings.TrimSpace(name))
		if err != nil || !dt.Reducible() {
			return usagef("--dtype %q: want bfloat16, float16, float32 or float64", name)
		}
		cfg.DTypes = append(cfg.DTypes, dt)
	}
	err = verify.Run(ctx, cfg, stdout, stderr)
	var ce *verify.ConfigError
	if errors.As(err, &ce) {
		return badFlag(err) // the Config mirrors the flags: a bad setting is a bad flag
	}
	return err
}
