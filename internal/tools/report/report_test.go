package report

import (
	"bytes"
	"encoding/json"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
)

// sample returns a valid report: W=2, two sizes of all_reduce, with an MPI
// reference.
func sample() *Report {
	r := &Report{
		Kind:          Kind,
		SchemaVersion: SchemaVersion,
		Meta: Meta{
			WorldSize: 2, DType: "bfloat16", Backend: "cpu", Device: "AMD EPYC (2 CPUs)",
			MPIVersion: "Open MPI v4.1.4", Reference: ReferenceMPI, ReferenceDType: "float32",
			Notes:     []string{"the reference sums float32"},
			GoVersion: "go1.26.8", Commit: "abc1234", Warmup: 1, Iterations: 3,
			Modes: []string{ModeWallClock}, Seed: 1, Date: "2026-11-30T01:02:03Z", Hostname: "h",
			Options: json.RawMessage(`{"backend":"cpu","capacity":4096}`),
		},
	}
	for _, size := range []int64{1024, 4096} {
		row := Row{Operation: "all_reduce", Mode: ModeWallClock, InputBytesPerRank: size,
			DetcollSamplesUS:   [][]float64{{1, 2, 3}, {2, 4, 9}},
			ReferenceSamplesUS: [][]float64{{1.5, 1.25, 1}, {0.5, 7, 8}},
		}
		row.Summarise(r.Meta.WorldSize)
		r.Rows = append(r.Rows, row)
	}
	return r
}

// unsummarised returns r with its rows' optional summary fields zeroed,
// as a report written before they existed.
func unsummarised(r *Report) *Report {
	for i := range r.Rows {
		row := &r.Rows[i]
		row.DetcollP10US, row.DetcollP90US, row.DetcollBusBW = 0, 0, 0
		row.ReferenceP10US, row.ReferenceP90US, row.ReferenceBusBW = 0, 0, 0
	}
	return r
}

