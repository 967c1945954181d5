//go:build unix

package launch

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/detcoll/detcoll/internal/job/jobenv"
)

// harness runs jobs of the test binary (see playRole) and fails the test if
// any process of them outlives the test.
type harness struct {
	t   *testing.T
	exe string
	dir string // DETCOLL_TEST_DIR

	mu   sync.Mutex
	pids []int // every rank started, from Config.started
}

func newHarness(t *testing.T) *harness {
	exe, err := os.Executable()
	if err != nil {
		t.Skipf("cannot re-execute the test binary: %v", err)
	}
	h := &harness{t: t, exe: exe, dir: t.TempDir()}
	t.Cleanup(h.checkGone)
	return h
}

// config is a job of n ranks playing roles.
func (h *harness) config(n int, roles string) Config {
	return Config{
		N:       n,
		Program: h.exe,
		Args:    []string{"-test.run=^$"},
		// GORACE: a race-enabled rank exiting 0 would sleep a second first.
		Env: append(os.Environ(), roleVar+"="+roles, dirVar+"="+h.dir, "GORACE=atexit_sleep_ms=0"),
		started: func(rank, pid int) {
			h.mu.Lock()
			defer h.mu.Unlock()
			h.pids = append(h.pids, pid)
		},
	}
}

func (h *harness) started() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.pids)
}

// read returns the file a rank's role wrote.
func (h *harness) read(name string, rank int) []byte {
	data, err := os.ReadFile(filepath.Join(h.dir, name+"-"+strconv.Itoa(rank)))
	if err != nil {
		h.t.Fatal(err)
	}
	return data
}

// checkGone fails the test for every rank or grandchild still alive, and
// kills it.
func (h *harness) checkGone() {
	pids := append([]int(nil), h.pids...)
	grand, _ := filepath.Glob(filepath.Join(h.dir, "grandchild-*"))
	for _, name := range grand {
		data, _ := os.ReadFile(name)
		pid, _ := strconv.Atoi(string(data))
		pids = append(pids, pid)
	}
	for _, pid := range pids {
		if pid > 0 && alive(pid) {
			h.t.Errorf("process %d outlived Run", pid)
			syscall.Kill(pid, syscall.SIGKILL)
		}
	}
}

// alive reports whether pid runs: it exists and, where /proc says so, is no
// zombie (an orphan waits for init to reap it).
func alive(pid int) bool {
	if syscall.Kill(pid, 0) != nil {
		return false
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true
	}
	_, after, _ := bytes.Cut(stat, []byte(") "))
	return !bytes.HasPrefix(after, []byte("Z"))
}

// testContext ends a little before the test's deadline.
func testContext(t *testing.T) context.Context {
	ctx := t.Context()
	if d, ok := t.Deadline(); ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, d.Add(-time.Until(d)/10))
		t.Cleanup(cancel)
	}
	return ctx
}

func TestRunAllSucceed(t *testing.T) {
	h := newHarness(t)
	if err := Run(testContext(t), h.config(4, "*=ok")); err != nil {
		t.Fatalf("Run = %v; want nil", err)
	}
	if n := h.started(); n != 4 {
		t.Errorf("%d ranks started; want 4", n)
	}
}

// TestRunWarnsOfTooManyRanks: more than twice as many ranks as CPUs get a
// warning line (they take turns); as many as the CPUs get none.
func TestRunWarnsOfTooManyRanks(t *testing.T) {
	for _, tc := range []struct {
		n    int
		warn bool
	}{{runtime.NumCPU(), false}, {2*runtime.NumCPU() + 1, true}} {
		h := newHarness(t)
		cfg := h.config(tc.n, "*=ok")
		var stderr bytes.Buffer
		cfg.Stderr = &stderr
		if err := Run(testContext(t), cfg); err != nil {
			t.Fatalf("Run(%d ranks) = %v", tc.n, err)
		}
		if got := strings.Contains(stderr.String(), "take turns on them"); got != tc.warn {
			t.Errorf("%d ranks on %d CPUs: warned %v; want %v (stderr %q)", tc.n, runtime.NumCPU(), got, tc.warn, stderr.String())
		}
	}
}

