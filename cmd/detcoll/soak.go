package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"time"

	"github.com/detcoll/detcoll"
	"github.com/detcoll/detcoll/internal/jobenv"
	"github.com/detcoll/detcoll/internal/launch"
	"github.com/detcoll/detcoll/internal/soak"
)

const soakSynopsis = `[-n N] [--backend cpu|cuda] [--duration D] [--calls N] [--seed S] [--output FILE] ...

Qualifies this machine over a long run: random collectives (all-reduce out
of place, in place and staged, reduce-scatter, all-gather out of place and
in place, broadcast from a random root, the *Many forms), random element
types, sizes log-uniform from one element to --max-bytes, random input and
output offsets, and random host-side waits on random ranks, every result
checked bit for bit against the reference tree (or the exact bytes, for
gathers) with guard bytes around every buffer. The cpu backend makes the
calls in a tight loop; cuda queues --batch calls on a stream back to back,
then synchronises and checks them all. All ranks draw the same calls from
--seed. It runs until --duration or --calls, whichever comes first; rank 0
writes a progress line to stderr every --progress. At the end a short
summary goes to stdout and, with --output, a JSON report. Exit status 1 on
any wrong result, error or leak.

Fault injection: --kill-during open|call|close (or --kill-rank-after D
alone, which means call) makes rank --kill-rank (default the last) SIGKILL
itself: during Open (D after it called Open, default 10ms), amid the
calls (D after Open returned, default 100ms) or as it enters Close at the
end of the run, before it acknowledges the Close. Every other rank must then fail with detcoll.ErrPeerLost naming it within
--kill-bound of the kill, and close; no shared-memory file of the job may
be left. The exit status is then 0 when all of that held, 1 otherwise.

Started by itself it runs N local ranks (like detcoll run -n N), each
writing its result to a directory the summary is made from; started by
detcoll run, torchrun, mpirun or srun it is one of their ranks, and the
ranks gather their results over the communicator (no fault injection).`

// soakDirVar names the directory where ranks started by the soak itself
// write their results; it also tells a rank that its parent is a soak.
const soakDirVar = "DETCOLL_SOAK_DIR"

