package plot

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/detcoll/detcoll/internal/tools/report"
)

// spec describes a test report; fake turns it into a valid one.
type spec struct {
	world      int
	sizes      []int64
	ops        []string
	iterations int
	us         float64 // detcoll's time at 1 KiB; it grows with the size
	edit       func(m *report.Meta)
}

func fake(s spec) *report.Report {
	if s.world == 0 {
		s.world = 2
	}
	if s.sizes == nil {
		s.sizes = []int64{1 << 10, 4 << 10, 64 << 10}
	}
	if s.ops == nil {
		s.ops = []string{"all_reduce", "all_gather"}
	}
	if s.iterations == 0 {
		s.iterations = 3
	}
	if s.us == 0 {
		s.us = 2
	}
	r := &report.Report{Kind: report.Kind, SchemaVersion: report.SchemaVersion, Meta: report.Meta{
		WorldSize: s.world, DType: "float32", Backend: "cpu", Device: "AMD EPYC (2 CPUs)",
		MPIVersion: "Open MPI v4.1.4, package: Debian OpenMPI", Reference: report.ReferenceMPI, Notes: []string{},
		GoVersion: "go1.26.8", Commit: "abc", Warmup: 2, Iterations: s.iterations,
		Modes: []string{report.ModeWallClock}, Seed: 1, Date: "2026-11-30T00:00:00Z", Hostname: "h",
		Options: json.RawMessage(`{}`),
	}}
	if s.edit != nil {
		s.edit(&r.Meta)
	}
	for _, op := range s.ops {
		for _, size := range s.sizes {
			row := report.Row{Operation: op, Mode: r.Meta.Modes[0], InputBytesPerRank: size}
			for rank := range s.world {
				var det, ref []float64
				for i := range s.iterations {
					t := s.us * float64(size) / 1024 * (1 + 0.1*float64(i+rank))
					det, ref = append(det, t), append(ref, 1.5*t)
				}
				row.DetcollSamplesUS = append(row.DetcollSamplesUS, det)
				if r.Meta.Reference != report.ReferenceNone {
					row.ReferenceSamplesUS = append(row.ReferenceSamplesUS, ref)
				}
			}
			row.DetcollUS = report.Slowest(row.DetcollSamplesUS)
			row.ReferenceUS = report.Slowest(row.ReferenceSamplesUS)
			r.Rows = append(r.Rows, row)
		}
	}
	if err := r.Validate(); err != nil {
		panic(err)
	}
	return r
}

func in(name string, r *report.Report) Input { return Input{Name: name, Report: r} }

// pair is a valid request of one before/after pair, each changed by its
// spec.
func pair(before, after spec) Request {
	if after.us == 0 {
		after.us = 1
	}
	return Request{Before: []Input{in("b.json", fake(before))}, After: []Input{in("a.json", fake(after))}, Operation: "all_reduce"}
}

