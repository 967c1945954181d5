package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/detcoll/detcoll/internal/binding/driver"
	"github.com/detcoll/detcoll/internal/binding/mpiref"
	"github.com/detcoll/detcoll/internal/tools/report"
)

// testMainVar makes the test binary act as the detcoll command, so that
// commands that start their own ranks (os.Executable) can be tested: the
// ranks are this binary, with this variable inherited.
const testMainVar = "DETCOLL_TEST_MAIN"

func TestMain(m *testing.M) {
	if os.Getenv(testMainVar) != "" {
		main()
	}
	os.Exit(m.Run())
}

// TestBenchRefuses checks that every bad argument is refused as bad usage
// (exit 2) before any rank starts: the ranks would be this test binary,
// which without testMainVar would run the tests instead and fail them.
func TestBenchRefuses(t *testing.T) {
	small := []string{"--reference", "none", "--iterations", "2", "--size-bytes", "4KiB"}
	for _, tt := range []struct {
		name string
		args []string
		want string
	}{
		{"negative warmup", []string{"--warmup", "-1"}, "warmup -1: want >= 0"},
		{"zero iterations", []string{"--iterations", "0"}, "iterations 0: want > 0"},
		{"zero size", []string{"--size-bytes", "0"}, `size "0"`},
		{"size not a number", []string{"--size-bytes", "lots"}, `size "lots"`},
		{"size not whole elements", []string{"--size-bytes", "1KiB,1026"}, "size 1026 bytes: want a positive multiple of the float32 size, 4"},
		{"size not whole float64s", []string{"--dtype", "float64", "--size-bytes", "12"}, "float64 size, 8"},
		{"size twice", []string{"--size-bytes", "1KiB,1024"}, "listed twice"},
		{"reduce-scatter not divisible", []string{"-n", "3", "--operations", "reduce_scatter"}, "not a multiple of the world size 3"},
		{"unknown operation", []string{"--operations", "all_reduce,all_to_all"}, `operation "all_to_all"`},
		{"empty operation", []string{"--operations", ""}, `operation ""`},
		{"dtype", []string{"--dtype", "int32"}, `--dtype "int32"`},
		{"backend", []string{"--backend", "tpu"}, `backend "tpu"`},
		{"reference", []string{"--reference", "gloo"}, `reference "gloo"`},
		{"nccl on cpu", []string{"--reference", "nccl"}, `reference "nccl": the cpu backend`},
		{"mpi on cuda", []string{"--backend", "cuda", "--reference", "mpi"}, `reference "mpi": the cuda backend`},
		{"deterministic without nccl", []string{"--backend", "cuda", "--nccl-deterministic"}, `--nccl-deterministic: the reference is "none"`},
		{"deterministic on cpu", []string{"--nccl-deterministic"}, `--nccl-deterministic: the reference is "none"`},
		{"ranks", []string{"-n", "0"}, "-n must be at least 1"},
		{"timeout", []string{"--timeout", "0s"}, "--timeout must be positive"},
		{"negative hosts", []string{"--hosts", "-2"}, "--hosts -2"},
		{"hosts on cuda not dividing", []string{"--backend", "cuda", "-n", "3", "--hosts", "2", "--operations", "all_reduce"}, "--hosts 2: want a divisor of the 3 ranks"},
		{"unknown flag", []string{"--sizes", "1KiB"}, "-sizes"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			args := append(append([]string{"bench"}, small...), tt.args...)
			err := run(t.Context(), args, &stdout, &stderr)
			if code := exitCode(err); code != 2 || err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("run(%q) = %v (exit %d); want exit 2 and an error containing %q\nstderr: %s", args, err, code, tt.want, stderr.String())
			}
		})
	}
}

