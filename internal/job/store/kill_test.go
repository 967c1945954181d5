package store

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/detcoll/detcoll/internal/job/proc"
	"github.com/detcoll/detcoll/internal/testkit/ranktest"
)

// Child processes: the test binary re-executed by ranktest.Start runs one
// rank in a role instead of the tests. It prints "ready <addr>" once it
// has joined, then waits for its stdin to close (the parent going away)
// or to be killed. The store's address, the rank and the job's size and
// secret are known only when the test runs: they reach the child in its
// environment.
const (
	addrEnv   = "DETCOLL_TEST_STORE_ADDR"
	rankEnv   = "DETCOLL_TEST_RANK"
	worldEnv  = "DETCOLL_TEST_WORLD"
	secretEnv = "DETCOLL_TEST_SECRET"
)

// roles: "client" dials the store at $DETCOLL_TEST_STORE_ADDR; "server"
// hosts the store and dials it as rank 0, like rank 0 of a job; "fail"
// dials, calls Fail and exits.
var roles = map[string]ranktest.Role{
	"client": func() error { return runChild("client") },
	// "orphan": a client whose connection a child process of its own
	// (sleep) also holds, so that the connection outlives it.
	"orphan": func() error { return runChild("orphan") },
	// "remote": a client that claims another machine's identity, so that
	// the store holds it to the remote silence limit.
	"remote": func() error {
		self = func() proc.Identity {
			id := proc.Self()
			id.Boot = "another machine's boot id"
			return id
		}
		return runChild("client")
	},
	"server": func() error { return runChild("server") },
	"fail":   func() error { return runChild("fail") },
}

func TestMain(m *testing.M) {
	ranktest.Main(roles)
	os.Exit(m.Run())
}

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
	case "client", "fail", "orphan":
		if rank, err = strconv.Atoi(os.Getenv(rankEnv)); err != nil {
			return err
		}
	}
	c, err := Dial(ctx, addr, rank, world, secret)
	if err != nil {
		return err
	}
	defer c.Close(ctx)
	if role == "orphan" {
		f, err := c.conn.(*net.TCPConn).File() // a duplicate without close-on-exec
		if err != nil {
			return err
		}
		holder := exec.Command("sleep", "30")
		holder.ExtraFiles = []*os.File{f}
		if err := holder.Start(); err != nil {
			return err
		}
		fmt.Printf("holder %d\n", holder.Process.Pid)
	}
	fmt.Printf("ready %s\n", addr)
	if role == "fail" {
		c.Fail("child gave up")
		os.Exit(3) // at once, without Close: the reason must have arrived anyway
	}
	_, _ = io.Copy(io.Discard, os.Stdin) // until the parent closes stdin or dies
	return nil
}

// startChild starts this test binary as a rank in role and returns it once
// it has joined, with the store's address. The test's end kills and reaps
// it.
func startChild(t *testing.T, role string, env ...string) (*ranktest.Proc, string) {
	t.Helper()
	p := ranktest.Start(t, role, append(env, secretEnv+"="+string(testSecret))...)
	line, err := p.ReadLine()
	addr, ok := strings.CutPrefix(strings.TrimSpace(line), "ready ")
	if err != nil || !ok {
		p.Kill()
		p.Cmd.Wait()
		t.Fatalf("child %s: read %q, %v; stderr:\n%s", role, line, err, p.Stderr())
	}
	return p, addr
}

// killAndWait kills child, rank victim's process, and waits for every
// client to see it lost (within a second, as a *PeerError naming victim);
// it returns the slowest client's time from the kill.
func killAndWait(t *testing.T, child *ranktest.Proc, clients []*Client, victim int) time.Duration {
	t.Helper()
	start := time.Now()
	if err := child.Kill(); err != nil {
		t.Fatal(err)
	}
	var slowest time.Duration
	for _, c := range clients {
		slowest = max(slowest, waitDone(t, c, start, time.Second))
		wantPeerError(t, "Err()", c.Err(), victim)
	}
	return slowest
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
			times = append(times, killAndWait(t, child, clients, victim))
		})
	}
	t.Logf("SIGKILL of rank %d's process to Done on every other rank: %v", victim, times)
}

// TestKillHeldConnection kills a rank whose connection another process
// holds (here a child of its own; in life, a GPU process whose sockets
// close only after its teardown): the connection does not end, and the
// silence limit is long, but the store sees the process exiting and every
// other rank learns of it within a second.
func TestKillHeldConnection(t *testing.T) {
	if _, err := exec.LookPath("sleep"); err != nil {
		t.Skipf("no sleep command: %v", err)
	}
	checkLeaks(t)
	const world, victim = 3, 2
	s := newServer(t, world, defaultHandshakeTimeout)
	clients := []*Client{dialRank(t, s.Addr(), 0, world), dialRank(t, s.Addr(), 1, world)}
	p := ranktest.Start(t, "orphan", secretEnv+"="+string(testSecret), addrEnv+"="+s.Addr(),
		rankEnv+"="+strconv.Itoa(victim), worldEnv+"="+strconv.Itoa(world))
	line, err := p.ReadLine()
	holder, herr := strconv.Atoi(strings.TrimPrefix(strings.TrimSpace(line), "holder "))
	if err != nil || herr != nil {
		p.Kill()
		p.Cmd.Wait()
		t.Fatalf("orphan: read %q, %v; stderr:\n%s", line, err, p.Stderr())
	}
	t.Cleanup(func() { syscall.Kill(holder, syscall.SIGKILL) })
	if line, err := p.ReadLine(); err != nil || !strings.HasPrefix(line, "ready ") {
		t.Fatalf("orphan: read %q, %v", line, err)
	}
	time.Sleep(3 * proc.PollEvery) // the identities have been exchanged
	slowest := killAndWait(t, p, clients, victim)
	for _, c := range clients {
		if pe := wantPeerError(t, "Err()", c.Err(), victim); !strings.Contains(pe.Reason, "its process") {
			t.Errorf("reason %q; want the process watch's", pe.Reason)
		}
	}
	t.Logf("SIGKILL of rank %d's process, its connection held open, to Done on every other rank: %v", victim, slowest)
}