// TestCheckRefuses changes one thing at a time from a valid request; each
// must be refused by its own check (removing the check fails its case).
func TestCheckRefuses(t *testing.T) {
	tests := []struct {
		name string
		req  Request
		want string
	}{
		{"no reports", Request{Operation: "all_reduce"}, "no reports"},
		{"more before", func() Request {
			r := pair(spec{}, spec{})
			r.Before = append(r.Before, in("b2.json", fake(spec{world: 4})))
			return r
		}(), "2 before reports but 1 after reports"},
		{"more after", func() Request {
			r := pair(spec{}, spec{})
			r.After = append(r.After, in("a2.json", fake(spec{world: 4})))
			return r
		}(), "1 before reports but 2 after reports"},
		{"no operation", func() Request { r := pair(spec{}, spec{}); r.Operation = ""; return r }(), "no operation"},
		{"invalid report", func() Request { r := pair(spec{}, spec{}); r.After[0].Report.Meta.Device = ""; return r }(), "a.json: report: metadata: device: empty"},
		{"world size", pair(spec{world: 2}, spec{world: 4}), "differ in world size: 2 before, 4 after"},
		{"backend", pair(spec{}, spec{edit: func(m *report.Meta) { m.Backend = "cuda" }}), "differ in backend: cpu before, cuda after"},
		{"dtype", pair(spec{}, spec{edit: func(m *report.Meta) { m.DType = "bfloat16" }}), "differ in dtype: float32 before, bfloat16 after"},
		{"device", pair(spec{}, spec{edit: func(m *report.Meta) { m.Device = "Intel Xeon (2 CPUs)" }}), "differ in device"},
		{"driver", pair(spec{edit: func(m *report.Meta) { m.DriverVersion = "580.159" }}, spec{}), "differ in driver version: 580.159 before"},
		{"CUDA", pair(spec{}, spec{edit: func(m *report.Meta) { m.CUDAVersion = "13.0" }}), "differ in CUDA version"},
		{"NCCL", pair(spec{}, spec{edit: func(m *report.Meta) { m.NCCLVersion = "2.28.3" }}), "differ in NCCL version"},
		{"MPI", pair(spec{}, spec{edit: func(m *report.Meta) { m.MPIVersion = "Open MPI v5.0.0" }}), "differ in MPI version"},
		{"Go", pair(spec{}, spec{edit: func(m *report.Meta) { m.GoVersion = "go1.27" }}), "differ in Go version: go1.26.8 before, go1.27 after"},
		{"warmup", pair(spec{}, spec{edit: func(m *report.Meta) { m.Warmup = 20 }}), "differ in warmup: 2 before, 20 after"},
		{"iterations", pair(spec{}, spec{iterations: 5}), "differ in iterations: 3 before, 5 after"},
		{"size values", pair(spec{sizes: []int64{1024, 4096}}, spec{sizes: []int64{1024, 8192}}), "differ in the sizes of all_reduce: [1024 4096] before, [1024 8192] after"},
		{"size count", pair(spec{sizes: []int64{1024}}, spec{sizes: []int64{1024, 4096}}), "differ in the sizes of all_reduce: [1024] before"},
		{"before lacks the operation", pair(spec{ops: []string{"all_gather"}}, spec{}), "b.json has no rows of all_reduce in mode wall_clock"},
		{"after lacks the operation", pair(spec{}, spec{ops: []string{"all_gather"}}), "a.json has no rows of all_reduce in mode wall_clock"},
		{"unknown mode", func() Request { r := pair(spec{}, spec{}); r.Mode = report.ModeGraph; return r }(), "has no rows of all_reduce in mode graph"},
		{"ambiguous mode", pair(spec{}, spec{edit: func(m *report.Meta) { m.Modes = []string{report.ModePipelined} }}),
			"timing modes [wall_clock pipelined]: choose one with --mode"},
		{"zero time", func() Request {
			r := pair(spec{}, spec{})
			row := &r.Before[0].Report.Rows[0]
			row.DetcollSamplesUS = [][]float64{{0, 0, 0}, {0, 0, 0}}
			row.DetcollUS = 0
			return r
		}(), "b.json: all_reduce at 1024 bytes has a time of 0"},
		{"world size twice", func() Request {
			r := pair(spec{}, spec{})
			r.Before = append(r.Before, in("b2.json", fake(spec{})))
			r.After = append(r.After, in("a2.json", fake(spec{})))
			return r
		}(), "world size 2 twice: a.json and a2.json"},
	}
	if err := Check(pair(spec{}, spec{})); err != nil {
		t.Fatalf("valid request: Check = %v", err)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := Check(tt.req)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Check = %v; want an error containing %q", err, tt.want)
			}
			dir := t.TempDir()
			png, svg := filepath.Join(dir, "f.png"), filepath.Join(dir, "f.svg")
			if err := Write(tt.req, png, svg); err == nil {
				t.Errorf("Write = nil; want Check's error")
			}
			if left, _ := os.ReadDir(dir); len(left) > 0 {
				t.Errorf("a refused Write left %v", left)
			}
		})
	}
}

// TestCheckAllProblems reports every problem, not only the first.
func TestCheckAllProblems(t *testing.T) {
	err := Check(pair(spec{world: 4, iterations: 4}, spec{edit: func(m *report.Meta) { m.Device = "other" }}))
	for _, want := range []string{"world size", "device", "iterations"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Check = %v; want it to name the %s", err, want)
		}
	}
}