// TestRunRankFails also measures how long stopping the others takes: from
// the failing rank's exit to Run's return.
func TestRunRankFails(t *testing.T) {
	h := newHarness(t)
	cfg := h.config(4, "2=exit:3,*=sleep")
	cfg.ReportGrace = 100 * time.Millisecond
	err := Run(testContext(t), cfg)
	returned := time.Now()

	var re *RankError
	if !errors.As(err, &re) || re.Rank != 2 || re.ExitCode != 3 || re.Signal != nil {
		t.Fatalf("Run = %v (%#v); want rank 2 exited with status 3", err, re)
	}
	if got, want := err.Error(), "rank 2 exited with status 3"; got != want {
		t.Errorf("error text %q; want %q", got, want)
	}
	stamp, _ := strconv.ParseInt(string(h.read("exit", 2)), 10, 64)
	stop := returned.Sub(time.Unix(0, stamp))
	t.Logf("stopped 3 sleeping ranks %v after rank 2 exited (report grace %v)", stop, cfg.ReportGrace)
	if stop < cfg.ReportGrace || stop > cfg.ReportGrace+DefaultGrace/2 {
		t.Errorf("stopping took %v; want the report grace of %v and far less than the grace of %v more",
			stop, cfg.ReportGrace, DefaultGrace)
	}
}

// TestRunSurvivorStopped has survivors that never exit: Run stops them once
// the report window ends, by SIGTERM or, for those that ignore it, by
// SIGKILL after the grace. Rank 1 reports within the window and is left to
// exit on its own.
func TestRunSurvivorStopped(t *testing.T) {
	for _, tt := range []struct {
		role   string
		grace  time.Duration
		signal syscall.Signal // what stops the survivors
	}{
		{"sleep", DefaultGrace, syscall.SIGTERM},
		{"sleep-ignore-term", 300 * time.Millisecond, syscall.SIGKILL},
	} {
		t.Run(tt.role, func(t *testing.T) {
			h := newHarness(t)
			cfg := h.config(4, "0=exit:1,1=report:3,*="+tt.role)
			cfg.ReportGrace, cfg.Grace = time.Second, tt.grace
			err := Run(testContext(t), cfg)
			returned := time.Now()

			var re *RankError
			if !errors.As(err, &re) || re.Rank != 0 || re.ExitCode != 1 || len(re.Ranks) != 4 {
				t.Fatalf("Run = %v (%+v); want rank 0 exited with status 1, and 4 ranks' ends", err, re)
			}
			stamp, _ := strconv.ParseInt(string(h.read("exit", 0)), 10, 64)
			stop := returned.Sub(time.Unix(0, stamp))
			want := cfg.ReportGrace // when the survivors are stopped
			if tt.signal == syscall.SIGKILL {
				want += cfg.Grace
			}
			t.Logf("stopped 2 ranks that play %s %v after rank 0 exited (report grace %v, grace %v)",
				tt.role, stop, cfg.ReportGrace, cfg.Grace)
			if stop < want || stop > want+2*time.Second {
				t.Errorf("stopping took %v; want %v and a little more", stop, want)
			}
			if x := re.Ranks[0]; x.Err == nil || x.Err.Rank != 0 || x.Err.ExitCode != 1 || x.Stopped != nil || x.After != 0 {
				t.Errorf("rank 0 ended %v; want the first failure", x)
			}
			if x := re.Ranks[1]; x.Err == nil || x.Err.ExitCode != 3 || x.Stopped != nil || x.After <= 0 || x.After >= cfg.ReportGrace {
				t.Errorf("rank 1 ended %v; want status 3 on its own within the report grace", x)
			}
			for _, x := range re.Ranks[2:] {
				if x.Err == nil || x.Err.Signal != tt.signal || x.Stopped != tt.signal || x.After < want {
					t.Errorf("rank %d ended %v; want killed by the launcher's %v after %v", x.Rank, x, tt.signal, want)
				}
			}
		})
	}
}

