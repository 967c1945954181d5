package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/detcoll/detcoll"
	"github.com/detcoll/detcoll/internal/coord"
	"github.com/detcoll/detcoll/internal/jobenv"
	"github.com/detcoll/detcoll/internal/launch"
	"github.com/detcoll/detcoll/internal/num"
	"github.com/detcoll/detcoll/internal/verify"
)

const verifySynopsis = `[-n N] [--backend cpu|cuda] [--dtype LIST] [--sizes LIST] [--seed S] [--timeout D]

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
detcoll run, torchrun, mpirun or srun it is one of their ranks.`

// runVerify is "detcoll verify".
func runVerify(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("verify", verifySynopsis, stderr)
	n := fs.Int("n", 2, "number of local ranks to start when not launched as a rank")
	backend := fs.String("backend", "cpu", `backend: "cpu" or "cuda"`)
	dtypes := fs.String("dtype", "bfloat16,float16,float32,float64", "element types of the reductions")
	sizes := fs.String("sizes", "4,200,8000,64KiB,1MiB,4MiB", "approximate input bytes per rank (the defaults straddle the cpu backend's thresholds)")
	seed := fs.Uint64("seed", 1, "seed of the random inputs")
	timeout := fs.Duration("timeout", time.Minute, "bound on every wait for peers")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	cfg := verify.Config{Seed: *seed}
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
	switch {
	case *n < 1:
		return usagef("-n must be at least 1, got %d", *n)
	case *timeout <= 0:
		return usagef("--timeout must be positive, got %v", *timeout)
	}

	if *backend != "cpu" && *backend != "cuda" {
		return usagef("--backend %q: want cpu or cuda", *backend)
	}

	job, found, err := jobenv.FromEnv(os.Getenv)
	if err != nil {
		return err
	} else if !found {
		return spawnSelf(ctx, *n, "verify", args, stdout, stderr)
	}
	opts := detcoll.Options{
		Backend:  *backend,
		Timeout:  *timeout,
		Capacity: int64(slices.Max(cfg.Sizes)) + 4096,
	}
	if *backend == "cuda" {
		return verifyCUDARank(ctx, cfg, job, opts, stdout)
	}
	return verifyRank(ctx, cfg, opts, stdout)
}

// verifyCUDARank is one rank of detcoll verify --backend cuda: the checks
// run on a cuda communicator, beside a cpu one of the same ranks that
// gathers the outcomes (a host call) and runs the cross-backend calls.
func verifyCUDARank(ctx context.Context, cfg verify.Config, job jobenv.Job, opts detcoll.Options, stdout io.Writer) error {
	runtime.LockOSThread() // the checks keep the GPU's context current on this thread
	defer runtime.UnlockOSThread()
	// The cpu communicator also gathers every row's outcome (Agree).
	host, c, err := coord.Open(ctx, job, max(opts.Capacity, 64<<10), opts)
	if err != nil {
		return err
	}
	defer host.Close(ctx)
	defer c.Close(ctx)
	rows, err := verify.RunDevice(c, host, cfg)
	if err != nil {
		c.Abort(err) // peers waiting in a kernel or a host call fail now, naming this rank
		host.Abort(err)
		return err
	}
	if rows, err = verify.Agree(ctx, host, rows); err != nil {
		c.Abort(err)
		return err
	}
	failed := 0
	if c.Rank() == 0 {
		failed = verify.Print(stdout, c.WorldSize(), opts.Backend, rows)
		if !verify.Nestable(c.WorldSize()) {
			fmt.Fprintf(stdout, "tensor-parallel nesting not checked: the world size %d is not a power of two up to 8\n", c.WorldSize())
		}
		verdict := "PASS"
		if failed > 0 {
			verdict = "FAIL"
		}
		fmt.Fprintf(stdout, "%s: cuda backend on %d GPUs, bit for bit against the reference tree\n", verdict, c.WorldSize())
	} else {
		for _, r := range rows {
			if r.Err != nil {
				failed++
			}
		}
	}
	if err := c.Close(ctx); err != nil {
		host.Abort(err)
		return err
	}
	if err := host.Close(ctx); err != nil {
		return err
	}
	if failed > 0 {
		return fmt.Errorf("%d checks failed", failed)
	}
	return nil
}

// verifyRank is one rank of detcoll verify.
func verifyRank(ctx context.Context, cfg verify.Config, opts detcoll.Options, stdout io.Writer) error {
	c, err := detcoll.Open(ctx, opts)
	if err != nil {
		return err
	}
	defer c.Close(ctx)
	rows, err := verify.Run(c, cfg)
	if err != nil {
		return err
	}
	if rows, err = verify.Agree(ctx, c, rows); err != nil {
		return err
	}
	failed := 0
	if c.Rank() == 0 {
		failed = verify.Print(stdout, c.WorldSize(), opts.Backend, rows)
	} else {
		for _, r := range rows {
			if r.Err != nil {
				failed++
			}
		}
	}
	if err := c.Close(ctx); err != nil {
		return err
	}
	if failed > 0 {
		return fmt.Errorf("%d checks failed", failed)
	}
	return nil
}

// spawnSelf runs n local ranks of this same command, as detcoll run would.
func spawnSelf(ctx context.Context, n int, command string, args []string, stdout, stderr io.Writer) error {
	exe, err := os.Executable()
	if err != nil {
		return fmt.Errorf("find this program to start its ranks: %w", err)
	}
	err = launch.Run(ctx, launch.Config{
		N:       n,
		Program: exe,
		Args:    append([]string{command}, args...),
		Env:     os.Environ(),
		Stdout:  stdout,
		Stderr:  stderr,
	})
	var re *launch.RankError
	if errors.As(err, &re) {
		printOthers(stderr, "detcoll "+command, re)
		return rankFailed{re}
	}
	return err
}
