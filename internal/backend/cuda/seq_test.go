package cuda

import (
	"os"
	"os/exec"
	"testing"
)

func TestDrawSeq0(t *testing.T) {
	seen := map[uint64]bool{}
	for range 1000 {
		s := drawSeq0()
		if s < 1<<32 || s >= 1<<32+1<<62 {
			t.Fatalf("drawSeq0() = %#x, want in [2^32, 2^32+2^62)", s)
		}
		seen[s] = true
	}
	if len(seen) < 990 {
		t.Errorf("1000 draws gave %d distinct values", len(seen))
	}
}

func TestAlive(t *testing.T) {
	if !alive(os.Getpid()) {
		t.Error("alive(own pid) = false")
	}
	if !alive(0) {
		t.Error("alive(0) = false; an unknown pid must count as alive")
	}
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Skipf("cannot run a child: %v", err)
	}
	if alive(cmd.Process.Pid) {
		t.Errorf("alive(%d) = true for a child that exited and was reaped", cmd.Process.Pid)
	}
}
