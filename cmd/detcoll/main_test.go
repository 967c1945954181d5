package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/detcoll/detcoll/internal/job/launch"
)

func TestRunCommandLine(t *testing.T) {
	tests := []struct {
		name       string
		args       []string
		wantCode   int
		wantStdout string // a substring
		wantStderr string // a substring
		wantErr    string // a substring
	}{
		{"no command", nil, 2, "", "usage: detcoll COMMAND", "no command"},
		{"unknown command", []string{"frobnicate"}, 2, "", "", `unknown command "frobnicate"; the commands are bench, plot, run, soak, verify, version`},
		{"help", []string{"-h"}, 0, "run ", "", ""},
		{"help word", []string{"help"}, 0, "run ", "", ""},
		{"run help", []string{"run", "-h"}, 0, "", "usage: detcoll run -n N", ""},
		{"run without -n", []string{"run", "--", "true"}, 2, "", "", "-n is required: the number of ranks to start"},
		{"a duration without a unit", []string{"soak", "--duration", "15"}, 2, "", "", `invalid value "15" for flag -duration: parse error: a duration needs a unit, such as 15s or 15ms`},
		{"a duration that is no duration", []string{"soak", "--duration", "soon"}, 2, "", "", "want a duration such as 90s, 5m or 1h30m"},
		{"a bad number stays as flag says", []string{"soak", "--calls", "many"}, 2, "", "", `invalid value "many" for flag -calls: parse error`},
		{"run -n 0", []string{"run", "-n", "0", "true"}, 2, "", "", "-n must be at least 1, got 0"},
		{"run -n negative", []string{"run", "-n", "-3", "true"}, 2, "", "", "got -3"},
		{"run -n not a number", []string{"run", "-n", "two", "true"}, 2, "", "", `invalid value "two" for flag -n`},
		{"run unknown flag", []string{"run", "-x", "-n", "1", "true"}, 2, "", "", "-x"},
		{"run without program", []string{"run", "-n", "2"}, 2, "", "", "no program to run"},
		{"run without program after --", []string{"run", "-n", "2", "--"}, 2, "", "", "no program to run"},
		{"run zero grace", []string{"run", "-n", "2", "--grace", "0s", "true"}, 2, "", "", "--grace must be positive"},
		{"verify negative hosts", []string{"verify", "--hosts", "-1"}, 2, "", "", "--hosts -1"},
		{"verify hosts on cuda not dividing", []string{"verify", "--backend", "cuda", "-n", "3", "--hosts", "2"}, 2, "", "", "--hosts 2: want a divisor of -n 3"},
		{"verify hosts not dividing", []string{"verify", "-n", "3", "--hosts", "2"}, 2, "", "", "--hosts 2: want a divisor of -n 3"},
		{"run program not found", []string{"run", "-n", "2", "--", "detcoll-no-such-program"}, 2, "", "", `program "detcoll-no-such-program" not found in $PATH`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			err := run(t.Context(), tt.args, &stdout, &stderr)
			msg := ""
			if err != nil {
				msg = err.Error()
			}
			if code := exitCode(err); code != tt.wantCode || !strings.Contains(msg, tt.wantErr) ||
				!strings.Contains(stdout.String(), tt.wantStdout) || !strings.Contains(stderr.String(), tt.wantStderr) {
				t.Errorf("run(%q) = %v (exit %d), stdout %q, stderr %q; want exit %d, error with %q, stdout with %q, stderr with %q",
					tt.args, err, code, stdout.String(), stderr.String(), tt.wantCode, tt.wantErr, tt.wantStdout, tt.wantStderr)
			}
		})
	}
}

// TestUnknownCommandIsOneLine: a mistyped command gets one line naming
// the commands, not the whole usage.
func TestUnknownCommandIsOneLine(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if code := runMain(t.Context(), []string{"verfy"}, &stdout, &stderr); code != 2 || stdout.Len() != 0 || strings.Count(stderr.String(), "\n") != 1 {
		t.Errorf("detcoll verfy: exit %d, stdout %q, stderr %q; want exit 2 and one line", code, stdout.String(), stderr.String())
	}
}

// TestHelpDefaults: no flag's help says its default twice (package flag
// appends "(default X)" itself).
func TestHelpDefaults(t *testing.T) {
	for _, cmd := range slices.Sorted(maps.Keys(commands)) {
		var stdout, stderr bytes.Buffer
		runMain(t.Context(), []string{cmd, "-h"}, &stdout, &stderr)
		for _, line := range strings.Split(stderr.String(), "\n") {
			if strings.Count(line, "(default") > 1 {
				t.Errorf("detcoll %s -h: %q", cmd, line)
			}
		}
	}
}

