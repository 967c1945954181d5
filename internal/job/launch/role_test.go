//go:build unix

package launch

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/detcoll/detcoll/internal/job/jobenv"
	"github.com/detcoll/detcoll/internal/job/store"
)

// The test binary doubles as the program Run launches (style rule 15): with
// roleVar set, TestMain plays the role it names for this process's RANK
// instead of running tests. roleVar is "RANK=ROLE,...", "*" matching any
// rank; files go to dirVar.
const (
	roleVar = "DETCOLL_TEST_ROLE"
	dirVar  = "DETCOLL_TEST_DIR"
)

func TestMain(m *testing.M) {
	if spec := os.Getenv(roleVar); spec != "" {
		os.Exit(playRole(spec))
	}
	os.Exit(m.Run())
}

// plantedVars are variables of other launchers that a test puts in
// Config.Env; none may reach a rank.
var plantedVars = []string{
	"DETCOLL_ADDR", "TORCHELASTIC_USE_AGENT_STORE", "TORCHELASTIC_RUN_ID", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE",
	"PMIX_NAMESPACE", "SLURM_PROCID", "SLURM_NTASKS",
}

// childEnvReport is what the "env" role writes.
type childEnvReport struct {
	Job       jobenv.Job
	Found     bool
	Err       string
	Secret    string
	Inherited []string // plantedVars that reached the rank
}

// playRole runs one of these roles and returns the exit status:
//
//	ok                exit 0
//	exit:N            wait for the other ranks to be ready, write the time to
//	                  exit-RANK, exit N
//	sleep             write ready-RANK, sleep a minute (SIGTERM kills it)
//	sleep-ignore-term ignore SIGTERM, write ready-RANK, sleep a minute
//	selfkill          SIGKILL itself
//	report:N          write ready-RANK, wait for a rank's exit-RANK, sleep
//	                  200 ms (as a rank of detcoll takes far less to see a
//	                  peer's death), write "rank RANK reports" to stderr,
//	                  exit N
//	env               write a childEnvReport to env-RANK.json
//	echo              write 100 numbered lines to stdout and stderr, in pieces
//	grandchild:ROLE   start a child playing ROLE (sleep or sleep-ignore-term),
//	                  write its pid to grandchild-RANK, wait until it is
//	                  ready, exit 0
//	store-host        host the job's store, join it, write ready-RANK, wait
//	                  (10 s at most) until the job fails, close, write
//	                  exit-RANK, exit 0: a rank 0 that reports its peer's
//	                  loss and ends
//	kill-after-host   wait for ready-0, SIGKILL itself
//	late-join         wait for exit-0 and 200 ms more, join the store (5 s
//	                  at most), write what it said and how long it took to
//	                  join-RANK, exit 0: a rank slow to start
func playRole(spec string) int {
	rank := os.Getenv("RANK")
	dir := os.Getenv(dirVar)
	role := ""
	for entry := range strings.SplitSeq(spec, ",") {
		if who, r, _ := strings.Cut(entry, "="); who == rank || (who == "*" && role == "") {
			role = r
		}
	}
	write := func(name string, data []byte) {
		if err := os.WriteFile(filepath.Join(dir, name+"-"+rank), data, 0o644); err != nil {
			panic(err)
		}
	}
	switch {
	case role == "ok":
		return 0
	case strings.HasPrefix(role, "exit:"):
		code, _ := strconv.Atoi(strings.TrimPrefix(role, "exit:"))
		world, _ := strconv.Atoi(os.Getenv("WORLD_SIZE"))
		waitFor(func() bool {
			ready, _ := filepath.Glob(filepath.Join(dir, "ready-*"))
			return len(ready) == world-1
		})
		write("exit", strconv.AppendInt(nil, time.Now().UnixNano(), 10))
		return code
	case role == "sleep-ignore-term":
		signal.Ignore(syscall.SIGTERM)
		fallthrough
	case role == "sleep":
		write("ready", nil)
		time.Sleep(time.Minute)
		return 0
	case strings.HasPrefix(role, "report:"):
		code, _ := strconv.Atoi(strings.TrimPrefix(role, "report:"))
		write("ready", nil)
		waitFor(func() bool {
			exited, _ := filepath.Glob(filepath.Join(dir, "exit-*"))
			return len(exited) > 0
		})
		time.Sleep(200 * time.Millisecond)
		fmt.Fprintf(os.Stderr, "rank %s reports\n", rank)
		return code
	case role == "selfkill":
		syscall.Kill(os.Getpid(), syscall.SIGKILL)
		time.Sleep(time.Minute)
		return 0
	case role == "env":
		var r childEnvReport
		var err error
		r.Job, r.Found, err = jobenv.FromEnv(os.Getenv)
		if err != nil {
			r.Err = err.Error()
		}
		r.Secret = os.Getenv("DETCOLL_SECRET")
		for _, name := range plantedVars {
			if v, ok := os.LookupEnv(name); ok {
				r.Inherited = append(r.Inherited, name+"="+v)
			}
		}
		data, _ := json.Marshal(r)
		write("env", data)
		return 0
	case role == "echo":
		for i := range 100 {
			fmt.Fprintf(os.Stdout, "out %s li", rank)
			fmt.Fprintf(os.Stdout, "ne %d\n", i)
			fmt.Fprintf(os.Stderr, "err %s line %d\n", rank, i)
		}
		return 0
	case strings.HasPrefix(role, "grandchild:"):
		exe, _ := os.Executable()
		cmd := exec.Command(exe, "-test.run=^$")
		cmd.Env = append(os.Environ(), roleVar+"=*="+strings.TrimPrefix(role, "grandchild:"))
		cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr // holds the rank's output open
		if err := cmd.Start(); err != nil {
			panic(err)
		}
		write("grandchild", strconv.AppendInt(nil, int64(cmd.Process.Pid), 10))
		waitFor(func() bool {
			_, err := os.Stat(filepath.Join(dir, "ready-"+rank))
			return err == nil
		})
		return 0
	}
	if code, ok := playStoreRole(role, rank, dir, write); ok {
		return code
	}
	fmt.Fprintf(os.Stderr, "no role for rank %q in %q\n", rank, spec)
	return 125
}

