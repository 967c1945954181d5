package report

import (
	"bytes"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"
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
		row.DetcollUS = Slowest(row.DetcollSamplesUS)
		row.ReferenceUS = Slowest(row.ReferenceSamplesUS)
		r.Rows = append(r.Rows, row)
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
