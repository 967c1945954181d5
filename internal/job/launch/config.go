package launch

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"time"

	"github.com/detcoll/detcoll/internal/job/jobenv"
)

// DefaultGrace is the Grace of a Config that leaves it zero.
const DefaultGrace = 5 * time.Second

// DefaultReportGrace is the ReportGrace of a Config that leaves it zero:
// detcoll's survivors fail within milliseconds of a peer's death, so 2 s is
// ample for them to report and exit.
const DefaultReportGrace = 2 * time.Second

// Config describes a job for [Run]. Zero fields mean defaults.
type Config struct {
	N       int      // ranks, >= 1
	Program string   // looked up in the launcher's $PATH unless it contains a slash
	Args    []string // arguments after the program name

	// Env is the base environment of every rank; nil means os.Environ().
	// Run removes what would mislead jobenv.FromEnv in a rank (jobenv.Strip) and
	// adds the job's variables.
	Env []string

	// Stdout and Stderr receive the ranks' output; nil discards it. An
	// *os.File is handed to the ranks as it is unless Prefix is set;
	// anything else is fed whole lines through a pipe, one writer at a time.
	Stdout, Stderr io.Writer

	// Prefix puts "[rank N] " before every line a rank writes. Lines are
	// never interleaved; a line longer than 64 KiB is cut.
	Prefix bool

	// Grace is how long stopping ranks get between SIGTERM and SIGKILL;
	// zero means DefaultGrace.
	Grace time.Duration

	// ReportGrace is how long the other ranks get, once a rank failed, to
	// report the failure and exit on their own before Run stops them;
	// zero means DefaultReportGrace.
	ReportGrace time.Duration

	// started, when set, is called with each rank's pid as it starts: the
	// tests use it to check that no rank outlives Run.
	started func(rank, pid int)
}

// ConfigError reports a Config field that Run cannot use.
type ConfigError struct {
	Field string // e.g. "N"
	Err   error
}

func (e *ConfigError) Error() string { return "launch: Config." + e.Field + ": " + e.Err.Error() }

// Unwrap returns e.Err.
func (e *ConfigError) Unwrap() error { return e.Err }

func (c Config) withDefaults() Config {
	if c.Env == nil {
		c.Env = os.Environ()
	}
	if c.Stdout == nil {
		c.Stdout = io.Discard
	}
	if c.Stderr == nil {
		c.Stderr = io.Discard
	}
	if c.Grace == 0 {
		c.Grace = DefaultGrace
	}
	if c.ReportGrace == 0 {
		c.ReportGrace = DefaultReportGrace
	}
	return c
}

// validate checks c and returns the program's path.
func (c Config) validate() (path string, err error) {
	switch {
	case c.N < 1 || c.N > jobenv.MaxWorld:
		return "", &ConfigError{"N", fmt.Errorf("%d ranks is not in [1, %d]", c.N, jobenv.MaxWorld)}
	case c.Grace < 0:
		return "", &ConfigError{"Grace", fmt.Errorf("%v is negative", c.Grace)}
	case c.ReportGrace < 0:
		return "", &ConfigError{"ReportGrace", fmt.Errorf("%v is negative", c.ReportGrace)}
	case c.Program == "":
		return "", &ConfigError{"Program", errors.New("empty")}
	}
	path, err = exec.LookPath(c.Program)
	if err != nil {
		return "", &ConfigError{"Program", newProgramError(c.Program, err)}
	}
	return path, nil
}

// programError is a program that exec.LookPath refused, worded for the
// person who typed it: `program "nosuch" not found in $PATH`, or
// `program "./x": permission denied`. It unwraps to LookPath's cause
// (exec.ErrNotFound, fs.ErrNotExist, fs.ErrPermission, ...).
type programError struct {
	name string
	err  error
}

// newProgramError drops the wrappers of err that repeat the name.
func newProgramError(name string, err error) *programError {
	var ee *exec.Error
	if errors.As(err, &ee) {
		err = ee.Err
	}
	var pe *fs.PathError
	if errors.As(err, &pe) {
		err = pe.Err
	}
	return &programError{name, err}
}

func (e *programError) Error() string {
	if errors.Is(e.err, exec.ErrNotFound) {
		return fmt.Sprintf("program %q not found in $PATH", e.name)
	}
	return fmt.Sprintf("program %q: %v", e.name, e.err)
}

func (e *programError) Unwrap() error { return e.err }