// TestBadFlag checks what a new user sees after a mistyped flag: one line
// saying what was wrong and a hint, not the whole help, and exit status 2.
func TestBadFlag(t *testing.T) {
	for _, cmd := range slices.Sorted(maps.Keys(commands)) {
		t.Run(cmd, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := runMain(t.Context(), []string{cmd, "-foo"}, &stdout, &stderr)
			want := "detcoll " + cmd + ": flag provided but not defined: -foo\nrun 'detcoll " + cmd + " -h' for usage\n"
			if code != 2 || stdout.Len() != 0 || stderr.String() != want {
				t.Errorf("detcoll %s -foo: exit %d, stdout %q, stderr %q; want exit 2, no stdout, stderr %q",
					cmd, code, stdout.String(), stderr.String(), want)
			}
		})
	}
	// A bad flag value reads the same way.
	var stdout, stderr bytes.Buffer
	code := runMain(t.Context(), []string{"bench", "--warmup", "-1"}, &stdout, &stderr)
	if want := "detcoll bench: warmup -1: want >= 0\nrun 'detcoll bench -h' for usage\n"; code != 2 || stderr.String() != want {
		t.Errorf("detcoll bench --warmup -1: exit %d, stderr %q; want exit 2, stderr %q", code, stderr.String(), want)
	}
}

// TestHelp checks that -h prints the command's usage and flags to stderr
// and exits 0.
func TestHelp(t *testing.T) {
	for _, cmd := range slices.Sorted(maps.Keys(commands)) {
		var stdout, stderr bytes.Buffer
		code := runMain(t.Context(), []string{cmd, "-h"}, &stdout, &stderr)
		if code != 0 || !strings.HasPrefix(stderr.String(), "usage: detcoll "+cmd+" ") {
			t.Errorf("detcoll %s -h: exit %d, stderr %q; want exit 0 and the usage", cmd, code, stderr.String())
		}
	}
}

// TestRunMissingProgram checks that run names the program it cannot find,
// in one line without the usage hint (the command line was fine).
func TestRunMissingProgram(t *testing.T) {
	var stdout, stderr bytes.Buffer
	code := runMain(t.Context(), []string{"run", "-n", "2", "nosuch-detcoll-program"}, &stdout, &stderr)
	if want := "detcoll run: program \"nosuch-detcoll-program\" not found in $PATH\n"; code != 2 || stderr.String() != want {
		t.Errorf("detcoll run nosuch-detcoll-program: exit %d, stderr %q; want exit 2, stderr %q", code, stderr.String(), want)
	}
}

// TestRanksFailed checks that a job a command started itself (bench and
// verify re-run themselves) fails in detcoll run's words.
func TestRanksFailed(t *testing.T) {
	re := &launch.RankError{Rank: 1, ExitCode: 3, Err: errors.New("exit status 3")}
	re.Ranks = []launch.RankExit{{Rank: 0, After: 5 * time.Millisecond}, {Rank: 1, Err: &launch.RankError{Rank: 1, ExitCode: 3}}}
	var stderr bytes.Buffer
	err := ranksFailed(&stderr, "detcoll bench", re)
	if got, want := err.Error(), "rank 1 failed first: exit status 3"; got != want {
		t.Errorf("ranksFailed = %q; want %q", got, want)
	}
	if got, want := stderr.String(), "detcoll bench: rank 0 exited with status 0, on its own 5ms after the first failure\n"; got != want {
		t.Errorf("stderr %q; want %q", got, want)
	}
	// Words already chosen, and other errors, pass as they are.
	stderr.Reset()
	if err := ranksFailed(&stderr, "detcoll verify", rankFailed{re}); !errors.Is(err, re) || stderr.Len() != 0 {
		t.Errorf("ranksFailed(rankFailed) = %v, stderr %q; want it unchanged, nothing printed", err, stderr.String())
	}
	if other := errors.New("x"); ranksFailed(&stderr, "detcoll bench", other) != other {
		t.Error("ranksFailed changed an error that names no rank")
	}
}

func TestExitCode(t *testing.T) {
	for _, tt := range []struct {
		err  error
		want int
	}{
		{nil, 0},
		{flag.ErrHelp, 0},
		{usagef("bad"), 2},
		{errors.Join(errors.New("x"), &usageError{err: errors.New("bad")}), 2},
		{errors.New("failed"), 1},
		{context.Canceled, 1},
	} {
		if got := exitCode(tt.err); got != tt.want {
			t.Errorf("exitCode(%v) = %d; want %d", tt.err, got, tt.want)
		}
	}
}

// TestCUDAWithoutADriver: --backend cuda on a machine without a CUDA
// driver is one line before any rank starts, not the same long error from
// every rank.
func TestCUDAWithoutADriver(t *testing.T) {
	if launch.NeedCUDA() == nil {
		t.Skip("this machine has a CUDA driver")
	}
	for _, args := range [][]string{
		{"verify", "--backend", "cuda", "-n", "2"},
		{"soak", "--backend", "cuda", "-n", "2"},
		{"bench", "--backend", "cuda", "-n", "2", "--reference", "none"},
	} {
		var stdout, stderr bytes.Buffer
		code := runMain(t.Context(), args, &stdout, &stderr)
		if code != 1 || strings.Count(stderr.String(), "\n") != 1 || !strings.Contains(stderr.String(), "--backend cuda: ") {
			t.Errorf("detcoll %q: exit %d, stderr %q; want exit 1 and one line", args, code, stderr.String())
		}
	}
}
