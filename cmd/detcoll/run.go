package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/detcoll/detcoll/internal/job/launch"
)

const runSynopsis = `-n N [--prefix] [--grace D] [--report-grace D] [--] PROGRAM [ARGS...]

Runs N ranks of PROGRAM on this host, like torchrun --standalone, each with
RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, MASTER_ADDR, MASTER_PORT and
DETCOLL_SECRET set. When a rank fails, the others get the report grace to
report and exit on their own; those left are then stopped (SIGTERM, then
SIGKILL after the grace). At the end, stderr says how each other rank ended
(on its own or stopped) and which rank failed first, and why. SIGINT and
SIGTERM stop all ranks at once. -n is required: a forgotten one would run a
single rank, which passes tests that need several. Flags end at PROGRAM or
at "--".`

// runRun is "detcoll run".
func runRun(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("run", runSynopsis, stderr)
	n := fs.Int("n", 0, "number of ranks, >= 1 (required)")
	prefix := fs.Bool("prefix", false, `put "[rank N] " before every line of output`)
	grace := fs.Duration("grace", launch.DefaultGrace, "time between SIGTERM and SIGKILL when stopping ranks")
	reportGrace := fs.Duration("report-grace", launch.DefaultReportGrace,
		"time the other ranks get, once a rank failed, to report and exit before they are stopped")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	switch {
	case *n < 1:
		if !flagSet(fs, "n") {
			return usagef("-n is required: the number of ranks to start")
		}
		return usagef("-n must be at least 1, got %d", *n)
	case fs.NArg() == 0:
		return usagef("no program to run")
	case *grace <= 0:
		return usagef("--grace must be positive, got %v", *grace)
	case *reportGrace <= 0:
		return usagef("--report-grace must be positive, got %v", *reportGrace)
	}

	err := launch.Run(ctx, launch.Config{
		N:           *n,
		Program:     fs.Arg(0),
		Args:        fs.Args()[1:],
		Env:         os.Environ(),
		Stdout:      stdout,
		Stderr:      stderr,
		Prefix:      *prefix,
		Grace:       *grace,
		ReportGrace: *reportGrace,
	})
	var ce *launch.ConfigError
	if errors.As(err, &ce) {
		return &usageError{err: ce.Err} // the field is an internal name: its error says it all
	}
	return ranksFailed(stderr, "detcoll run", err)
}

// rankFailed words a rank's failure for the command line, "rank 2 failed
// first: exit status 1" ("failed" in a world of one), and keeps the
// *launch.RankError for errors.As.
type rankFailed struct{ *launch.RankError }

func (e rankFailed) Error() string {
	if len(e.Ranks) > 1 {
		return fmt.Sprintf("rank %d failed first: %v", e.Rank, e.Err)
	}
	return fmt.Sprintf("rank %d failed: %v", e.Rank, e.Err)
}
func (e rankFailed) Unwrap() error { return e.RankError }

// printOthers writes a line to stderr for how each rank of a failed job
// other than the first to fail ended, "detcoll run: rank 0 exited with
// status 3, on its own 203ms after the first failure"; the caller returns
// the first failure. By then launch.Run has drained the ranks' output.
func printOthers(stderr io.Writer, prefix string, re *launch.RankError) {
	for _, x := range re.Ranks {
		if x.Rank != re.Rank {
			fmt.Fprintf(stderr, "%s: %v\n", prefix, x)
		}
	}
}
