package mpiref

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/detcoll/detcoll/internal/core/settings"
)

// secretVar is the variable every detcoll rank reads its job secret from.
const secretVar = settings.Secret

// Command returns an mpirun command that starts n ranks of program with
// args on this host, each both an MPI rank and a detcoll rank: env (the
// ranks' base environment, such as os.Environ()) gets a fresh
// DETCOLL_SECRET unless it has one, and every DETCOLL_* variable is
// exported to the ranks with -x. Ranks are not bound to cores
// (--bind-to none, as under detcoll run or torchrun): detcoll's cpu backend
// sizes its waiting from the CPUs it may run on, and with one core per rank
// (mpirun's default binding for up to 2 ranks) it takes itself for
// oversubscribed and sleeps instead of spinning, while Open MPI's own
// times (shared/perf/mpi_bench.c) were the same either way on our 2-core
// development machine. It adds --oversubscribe when n
// exceeds this host's CPUs, and --allow-run-as-root when running as root,
// where mpirun refuses to start otherwise. Ending ctx sends mpirun SIGTERM, which it forwards to the
// ranks. The caller sets Stdout and Stderr and runs the command.
func Command(ctx context.Context, n int, program string, args []string, env []string) (*exec.Cmd, error) {
	if n < 1 {
		return nil, fmt.Errorf("mpiref: %d ranks: want >= 1", n)
	}
	mpirun, err := exec.LookPath("mpirun")
	if err != nil {
		return nil, fmt.Errorf("mpiref: the MPI reference needs mpirun (Debian: apt-get install openmpi-bin): %w", err)
	}
	env = slices.DeleteFunc(slices.Clone(env), func(kv string) bool { return kv == secretVar+"=" })
	if !hasVar(env, secretVar) {
		b := make([]byte, 32)
		rand.Read(b) // never fails: since Go 1.24 it crashes the program instead
		env = append(env, secretVar+"="+hex.EncodeToString(b))
	}
	argv := []string{"-n", strconv.Itoa(n), "--bind-to", "none"}
	if n > runtime.NumCPU() {
		argv = append(argv, "--oversubscribe")
	}
	if os.Geteuid() == 0 {
		argv = append(argv, "--allow-run-as-root")
	}
	var exported []string
	for _, kv := range env {
		if name, _, _ := strings.Cut(kv, "="); strings.HasPrefix(name, "DETCOLL_") && !slices.Contains(exported, name) {
			exported = append(exported, name)
			argv = append(argv, "-x", name)
		}
	}
	argv = append(argv, program)
	argv = append(argv, args...)
	cmd := exec.CommandContext(ctx, mpirun, argv...)
	cmd.Env = env
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	cmd.WaitDelay = 10 * time.Second
	return cmd, nil
}

func hasVar(env []string, name string) bool {
	for _, kv := range env {
		if k, v, _ := strings.Cut(kv, "="); k == name && v != "" {
			return true
		}
	}
	return false
}

// RunSelf runs n ranks of this program with args and env under mpirun
// (Command), their output to stdout and stderr.
func RunSelf(ctx context.Context, n int, args, env []string, stdout, stderr io.Writer) error {
	exe, err := os.Executable()
	if err != nil {
		return fmt.Errorf("find this program to start its ranks: %w", err)
	}
	cmd, err := Command(ctx, n, exe, args, env)
	if err != nil {
		return err
	}
	cmd.Stdout, cmd.Stderr = stdout, stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("mpirun: %w", err)
	}
	return nil
}