func TestRunSignalled(t *testing.T) {
	h := newHarness(t)
	cfg := h.config(3, "1=selfkill,*=sleep")
	cfg.ReportGrace = 100 * time.Millisecond
	err := Run(testContext(t), cfg)
	var re *RankError
	if !errors.As(err, &re) || re.Rank != 1 || re.Signal != syscall.SIGKILL || re.ExitCode != -1 {
		t.Fatalf("Run = %v; want rank 1 killed by SIGKILL", err)
	}
	if got, want := err.Error(), "rank 1 killed by signal: killed"; got != want {
		t.Errorf("error text %q; want %q", got, want)
	}
}

func TestRunCancel(t *testing.T) {
	h := newHarness(t)
	ctx, cancel := context.WithCancelCause(testContext(t))
	cause := errors.New("operator said stop")
	cfg := h.config(3, "*=sleep")
	record := cfg.started
	cfg.started = func(rank, pid int) {
		record(rank, pid)
		if rank == cfg.N-1 {
			cancel(cause)
		}
	}
	start := time.Now()
	err := Run(ctx, cfg)
	took := time.Since(start)
	if !errors.Is(err, context.Canceled) || !errors.Is(err, cause) {
		t.Fatalf("Run = %v; want an error matching context.Canceled and the cause", err)
	}
	t.Logf("cancelled job of 3 ranks returned after %v", took)
	if took > DefaultGrace/2 {
		t.Errorf("Run took %v after cancel; SIGTERM should need far less than the grace of %v", took, DefaultGrace)
	}
}

func TestRunCancelledBefore(t *testing.T) {
	h := newHarness(t)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if err := Run(ctx, h.config(2, "*=ok")); !errors.Is(err, context.Canceled) {
		t.Errorf("Run = %v; want context.Canceled", err)
	}
	if n := h.started(); n != 0 {
		t.Errorf("%d ranks started; want none", n)
	}
}

func TestRunEnv(t *testing.T) {
	h := newHarness(t)
	const n = 3
	secrets := make(map[string]bool)
	for job := range 2 {
		cfg := h.config(n, "*=env")
		cfg.Env = append(cfg.Env, "RANK=99", "DETCOLL_ADDR=10.0.0.1:1", "TORCHELASTIC_USE_AGENT_STORE=True",
			"TORCHELASTIC_RUN_ID=x", "OMPI_COMM_WORLD_RANK=5", "OMPI_COMM_WORLD_SIZE=9", "PMIX_NAMESPACE=ns",
			"SLURM_PROCID=7", "SLURM_NTASKS=8")
		if err := Run(testContext(t), cfg); err != nil {
			t.Fatalf("Run = %v", err)
		}
		var rank0 childEnvReport
		for rank := range n {
			var r childEnvReport
			if err := json.Unmarshal(h.read("env", rank), &r); err != nil {
				t.Fatal(err)
			}
			want := jobenv.Job{Rank: rank, World: n, LocalRank: rank, LocalWorld: n, Secret: r.Secret, Source: jobenv.SourceEnv}
			if rank == 0 {
				rank0 = r
				want.Addr = r.Job.Addr
			} else {
				want.Addr, want.Secret = rank0.Job.Addr, rank0.Secret
			}
			if !r.Found || r.Err != "" || r.Job != want {
				t.Errorf("job %d rank %d: FromEnv = %+v, %v, %q; want %+v, true, nil", job, rank, r.Job, r.Found, r.Err, want)
			}
			if len(r.Inherited) > 0 {
				t.Errorf("job %d rank %d inherited %q", job, rank, r.Inherited)
			}
		}
		if b, err := hex.DecodeString(rank0.Secret); err != nil || len(b) != 32 {
			t.Errorf("job %d: secret %q is not 32 bytes in hex", job, rank0.Secret)
		}
		if !strings.HasPrefix(rank0.Job.Addr, "127.0.0.1:") {
			t.Errorf("job %d: address %q is not on loopback", job, rank0.Job.Addr)
		}
		secrets[rank0.Secret] = true
	}
	if len(secrets) != 2 {
		t.Errorf("two jobs shared a secret")
	}
}

