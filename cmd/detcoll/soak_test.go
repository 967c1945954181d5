package main

import (
	"github.com/detcoll/detcoll/internal/job/launch"

	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/detcoll/detcoll/internal/core/num"
	"github.com/detcoll/detcoll/internal/tools/soak"
)

// soakTest runs detcoll soak with args (its ranks are this test binary,
// as the command) in a shared-memory directory of the test's own, and
// returns the exit status, stdout, stderr and the JSON summary.
func soakTest(t *testing.T, args ...string) (int, string, string, *soak.Summary) {
	t.Helper()
	t.Setenv(testMainVar, "1")
	shm, err := os.MkdirTemp("/dev/shm", "detcoll-soaktest-")
	if err != nil {
		t.Skipf("no /dev/shm: %v", err)
	}
	t.Cleanup(func() { os.RemoveAll(shm) })
	t.Setenv("DETCOLL_SHM_DIR", shm)
	out := filepath.Join(t.TempDir(), "soak.json")
	var stdout, stderr bytes.Buffer
	err = run(t.Context(), append([]string{"soak", "--output", out}, args...), &stdout, &stderr)
	code := exitCode(err)
	var sum *soak.Summary
	if data, rerr := os.ReadFile(out); rerr == nil {
		sum = new(soak.Summary)
		if err := json.Unmarshal(data, sum); err != nil {
			t.Fatalf("the summary does not decode: %v\n%s", err, data)
		}
	}
	if left, _ := filepath.Glob(filepath.Join(shm, "*")); len(left) > 0 {
		t.Errorf("left in the test's shared-memory directory: %v", left)
	}
	return code, stdout.String(), stderr.String(), sum
}

// TestSoak runs short soaks at W=2 and 3: every call checked, none wrong,
// every operation made, exit status 0 and a summary that says so.
func TestSoak(t *testing.T) {
	for _, n := range []string{"2", "3"} {
		t.Run("W="+n, func(t *testing.T) {
			calls := "300"
			if testing.Short() {
				calls = "100"
			}
			code, stdout, stderr, sum := soakTest(t, "-n", n, "--calls", calls, "--max-bytes", "1MiB", "--seed", "11")
			if code != 0 || sum == nil || !sum.Pass {
				t.Fatalf("exit %d; stdout:\n%s\nstderr:\n%s", code, stdout, stderr)
			}
			if !strings.Contains(stdout, "PASS") || !strings.Contains(stdout, calls+" calls") {
				t.Errorf("stdout %q; want the totals and PASS", stdout)
			}
			if sum.Kind != soak.Kind || sum.SchemaVersion != soak.SchemaVersion || fmt.Sprint(sum.Total.Calls) != calls ||
				sum.Total.Failures != 0 || len(sum.Ranks) != sum.Config.WorldSize || sum.Meta.GoVersion == "" || !sum.LeakChecked {
				t.Errorf("summary: %+v", sum)
			}
			for _, r := range sum.Ranks {
				// The operations, a reduction's operators apart
				// ("all_reduce/max" is all_reduce).
				ops := map[string]bool{}
				for k := range r.CallsByOp {
					if i := strings.LastIndex(k, "/"); i >= 0 {
						if _, err := num.ParseRedOp(k[i+1:]); err == nil {
							k = k[:i]
						}
					}
					ops[k] = true
				}
				if fmt.Sprint(r.Calls) != calls || r.Checks < r.Calls || r.Error != "" || len(ops) != 9 {
					t.Errorf("rank %d: %d calls, %d checks, error %q, %d operations; want %s calls, all 9 operations",
						r.Rank, r.Calls, r.Checks, r.Error, len(ops), calls)
				}
			}
		})
	}
}

// TestSoakCorrupt proves the command can fail: a bit flipped in one
// output is a wrong result, named in the summary, and exit status 1.
func TestSoakCorrupt(t *testing.T) {
	code, stdout, stderr, sum := soakTest(t, "-n", "2", "--calls", "100", "--max-bytes", "256KiB", "--corrupt-call", "42")
	if code != 1 || sum == nil || sum.Pass || sum.Total.Failures != 1 || len(sum.Total.Details) != 1 || sum.Total.Details[0].Call != 42 {
		t.Fatalf("exit %d, summary %+v; want exit 1 and call 42 failed\nstdout:\n%s\nstderr:\n%s", code, sum, stdout, stderr)
	}
	if !strings.Contains(stdout, "FAIL") || !strings.Contains(stdout, "call 42") {
		t.Errorf("stdout %q; want FAIL naming call 42", stdout)
	}
}

