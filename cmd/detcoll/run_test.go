package main

import (
	"bytes"
	"errors"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/detcoll/detcoll/internal/job/launch"
)

// These tests launch /bin/sh as the ranks.
func needShell(t *testing.T) {
	if _, err := os.Stat("/bin/sh"); err != nil {
		t.Skipf("no /bin/sh: %v", err)
	}
}

func TestRunRankFails(t *testing.T) {
	needShell(t)
	var stdout, stderr bytes.Buffer
	err := run(t.Context(), []string{"run", "-n", "3", "--", "/bin/sh", "-c", "exit $(( RANK == 1 ))"}, &stdout, &stderr)
	var re *launch.RankError
	if !errors.As(err, &re) || re.Rank != 1 || re.ExitCode != 1 || exitCode(err) != 1 {
		t.Fatalf("run = %v; want rank 1 failed with status 1, exit 1", err)
	}
	if got, want := err.Error(), "detcoll run: rank 1 failed first: exit status 1"; got != want {
		t.Errorf("error text %q; want %q", got, want)
	}
}

func TestRunRankKilled(t *testing.T) {
	needShell(t)
	var stdout, stderr bytes.Buffer
	start := time.Now()
	const reportGrace = 300 * time.Millisecond
	err := run(t.Context(), []string{"run", "-n", "3", "--report-grace", reportGrace.String(), "--", "/bin/sh", "-c",
		`if [ "$RANK" = 2 ]; then kill -9 $$; fi; sleep 30`}, &stdout, &stderr)
	took := time.Since(start)
	var re *launch.RankError
	if !errors.As(err, &re) || re.Rank != 2 || re.Signal != syscall.SIGKILL {
		t.Fatalf("run = %v; want rank 2 killed by SIGKILL", err)
	}
	if got, want := err.Error(), "detcoll run: rank 2 failed first: signal: killed"; got != want {
		t.Errorf("error text %q; want %q", got, want)
	}
	for _, want := range []string{
		"detcoll run: rank 0 killed by signal: terminated, stopped by the launcher (SIGTERM) ",
		"detcoll run: rank 1 killed by signal: terminated, stopped by the launcher (SIGTERM) ",
	} {
		if !strings.Contains(stderr.String(), want) {
			t.Errorf("stderr %q lacks %q", stderr.String(), want)
		}
	}
	if took < reportGrace || took > reportGrace+launch.DefaultGrace/2 {
		t.Errorf("run took %v; the sleeping ranks should have died of SIGTERM at the end of the report grace of %v",
			took, reportGrace)
	}
}

func TestRunOutput(t *testing.T) {
	needShell(t)
	var stdout, stderr bytes.Buffer
	err := run(t.Context(), []string{"run", "-n", "2", "--prefix", "/bin/sh", "-c",
		`echo "rank $RANK of $WORLD_SIZE"; echo "err $LOCAL_RANK" >&2`}, &stdout, &stderr)
	if err != nil {
		t.Fatalf("run = %v; stderr %q", err, stderr.String())
	}
	for _, want := range []string{"[rank 0] rank 0 of 2\n", "[rank 1] rank 1 of 2\n"} {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("stdout %q lacks %q", stdout.String(), want)
		}
	}
	for _, want := range []string{"[rank 0] err 0\n", "[rank 1] err 1\n"} {
		if !strings.Contains(stderr.String(), want) {
			t.Errorf("stderr %q lacks %q", stderr.String(), want)
		}
	}
}

// TestRunProgramFlags checks that flags after PROGRAM are the program's.
func TestRunProgramFlags(t *testing.T) {
	needShell(t)
	var stdout, stderr bytes.Buffer
	err := run(t.Context(), []string{"run", "-n", "1", "/bin/sh", "-c", `printf '%s %s\n' "$0" "$1"`, "-n", "--grace"}, &stdout, &stderr)
	if err != nil || stdout.String() != "-n --grace\n" {
		t.Errorf("run = %v, stdout %q; want nil, %q", err, stdout.String(), "-n --grace\n")
	}
}

// TestRunSurvivorsReport has rank 1 fail at once and the others report on
// stderr 200 ms later, as detcoll's survivors do, and exit 3.
func TestRunSurvivorsReport(t *testing.T) {
	needShell(t)
	var stdout, stderr bytes.Buffer
	err := run(t.Context(), []string{"run", "-n", "3", "--prefix", "--", "/bin/sh", "-c",
		`if [ "$RANK" = 1 ]; then exit 1; fi; sleep 0.2; echo "saw rank 1 die" >&2; exit 3`}, &stdout, &stderr)
	var re *launch.RankError
	if !errors.As(err, &re) || re.Rank != 1 || re.ExitCode != 1 {
		t.Fatalf("run = %v; want rank 1 failed with status 1", err)
	}
	for _, want := range []string{
		"[rank 0] saw rank 1 die\n",
		"[rank 2] saw rank 1 die\n",
		"detcoll run: rank 0 exited with status 3, on its own ",
		"detcoll run: rank 2 exited with status 3, on its own ",
	} {
		if !strings.Contains(stderr.String(), want) {
			t.Errorf("stderr %q lacks %q", stderr.String(), want)
		}
	}
	if got, want := err.Error(), "detcoll run: rank 1 failed first: exit status 1"; got != want {
		t.Errorf("error text %q; want %q", got, want)
	}
}

func TestRunBadReportGrace(t *testing.T) {
	for _, d := range []string{"0s", "-1s"} {
		var stdout, stderr bytes.Buffer
		err := run(t.Context(), []string{"run", "-n", "2", "--report-grace", d, "true"}, &stdout, &stderr)
		if exitCode(err) != 2 || err == nil || !strings.Contains(err.Error(), "--report-grace must be positive") {
			t.Errorf("run with --report-grace %s = %v (exit %d); want a usage error, exit 2", d, err, exitCode(err))
		}
	}
}
