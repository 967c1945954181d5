//go:build mpi && cgo

package main

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"

	"github.com/detcoll/detcoll/internal/tools/report"
)

// TestBenchMPI runs detcoll bench against Open MPI: it starts its own 2
// ranks under mpirun.
func TestBenchMPI(t *testing.T) {
	t.Setenv(testMainVar, "1")
	out := filepath.Join(t.TempDir(), "r.json")
	var stdout, stderr bytes.Buffer
	err := run(t.Context(), []string{"bench", "-n", "2", "--operations", "all_reduce,reduce_scatter,all_gather,broadcast",
		"--size-bytes", "1KiB,64KiB", "--warmup", "1", "--iterations", "5", "--output", out}, &stdout, &stderr)
	if err != nil {
		t.Fatalf("bench = %v\nstderr: %s", err, stderr.String())
	}
	rep, err := report.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if m := rep.Meta; m.Reference != "mpi" || !strings.HasPrefix(m.MPIVersion, "Open MPI") || m.DType != "float32" || m.ReferenceDType != "" {
		t.Errorf("metadata %+v", m)
	}
	for _, r := range rep.Rows {
		if r.ReferenceUS <= 0 {
			t.Errorf("%s at %d bytes: no reference time", r.Operation, r.InputBytesPerRank)
		}
	}
	if !strings.Contains(stdout.String(), "detcoll/mpi") {
		t.Errorf("table:\n%s", stdout.String())
	}
}

// TestBenchAcrossHosts runs detcoll bench with detcoll's ranks as 2 virtual
// hosts of 2 talking through Open MPI, against Open MPI's own calls.
func TestBenchAcrossHosts(t *testing.T) {
	t.Setenv(testMainVar, "1")
	t.Setenv("DETCOLL_SHM_DIR", t.TempDir())
	out := filepath.Join(t.TempDir(), "r.json")
	var stdout, stderr bytes.Buffer
	err := run(t.Context(), []string{"bench", "-n", "4", "--hosts", "2", "--operations", "all_reduce,reduce_scatter",
		"--size-bytes", "1KiB", "--warmup", "1", "--iterations", "3", "--output", out}, &stdout, &stderr)
	if err != nil {
		t.Fatalf("bench --hosts 2 = %v\nstderr: %s", err, stderr.String())
	}
	rep, err := report.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Meta.WorldSize != 4 || len(rep.Rows) != 2 {
		t.Errorf("report: world %d, %d rows", rep.Meta.WorldSize, len(rep.Rows))
	}
}