func TestRoundTrip(t *testing.T) {
	want := sample()
	var buf bytes.Buffer
	if err := Write(&buf, want); err != nil {
		t.Fatalf("Write = %v", err)
	}
	if !bytes.HasSuffix(buf.Bytes(), []byte("}\n")) {
		t.Errorf("Write's output does not end in a newline")
	}
	got, err := Read(&buf)
	if err != nil {
		t.Fatalf("Read = %v", err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Read(Write(r)) = %+v; want %+v", got, want)
	}
}

func TestFileRoundTrip(t *testing.T) {
	path := filepath.Join(t.TempDir(), "a", "b", "r.json")
	want := sample()
	if err := WriteFile(path, want); err != nil {
		t.Fatalf("WriteFile = %v", err)
	}
	got, err := ReadFile(path)
	if err != nil {
		t.Fatalf("ReadFile = %v", err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("ReadFile = %+v; want %+v", got, want)
	}
	left, _ := filepath.Glob(filepath.Join(filepath.Dir(path), ".*"))
	if len(left) > 0 {
		t.Errorf("temporary files left: %v", left)
	}
	if err := WriteFile(path, &Report{}); err == nil {
		t.Errorf("WriteFile of an invalid report = nil; want an error")
	}
	if got, err := ReadFile(path); err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("after a refused WriteFile, the file reads %v, %v; want it unchanged", got, err)
	}
}

func TestMedianSlowest(t *testing.T) {
	for _, tt := range []struct {
		in   []float64
		want float64
	}{
		{nil, 0}, {[]float64{3}, 3}, {[]float64{3, 1}, 2}, {[]float64{5, 1, 3}, 3}, {[]float64{4, 1, 3, 2}, 2.5},
	} {
		in := append([]float64(nil), tt.in...)
		if got := Median(in); got != tt.want {
			t.Errorf("Median(%v) = %v; want %v", tt.in, got, tt.want)
		}
		if !reflect.DeepEqual(in, tt.in) && tt.in != nil {
			t.Errorf("Median changed its input to %v", in)
		}
	}
	if got := Slowest([][]float64{{1, 2, 3}, {9, 0, 1}, {2, 2, 2}}); got != 2 {
		t.Errorf("Slowest = %v; want 2", got)
	}
}

func TestPercentile(t *testing.T) {
	for _, tt := range []struct {
		in   []float64
		p    float64
		want float64
	}{
		{nil, 10, 0},
		{[]float64{7}, 10, 7},
		{[]float64{7}, 90, 7},
		{[]float64{3, 1}, 0, 1},
		{[]float64{3, 1}, 100, 3},
		{[]float64{3, 1}, 50, 2},
		{[]float64{1, 2, 3}, 10, 1.2},         // h = 0.2
		{[]float64{1, 2, 3}, 90, 2.8},         // h = 1.8
		{[]float64{9, 2, 4}, 90, 8},           // sorted 2, 4, 9: 4 + 0.8 x 5
		{[]float64{4, 1, 3, 2}, 50, 2.5},      // the median
		{[]float64{40, 10, 30, 20}, 25, 17.5}, // h = 0.75
		// Ten samples: p10 between the two smallest, p90 the two largest.
		{[]float64{10, 1, 9, 2, 8, 3, 7, 4, 6, 5}, 10, 1.9},
		{[]float64{10, 1, 9, 2, 8, 3, 7, 4, 6, 5}, 90, 9.1},
	} {
		in := slices.Clone(tt.in)
		if got := Percentile(in, tt.p); math.Abs(got-tt.want) > 1e-12 {
			t.Errorf("Percentile(%v, %v) = %v; want %v", tt.in, tt.p, got, tt.want)
		}
		if !slices.Equal(in, tt.in) {
			t.Errorf("Percentile changed its input to %v", in)
		}
	}
	perRank := [][]float64{{1, 2, 3}, {9, 0, 1}, {2, 2, 2}}
	for _, tt := range []struct{ p, want float64 }{{10, 2}, {50, 2}, {90, 7.4}} {
		if got := SlowestPercentile(perRank, tt.p); math.Abs(got-tt.want) > 1e-12 {
			t.Errorf("SlowestPercentile(%v, %v) = %v; want %v", perRank, tt.p, got, tt.want)
		}
	}
}

// TestSpreadContainsMedian: the spread of random samples contains the
// row's time, whatever the rounding.
func TestSpreadContainsMedian(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	rng := rand.New(rand.NewPCG(seed, 0))
	for range 2000 {
		perRank := make([][]float64, 1+rng.IntN(4))
		n := 1 + rng.IntN(12)
		for r := range perRank {
			base := math.Ldexp(1, rng.IntN(40)-20)
			for range n {
				// Few distinct values an ulp or so apart, or spread out.
				v := base + float64(rng.IntN(3))*math.Ldexp(base, -52)
				if rng.IntN(2) == 0 {
					v = base * (1 + 10*rng.Float64())
				}
				perRank[r] = append(perRank[r], v)
			}
		}
		p10, med, p90 := SlowestPercentile(perRank, 10), Slowest(perRank), SlowestPercentile(perRank, 90)
		if !(p10 <= med && med <= p90) {
			t.Fatalf("p10 %v, median %v, p90 %v: want p10 <= median <= p90\nsamples %v (seed %d)", p10, med, p90, perRank, seed)
		}
	}
}

func TestBusFactor(t *testing.T) {
	for _, tt := range []struct {
		op    string
		world int
		want  float64
		ok    bool
	}{
		{"all_reduce", 1, 0, true},
		{"all_reduce", 2, 1, true},
		{"all_reduce", 4, 1.5, true},
		{"all_reduce", 8, 1.75, true},
		{"reduce_scatter", 2, 0.5, true},
		{"reduce_scatter", 4, 0.75, true},
		{"reduce_scatter_many", 4, 0.75, true},
		{"all_gather", 8, 0.875, true},
		{"all_gather_many", 4, 0.75, true},
		{"broadcast", 1, 1, true},
		{"broadcast", 8, 1, true},
		{"barrier", 4, 0, false},
		{"", 4, 0, false},
	} {
		got, ok := BusFactor(tt.op, tt.world)
		if got != tt.want || ok != tt.ok {
			t.Errorf("BusFactor(%q, %d) = %v, %v; want %v, %v", tt.op, tt.world, got, ok, tt.want, tt.ok)
		}
	}
}

func TestBandwidth(t *testing.T) {
	for _, tt := range []struct {
		op       string
		bytes    int64
		world    int
		us       float64
		alg, bus float64
	}{
		// 1 MB in 1 us is 1000 GB/s.
		{"all_reduce", 1e6, 4, 1, 1000, 1500},
		{"all_reduce", 1e6, 2, 10, 100, 100},
		// The input is already W x output.
		{"reduce_scatter", 4e6, 4, 8, 500, 375},
		{"reduce_scatter_many", 4e6, 4, 8, 500, 375},
		// S is the output: W x input.
		{"all_gather", 1e6, 4, 8, 500, 375},
		{"all_gather_many", 1e6, 4, 8, 500, 375},
		{"broadcast", 3e6, 8, 2, 1500, 1500},
		{"all_reduce", 1024, 2, 4, 0.256, 0.256},
		{"all_reduce", 1e6, 1, 1, 1000, 0},
		{"barrier", 1e6, 4, 1, 0, 0},         // no data
		{"all_reduce", 1e6, 4, 0, 0, 0},      // no time (a side not measured)
		{"all_reduce", 1e6, 4, 5e-324, 0, 0}, // not finite
	} {
		alg, bus := Bandwidth(tt.op, tt.bytes, tt.world, tt.us)
		if math.Abs(alg-tt.alg) > 1e-9*tt.alg || math.Abs(bus-tt.bus) > 1e-9*tt.bus {
			t.Errorf("Bandwidth(%q, %d bytes, W=%d, %v us) = %v, %v GB/s; want %v, %v", tt.op, tt.bytes, tt.world, tt.us, alg, bus, tt.alg, tt.bus)
		}
	}
}

// TestReadFillsSummary reads a report written without the summary fields
// (as before they existed): they are filled in from the samples, and
// written back as JSON fields that read the same.
func TestReadFillsSummary(t *testing.T) {
	old := unsummarised(sample())
	var buf bytes.Buffer
	if err := Write(&buf, old); err != nil {
		t.Fatalf("Write of a report without summary fields = %v", err)
	}
	for _, name := range []string{"detcoll_p10_us", "detcoll_busbw_gbps", "reference_p90_us"} {
		if bytes.Contains(buf.Bytes(), []byte(name)) {
			t.Errorf("a report without summary fields has %q in its JSON", name)
		}
	}
	got, err := Read(&buf)
	if err != nil {
		t.Fatalf("Read = %v", err)
	}
	want := sample()
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Read = %+v; want %+v", got, want)
	}
	r := got.Rows[0]
	// Rank 1's samples are the slower: 2, 4, 9 and 0.5, 7, 8.
	if r.DetcollP10US != 2.4 || r.DetcollP90US != 8 || r.DetcollBusBW != 0.256 || r.ReferenceP90US != 7.8 {
		t.Errorf("row 0: p10 %v, p90 %v, busbw %v, reference p90 %v; want 2.4, 8, 0.256, 7.8",
			r.DetcollP10US, r.DetcollP90US, r.DetcollBusBW, r.ReferenceP90US)
	}
	buf.Reset()
	if err := Write(&buf, got); err != nil {
		t.Fatal(err)
	}
	for _, field := range []string{`"detcoll_p10_us": 2.4`, `"detcoll_p90_us": 8`, `"detcoll_busbw_gbps": 0.256`,
		`"reference_p10_us": 1.8`, `"reference_p90_us": 7.8`, `"reference_busbw_gbps": 0.14628571428`} {
		if !bytes.Contains(buf.Bytes(), []byte(field)) {
			t.Errorf("Write's output lacks %s:\n%s", field, buf.Bytes())
		}
	}
}

