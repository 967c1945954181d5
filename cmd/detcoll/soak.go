package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/detcoll/detcoll/internal/tools/soak"
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

// runSoak is "detcoll soak": its flags make a soak.Config.
func runSoak(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("soak", soakSynopsis, stderr)
	cfg := soak.Config{Args: append([]string{"soak"}, args...)}
	fs.IntVar(&cfg.N, "n", 2, "number of local ranks to start when not launched as a rank")
	fs.StringVar(&cfg.Backend, "backend", "cpu", `backend: "cpu" or "cuda"`)
	fs.Uint64Var(&cfg.Seed, "seed", 1, "seed of the calls and inputs, the same on every rank")
	fs.Int64Var(&cfg.Calls, "calls", 0, "stop after this many calls (0: no limit)")
	fs.DurationVar(&cfg.Duration, "duration", 0, "stop after this long (0: no limit; with no --calls either, "+soak.DefaultDuration.String()+")")
	maxBytes := fs.String("max-bytes", "8MiB", "largest input per rank of one call")
	fs.DurationVar(&cfg.MaxDelay, "max-delay", soak.DefaultMaxDelay, "longest host-side wait before a call (negative: none)")
	fs.Float64Var(&cfg.DelayProb, "delay-prob", soak.DefaultDelayProb, "chance that a rank waits before a call")
	fs.IntVar(&cfg.Batch, "batch", 0, fmt.Sprintf("calls between checks (cuda: queued between synchronisations); 0: 1 on cpu, %d on cuda", soak.DefaultDeviceBatch))
	fs.DurationVar(&cfg.Progress, "progress", soak.DefaultProgress, "interval of rank 0's progress lines (negative: none)")
	fs.DurationVar(&cfg.Timeout, "timeout", time.Minute, "bound on every wait for peers")
	fs.StringVar(&cfg.Output, "output", "", "write the JSON summary to this file")
	killRank := fs.Int("kill-rank", -1, "the rank to kill; -1: the last")
	killAfter := fs.Duration("kill-rank-after", 0, "kill the rank this long after it called Open (open; default 10ms) or after Open returned (call; default 100ms)")
	killDuring := fs.String("kill-during", "", "kill the rank during: open, call or close")
	killBound := fs.Duration("kill-bound", soak.DefaultKillBound, "longest time from the kill to a survivor's error")
	fs.Int64Var(&cfg.CorruptCall, "corrupt-call", 0, "self-test: flip one bit of this call's output on rank 0 (the soak must fail)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	var err error
	if cfg.MaxBytes, err = parseSize(*maxBytes); err != nil {
		return usagef("--max-bytes: %v", err)
	}
	// The fault's flags reach the Config only with a fault, so their
	// ranges are checked here, with or without one.
	switch {
	case *killBound <= 0:
		return usagef("--kill-bound must be positive, got %v", *killBound)
	case *killAfter < 0:
		return usagef("--kill-rank-after must not be negative, got %v", *killAfter)
	}
	if *killDuring != "" || *killAfter > 0 {
		cfg.Kill = &soak.Kill{Rank: *killRank, During: *killDuring, After: *killAfter, Bound: *killBound}
	}

	err = soak.Run(ctx, cfg, stdout, stderr)
	var ce *soak.ConfigError
	if errors.As(err, &ce) {
		return badFlag(err) // the Config mirrors the flags: a bad setting is a bad flag
	}
	return err
}
