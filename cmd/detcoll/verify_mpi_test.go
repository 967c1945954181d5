//go:build mpi && cgo

package main

import (
	"bytes"
	"strings"
	"testing"
)

// TestVerifyAcrossHosts runs detcoll verify as 2 virtual hosts of 2 ranks
// whose traffic goes through Open MPI: it starts them under mpirun.
func TestVerifyAcrossHosts(t *testing.T) {
	t.Setenv(testMainVar, "1")
	t.Setenv("DETCOLL_SHM_DIR", t.TempDir())
	var stdout, stderr bytes.Buffer
	err := run(t.Context(), []string{"verify", "-n", "4", "--hosts", "2", "--sizes", "4,8000", "--dtype", "bfloat16,float32"}, &stdout, &stderr)
	if err != nil {
		t.Fatalf("verify --hosts 2 = %v\nstdout: %s\nstderr: %s", err, stdout.String(), stderr.String())
	}
	if !strings.Contains(stdout.String(), "checks passed on every rank") {
		t.Errorf("table:\n%s", stdout.String())
	}
}