// TestValidate breaks one thing at a time.
func TestValidate(t *testing.T) {
	tests := []struct {
		name   string
		break_ func(r *Report)
		want   string
	}{
		{"kind", func(r *Report) { r.Kind = "x" }, `kind "x"`},
		{"schema", func(r *Report) { r.SchemaVersion = 2 }, "schema version 2"},
		{"world", func(r *Report) { r.Meta.WorldSize = 0 }, "world_size 0: want >= 1"},
		{"dtype", func(r *Report) { r.Meta.DType = "int32" }, `dtype "int32"`},
		{"backend", func(r *Report) { r.Meta.Backend = "tpu" }, `backend "tpu"`},
		{"device", func(r *Report) { r.Meta.Device = "" }, "device: empty"},
		{"reference", func(r *Report) { r.Meta.Reference = "gloo" }, `reference "gloo"`},
		{"reference dtype without reference", func(r *Report) {
			r.Meta.Reference = ReferenceNone
			for i := range r.Rows {
				r.Rows[i].ReferenceUS, r.Rows[i].ReferenceSamplesUS = 0, nil
			}
		}, "reference_dtype"},
		{"reference dtype", func(r *Report) { r.Meta.ReferenceDType = "int8" }, `reference_dtype "int8"`},
		{"go", func(r *Report) { r.Meta.GoVersion = "" }, "go_version"},
		{"commit", func(r *Report) { r.Meta.Commit = "" }, "commit"},
		{"warmup", func(r *Report) { r.Meta.Warmup = -1 }, "warmup -1"},
		{"iterations", func(r *Report) { r.Meta.Iterations = 0 }, "iterations 0: want >= 1"},
		{"no modes", func(r *Report) { r.Meta.Modes = nil }, "timing_modes: none"},
		{"unknown mode", func(r *Report) { r.Meta.Modes = []string{"fast"} }, `"fast"`},
		{"mode twice", func(r *Report) { r.Meta.Modes = []string{ModeWallClock, ModeWallClock} }, "listed twice"},
		{"date", func(r *Report) { r.Meta.Date = "yesterday" }, `date "yesterday"`},
		{"date not UTC", func(r *Report) { r.Meta.Date = "2026-11-30T01:02:03+01:00" }, "want UTC"},
		{"options", func(r *Report) { r.Meta.Options = json.RawMessage(`[1]`) }, "options"},
		{"no options", func(r *Report) { r.Meta.Options = nil }, "options"},
		{"no rows", func(r *Report) { r.Rows = nil }, "no rows"},
		{"duplicate row", func(r *Report) { r.Rows[1].InputBytesPerRank = r.Rows[0].InputBytesPerRank }, "a second row"},
		{"operation", func(r *Report) { r.Rows[0].Operation = "" }, "operation: empty"},
		{"row mode", func(r *Report) { r.Rows[0].Mode = ModeGraph }, `mode "graph" is not among`},
		{"bytes", func(r *Report) { r.Rows[0].InputBytesPerRank = 0 }, "input_bytes_per_rank 0"},
		{"bytes not whole elements", func(r *Report) { r.Rows[0].InputBytesPerRank = 1025 }, "input_bytes_per_rank 1025"},
		{"ranks", func(r *Report) { r.Rows[0].DetcollSamplesUS = r.Rows[0].DetcollSamplesUS[:1] }, "1 ranks, want world_size 2"},
		{"samples", func(r *Report) { r.Rows[0].DetcollSamplesUS[1] = []float64{1, 2} }, "2 samples, want iterations 3"},
		{"negative sample", func(r *Report) { r.Rows[0].DetcollSamplesUS[0][0] = -1 }, "[0][0] -1"},
		{"NaN sample", func(r *Report) { r.Rows[0].ReferenceSamplesUS[1][2] = math.NaN() }, "[1][2] NaN"},
		{"inf sample", func(r *Report) { r.Rows[0].ReferenceSamplesUS[1][2] = math.Inf(1) }, "[1][2] +Inf"},
		{"detcoll median", func(r *Report) { r.Rows[0].DetcollUS++ }, "detcoll_us 5"},
		{"detcoll p10", func(r *Report) { r.Rows[0].DetcollP10US = 2 }, "detcoll_p10_us 2: the samples give 2.4"},
		{"detcoll p90", func(r *Report) { r.Rows[1].DetcollP90US = 9 }, "detcoll_p90_us 9: the samples give 8"},
		{"reference p10", func(r *Report) { r.Rows[0].ReferenceP10US = 1 }, "reference_p10_us 1: the samples give 1.8"},
		{"reference p90", func(r *Report) { r.Rows[0].ReferenceP90US = 1 }, "reference_p90_us 1"},
		{"detcoll busbw", func(r *Report) { r.Rows[0].DetcollBusBW = 1 }, "detcoll_busbw_gbps 1: the median gives 0.256"},
		{"reference busbw", func(r *Report) { r.Rows[1].ReferenceBusBW *= 2 }, "reference_busbw_gbps"},
		{"busbw of an operation without one", func(r *Report) {
			for i := range r.Rows {
				r.Rows[i].Operation = "barrier"
			}
		}, "detcoll_busbw_gbps 0.256: the median gives 0"},
		{"reference spread without reference", func(r *Report) {
			r.Meta.Reference, r.Meta.ReferenceDType = ReferenceNone, ""
			for i := range r.Rows {
				r.Rows[i].ReferenceUS, r.Rows[i].ReferenceSamplesUS, r.Rows[i].ReferenceBusBW = 0, nil, 0
			}
		}, "reference times in a report without a reference"},
		{"reference median", func(r *Report) { r.Rows[1].ReferenceUS = 1 }, "reference_us 1"},
		{"reference samples without reference", func(r *Report) {
			r.Meta.Reference, r.Meta.ReferenceDType = ReferenceNone, ""
		}, "reference times in a report without a reference"},
		{"reference ranks", func(r *Report) { r.Rows[0].ReferenceSamplesUS = nil }, "reference_samples_us: 0 ranks"},
	}
	if err := sample().Validate(); err != nil {
		t.Fatalf("the sample is invalid: %v", err)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := sample()
			tt.break_(r)
			err := r.Validate()
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Validate = %v; want an error containing %q", err, tt.want)
			}
			if err := Write(new(bytes.Buffer), r); err == nil {
				t.Errorf("Write of the broken report = nil; want an error")
			}
		})
	}
}