func TestRunOutput(t *testing.T) {
	const n = 3
	for _, prefix := range []bool{false, true} {
		t.Run(fmt.Sprintf("prefix=%v", prefix), func(t *testing.T) {
			h := newHarness(t)
			var out bytes.Buffer // both streams: the launcher must serialise them
			cfg := h.config(n, "*=echo")
			cfg.Stdout, cfg.Stderr, cfg.Prefix = &out, &out, prefix
			if err := Run(testContext(t), cfg); err != nil {
				t.Fatalf("Run = %v", err)
			}
			line := regexp.MustCompile(`^(\[rank (\d)\] )?(out|err) (\d) line (\d+)$`)
			next := make(map[string]int)
			for _, l := range strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n") {
				m := line.FindStringSubmatch(l)
				if m == nil || (m[1] != "") != prefix || (prefix && m[2] != m[4]) {
					t.Fatalf("line %q is torn or badly prefixed", l)
				}
				stream := m[3] + m[4]
				if i, _ := strconv.Atoi(m[5]); i != next[stream] {
					t.Fatalf("line %q out of order: want line %d", l, next[stream])
				}
				next[stream]++
			}
			if len(next) != 2*n {
				t.Errorf("lines from %d streams; want %d", len(next), 2*n)
			}
		})
	}
}

// TestRunGrandchild has each rank leave a process behind in its group, one
// that holds the rank's output pipe open: Run must stop it and return.
func TestRunGrandchild(t *testing.T) {
	for _, tt := range []struct {
		role     string
		grace    time.Duration
		min, max time.Duration
	}{
		{"sleep", 3 * time.Second, 0, time.Second},                                             // SIGTERM
		{"sleep-ignore-term", 300 * time.Millisecond, 300 * time.Millisecond, 2 * time.Second}, // SIGKILL
	} {
		t.Run(tt.role, func(t *testing.T) {
			h := newHarness(t)
			cfg := h.config(2, "*=grandchild:"+tt.role)
			cfg.Stdout = new(bytes.Buffer) // a pipe
			cfg.Grace = tt.grace
			start := time.Now()
			if err := Run(testContext(t), cfg); err != nil {
				t.Fatalf("Run = %v", err)
			}
			took := time.Since(start)
			t.Logf("job leaving grandchildren that play %s took %v (grace %v)", tt.role, took, tt.grace)
			if took < tt.min || took > tt.max {
				t.Errorf("Run took %v; want [%v, %v]", took, tt.min, tt.max)
			}
			// checkGone looks at the grandchildren's pids.
		})
	}
}

func TestRunStartFails(t *testing.T) {
	h := newHarness(t)
	prog := filepath.Join(t.TempDir(), "not-a-program")
	if err := os.WriteFile(prog, []byte{0, 1, 2, 3}, 0o755); err != nil {
		t.Fatal(err)
	}
	cfg := h.config(2, "*=ok")
	cfg.Program = prog
	err := Run(testContext(t), cfg)
	if err == nil || !strings.Contains(err.Error(), "start rank 0") {
		t.Errorf("Run = %v; want an error starting rank 0", err)
	}
}

func TestRunBadConfig(t *testing.T) {
	h := newHarness(t)
	tests := []struct {
		name      string
		edit      func(*Config)
		wantField string
	}{
		{"no ranks", func(c *Config) { c.N = 0 }, "N"},
		{"negative ranks", func(c *Config) { c.N = -1 }, "N"},
		{"too many ranks", func(c *Config) { c.N = jobenv.MaxWorld + 1 }, "N"},
		{"no program", func(c *Config) { c.Program = "" }, "Program"},
		{"program not in PATH", func(c *Config) { c.Program = "detcoll-no-such-program" }, "Program"},
		{"program not a file", func(c *Config) { c.Program = "/nonexistent/detcoll" }, "Program"},
		{"negative grace", func(c *Config) { c.Grace = -time.Second }, "Grace"},
		{"negative report grace", func(c *Config) { c.ReportGrace = -time.Second }, "ReportGrace"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := h.config(2, "*=ok")
			tt.edit(&cfg)
			err := Run(testContext(t), cfg)
			var ce *ConfigError
			if !errors.As(err, &ce) || ce.Field != tt.wantField {
				t.Errorf("Run = %v; want a *ConfigError for %s", err, tt.wantField)
			}
		})
	}
	if n := h.started(); n != 0 {
		t.Errorf("%d ranks started; want none", n)
	}
}