// TestStoppedRemoteClient: a rank on another machine (its identity says
// so) that stops is found by its silence within the remote limit, under a
// second, where one of this machine waits for the long limit.
func TestStoppedRemoteClient(t *testing.T) {
	checkLeaks(t)
	const world, victim = 3, 2
	s := newServer(t, world, defaultHandshakeTimeout)
	clients := []*Client{dialRank(t, s.Addr(), 0, world), dialRank(t, s.Addr(), 1, world)}
	child, _ := startChild(t, "remote", addrEnv+"="+s.Addr(), rankEnv+"="+strconv.Itoa(victim), worldEnv+"="+strconv.Itoa(world))
	time.Sleep(3 * remoteSilence / 2) // the identities are traded, and a healthy remote rank is not found silent
	select {
	case <-clients[0].Done():
		t.Fatalf("the job failed before anything stopped: %v", clients[0].Err())
	default:
	}
	start := time.Now()
	stop(t, child)
	var slowest time.Duration
	for _, c := range clients {
		d := waitDone(t, c, start, 3*time.Second)
		slowest = max(slowest, d)
		if d < remoteSilence-2*pingEvery {
			t.Errorf("found after %v, before the remote silence limit %v", d, remoteSilence)
		}
		if pe := wantPeerError(t, "Err()", c.Err(), victim); !strings.Contains(pe.Reason, "no word from rank 2") {
			t.Errorf("reason %q; want it to say the rank was silent", pe.Reason)
		}
	}
	if slowest > 1500*time.Millisecond {
		t.Errorf("a stopped remote rank was found after %v; want about %v", slowest, remoteSilence)
	}
	t.Logf("SIGSTOP of a remote rank to Done on every other rank: %v (limit %v)", slowest, remoteSilence)
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
	slowest := killAndWait(t, child, clients, 0)
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

// stop sends SIGSTOP to child and, at the test's end, SIGCONT (so that the
// end's kill and reap find a process that can die).
func stop(t *testing.T, child *ranktest.Proc) {
	t.Helper()
	if err := child.Cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { child.Cmd.Process.Signal(syscall.SIGCONT) })
}

// TestStoppedClient: a rank whose process is stopped keeps its socket
// open, so only its silence tells: the other ranks see it lost, named,
// once the silence limit has passed, and not much later.
func TestStoppedClient(t *testing.T) {
	checkLeaks(t)
	const world, victim, limit = 3, 2, time.Second
	t.Setenv(EnvSilence, limit.String())
	s := newServer(t, world, defaultHandshakeTimeout)
	clients := []*Client{dialRank(t, s.Addr(), 0, world), dialRank(t, s.Addr(), 1, world)}
	child, _ := startChild(t, "client", addrEnv+"="+s.Addr(), EnvSilence+"="+limit.String(),
		rankEnv+"="+strconv.Itoa(victim), worldEnv+"="+strconv.Itoa(world))
	time.Sleep(3 * pingEvery) // a healthy rank is not found silent
	select {
	case <-clients[0].Done():
		t.Fatalf("the job failed before anything stopped: %v", clients[0].Err())
	default:
	}
	start := time.Now()
	stop(t, child)
	for _, c := range clients {
		d := waitDone(t, c, start, limit+2*time.Second)
		// The last ping came at most a period (and the timer's lateness)
		// before the stop.
		if d < limit-2*pingEvery {
			t.Errorf("found after %v, before the silence limit %v", d, limit)
		}
		if pe := wantPeerError(t, "Err()", c.Err(), victim); !strings.Contains(pe.Reason, "no word from rank 2") {
			t.Errorf("reason %q; want it to say the rank was silent", pe.Reason)
		}
	}
}

// TestStoppedServer: when rank 0's process (the store's) is stopped, every
// other rank finds the server silent and reports rank 0 lost.
func TestStoppedServer(t *testing.T) {
	checkLeaks(t)
	const world, limit = 3, time.Second
	t.Setenv(EnvSilence, limit.String())
	child, addr := startChild(t, "server", worldEnv+"="+strconv.Itoa(world), EnvSilence+"="+limit.String())
	clients := []*Client{dialRank(t, addr, 1, world), dialRank(t, addr, 2, world)}
	start := time.Now()
	stop(t, child)
	for _, c := range clients {
		waitDone(t, c, start, limit+2*time.Second)
		if pe := wantPeerError(t, "Err()", c.Err(), 0); !strings.Contains(pe.Reason, "no word from the store server") {
			t.Errorf("reason %q; want it to say the server was silent", pe.Reason)
		}
	}
}
