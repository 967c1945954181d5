package bench

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/detcoll/detcoll/internal/tools/report"
)

// fakeImpl records what the harness asks of it in a log shared by both
// sides, and returns times from next.
type fakeImpl struct {
	name     string
	log      *[]string
	next     func() time.Duration
	prepared bool
	inputs   [][]byte
	failTime error
}

func (f *fakeImpl) Name() string { return f.name }
func (f *fakeImpl) Describe(m *report.Meta) {
	if f.name == "detcoll" {
		m.Device, m.Options = "fake device", []byte(`{}`)
	} else {
		m.MPIVersion = "fake MPI 1.0"
	}
}
func (f *fakeImpl) Prepare(op Op, s Shape, input []byte) error {
	*f.log = append(*f.log, fmt.Sprintf("%s prepare %s %d", f.name, op, s.Bytes))
	f.prepared = true
	f.inputs = append(f.inputs, slices.Clone(input))
	return nil
}
func (f *fakeImpl) Barrier() error {
	*f.log = append(*f.log, f.name+" barrier")
	return nil
}
func (f *fakeImpl) Time(mode string) (time.Duration, error) {
	if !f.prepared {
		return 0, errors.New("Time before Prepare")
	}
	*f.log = append(*f.log, f.name+" time "+mode)
	if f.failTime != nil {
		return 0, f.failTime
	}
	return f.next(), nil
}
func (f *fakeImpl) Release() {
	*f.log = append(*f.log, f.name+" release")
	f.prepared = false
}

// fakeGroup is rank 0 of world ranks; rank r's samples are rank 0's times
// r+1.
type fakeGroup struct{ world int }

func (g fakeGroup) Rank() int      { return 0 }
func (g fakeGroup) WorldSize() int { return g.world }
func (g fakeGroup) AllGather(mine, all []float64) error {
	if len(all) != g.world*len(mine) {
		return fmt.Errorf("all has %d, want %d", len(all), g.world*len(mine))
	}
	for r := range g.world {
		for i, v := range mine {
			all[r*len(mine)+i] = v * float64(r+1)
		}
	}
	return nil
}

// counter returns 1us, 2us, 3us, ... on successive calls.
func counter() func() time.Duration {
	n := 0
	return func() time.Duration { n++; return time.Duration(n) * time.Microsecond }
}

func TestRunOrderAndRows(t *testing.T) {
	var log []string
	det := &fakeImpl{name: "detcoll", log: &log, next: counter()}
	ref := &fakeImpl{name: "mpi", log: &log, next: counter()}
	cfg := validConfig()
	cfg.Reference = report.ReferenceMPI
	cfg.Ops = []Op{AllReduce, AllGather}
	cfg.Sizes = []int{64, 128}
	cfg.Warmup, cfg.Iterations = 2, 3
	var progress, tbl bytes.Buffer
	rep, err := Measure(cfg, fakeGroup{world: 2}, det, ref, Output{Progress: &progress, Table: &tbl})
	if err != nil {
		t.Fatalf("Measure = %v", err)
	}

	// The log of the first row: both prepared, then 5 samples alternating
	// which side goes first, each sample preceded by its side's barrier.
	want := []string{"detcoll prepare all_reduce 64", "mpi prepare all_reduce 64"}
	for i := range 5 {
		first, second := "detcoll", "mpi"
		if i%2 == 1 {
			first, second = second, first
		}
		want = append(want, first+" barrier", first+" time wall_clock", second+" barrier", second+" time wall_clock")
	}
	want = append(want, "mpi release", "detcoll release")
	if got := log[:len(want)]; !slices.Equal(got, want) {
		t.Errorf("first row's calls:\n got %q\nwant %q", got, want)
	}
	if len(log) != 4*len(want) {
		t.Errorf("%d calls for 4 rows; want %d", len(log), 4*len(want))
	}

	// Rows in order; samples: detcoll's timed samples on rank 0 of the
	// first row are calls 3, 4, 5 of its counter (after 2 warmups); rank 1's
	// are twice those.
	if len(rep.Rows) != 4 {
		t.Fatalf("%d rows; want 4", len(rep.Rows))
	}
	r := rep.Rows[0]
	if r.Operation != "all_reduce" || r.InputBytesPerRank != 64 || r.Mode != report.ModeWallClock {
		t.Errorf("row 0 = %s %d %s", r.Operation, r.InputBytesPerRank, r.Mode)
	}
	if want := [][]float64{{3, 4, 5}, {6, 8, 10}}; !slices.EqualFunc(r.DetcollSamplesUS, want, slices.Equal) {
		t.Errorf("row 0 detcoll samples %v; want %v", r.DetcollSamplesUS, want)
	}
	if r.DetcollUS != 8 || r.ReferenceUS != 8 {
		t.Errorf("row 0 medians %v, %v; want 8, 8 (rank 1's)", r.DetcollUS, r.ReferenceUS)
	}
	// Rank 1's 6, 8, 10: p10 6.4, p90 9.6; 64 bytes in 8 us on 2 ranks.
	if math.Abs(r.DetcollP10US-6.4) > 1e-12 || math.Abs(r.DetcollP90US-9.6) > 1e-12 || r.DetcollBusBW != 0.008 ||
		r.ReferenceP10US != r.DetcollP10US || r.ReferenceBusBW != 0.008 {
		t.Errorf("row 0 spreads %v-%v, %v-%v us, busbw %v, %v GB/s; want 6.4-9.6 both, 0.008 both",
			r.DetcollP10US, r.DetcollP90US, r.ReferenceP10US, r.ReferenceP90US, r.DetcollBusBW, r.ReferenceBusBW)
	}
	if rep.Rows[3].Operation != "all_gather" || rep.Rows[3].InputBytesPerRank != 128 {
		t.Errorf("row 3 = %s %d", rep.Rows[3].Operation, rep.Rows[3].InputBytesPerRank)
	}

	// Metadata: the run's and the sides'.
	m := rep.Meta
	if m.WorldSize != 2 || m.DType != "float32" || m.Reference != "mpi" || m.Device != "fake device" ||
		m.MPIVersion != "fake MPI 1.0" || m.Warmup != 2 || m.Iterations != 3 || m.Commit == "" || m.GoVersion == "" {
		t.Errorf("metadata %+v", m)
	}

	// Both sides got the same input, different for each row, never zero.
	for i := range det.inputs {
		if !bytes.Equal(det.inputs[i], ref.inputs[i]) {
			t.Errorf("row %d: the sides got different inputs", i)
		}
		if bytes.Count(det.inputs[i], []byte{0, 0, 0, 0}) > len(det.inputs[i])/8 {
			t.Errorf("row %d: input mostly zero", i)
		}
	}
	if bytes.Equal(det.inputs[0][:64], det.inputs[2][:64]) {
		t.Errorf("rows 0 and 2 got the same input")
	}

	if got := progress.String(); !strings.Contains(got, "[1/4] all_reduce, 64B per rank") || !strings.Contains(got, "[4/4] all_gather, 128B per rank") {
		t.Errorf("progress %q", got)
	}
	lines := strings.Split(strings.TrimSpace(tbl.String()), "\n")
	if len(lines) != 5 || !strings.Contains(lines[0], "detcoll/mpi") || !strings.Contains(lines[1], "all_reduce") || !strings.HasSuffix(lines[1], "1.00") {
		t.Errorf("table:\n%s", tbl.String())
	}
}

