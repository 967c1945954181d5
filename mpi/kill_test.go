//go:build mpi && cgo

package mpi_test

import (
	"context"
	"fmt"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/detcoll/detcoll"
	"github.com/detcoll/detcoll/internal/binding/mpiref"
	"github.com/detcoll/detcoll/mpi"
)

// killVar names the rank that kills itself amid the calls (killChild).
const killVar = "DETCOLL_MPI_TEST_KILL"

// TestKilledHostEndsTheJob: a rank of the second of two hosts SIGKILLs
// itself amid all-reduces. Open MPI has no fault tolerance, so mpirun ends
// the job: the survivors are stopped rather than handed an error, but none
// hangs, mpirun fails before the ranks' timeout (30 s) could have ended
// them, and no shared-memory file is left.
func TestKilledHostEndsTheJob(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Skip(err)
	}
	shm := t.TempDir()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	env := append(os.Environ(), childVar+"=1", killVar+"=3", mpi.EnvVirtualHosts+"=2", "DETCOLL_SHM_DIR="+shm)
	cmd, err := mpiref.Command(ctx, 4, exe, []string{"-test.run=^$"}, env)
	if err != nil {
		t.Skip(err)
	}
	start := time.Now()
	out, err := cmd.CombinedOutput()
	took := time.Since(start)
	if err == nil {
		t.Fatalf("mpirun succeeded with a rank killed:\n%s", out)
	}
	if ctx.Err() != nil {
		t.Fatalf("the job hung until the test's bound (%v):\n%s", took, out)
	}
	if took >= rankTimeout {
		t.Errorf("mpirun ended %v after it started: the survivors waited for their timeout (%v), mpirun did not end the job", took, rankTimeout)
	}
	if left, _ := os.ReadDir(shm); len(left) != 0 {
		t.Errorf("%d shared-memory files left: %v", len(left), left)
	}
	t.Logf("mpirun ended %v after it started (the kill comes after Open and 50 calls): %v", took.Round(time.Millisecond), err)
}

// rankTimeout is the ranks' timeout in TestKilledHostEndsTheJob.
const rankTimeout = 30 * time.Second

// killChild is a rank of TestKilledHostEndsTheJob: the victim kills itself
// after 50 calls, the others call until they are stopped.
func killChild(victim int) error {
	ctx := context.Background()
	o, err := mpi.Options(detcoll.Options{Timeout: rankTimeout})
	if err != nil {
		return err
	}
	c, err := detcoll.Open(ctx, o)
	if err != nil {
		return err
	}
	x := make([]float32, 1000)
	for i := 0; ; i++ {
		if o.Rank == victim && i == 50 {
			syscall.Kill(os.Getpid(), syscall.SIGKILL)
		}
		if err := detcoll.AllReduce(c, x, x); err != nil {
			return fmt.Errorf("call %d: %w", i, err)
		}
	}
}