func TestWrite(t *testing.T) {
	noRef := func(m *report.Meta) { m.Reference, m.MPIVersion = report.ReferenceNone, "" }
	for _, tt := range []struct {
		name string
		req  Request
	}{
		{"one pair", pair(spec{}, spec{})},
		{"sizes in any order", pair(spec{sizes: []int64{4096, 1024, 65536}}, spec{sizes: []int64{65536, 1024, 4096}})},
		{"no reference", pair(spec{edit: noRef}, spec{edit: noRef})},
		{"an extra reference", func() Request {
			r := pair(spec{}, spec{us: 1})
			r.Extra = []Input{in("symm.json", fake(spec{us: 3, edit: func(m *report.Meta) { m.Reference = report.ReferenceSymmMem }}))}
			return r
		}()},
		{"four world sizes", Request{
			Before:    []Input{in("b2", fake(spec{world: 2})), in("b3", fake(spec{world: 3})), in("b4", fake(spec{world: 4})), in("b8", fake(spec{world: 8}))},
			After:     []Input{in("a2", fake(spec{world: 2, us: 1})), in("a3", fake(spec{world: 3, us: 1})), in("a4", fake(spec{world: 4, us: 1})), in("a8", fake(spec{world: 8, us: 1}))},
			Operation: "all_gather",
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "new")
			png, svg := filepath.Join(dir, "f.png"), filepath.Join(dir, "f.svg")
			if err := Write(tt.req, png, svg); err != nil {
				t.Fatalf("Write = %v", err)
			}
			p, err := os.ReadFile(png)
			if err != nil || len(p) < 10000 || !bytes.HasPrefix(p, []byte("\x89PNG\r\n\x1a\n")) {
				t.Errorf("PNG: %d bytes, %v; want a PNG of some size", len(p), err)
			}
			s, err := os.ReadFile(svg)
			if err != nil || len(s) < 4000 || !bytes.Contains(s, []byte("<svg")) || !bytes.Contains(s, []byte(tt.req.Operation+", W=")) {
				t.Errorf("SVG: %d bytes, %v; want an SVG of some size with the panel's title", len(s), err)
			}
		})
	}
}

func TestReferenceLabel(t *testing.T) {
	for _, tt := range []struct {
		m    report.Meta
		want string
	}{
		{report.Meta{Reference: "mpi", MPIVersion: "Open MPI v4.1.4, package: Debian", ReferenceDType: "float32"}, "Open MPI v4.1.4 (float32)"},
		{report.Meta{Reference: "mpi"}, "MPI"},
		{report.Meta{Reference: "nccl", NCCLVersion: "2.28.3"}, "NCCL 2.28.3"},
	} {
		if got := referenceLabel(&tt.m); got != tt.want {
			t.Errorf("referenceLabel(%+v) = %q; want %q", tt.m, got, tt.want)
		}
	}
}

func TestOutputPaths(t *testing.T) {
	for _, tt := range []struct{ in, png, svg, err string }{
		{"fig.png", "fig.png", "fig.svg", ""},
		{"d/fig.svg", "d/fig.png", "d/fig.svg", ""},
		{"d/fig", "d/fig.png", "d/fig.svg", ""},
		{"fig.pdf", "", "", `"fig.pdf": want a path ending in .png or .svg`},
		{".png", "", "", "no file name"},
		{"", "", "", "no file name"},
	} {
		png, svg, err := OutputPaths(tt.in)
		if png != tt.png || svg != tt.svg || (err == nil) != (tt.err == "") || (err != nil && !strings.Contains(err.Error(), tt.err)) {
			t.Errorf("OutputPaths(%q) = %q, %q, %v; want %q, %q, %q", tt.in, png, svg, err, tt.png, tt.svg, tt.err)
		}
	}
}

// TestCheckExtra: an extra reference must have an after report of its world
// size, the same dtype, device and sizes, and a reference time.
func TestCheckExtra(t *testing.T) {
	for _, tt := range []struct {
		name  string
		extra spec
		want  string
	}{
		{"world size", spec{world: 4}, "no after report of world size 4"},
		{"device", spec{edit: func(m *report.Meta) { m.Device = "other" }}, "device"},
		{"sizes", spec{sizes: []int64{1 << 10}}, "sizes"},
		{"no reference", spec{edit: func(m *report.Meta) { m.Reference, m.MPIVersion = report.ReferenceNone, "" }}, "no reference"},
	} {
		r := pair(spec{}, spec{})
		r.Extra = []Input{in("x.json", fake(tt.extra))}
		if err := Check(r); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: Check = %v; want it to say %q", tt.name, err, tt.want)
		}
	}
}

// TestCheckExtraValidated: an extra reference is validated like the pair
// (Read validates files; Check must too, for requests made in code).
func TestCheckExtraValidated(t *testing.T) {
	r := pair(spec{}, spec{})
	bad := fake(spec{})
	bad.SchemaVersion = 99
	r.Extra = []Input{in("x.json", bad)}
	if err := Check(r); err == nil || !strings.Contains(err.Error(), "x.json: report: schema version 99") {
		t.Errorf("Check = %v; want it to refuse x.json's schema version", err)
	}
}

func TestSuffixed(t *testing.T) {
	for _, tt := range []struct{ path, op, want string }{
		{"fig.png", "all_reduce", "fig-all_reduce.png"},
		{"d/fig.svg", "broadcast", "d/fig-broadcast.svg"},
		{"d.x/fig.png", "all_gather", "d.x/fig-all_gather.png"},
	} {
		if got := suffixed(tt.path, tt.op); got != tt.want {
			t.Errorf("suffixed(%q, %q) = %q; want %q", tt.path, tt.op, got, tt.want)
		}
	}
}
