package launch

import (
	"fmt"
	"os"
	"syscall"
	"time"
)

// RankError reports the rank whose failure ended a job: the first one to
// exit with a non-zero status or by a signal.
type RankError struct {
	Rank     int
	ExitCode int       // the exit status; -1 when killed by a signal or unknown
	Signal   os.Signal // the signal that killed the rank; nil if none
	Err      error     // from os/exec: an *exec.ExitError, or why waiting failed

	// Ranks is how every rank of the job ended, by rank, this one
	// included; set on the error Run returns, nil in Ranks' own entries.
	Ranks []RankExit
}

// Error says "rank 2 exited with status 1" or "rank 1 killed by signal:
// killed".
func (e *RankError) Error() string {
	switch {
	case e.Signal != nil:
		return fmt.Sprintf("rank %d killed by signal: %v", e.Rank, e.Signal)
	case e.ExitCode >= 0:
		return fmt.Sprintf("rank %d exited with status %d", e.Rank, e.ExitCode)
	}
	return fmt.Sprintf("rank %d: %v", e.Rank, e.Err)
}

// Unwrap returns e.Err.
func (e *RankError) Unwrap() error { return e.Err }

// RankExit is how one rank of a failed job ended.
type RankExit struct {
	Rank int
	Err  *RankError // nil for status 0

	// Stopped is the last signal Run had sent the rank's group when the
	// rank ended, SIGTERM or SIGKILL; nil for a rank that ended on its own.
	// A rank that ends just as the signal is sent counts as stopped.
	Stopped os.Signal

	// After is the time from the job's first failure to this rank's end,
	// negative for a rank that ended before it, as Run saw them.
	After time.Duration
}

// String says how the rank ended, e.g. "rank 0 exited with status 3 on
// its own, 203ms after the first failure" or "rank 2 killed by signal:
// terminated, stopped by the launcher (SIGTERM) 2.001s after the first
// failure".
func (x RankExit) String() string {
	what := fmt.Sprintf("rank %d exited with status 0", x.Rank)
	if x.Err != nil {
		what = x.Err.Error()
	}
	how := "on its own"
	if x.Stopped != nil {
		how = fmt.Sprintf("stopped by the launcher (%v)", signalName(x.Stopped))
	}
	when := "at the first failure"
	switch d := x.After.Round(time.Millisecond); {
	case d > 0:
		when = fmt.Sprintf("%v after the first failure", d)
	case d < 0:
		when = fmt.Sprintf("%v before the first failure", -d)
	}
	return what + ", " + how + " " + when
}

// signalName is "SIGTERM" for what Run sends; "terminated", the signal's
// own text, would read as the rank's fate.
func signalName(s os.Signal) string {
	switch s {
	case syscall.SIGTERM:
		return "SIGTERM"
	case syscall.SIGKILL:
		return "SIGKILL"
	}
	return s.String()
}