func TestReadRejects(t *testing.T) {
	good := func() []byte {
		var buf bytes.Buffer
		if err := Write(&buf, sample()); err != nil {
			t.Fatal(err)
		}
		return buf.Bytes()
	}
	for _, tt := range []struct {
		name string
		data []byte
		want string
	}{
		{"not JSON", []byte("hello"), "not a report"},
		{"empty", nil, "not a report"},
		{"other kind", []byte(`{"kind":"deterministic_collectives_benchmark"}`), `kind "deterministic_collectives_benchmark"`},
		{"newer schema", []byte(`{"kind":"detcoll_bench","schema_version":2,"new":1}`), "schema version 2; this detcoll reads version 1"},
		{"unknown field", bytes.Replace(good(), []byte(`"rows"`), []byte(`"extra": 1, "rows"`), 1), `unknown field "extra"`},
		{"trailing data", append(good(), "{}"...), "data after the report"},
		{"null options", regexp.MustCompile(`"options": \{[^}]*\}`).ReplaceAll(good(), []byte(`"options": null`)), "options: want a JSON object"},
		{"invalid", bytes.Replace(good(), []byte(`"world_size": 2`), []byte(`"world_size": 3`), 1), "2 ranks, want world_size 3"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Read(bytes.NewReader(tt.data))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Read = %v; want an error containing %q", err, tt.want)
			}
		})
	}
}

func TestReadFileNames(t *testing.T) {
	path := filepath.Join(t.TempDir(), "bad.json")
	os.WriteFile(path, []byte("{}"), 0o644)
	if _, err := ReadFile(path); err == nil || !strings.Contains(err.Error(), path) {
		t.Errorf("ReadFile = %v; want an error naming %s", err, path)
	}
}