// runSoak is "detcoll soak".
func runSoak(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("soak", soakSynopsis, stderr)
	n := fs.Int("n", 2, "number of local ranks to start when not launched as a rank")
	backend := fs.String("backend", "cpu", `backend: "cpu" or "cuda"`)
	seed := fs.Uint64("seed", 1, "seed of the calls and inputs, the same on every rank")
	calls := fs.Int64("calls", 0, "stop after this many calls (0: no limit)")
	duration := fs.Duration("duration", 0, "stop after this long (0: no limit; with no --calls either, "+soak.DefaultDuration.String()+")")
	maxBytes := fs.String("max-bytes", "8MiB", "largest input per rank of one call")
	maxDelay := fs.Duration("max-delay", soak.DefaultMaxDelay, "longest host-side wait before a call (negative: none)")
	delayProb := fs.Float64("delay-prob", soak.DefaultDelayProb, "chance that a rank waits before a call")
	batch := fs.Int("batch", 0, fmt.Sprintf("calls between checks (cuda: queued between synchronisations); 0: 1 on cpu, %d on cuda", soak.DefaultDeviceBatch))
	progress := fs.Duration("progress", soak.DefaultProgress, "interval of rank 0's progress lines (negative: none)")
	timeout := fs.Duration("timeout", time.Minute, "bound on every wait for peers")
	output := fs.String("output", "", "write the JSON summary to this file")
	killRank := fs.Int("kill-rank", -1, "the rank to kill (default the last)")
	killAfter := fs.Duration("kill-rank-after", 0, "kill the rank this long after it called Open (open; default 10ms) or after Open returned (call; default 100ms)")
	killDuring := fs.String("kill-during", "", "kill the rank during: open, call or close")
	killBound := fs.Duration("kill-bound", soak.DefaultKillBound, "longest time from the kill to a survivor's error")
	corrupt := fs.Int64("corrupt-call", 0, "self-test: flip one bit of this call's output on rank 0 (the soak must fail)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	mb, err := parseSize(*maxBytes)
	if err != nil {
		return usagef("--max-bytes: %v", err)
	}
	cfg := soak.Config{Seed: *seed, Calls: *calls, Duration: *duration, MaxBytes: mb, MaxDelay: *maxDelay,
		DelayProb: *delayProb, Batch: *batch, Progress: *progress, CorruptCall: *corrupt}
	switch {
	case *n < 1:
		return usagef("-n must be at least 1, got %d", *n)
	case *backend != "cpu" && *backend != "cuda":
		return usagef("--backend %q: want cpu or cuda", *backend)
	case *timeout <= 0:
		return usagef("--timeout must be positive, got %v", *timeout)
	case *calls < 0 || *duration < 0:
		return usagef("--calls and --duration must not be negative")
	case *batch < 0:
		return usagef("--batch must not be negative, got %d", *batch)
	case *delayProb < 0 || *delayProb > 1:
		return usagef("--delay-prob %v: want [0, 1]", *delayProb)
	case *killBound <= 0:
		return usagef("--kill-bound must be positive, got %v", *killBound)
	case *killAfter < 0:
		return usagef("--kill-rank-after must not be negative, got %v", *killAfter)
	}
	job, found, err := jobenv.FromEnv(os.Getenv)
	if err != nil {
		return err
	}
	world := *n
	if found {
		world = job.World
	}
	if *killDuring != "" || *killAfter > 0 {
		k := &soak.Kill{Rank: *killRank, During: *killDuring, After: *killAfter, Bound: *killBound}
		if k.Rank < 0 {
			k.Rank = world - 1
		}
		if k.During == "" {
			k.During = soak.PhaseCall
		}
		if k.After == 0 && k.During == soak.PhaseOpen {
			k.After = 10 * time.Millisecond
		} else if k.After == 0 && k.During == soak.PhaseCall {
			k.After = 100 * time.Millisecond
		}
		switch {
		case world < 2:
			return usagef("--kill-during needs at least 2 ranks, got %d", world)
		case k.Rank >= world:
			return usagef("--kill-rank %d: want [0, %d)", k.Rank, world)
		case k.During != soak.PhaseOpen && k.During != soak.PhaseCall && k.During != soak.PhaseClose:
			return usagef("--kill-during %q: want open, call or close", k.During)
		case found && os.Getenv(soakDirVar) == "":
			return usagef("fault injection needs the ranks that detcoll soak starts itself, not another launcher's")
		}
		cfg.Kill = k
	}
	if mb < 8*world {
		return usagef("--max-bytes %d: want at least 8 bytes per rank (%d)", mb, 8*world)
	}
	opts := detcoll.Options{Backend: *backend, Timeout: *timeout, Capacity: cfg.Capacity()}
	if !found {
		return soakParent(ctx, *n, args, cfg, opts, *output, stdout, stderr)
	}
	if dir := os.Getenv(soakDirVar); dir != "" {
		cfg.Dir = dir
		res := soak.RunRank(ctx, job.Rank, job.World, opts, cfg, stderr)
		if res.Survivor != nil && res.Survivor.OK && res.Failures == 0 {
			return nil // failed as it should; the parent reports
		}
		if res.Error != "" {
			return errors.New(res.Error)
		}
		if res.Failures > 0 {
			return fmt.Errorf("%d wrong results", res.Failures)
		}
		return nil
	}
	return soakRank(ctx, job, cfg, opts, *output, stdout, stderr)
}

// soakParent starts n ranks of this command with a directory for their
// results and a shared-memory directory of their own, then makes the
// summary from the results and what is left in that directory.
func soakParent(ctx context.Context, n int, args []string, cfg soak.Config, opts detcoll.Options, output string,
	stdout, stderr io.Writer) error {
	start := time.Now()
	exe, err := os.Executable()
	if err != nil {
		return fmt.Errorf("find this program to start its ranks: %w", err)
	}
	dir, err := os.MkdirTemp("", "detcoll-soak-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	shmBase := os.Getenv("DETCOLL_SHM_DIR")
	if shmBase == "" {
		shmBase = "/dev/shm"
	}
	shm, err := os.MkdirTemp(shmBase, "detcoll-soak-")
	if err != nil {
		return fmt.Errorf("a shared-memory directory for the job: %w", err)
	}
	defer os.RemoveAll(shm)
	err = launch.Run(ctx, launch.Config{
		N:       n,
		Program: exe,
		Args:    append([]string{"soak"}, args...),
		Env:     append(os.Environ(), soakDirVar+"="+dir, "DETCOLL_SHM_DIR="+shm),
		Stdout:  stderr, // the ranks' own words are logs; the summary is the parent's
		Stderr:  stderr,
		Grace:   2 * closeGrace,
		// A killed rank must not stop the survivors before they report.
		ReportGrace: closeGrace,
	})
	exits := map[int]string{}
	var re *launch.RankError
	if errors.As(err, &re) {
		for _, e := range re.Ranks {
			if e.Err != nil {
				exits[e.Rank] = e.Err.Error()
			}
		}
	} else if err != nil && ctx.Err() == nil {
		return err
	}
	ranks, kill := soak.Collect(dir, n)
	sum := soak.Build(soak.Setup{Config: cfg, Options: opts, World: n, Start: start, Leaked: soak.Leaks(shm), Exits: exits},
		ranks, kill)
	return finishSoak(sum, output, stdout)
}

// closeGrace is how long survivors of a kill get to report and close.
const closeGrace = 10 * time.Second

// soakRank is one rank under another launcher: the ranks gather their
// results over the communicator and rank 0 writes the summary.
func soakRank(ctx context.Context, job jobenv.Job, cfg soak.Config, opts detcoll.Options, output string,
	stdout, stderr io.Writer) error {
	start := time.Now()
	// A cuda communicator makes device calls only: the results are
	// gathered over a cpu one of the same ranks (as verify does).
	var coord, c *detcoll.Comm
	var err error
	if opts.Backend == "cuda" {
		runtime.LockOSThread() // the soak keeps the GPU's context current on this thread
		defer runtime.UnlockOSThread()
		coord, c, err = openWithCoordinator(ctx, job, 64<<10, opts)
	} else {
		c, err = detcoll.Open(ctx, opts)
		coord = c
	}
	if err != nil {
		return err
	}
	defer coord.Close(ctx)
	defer c.Close(ctx)
	res, err := soak.Run(ctx, c, cfg, stderr)
	if err != nil {
		coord.Abort(err)
		return err
	}
	all, err := soak.Gather(ctx, coord, res)
	if err != nil {
		return err
	}
	if err := c.Close(ctx); err != nil {
		return err
	}
	if err := coord.Close(ctx); err != nil {
		return err
	}
	if job.Rank != 0 {
		if res.Failures > 0 {
			return fmt.Errorf("%d wrong results", res.Failures)
		}
		return nil
	}
	return finishSoak(soak.Build(soak.Setup{Config: cfg, Options: opts, World: job.World, Start: start}, all, nil), output, stdout)
}

// finishSoak writes the summary to output and stdout; an error when it
// did not pass.
func finishSoak(sum *soak.Summary, output string, stdout io.Writer) error {
	if output != "" {
		if err := soak.Write(output, sum); err != nil {
			return err
		}
	}
	soak.Print(stdout, sum)
	if !sum.Pass {
		return fmt.Errorf("%d problems", len(sum.Problems))
	}
	return nil
}
