package plot

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/detcoll/detcoll/internal/tools/report"
)

// reports is a valid request of reports drawn on their own.
func reports(ins ...Input) Request { return Request{Reports: ins, Operation: "all_reduce"} }

func TestWriteReports(t *testing.T) {
	other := func(commit string) func(m *report.Meta) { return func(m *report.Meta) { m.Commit = commit } }
	noRef := func(m *report.Meta) { m.Reference, m.MPIVersion = report.ReferenceNone, "" }
	for _, tt := range []struct {
		name   string
		req    Request
		labels []string // in the SVG, one per report
	}{
		{"one report", reports(in("r.json", fake(spec{}))), []string{"detcoll abc, cpu, W=2"}},
		{"one report without a reference", reports(in("r.json", fake(spec{edit: noRef}))), []string{"detcoll abc, cpu, W=2"}},
		{"many reports", reports(in("r2.json", fake(spec{})), in("r4.json", fake(spec{world: 4, us: 1})), in("new.json", fake(spec{us: 3, edit: other("def")}))),
			[]string{"detcoll abc, cpu, W=2", "detcoll abc, cpu, W=4", "detcoll def, cpu, W=2"}},
		{"other sizes, a reference or not", reports(in("r.json", fake(spec{})), in("s.json", fake(spec{sizes: []int64{2 << 10, 1 << 20}, edit: noRef}))),
			[]string{"detcoll abc, cpu, W=2 (r.json)", "detcoll abc, cpu, W=2 (s.json)"}},
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
			if err != nil || !bytes.Contains(s, []byte("all_reduce, wall_clock")) {
				t.Fatalf("SVG: %d bytes, %v; want an SVG with the panel's title", len(s), err)
			}
			for _, label := range tt.labels {
				if !bytes.Contains(s, []byte(label)) {
					t.Errorf("SVG lacks the label %q", label)
				}
			}
			// Only the bands are translucent: one per report.
			if got, want := bytes.Count(s, []byte("fill-opacity")), len(tt.req.Reports); got != want {
				t.Errorf("SVG has %d translucent fills; want %d, a band per report", got, want)
			}
		})
	}
}

func TestReportLabels(t *testing.T) {
	edit := func(f func(m *report.Meta)) *report.Report { return fake(spec{edit: f}) }
	for _, tt := range []struct {
		name string
		in   []Input
		want []string
	}{
		{"one", []Input{in("a.json", fake(spec{}))}, []string{"detcoll abc, cpu, W=2"}},
		{"commits and worlds", []Input{in("a.json", fake(spec{})), in("b.json", edit(func(m *report.Meta) { m.Commit = "def" })), in("c.json", fake(spec{world: 4}))},
			[]string{"detcoll abc, cpu, W=2", "detcoll def, cpu, W=2", "detcoll abc, cpu, W=4"}},
		{"dtype and device differ", []Input{in("a.json", fake(spec{})), in("b.json", edit(func(m *report.Meta) { m.DType, m.Device = "float64", "Intel" }))},
			[]string{"detcoll abc, cpu, W=2, float32, AMD EPYC (2 CPUs)", "detcoll abc, cpu, W=2, float64, Intel"}},
		{"alike but for the file", []Input{in("a.json", fake(spec{})), in("b.json", fake(spec{us: 3})), in("c.json", fake(spec{world: 4}))},
			[]string{"detcoll abc, cpu, W=2 (a.json)", "detcoll abc, cpu, W=2 (b.json)", "detcoll abc, cpu, W=4"}},
	} {
		if got := reportLabels(tt.in); !slices.Equal(got, tt.want) {
			t.Errorf("%s: reportLabels = %q; want %q", tt.name, got, tt.want)
		}
	}
}

// TestCheckReportsRefuses: reports drawn on their own, and a file given
// twice in either kind of request.
func TestCheckReportsRefuses(t *testing.T) {
	for _, tt := range []struct {
		name string
		req  Request
		want string
	}{
		{"same report twice", reports(in("r.json", fake(spec{})), in("./r.json", fake(spec{}))), "./r.json given twice: give each report once"},
		{"same file before and after", Request{Before: []Input{in("r.json", fake(spec{}))}, After: []Input{in("r.json", fake(spec{}))}, Operation: "all_reduce"},
			"r.json given twice: give each report once; to draw one report alone, give it as an argument without --before and --after"},
		{"extra is the after report", func() Request { r := pair(spec{}, spec{}); r.Extra = r.After; return r }(), "a.json given twice"},
		{"reports and a pair", func() Request { r := pair(spec{}, spec{}); r.Reports = r.After; return r }(), "give one kind or the other"},
		{"reports and an extra", func() Request { r := reports(in("r.json", fake(spec{}))); r.Extra = r.Reports[:1]; return r }(), "give one kind or the other"},
		{"no operation", func() Request { r := reports(in("r.json", fake(spec{}))); r.Operation = ""; return r }(), "no operation"},
		{"wrong operation name", func() Request { r := reports(in("r.json", fake(spec{}))); r.Operation = "allreduce"; return r }(),
			"no rows of allreduce in any report: choose --operation all_reduce, all_gather or all"},
		{"names from every report", func() Request {
			r := reports(in("r.json", fake(spec{ops: []string{"broadcast"}})), in("s.json", fake(spec{ops: []string{"all_gather", "broadcast", "reduce_scatter"}})))
			r.Operation = "allgather"
			return r
		}(), "choose --operation broadcast, all_gather, reduce_scatter or all"},
		{"a report lacks the operation", reports(in("r.json", fake(spec{})), in("s.json", fake(spec{ops: []string{"all_gather"}}))),
			"s.json has no rows of all_reduce in mode wall_clock: choose an --operation and --mode that every report has"},
		{"zero time", func() Request {
			r := reports(in("r.json", fake(spec{})))
			row := &r.Reports[0].Report.Rows[0]
			row.ReferenceSamplesUS = [][]float64{{0, 0, 0}, {0, 0, 0}}
			row.ReferenceUS = 0
			return r
		}(), "r.json: all_reduce at 1024 bytes has a time of 0"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			err := Check(tt.req)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Check = %v; want an error containing %q", err, tt.want)
			}
			dir := t.TempDir()
			if err := Write(tt.req, filepath.Join(dir, "f.png"), filepath.Join(dir, "f.svg")); err == nil {
				t.Errorf("Write = nil; want Check's error")
			}
			if left, _ := os.ReadDir(dir); len(left) > 0 {
				t.Errorf("a refused Write left %v", left)
			}
		})
	}
}

func TestShortCommit(t *testing.T) {
	for in, want := range map[string]string{
		"c7b7855dc1d1f7fb92ee5adaa2f1e1906ee85ff0-dirty": "c7b7855dc1d1-dirty",
		"c7b7855dc1d1f7fb92ee5adaa2f1e1906ee85ff0":       "c7b7855dc1d1",
		"55d3f95":          "55d3f95",
		"unknown":          "unknown",
		"v1.2.3-4-gabcdef": "v1.2.3-4-gabcdef",
	} {
		if got := shortCommit(in); got != want {
			t.Errorf("shortCommit(%q) = %q, want %q", in, got, want)
		}
	}
}
