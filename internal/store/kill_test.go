package store

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Child processes: the test binary re-executed with DETCOLL_TEST_ROLE set
// runs one rank instead of the tests (as in os/exec's tests). It prints
// "ready <addr>" once it has joined, then waits for its stdin to close (the
// parent going away) or to be killed.
const (
	roleEnv   = "DETCOLL_TEST_ROLE"
	addrEnv   = "DETCOLL_TEST_STORE_ADDR"
	rankEnv   = "DETCOLL_TEST_RANK"
	worldEnv  = "DETCOLL_TEST_WORLD"
	secretEnv = "DETCOLL_TEST_SECRET"
)

func TestMain(m *testing.M) {
	if role := os.Getenv(roleEnv); role != "" {
		if err := runChild(role); err != nil {
			fmt.Fprintf(os.Stderr, "child %s: %v\n", role, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// runChild is a rank: "client" dials the store at $DETCOLL_TEST_STORE_ADDR;
// "server" hosts the store and dials it as rank 0, like rank 0 of a job;
// "fail" dials, calls Fail and exits.
func runChild(role string) error {
	world, err := strconv.Atoi(os.Getenv(worldEnv))
	if err != nil {
		return err
	}
	secret := []byte(os.Getenv(secretEnv))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	addr, rank := os.Getenv(addrEnv), 0
	switch role {
	case "server":
		s, err := Listen("127.0.0.1:0", world, secret)
		if err != nil {
			return err
		}
		defer s.Close()
		addr = s.Addr()
	case "client", "fail":
		if rank, err = strconv.Atoi(os.Getenv(rankEnv)); err != nil {
			return err
		}
	default:
		return fmt.Errorf("unknown role %q", role)
	}
	c, err := Dial(ctx, addr, rank, world, secret)
	if err != nil {
		return err
	}
	defer c.Close(ctx)
	fmt.Printf("ready %s\n", addr)
	if role == "fail" {
		c.Fail("child gave up")
		os.Exit(3) // at once, without Close: the reason must have arrived anyway
	}
	_, _ = io.Copy(io.Discard, os.Stdin) // until the parent closes stdin or dies
	return nil
}

// startChild starts this test binary as a rank in role and returns it once
// it has joined, with the store's address. Cleanup kills and reaps it.
func startChild(t *testing.T, role string, env ...string) (*exec.Cmd, string) {
	t.Helper()
	switch runtime.GOOS {
	case "js", "wasip1", "ios", "android":
		t.Skipf("cannot re-execute the test binary on %s", runtime.GOOS)
	}
	exe, err := os.Executable()
	if err != nil {
		t.Skipf("cannot find the test binary: %v", err)
	}
	ctx := t.Context()
	if d, ok := t.Deadline(); ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, d.Add(-5*time.Second))
		t.Cleanup(cancel)
	}
	cmd := exec.CommandContext(ctx, exe, "-test.run=^"+strings.Split(t.Name(), "/")[0]+"$")
	cmd.Env = append(slices.Clone(os.Environ()), append(env, roleEnv+"="+role, secretEnv+"="+string(testSecret))...)
	cmd.WaitDelay = 5 * time.Second
	var stderr strings.Builder
	cmd.Stderr = &stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Skipf("cannot start the test binary: %v", err)
	}
	t.Cleanup(func() {
		_ = stdin.Close()
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	line, err := bufio.NewReader(stdout).ReadString('\n')
	addr, ok := strings.CutPrefix(strings.TrimSpace(line), "ready ")
	if err != nil || !ok {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		t.Fatalf("child %s: read %q, %v; stderr:\n%s", role, line, err, stderr.String())
	}
	return cmd, addr
}

// TestKillClient kills a rank's process with SIGKILL and measures how long
// the other ranks take to see it.
func TestKillClient(t *testing.T) {
	const world, victim, trials = 3, 2, 3
	var times []time.Duration
	for i := range trials {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			checkLeaks(t)
			s := newServer(t, world, defaultHandshakeTimeout)
			clients := []*Client{dialRank(t, s.Addr(), 0, world), dialRank(t, s.Addr(), 1, world)}
			child, _ := startChild(t, "client", addrEnv+"="+s.Addr(),
				rankEnv+"="+strconv.Itoa(victim), worldEnv+"="+strconv.Itoa(world))
			start := time.Now()
			if err := child.Process.Kill(); err != nil {
				t.Fatal(err)
			}
			var slowest time.Duration
			for _, c := range clients {
				slowest = max(slowest, waitDone(t, c, start, time.Second))
				wantPeerError(t, "Err()", c.Err(), victim)
			}
			times = append(times, slowest)
		})
	}
	t.Logf("SIGKILL of rank %d's process to Done on every other rank: %v", victim, times)
}

// TestKillServer kills rank 0's process, which hosts the store: every other
// rank sees rank 0 lost.
func TestKillServer(t *testing.T) {
	checkLeaks(t)
	const world = 3
	child, addr := startChild(t, "server", worldEnv+"="+strconv.Itoa(world))
	clients := []*Client{dialRank(t, addr, 1, world), dialRank(t, addr, 2, world)}
	if err := clients[0].Set(t.Context(), "k", nil); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if err := child.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	var slowest time.Duration
	for _, c := range clients {
		slowest = max(slowest, waitDone(t, c, start, time.Second))
		wantPeerError(t, "Err()", c.Err(), 0)
	}
	t.Logf("SIGKILL of rank 0's process (the store) to Done on every other rank: %v", slowest)
}

// TestFailThenExit: a process that calls Fail and exits at once still
// delivers its reason (Fail waits for the server), rather than a bare drop.
func TestFailThenExit(t *testing.T) {
	checkLeaks(t)
	const world = 2
	s := newServer(t, world, defaultHandshakeTimeout)
	c := dialRank(t, s.Addr(), 0, world)
	startChild(t, "fail", addrEnv+"="+s.Addr(), rankEnv+"=1", worldEnv+"="+strconv.Itoa(world))
	waitDone(t, c, time.Now(), 5*time.Second)
	if pe := wantPeerError(t, "Err()", c.Err(), 1); pe.Reason != "child gave up" {
		t.Errorf("reason %q; want %q", pe.Reason, "child gave up")
	}
}