// TestSoakKill kills rank 2 of 3 amid the calls: both survivors must
// report detcoll.ErrPeerLost naming it within the bound, close, and leave
// nothing; the exit status is then 0.
func TestSoakKill(t *testing.T) {
	code, stdout, stderr, sum := soakTest(t, "-n", "3", "--duration", "20s", "--max-bytes", "1MiB",
		"--kill-during", "call", "--kill-rank-after", "300ms", "--kill-bound", "1s")
	if code != 0 || sum == nil || !sum.Pass || sum.Kill == nil || !sum.Kill.OK {
		t.Fatalf("exit %d, summary %+v; want exit 0 and the kill handled\nstdout:\n%s\nstderr:\n%s", code, sum, stdout, stderr)
	}
	if k := sum.Kill; k.Rank != 2 || k.Phase != soak.PhaseCall || len(k.TimesToErrorMS) != 2 || k.SlowestMS < 0 || k.SlowestMS > 1000 {
		t.Errorf("kill report %+v; want rank 2 killed in a call, two survivors within 1000 ms", k)
	}
	for _, r := range sum.Ranks[:2] {
		s := r.Survivor
		if s == nil || !s.OK || !s.PeerLost || s.NamedRank != 2 || s.Phase != soak.PhaseCall {
			t.Errorf("rank %d: survivor %+v; want ErrPeerLost naming rank 2 in a call", r.Rank, s)
		}
	}
	if len(sum.Leaked) != 0 {
		t.Errorf("leaked: %v", sum.Leaked)
	}
	if !strings.Contains(stdout, "slowest survivor") {
		t.Errorf("stdout %q; want the kill's line", stdout)
	}
}

// TestSoakKillDuringOpen: a rank killed a few milliseconds into Open,
// before it joined the rendezvous (or, rank 0, before it hosted it), is
// reported by the launcher, so the survivors fail naming it within the
// bound, not at their timeout.
func TestSoakKillDuringOpen(t *testing.T) {
	for _, victim := range []string{"0", "2"} {
		for _, after := range []string{"1ms", "5ms"} {
			t.Run("rank="+victim+"/after="+after, func(t *testing.T) {
				code, stdout, stderr, sum := soakTest(t, "-n", "3", "--calls", "100", "--max-bytes", "64KiB", "--timeout", "30s",
					"--kill-during", "open", "--kill-rank", victim, "--kill-rank-after", after, "--kill-bound", "1s")
				if code != 0 || sum == nil || !sum.Pass || sum.Kill == nil || !sum.Kill.OK {
					t.Fatalf("exit %d, summary %+v; want exit 0 and the kill handled\nstdout:\n%s\nstderr:\n%s", code, sum, stdout, stderr)
				}
				t.Logf("%s", strings.TrimSpace(stdout))
			})
		}
	}
}

func TestSoakRefuses(t *testing.T) {
	for _, args := range [][]string{
		{"-n", "0"},
		{"--backend", "tpu"},
		{"--max-bytes", "3"},
		{"--max-bytes", "lots"},
		{"--delay-prob", "2"},
		{"--kill-during", "lunch"},
		{"-n", "1", "--kill-during", "call"},
		{"-n", "2", "--kill-rank", "5", "--kill-during", "call"},
		{"--kill-bound", "0s", "--kill-during", "call"},
	} {
		var stdout, stderr bytes.Buffer
		err := run(t.Context(), append([]string{"soak"}, args...), &stdout, &stderr)
		if code := exitCode(err); code != 2 {
			t.Errorf("soak %q: exit %d (%v); want 2", args, code, err)
		}
	}
}

// TestSoakCUDAUnavailable: without a CUDA driver the cuda soak fails
// (exit 1) before it starts a rank, saying so once, and writes no summary;
// with a driver but no usable GPU it fails with the backend's error in
// the summary. It never hangs.
func TestSoakCUDAUnavailable(t *testing.T) {
	if os.Getenv("DETCOLL_REQUIRE_GPU") != "" {
		t.Skip("a GPU is required here: the cuda soak would run")
	}
	code, stdout, stderr, sum := soakTest(t, "-n", "1", "--backend", "cuda", "--calls", "10")
	if sum != nil && sum.Pass {
		t.Skip("a GPU is here: the cuda soak passed")
	}
	if launch.NeedCUDA() != nil {
		if code != 1 || sum != nil || stdout != "" {
			t.Fatalf("no driver: exit %d, summary %+v, stdout %q; want exit 1 and nothing written", code, sum, stdout)
		}
		return
	}
	if code != 1 || sum == nil || len(sum.Problems) == 0 {
		t.Fatalf("exit %d, summary %+v; want exit 1 and a problem\nstdout:\n%s\nstderr:\n%s", code, sum, stdout, stderr)
	}
}
