package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/detcoll/detcoll/internal/launch"
)

const runSynopsis = `-n N [--prefix] [--grace D] [--] PROGRAM [ARGS...]

Runs N ranks of PROGRAM on this host, like torchrun --standalone, each with
RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, MASTER_ADDR, MASTER_PORT and
DETCOLL_SECRET set. When a rank fails, the others are stopped (SIGTERM, then
SIGKILL after the grace) and the failed rank is named; SIGINT and SIGTERM
stop all ranks the same way. -n is required: a forgotten one would run a
single rank, which passes tests that need several. Flags end at PROGRAM or
at "--".`

// runRun is "detcoll run".
func runRun(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("run", runSynopsis, stderr)
	n := fs.Int("n", 0, "number of ranks, >= 1 (required)")
	prefix := fs.Bool("prefix", false, `put "[rank N] " before every line of output`)
	grace := fs.Duration("grace", launch.DefaultGrace, "time between SIGTERM and SIGKILL when stopping ranks")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	switch {
	case *n < 1:
		return usagef("-n must be at least 1, got %d", *n)
	case fs.NArg() == 0:
		return usagef("no program to run")
	case *grace <= 0:
		return usagef("--grace must be positive, got %v", *grace)
	}

	err := launch.Run(ctx, launch.Config{
		N:       *n,
		Program: fs.Arg(0),
		Args:    fs.Args()[1:],
		Env:     os.Environ(),
		Stdout:  stdout,
		Stderr:  stderr,
		Prefix:  *prefix,
		Grace:   *grace,
	})
	var re *launch.RankError
	var ce *launch.ConfigError
	switch {
	case errors.As(err, &re):
		return rankFailed{re}
	case errors.As(err, &ce):
		return &usageError{err}
	}
	return err
}

// rankFailed words a rank's failure for the command line, "rank 2 failed:
// exit status 1", and keeps the *launch.RankError for errors.As.
type rankFailed struct{ *launch.RankError }

func (e rankFailed) Error() string { return fmt.Sprintf("rank %d failed: %v", e.Rank, e.Err) }
func (e rankFailed) Unwrap() error { return e.RankError }
