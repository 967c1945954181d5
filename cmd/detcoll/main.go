// Command detcoll launches, checks and measures deterministic collectives.
//
//	detcoll COMMAND [FLAGS] [ARGS]
//
// Each command lives in a file of its own and registers in commands. A
// command only parses its flags: it fills its package's Config
// (internal/tools/bench, internal/tools/soak, internal/tools/plot, internal/tools/verify,
// internal/job/launch) and calls that package's Run. Results go to stdout,
// progress and errors to stderr. The exit status is 0 on success, 1 on
// failure and 2 for bad usage.
//
// It imports the tools' packages (the ones above, internal/tools/report,
// internal/tools/version, and internal/binding/mpiref, whose Built says whether bench's
// default reference is Open MPI) and of the library only internal/core/num, for
// element types by name; it must never reach a backend, the driver or the store itself,
// only through a tool's Run. imports_test.go holds the library to importing
// none of the tools.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"os/signal"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/detcoll/detcoll/internal/job/launch"
)

// command is one subcommand. run gets the arguments after the command's name
// and returns a *usageError for bad usage; the caller prints the error.
type command struct {
	run     func(ctx context.Context, args []string, stdout, stderr io.Writer) error
	summary string // one line for the command list
}

var commands = map[string]command{
	"bench":   {runBench, "time detcoll's collectives against Open MPI (cpu) or NCCL (cuda) and write a JSON report"},
	"plot":    {runPlot, "draw latency against size from bench reports, before and after (PNG and SVG)"},
	"run":     {runRun, "launch N local ranks of a program, like torchrun --standalone"},
	"soak":    {runSoak, "run random collectives for a long time, check every result, optionally kill a rank"},
	"verify":  {runVerify, "check on this machine that every collective is bit-for-bit deterministic"},
	"version": {runVersion, "print detcoll's version and commit, Go's, and the CUDA, NVRTC and NCCL versions found here"},
}

func main() {
	// The context ends at the first SIGINT or SIGTERM; later ones are caught
	// too (stop runs only after run returns), so that commands such as run
	// finish stopping their ranks instead of dying and orphaning them.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := runMain(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// runMain runs the command that args name, writes its error to stderr
// (with a hint after bad usage) and returns the exit status.
func runMain(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	err := run(ctx, args, stdout, stderr)
	if err != nil && !errors.Is(err, flag.ErrHelp) {
		fmt.Fprintln(stderr, err)
		var ue *usageError
		if errors.As(err, &ue) && ue.hint {
			fmt.Fprintf(stderr, "run 'detcoll %s -h' for usage\n", args[0])
		}
	}
	return exitCode(err)
}

// run runs the command that args name.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		usage(stderr)
		return &usageError{err: errors.New("detcoll: no command")}
	}
	switch args[0] {
	case "-h", "-help", "--help", "help":
		usage(stdout)
		return nil
	}
	cmd, ok := commands[args[0]]
	if !ok {
		// One line: the whole usage would bury what was wrong.
		return &usageError{err: fmt.Errorf("detcoll: unknown command %q; the commands are %s (detcoll -h says what each does)",
			args[0], strings.Join(slices.Sorted(maps.Keys(commands)), ", "))}
	}
	if err := cmd.run(ctx, args[1:], stdout, stderr); err != nil {
		return fmt.Errorf("detcoll %s: %w", args[0], ranksFailed(stderr, "detcoll "+args[0], err))
	}
	return nil
}

// ranksFailed words the failure of a job that a command started itself
// (bench and verify re-run themselves as ranks) as detcoll run does: a
// line on stderr for how each other rank ended, and an error naming the
// rank that failed first. Other errors come back as they are.
func ranksFailed(stderr io.Writer, prefix string, err error) error {
	var rf rankFailed
	var re *launch.RankError
	if errors.As(err, &rf) || !errors.As(err, &re) {
		return err
	}
	printOthers(stderr, prefix, re)
	return rankFailed{re}
}

func usage(w io.Writer) {
	fmt.Fprint(w, "usage: detcoll COMMAND [FLAGS] [ARGS]\n\ncommands:\n")
	for _, name := range slices.Sorted(maps.Keys(commands)) {
		fmt.Fprintf(w, "  %-8s %s\n", name, commands[name].summary)
	}
	fmt.Fprint(w, "\nRun 'detcoll COMMAND -h' for a command's flags.\n")
}

// usageError marks bad command-line use: exit status 2. With hint set,
// runMain follows the error with "run 'detcoll CMD -h' for usage": for a
// bad flag or flag value, not for a command line that is fine but names
// something missing (a program not in $PATH).
type usageError struct {
	err  error
	hint bool
}

func (e *usageError) Error() string { return e.err.Error() }
func (e *usageError) Unwrap() error { return e.err }

// usagef returns a *usageError for a bad flag value, with the hint.
func usagef(format string, args ...any) error {
	return badFlag(fmt.Errorf(format, args...))
}

// badFlag makes err, a bad flag or flag value, a *usageError with the
// hint.
func badFlag(err error) error { return &usageError{err: err, hint: true} }

// exitCode maps run's error to the exit status: -h is success.
func exitCode(err error) int {
	var ue *usageError
	switch {
	case err == nil, errors.Is(err, flag.ErrHelp):
		return 0
	case errors.As(err, &ue):
		return 2
	}
	return 1
}

// newFlagSet returns a flag set for a command that prints nothing itself:
// -h prints synopsis and flags to stderr (through parseFlags), and Parse's
// errors come back to parseFlags, which makes them usage errors.
func newFlagSet(name, synopsis string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: detcoll %s %s\n\nflags:\n", name, synopsis)
		fs.SetOutput(stderr)
		fs.PrintDefaults()
		fs.SetOutput(io.Discard)
	}
	return fs
}

// parseFlags parses args into fs. -h prints the usage and yields
// flag.ErrHelp (exit 0); a bad flag is a *usageError, which main prints
// as one line and a hint: the whole help would bury the line that says
// what was wrong.
func parseFlags(fs *flag.FlagSet, args []string) error {
	usage := fs.Usage
	fs.Usage = func() {} // Parse calls it for -h and for every error
	err := fs.Parse(args)
	fs.Usage = usage
	switch {
	case errors.Is(err, flag.ErrHelp):
		usage()
		return err
	case err != nil:
		return badFlag(withUnit(fs, err))
	}
	return nil
}

// flagSet reports whether the command line set the flag name.
func flagSet(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}

// badDuration is how package flag words a bad value: `invalid value "15"
// for flag -duration: parse error`.
var badDuration = regexp.MustCompile(`^invalid value "([^"]*)" for flag -([\w-]+): `)

// withUnit adds what a bad duration lacks, most often its unit ("15":
// use "15s"), to flag's "parse error", which says nothing of it.
func withUnit(fs *flag.FlagSet, err error) error {
	m := badDuration.FindStringSubmatch(err.Error())
	if m == nil {
		return err
	}
	f := fs.Lookup(m[2])
	if f == nil {
		return err
	}
	if _, ok := f.Value.(flag.Getter).Get().(time.Duration); !ok {
		return err
	}
	if _, perr := strconv.ParseFloat(m[1], 64); perr == nil {
		return fmt.Errorf("%w: a duration needs a unit, such as %ss or %sms", err, m[1], m[1])
	}
	return fmt.Errorf("%w: want a duration such as 90s, 5m or 1h30m", err)
}