// TestRunSurvivorsReport has rank 1 fail at once while the others take
// 200 ms to notice, say so on stderr and exit 3: Run must let them, and
// return as soon as they are done.
func TestRunSurvivorsReport(t *testing.T) {
	h := newHarness(t)
	var stderr bytes.Buffer
	cfg := h.config(3, "1=exit:1,*=report:3")
	cfg.Stderr = &stderr
	start := time.Now()
	err := Run(testContext(t), cfg)
	took := time.Since(start)

	var re *RankError
	if !errors.As(err, &re) || re.Rank != 1 || re.ExitCode != 1 {
		t.Fatalf("Run = %v; want rank 1 exited with status 1", err)
	}
	for _, want := range []string{"rank 0 reports\n", "rank 2 reports\n"} {
		if !strings.Contains(stderr.String(), want) {
			t.Errorf("stderr %q lacks %q", stderr.String(), want)
		}
	}
	if len(re.Ranks) != 3 {
		t.Fatalf("error has %d ranks' ends; want 3", len(re.Ranks))
	}
	for _, x := range re.Ranks {
		t.Log(x)
		if x.Rank == 1 {
			continue
		}
		if x.Err == nil || x.Err.ExitCode != 3 || x.Err.Signal != nil || x.Stopped != nil || x.After <= 0 {
			t.Errorf("rank %d ended %v; want status 3 on its own, after rank 1", x.Rank, x)
		}
	}
	t.Logf("job took %v", took)
	if took >= DefaultReportGrace {
		t.Errorf("Run took %v; want it to return once the survivors exit, before the report grace of %v",
			took, DefaultReportGrace)
	}
}

// TestRunCancelInReportWindow checks that ctx's end stops the survivors at
// once, not at the end of the report window.
func TestRunCancelInReportWindow(t *testing.T) {
	h := newHarness(t)
	ctx, cancel := context.WithCancel(testContext(t))
	cfg := h.config(3, "0=exit:1,*=sleep")
	cfg.ReportGrace = time.Minute
	pid0 := make(chan int, 1)
	record := cfg.started
	cfg.started = func(rank, pid int) {
		record(rank, pid)
		if rank == 0 {
			pid0 <- pid
		}
	}
	cancelled := make(chan time.Time, 1)
	go func() {
		select {
		case pid := <-pid0:
			// Reaped (not even a zombie): Run's Wait for rank 0 returned;
			// give Run a moment to take in the exit.
			waitFor(func() bool { return syscall.Kill(pid, 0) == syscall.ESRCH })
			time.Sleep(50 * time.Millisecond)
		case <-ctx.Done(): // Run returned early
		}
		cancelled <- time.Now()
		cancel()
	}()
	err := Run(ctx, cfg)
	cancel() // ends the goroutine should Run have failed early
	took := time.Since(<-cancelled)

	var re *RankError
	if !errors.As(err, &re) || re.Rank != 0 || len(re.Ranks) != 3 {
		t.Fatalf("Run = %v; want rank 0's failure, which came first", err)
	}
	for _, x := range re.Ranks[1:] {
		if x.Stopped != syscall.SIGTERM {
			t.Errorf("rank %d ended %v; want stopped by SIGTERM", x.Rank, x)
		}
	}
	t.Logf("Run returned %v after cancel, in a report window of %v", took, cfg.ReportGrace)
	if took > DefaultGrace/2 {
		t.Errorf("Run took %v after cancel; want the ranks stopped at once", took)
	}
}