// TestBenchCUDAUnavailable runs detcoll bench --backend cuda on 2 local
// ranks where there is no GPU: it must fail, saying so once, before it
// starts a rank (the ranks would each say it), rather than hang.
func TestBenchCUDAUnavailable(t *testing.T) {
	if err := driver.Load(); err == nil {
		driver.Unload()
		t.Skip("a CUDA driver is here")
	}
	t.Setenv(testMainVar, "1")
	var stdout, stderr bytes.Buffer
	err := run(t.Context(), []string{"bench", "-n", "2", "--backend", "cuda", "--size-bytes", "4KiB",
		"--warmup", "0", "--iterations", "1", "--timeout", "20s"}, &stdout, &stderr)
	if exitCode(err) != 1 || err == nil || !strings.Contains(err.Error(), "--backend cuda: ") || !strings.Contains(err.Error(), "CUDA unavailable") || stderr.Len() != 0 {
		t.Errorf("bench --backend cuda without CUDA = %v (exit %d); want exit 1 and \"CUDA unavailable\"\nstderr: %s", err, exitCode(err), stderr.String())
	}
}

func TestBenchUnavailable(t *testing.T) {
	if mpiref.Built {
		return
	}
	var stdout, stderr bytes.Buffer
	err := run(t.Context(), []string{"bench", "--reference", "mpi"}, &stdout, &stderr)
	if exitCode(err) != 1 || err == nil || !strings.Contains(err.Error(), "-tags mpi") {
		t.Errorf("bench --reference mpi without the mpi build = %v; want a failure saying how to build it", err)
	}
}

// TestBench runs detcoll bench on 2 local ranks, end to end.
func TestBench(t *testing.T) {
	t.Setenv(testMainVar, "1")
	dir := t.TempDir()
	out, lines := filepath.Join(dir, "new", "r.json"), filepath.Join(dir, "b.txt")
	var stdout, stderr bytes.Buffer
	err := run(t.Context(), []string{"bench", "-n", "2", "--reference", "none", "--dtype", "bfloat16",
		"--size-bytes", "4KiB,64KiB", "--warmup", "1", "--iterations", "3",
		"--output", out, "--benchfmt", lines}, &stdout, &stderr)
	if err != nil {
		t.Fatalf("bench = %v\nstderr: %s", err, stderr.String())
	}
	rep, err := report.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if m := rep.Meta; m.WorldSize != 2 || m.DType != "bfloat16" || m.Warmup != 1 || m.Iterations != 3 || len(rep.Rows) != 12 {
		t.Errorf("report: %+v, %d rows; want 2 ranks, bfloat16, 1 + 3 samples, 12 rows", m, len(rep.Rows))
	}
	for _, r := range rep.Rows {
		if !(r.DetcollP10US <= r.DetcollUS && r.DetcollUS <= r.DetcollP90US) || r.DetcollBusBW <= 0 {
			t.Errorf("report row %s %d: p10 %v, median %v, p90 %v us, busbw %v GB/s; want p10 <= median <= p90 and a busbw",
				r.Operation, r.InputBytesPerRank, r.DetcollP10US, r.DetcollUS, r.DetcollP90US, r.DetcollBusBW)
		}
	}
	// The table: a header, 12 rows, and the noise mark's legend if and only
	// if a row has the mark (which depends on this machine's noise).
	got := stdout.String()
	tbl := strings.Split(strings.TrimSuffix(got, "\n"), "\n")
	if want := "operation           bytes/rank detcoll us   p10 us  p90 us   algbw   busbw"; tbl[0] != want {
		t.Errorf("table header %q; want %q", tbl[0], want)
	}
	want, marked := 13, len(tbl) >= 13 && strings.Contains(strings.Join(tbl[1:13], "\n"), "*")
	if marked {
		want++
	}
	if len(tbl) != want || !strings.Contains(got, "reduce_scatter_many") ||
		marked != strings.HasPrefix(tbl[len(tbl)-1], "* noisy: p90 > 1.5 x p10") {
		t.Errorf("table of %d lines; want %d, the last the legend if a row is marked (%v):\n%s", len(tbl), want, marked, got)
	}
	if got := stderr.String(); !strings.Contains(got, "[12/12] broadcast, 64KiB per rank") || !strings.Contains(got, "wrote "+out) {
		t.Errorf("progress:\n%s", got)
	}
	b, err := os.ReadFile(lines)
	if err != nil || strings.Count(string(b), "BenchmarkAllReduce/bfloat16/4KiB/side=detcoll \t1\t") != 3 {
		t.Errorf("benchmark lines (%v):\n%s", err, b)
	}
}