// playStoreRole plays the roles that use the job's store.
func playStoreRole(role, rank, dir string, write func(string, []byte)) (int, bool) {
	job, _, err := jobenv.FromEnv(os.Getenv)
	if err != nil && strings.HasPrefix(role, "store") {
		panic(err)
	}
	exists := func(name string) func() bool {
		return func() bool { _, err := os.Stat(filepath.Join(dir, name)); return err == nil }
	}
	switch role {
	case "store-host":
		srv, err := store.Listen(job.Addr, job.World, []byte(job.Secret))
		if err != nil {
			panic(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		c, err := store.Dial(ctx, job.Addr, job.Rank, job.World, []byte(job.Secret))
		if err != nil {
			panic(err)
		}
		write("ready", nil)
		select {
		case <-c.Done():
		case <-ctx.Done():
		}
		c.Close(context.Background())
		srv.Close()
		write("exit", nil)
		return 0, true
	case "kill-after-host":
		waitFor(exists("ready-0"))
		syscall.Kill(os.Getpid(), syscall.SIGKILL)
		time.Sleep(time.Minute)
		return 0, true
	case "late-join":
		waitFor(exists("exit-0"))
		time.Sleep(200 * time.Millisecond)
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		start := time.Now()
		c, err := store.Dial(ctx, job.Addr, job.Rank, job.World, []byte(job.Secret))
		if c != nil {
			c.Close(context.Background())
		}
		write("join", fmt.Appendf(nil, "%v after %v", err, time.Since(start).Round(time.Millisecond)))
		return 0, true
	}
	return 0, false
}

// waitFor polls cond for up to 10 s.
func waitFor(cond func() bool) {
	for deadline := time.Now().Add(10 * time.Second); !cond() && time.Now().Before(deadline); {
		time.Sleep(time.Millisecond)
	}
}
