package launch

import (
	"fmt"
	"os"
)

// RankError reports the rank whose failure ended a job: the first one to
// exit with a non-zero status or by a signal.
type RankError struct {
	Rank     int
	ExitCode int       // the exit status; -1 when killed by a signal or unknown
	Signal   os.Signal // the signal that killed the rank; nil if none
	Err      error     // from os/exec: an *exec.ExitError, or why waiting failed
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
