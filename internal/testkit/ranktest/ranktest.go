// Package ranktest runs multi-process tests: a test starts W copies of its
// own test binary as the ranks of a job, each running a named role, and
// collects how each ended (Run), or starts one child it then talks to and
// kills (Start). It follows os/exec's tests: the child is the test binary
// itself, selected by an environment variable in TestMain (Main).
//
// A role's parameters belong in the table its name comes from (as
// internal/testkit/conformance's cases), not in the environment; a child started
// by a -short test runs with -test.short, so testing.Short answers there
// too.
//
// Children get the same variables detcoll run sets (RANK, WORLD_SIZE,
// MASTER_ADDR, MASTER_PORT, DETCOLL_SECRET, ...), so a role opens its
// communicator exactly as a user's program would. Each job also gets a
// shared-memory directory of its own, which must be empty when the ranks
// are gone: a leaked segment fails the test.
//
// It imports the standard library only, nothing of the module, so that every
// package's tests can use it (the store's and the driver's among them). It
// is a test package: the library and the tools must never import it.
package ranktest

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"flag"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

const roleEnv = "DETCOLL_TEST_ROLE"

// Role is the body of one rank: it returns nil when the rank's checks
// passed. What it prints goes to the parent's Result.Output.
type Role func() error

// Main runs the role this process was started for, if it was started by
// Run or Start, and exits; otherwise it returns. Call it first in
// TestMain.
func Main(roles map[string]Role) {
	name := os.Getenv(roleEnv)
	if name == "" {
		return
	}
	flag.Parse() // for testing.Short; m.Run, which would parse, never runs
	role, ok := roles[name]
	if !ok {
		fmt.Fprintf(os.Stderr, "ranktest: unknown role %q\n", name)
		os.Exit(3)
	}
	if err := role(); err != nil {
		fmt.Fprintf(os.Stderr, "rank %s: FAIL: %v\n", os.Getenv("RANK"), err)
		os.Exit(1)
	}
	os.Exit(0)
}

// Result is how one rank ended.
type Result struct {
	Rank     int
	ExitCode int // -1 when killed by a signal
	Signal   syscall.Signal
	Output   string // stdout and stderr together
}

// Failed reports whether the rank did not exit 0.
func (r Result) Failed() bool { return r.ExitCode != 0 }

// Run starts world ranks in role with the extra environment env
// ("KEY=VALUE"), waits for all of them and returns their results, by rank.
// The ranks are bound to the test's deadline (less a margin) and to
// timeout, whichever is sooner; t fails if any is still running then, or
// if any shared-memory file is left behind.
func Run(t *testing.T, world int, role string, timeout time.Duration, env ...string) []Result {
	t.Helper()
	exe := executable(t)
	shm := ShmDir(t)
	ctx, cancel := context.WithDeadline(context.Background(), deadline(t, timeout))
	defer cancel()

	port := freePort(t)
	secret := make([]byte, 32)
	rand.Read(secret)
	base := append(os.Environ(),
		roleEnv+"="+role,
		"WORLD_SIZE="+strconv.Itoa(world),
		"LOCAL_WORLD_SIZE="+strconv.Itoa(world),
		"MASTER_ADDR=127.0.0.1",
		"MASTER_PORT="+strconv.Itoa(port),
		"DETCOLL_SECRET="+hex.EncodeToString(secret),
		"DETCOLL_SHM_DIR="+shm,
	)
	base = append(base, env...)

	results := make([]Result, world)
	outs := make([]*bytes.Buffer, world)
	cmds := make([]*exec.Cmd, world)
	for r := range world {
		cmd := exec.CommandContext(ctx, exe, childArgs()...)
		cmd.Env = append(append([]string(nil), base...), "RANK="+strconv.Itoa(r), "LOCAL_RANK="+strconv.Itoa(r))
		outs[r] = new(bytes.Buffer)
		cmd.Stdout = &lockedWriter{w: outs[r]}
		cmd.Stderr = cmd.Stdout
		cmd.WaitDelay = 5 * time.Second
		if err := cmd.Start(); err != nil {
			cancel() // kills the ranks already started...
			for _, started := range cmds[:r] {
				started.Wait() // ...and reaps them
			}
			t.Fatalf("start rank %d: %v", r, err)
		}
		cmds[r] = cmd
	}
	var wg sync.WaitGroup
	for r, cmd := range cmds {
		wg.Go(func() {
			cmd.Wait()
			res := Result{Rank: r, ExitCode: cmd.ProcessState.ExitCode()}
			if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
				res.Signal = ws.Signal()
			}
			results[r] = res
		})
	}
	wg.Wait()
	if ctx.Err() != nil {
		t.Errorf("ranks of role %s still running after %v: killed", role, timeout)
	}
	for r := range results {
		results[r].Output = outs[r].String()
	}
	checkShmEmpty(t, shm)
	return results
}

// executable returns the test binary, or skips t where it cannot be
// re-executed.
func executable(t testing.TB) string {
	t.Helper()
	switch runtime.GOOS {
	case "js", "wasip1", "ios", "android":
		t.Skipf("cannot re-execute the test binary on %s", runtime.GOOS)
	}
	exe, err := os.Executable()
	if err != nil {
		t.Skipf("cannot re-execute the test binary: %v", err)
	}
	return exe
}

// deadline is when children must be gone: after timeout, or 5 s before
// the test's own deadline, whichever is sooner.
func deadline(t testing.TB, timeout time.Duration) time.Time {
	d := time.Now().Add(timeout)
	if td, ok := t.(interface{ Deadline() (time.Time, bool) }); ok {
		if end, ok := td.Deadline(); ok && end.Add(-5*time.Second).Before(d) {
			d = end.Add(-5 * time.Second)
		}
	}
	return d
}

// childArgs are a child's flags: no tests of its own, no timeout of its
// own (the parent bounds it), and -short if the parent runs -short.
func childArgs() []string {
	args := []string{"-test.run=^$", "-test.timeout=0"}
	if testing.Short() {
		args = append(args, "-test.short")
	}
	return args
}

// RequireOK fails t unless every rank exited 0, showing each failure's
// output.
func RequireOK(t testing.TB, results []Result) {
	t.Helper()
	for _, r := range results {
		if r.Failed() {
			t.Errorf("rank %d exited %d (signal %v):\n%s", r.Rank, r.ExitCode, r.Signal, r.Output)
		}
	}
}

// ShmDir makes a private directory in /dev/shm for one job's segments and
// removes it when the test ends.
func ShmDir(t testing.TB) string {
	t.Helper()
	dir, err := os.MkdirTemp("/dev/shm", "detcoll-test-")
	if err != nil {
		t.Skipf("no /dev/shm: %v", err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

func checkShmEmpty(t testing.TB, dir string) {
	t.Helper()
	left, _ := filepath.Glob(filepath.Join(dir, "*"))
	if len(left) > 0 {
		t.Errorf("shared memory left behind: %s", strings.Join(left, ", "))
	}
}

func freePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("find a free port: %v", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

type lockedWriter struct {
	mu sync.Mutex
	w  *bytes.Buffer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
