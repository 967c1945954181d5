package mpiref

import (
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

func TestCommand(t *testing.T) {
	if _, err := exec.LookPath("mpirun"); err != nil {
		t.Skipf("no mpirun: %v", err)
	}
	cmd, err := Command(t.Context(), 1000, "/bin/prog", []string{"bench", "-x"},
		[]string{"PATH=/bin", "DETCOLL_CPU_ALLREDUCE_ONESHOT_MAX=1", "DETCOLL_SECRET="})
	if err != nil {
		t.Fatal(err)
	}
	args := strings.Join(cmd.Args[1:], " ")
	want := "-n 1000 --bind-to none --oversubscribe "
	if os.Geteuid() == 0 {
		want += "--allow-run-as-root "
	}
	want += "-x DETCOLL_CPU_ALLREDUCE_ONESHOT_MAX -x DETCOLL_SECRET /bin/prog bench -x"
	if args != want {
		t.Errorf("mpirun arguments %q; want %q", args, want)
	}
	i := slices.IndexFunc(cmd.Env, func(kv string) bool { return strings.HasPrefix(kv, "DETCOLL_SECRET=") && len(kv) > 20 })
	if i < 0 {
		t.Errorf("no secret made for an empty DETCOLL_SECRET: env %q", cmd.Env)
	}

	cmd, err = Command(t.Context(), 1, "/bin/prog", nil, []string{"DETCOLL_SECRET=s"})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(cmd.Env, []string{"DETCOLL_SECRET=s"}) || slices.Contains(cmd.Args, "--oversubscribe") {
		t.Errorf("Command(1 rank, secret s) = %q, env %q; want the secret kept, no --oversubscribe", cmd.Args, cmd.Env)
	}
	if _, err := Command(t.Context(), 0, "/bin/prog", nil, nil); err == nil {
		t.Errorf("Command(0 ranks) = nil error")
	}
}
