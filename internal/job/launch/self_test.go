//go:build unix

package launch

import (
	"bytes"
	"errors"
	"io/fs"
	"os/exec"
	"testing"
)

// TestSelf runs two ranks of this test binary through Self, with this
// process's environment: one exits 0, one fails.
func TestSelf(t *testing.T) {
	h := newHarness(t) // for the directory and the check that nothing outlives the test
	t.Setenv(dirVar, h.dir)
	t.Setenv("GORACE", "atexit_sleep_ms=0")
	t.Setenv(roleVar, "*=ok")
	var stdout, stderr bytes.Buffer
	if err := Self(testContext(t), 2, []string{"-test.run=^$"}, &stdout, &stderr); err != nil {
		t.Errorf("Self with ranks that exit 0 = %v; want nil (stderr %q)", err, stderr.String())
	}
	t.Setenv(roleVar, "1=exit:3,*=report:0")
	err := Self(testContext(t), 2, []string{"-test.run=^$"}, &stdout, &stderr)
	var re *RankError
	if !errors.As(err, &re) || re.Rank != 1 || re.ExitCode != 3 {
		t.Errorf("Self with rank 1 exiting 3 = %v; want a *RankError for rank 1, status 3", err)
	}
}

// TestProgramError checks the words for a program that cannot be found,
// which detcoll run prints as they are.
func TestProgramError(t *testing.T) {
	h := newHarness(t)
	for _, tc := range []struct {
		program string
		want    string
		is      error
	}{
		{"detcoll-no-such-program", `program "detcoll-no-such-program" not found in $PATH`, exec.ErrNotFound},
		{"/nonexistent/detcoll", `program "/nonexistent/detcoll": no such file or directory`, fs.ErrNotExist},
	} {
		cfg := h.config(1, "*=ok")
		cfg.Program = tc.program
		err := Run(testContext(t), cfg)
		var ce *ConfigError
		if !errors.As(err, &ce) || ce.Field != "Program" || ce.Err.Error() != tc.want || !errors.Is(err, tc.is) {
			t.Errorf("Run with Program %q = %v; want a *ConfigError for Program saying %q and matching %v", tc.program, err, tc.want, tc.is)
		}
	}
}
