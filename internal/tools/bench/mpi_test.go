//go:build mpi && cgo

package bench

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/detcoll/detcoll/internal/binding/mpiref"
	"github.com/detcoll/detcoll/internal/core/num"
	"github.com/detcoll/detcoll/internal/testkit/ranktest"
	"github.com/detcoll/detcoll/internal/tools/report"
)

func init() { roles["bench-mpi"] = benchMPIRole }

// benchMPIRole is one rank of an mpirun job: detcoll against Open MPI,
// with a 16-bit type (the reference widens to float32) and with float64.
func benchMPIRole() error {
	runtime.LockOSThread()
	w, err := mpiref.Init()
	if err != nil {
		return err
	}
	defer w.Finalize()
	for _, dt := range []num.DType{num.BFloat16Type, num.Float64Type} {
		cfg := hostConfig(dt)
		cfg.Reference = report.ReferenceMPI
		rep, err := runWith(cfg, NewMPI(w))
		if err != nil {
			return fmt.Errorf("%v: %w", dt, err)
		}
		m := rep.Meta
		wantRef := ""
		if dt == num.BFloat16Type {
			wantRef = "float32"
		}
		if !strings.HasPrefix(m.MPIVersion, "Open MPI") || m.ReferenceDType != wantRef || len(m.Notes) == 0 {
			return fmt.Errorf("%v: metadata: MPI %q, reference dtype %q, notes %q", dt, m.MPIVersion, m.ReferenceDType, m.Notes)
		}
	}
	return nil
}

// TestBenchUnderMPIRun runs detcoll and Open MPI side by side in 2 ranks
// started by mpirun, which is also what detcoll's rendezvous reads.
func TestBenchUnderMPIRun(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Skipf("cannot re-execute the test binary: %v", err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	cmd, err := mpiref.Command(ctx, 2, exe, nil, append(os.Environ(),
		"DETCOLL_TEST_ROLE=bench-mpi", "DETCOLL_SHM_DIR="+ranktest.ShmDir(t)))
	if err != nil {
		t.Fatal(err)
	}
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("mpirun = %v:\n%s", err, out)
	}
}