func TestRunWithoutReference(t *testing.T) {
	var log []string
	det := &fakeImpl{name: "detcoll", log: &log, next: counter()}
	cfg := validConfig()
	cfg.Ops, cfg.Sizes, cfg.Warmup, cfg.Iterations = []Op{Broadcast}, []int{8}, 0, 4
	var tbl bytes.Buffer
	rep, err := Measure(cfg, fakeGroup{world: 1}, det, nil, Output{Table: &tbl})
	if err != nil {
		t.Fatalf("Measure = %v", err)
	}
	if r := rep.Rows[0]; r.DetcollUS != 2.5 || r.ReferenceUS != 0 || r.ReferenceSamplesUS != nil {
		t.Errorf("row %+v; want median 2.5 and no reference", r)
	}
	if strings.Contains(tbl.String(), "detcoll/") {
		t.Errorf("table without a reference has a ratio column:\n%s", tbl.String())
	}
}

func TestRunRefusesBeforeWork(t *testing.T) {
	var log []string
	det := &fakeImpl{name: "detcoll", log: &log, next: counter()}
	cfg := validConfig()
	cfg.Sizes = []int{3}
	if _, err := Measure(cfg, fakeGroup{world: 1}, det, nil, Output{}); err == nil || !strings.Contains(err.Error(), "size 3 bytes") {
		t.Errorf("Measure = %v; want the size refused", err)
	}
	cfg = validConfig()
	cfg.Reference = report.ReferenceMPI
	if _, err := Measure(cfg, fakeGroup{world: 1}, det, nil, Output{}); err == nil || !strings.Contains(err.Error(), "reference") {
		t.Errorf("Measure(reference mpi, no side) = %v; want an error", err)
	}
	if len(log) != 0 {
		t.Errorf("a refused Measure called the side: %q", log)
	}
}

func TestRunSideFails(t *testing.T) {
	var log []string
	boom := errors.New("boom")
	det := &fakeImpl{name: "detcoll", log: &log, next: counter(), failTime: boom}
	_, err := Measure(validConfig(), fakeGroup{world: 1}, det, nil, Output{})
	if !errors.Is(err, boom) || !strings.Contains(err.Error(), "all_reduce, 1024 bytes: detcoll: wall_clock") {
		t.Errorf("Measure = %v; want boom, with the operation and side", err)
	}
	if log[len(log)-1] != "detcoll release" {
		t.Errorf("the failed side was not released: %q", log)
	}
}

func TestTuningEnv(t *testing.T) {
	got := tuningEnv([]string{"PATH=/bin", "DETCOLL_SECRET=s", "DETCOLL_CPU_ALLREDUCE_ONESHOT_MAX=1", "DETCOLL_ADDR=h:1"})
	if want := []string{"DETCOLL_ADDR=h:1", "DETCOLL_CPU_ALLREDUCE_ONESHOT_MAX=1"}; !slices.Equal(got, want) {
		t.Errorf("tuningEnv = %q; want %q (no secret)", got, want)
	}
}
