//go:build mpi && cgo

package mpiref

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"
)

// roleVar, when set, makes the test binary one MPI rank running rankChecks
// instead of the tests (rule 15 of the style guide, with mpirun as the
// launcher).
const roleVar = "MPIREF_TEST_ROLE"

func TestMain(m *testing.M) {
	if os.Getenv(roleVar) != "" {
		runtime.LockOSThread()
		if err := rankChecks(); err != nil {
			fmt.Fprintf(os.Stderr, "rank %s: FAIL: %v\n", os.Getenv("OMPI_COMM_WORLD_RANK"), err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// TestUnderMPIRun runs rankChecks in two ranks started by mpirun.
func TestUnderMPIRun(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Skipf("cannot re-execute the test binary: %v", err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	cmd, err := Command(ctx, 2, exe, nil, append(os.Environ(), roleVar+"=ranks"))
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("mpirun = %v:\n%s", err, out)
	}
	if !strings.Contains(string(out), "rank 0: Open MPI") {
		t.Errorf("rank 0 did not report its MPI version:\n%s", out)
	}
}

func f32s(v ...float32) []byte {
	b := make([]byte, 4*len(v))
	for i, x := range v {
		binary.NativeEndian.PutUint32(b[4*i:], math.Float32bits(x))
	}
	return b
}

func f64s(v ...float64) []byte {
	b := make([]byte, 8*len(v))
	for i, x := range v {
		binary.NativeEndian.PutUint64(b[8*i:], math.Float64bits(x))
	}
	return b
}

func rankChecks() error {
	w, err := Init()
	if err != nil {
		return err
	}
	defer w.Finalize()
	want, _ := strconv.Atoi(os.Getenv("OMPI_COMM_WORLD_RANK"))
	if w.Size() != 2 || w.Rank() != want {
		return fmt.Errorf("rank %d of %d; want %d of 2", w.Rank(), w.Size(), want)
	}
	// A second user of the process's MPI (package mpi beside the
	// reference) gets the same world.
	if again, err := Init(); err != nil || again != w {
		return fmt.Errorf("a second Init = %p, %v; want the first's world %p", again, err, w)
	}
	if !strings.HasPrefix(w.Version(), "Open MPI") {
		return fmt.Errorf("version %q; want Open MPI's", w.Version())
	}
	if w.Rank() == 0 {
		fmt.Printf("rank 0: %s\n", w.Version())
	}
	r := float32(w.Rank())

	// Sums of 2 ranks: exact in both types.
	out := make([]byte, 12)
	if err := w.Allreduce(Float32, Sum, f32s(1+r, 0.5*r, -r), out); err != nil {
		return err
	}
	if !bytes.Equal(out, f32s(3, 0.5, -1)) {
		return fmt.Errorf("Allreduce float32 = %v", out)
	}
	// Max and Min: (1, 5) and (2, 4) on the two ranks.
	out = make([]byte, 8)
	if err := w.Allreduce(Float32, Max, f32s(1+r, 5-r), out); err != nil {
		return err
	}
	if !bytes.Equal(out, f32s(2, 5)) {
		return fmt.Errorf("Allreduce max = %v", out)
	}
	if err := w.Allreduce(Float32, Min, f32s(1+r, 5-r), out); err != nil {
		return err
	}
	if !bytes.Equal(out, f32s(1, 4)) {
		return fmt.Errorf("Allreduce min = %v", out)
	}
	out = make([]byte, 16)
	if err := w.Allreduce(Float64, Sum, f64s(1+float64(r), 1e300), out); err != nil {
		return err
	}
	if !bytes.Equal(out, f64s(3, 2e300)) {
		return fmt.Errorf("Allreduce float64 = %v", out)
	}
	out = make([]byte, 8)
	if err := w.ReduceScatterBlock(Float32, Sum, f32s(1, 2, 3+r, 4+r), out); err != nil {
		return err
	}
	if want := [][]byte{f32s(2, 4), f32s(7, 9)}[w.Rank()]; !bytes.Equal(out, want) {
		return fmt.Errorf("ReduceScatterBlock = %v; want %v", out, want)
	}
	out = make([]byte, 6)
	if err := w.Allgather([]byte{byte(w.Rank()), 7, 9}, out); err != nil {
		return err
	}
	if !bytes.Equal(out, []byte{0, 7, 9, 1, 7, 9}) {
		return fmt.Errorf("Allgather = %v", out)
	}
	buf := []byte{byte(w.Rank()), byte(w.Rank())}
	if err := w.Bcast(buf, 1); err != nil {
		return err
	}
	if !bytes.Equal(buf, []byte{1, 1}) {
		return fmt.Errorf("Bcast = %v", buf)
	}
	// Bad arguments fail here, on every rank alike, before MPI is called.
	for _, err := range []error{
		w.Allreduce(Float32, Sum, make([]byte, 8), make([]byte, 4)),
		w.Allreduce(Float64, Sum, make([]byte, 12), make([]byte, 12)),
		w.Allreduce(DType(9), Sum, make([]byte, 8), make([]byte, 8)),
		w.ReduceScatterBlock(Float32, Sum, make([]byte, 8), make([]byte, 8)),
		w.Allgather(make([]byte, 4), make([]byte, 4)),
		w.Bcast(make([]byte, 4), 2),
	} {
		if err == nil {
			return fmt.Errorf("a call with bad arguments succeeded")
		}
	}
	return w.Barrier()
}
