package bench

import (
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/detcoll/detcoll/internal/core/num"
)

// TestMoves: bench's rows carry the cuda plan's bytes for every operation
// it measures (internal/backend/cuda's TestTraffic checks the counts themselves).
func TestMoves(t *testing.T) {
	m, err := moves(AllReduce, Shape{DType: num.BFloat16Type, Bytes: 1024, World: 2}, false)
	if err != nil {
		t.Fatal(err)
	}
	if m.Path != "ll" || m.PeerWrite != 2048 || m.LocalWrite != 1024 {
		t.Errorf("1 KiB all-reduce at W=2: %+v; want ll, 2048 bytes of lines to the peer, 1024 out", m)
	}
	for _, op := range Ops {
		m, err := moves(op, Shape{DType: num.Float32Type, Bytes: 64 << 20, World: 4}, false)
		if err != nil || m.Total() <= 0 || m.Path == "" {
			t.Errorf("%s, 64 MiB at W=4: %+v, %v", op, m, err)
		}
	}
	// Registered (-registered): the two-shot's bytes, half the push path's.
	m, err = moves(AllReduce, Shape{DType: num.Float32Type, Bytes: 64 << 20, World: 4}, true)
	if err != nil || m.Path != "registered" || m.PeerRead != 48<<20 || m.PeerWrite != 48<<20 || m.LocalRead != 16<<20 {
		t.Errorf("registered 64 MiB all-reduce at W=4: %+v, %v", m, err)
	}
	// A registered reduce-scatter of 64 MiB in at W=4: its 16 MiB of its
	// own input and 48 MiB of the peers' read in place, 16 MiB out.
	m, err = moves(ReduceScatter, Shape{DType: num.Float32Type, Bytes: 64 << 20, World: 4}, true)
	if err != nil || m.Path != "registered" || m.PeerRead != 48<<20 || m.PeerWrite != 0 || m.LocalRead != 16<<20 || m.LocalWrite != 16<<20 {
		t.Errorf("registered 64 MiB reduce-scatter at W=4: %+v, %v", m, err)
	}
}

// TestCommitOfAnotherRepository: run from another project's repository,
// Commit does not name that project's commit (issue 22: a soak JSON
// written there did).
func TestCommitOfAnotherRepository(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	dir := t.TempDir()
	for _, args := range [][]string{{"init", "-q"}, {"-c", "user.email=a@b", "-c", "user.name=a", "commit", "-q", "--allow-empty", "-m", "x"}} {
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Skipf("git %v: %v: %s", args, err, out)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module example.com/other\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Chdir(dir)
	t.Setenv("DETCOLL_COMMIT", "")
	if got := Commit(); got != "unknown" && !strings.HasPrefix(got, stampedRevision()) {
		t.Errorf("Commit() in another repository = %q", got)
	}
	if !declaresModule(filepath.Join(dir, "go.mod"), "example.com/other") || declaresModule(filepath.Join(dir, "go.mod"), modulePath) {
		t.Error("declaresModule misreads go.mod")
	}
}

// stampedRevision is the revision Go stamped into the test binary, or a
// string no commit starts with.
func stampedRevision() string {
	if info, ok := debug.ReadBuildInfo(); ok {
		for _, s := range info.Settings {
			if s.Key == "vcs.revision" && s.Value != "" {
				return s.Value
			}
		}
	}
	return "\x00"
}

// TestMPSRunning: MPS counts as running where its control socket is, in
// CUDA_MPS_PIPE_DIRECTORY; a plain file of that name, or none, does not.
func TestMPSRunning(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("CUDA_MPS_PIPE_DIRECTORY", dir)
	if mpsRunning() {
		t.Fatal("MPS running in an empty pipe directory")
	}
	if err := os.WriteFile(filepath.Join(dir, "control"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if mpsRunning() {
		t.Fatal("MPS running with a plain file for its control socket")
	}
	os.Remove(filepath.Join(dir, "control"))
	l, err := net.Listen("unix", filepath.Join(dir, "control"))
	if err != nil {
		t.Skipf("no unix socket here: %v", err)
	}
	defer l.Close()
	if !mpsRunning() {
		t.Fatal("MPS not running beside its control socket")
	}
}
