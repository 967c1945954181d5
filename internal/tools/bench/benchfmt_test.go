package bench

import (
	"bytes"
	"strings"
	"testing"

	"github.com/detcoll/detcoll/internal/tools/report"
)

func TestWriteBenchfmt(t *testing.T) {
	rep := &report.Report{
		Meta: report.Meta{WorldSize: 2, DType: "float32", Backend: "cpu", Device: "cpu x", Reference: "mpi",
			MPIVersion: "Open MPI v4.1.4", Commit: "c1", Modes: []string{report.ModeWallClock}},
		Rows: []report.Row{{
			Operation: "all_reduce", Mode: report.ModeWallClock, InputBytesPerRank: 64 << 10,
			DetcollSamplesUS:   [][]float64{{10, 20}, {30, 5}},
			ReferenceSamplesUS: [][]float64{{40, 40}, {1, 1}},
		}},
	}
	var buf bytes.Buffer
	if err := WriteBenchfmt(&buf, rep); err != nil {
		t.Fatal(err)
	}
	got := buf.String()
	for _, want := range []string{
		"goos: ", "cpu: cpu x\n", "world: 2\n", "commit: c1\n", "mpi: Open MPI v4.1.4\n",
		// The slowest rank of each sample: 30 then 20 us.
		"BenchmarkAllReduce/float32/64KiB/side=detcoll \t1\t30000 ns/op\t2184.53 MB/s\n",
		"BenchmarkAllReduce/float32/64KiB/side=detcoll \t1\t20000 ns/op\t3276.80 MB/s\n",
		"BenchmarkAllReduce/float32/64KiB/side=mpi \t1\t40000 ns/op\t1638.40 MB/s\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("output lacks %q:\n%s", want, got)
		}
	}
	if n := strings.Count(got, "\nBenchmark"); n != 4 {
		t.Errorf("%d benchmark lines; want 4 (2 samples x 2 sides)", n)
	}

	rep.Meta.Modes = []string{report.ModePipelined, report.ModeGraph}
	rep.Rows[0].Mode = report.ModeGraph
	rep.Rows[0].ReferenceSamplesUS = nil
	buf.Reset()
	WriteBenchfmt(&buf, rep)
	if !strings.Contains(buf.String(), "BenchmarkAllReduce/float32/64KiB/side=detcoll/mode=graph \t1") || strings.Contains(buf.String(), "side=mpi") {
		t.Errorf("with several modes and no reference samples:\n%s", buf.String())
	}
}

func TestCommitFromEnv(t *testing.T) {
	t.Setenv("DETCOLL_COMMIT", "v1.2.3-4-gabc")
	if got := Commit(); got != "v1.2.3-4-gabc" {
		t.Errorf("Commit() = %q; want DETCOLL_COMMIT's", got)
	}
	t.Setenv("DETCOLL_COMMIT", "")
	if got := Commit(); got == "" {
		t.Errorf("Commit() = empty; want a revision or \"unknown\"")
	}
}
