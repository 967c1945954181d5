package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/detcoll/detcoll/internal/report"
)

// writeReport writes a small valid report of world ranks to dir/name.
func writeReport(t *testing.T, dir, name string, world int, device string) string {
	t.Helper()
	r := &report.Report{Kind: report.Kind, SchemaVersion: report.SchemaVersion, Meta: report.Meta{
		WorldSize: world, DType: "float32", Backend: "cpu", Device: device, Reference: report.ReferenceNone,
		Notes: []string{}, GoVersion: "go1.26.8", Commit: "abc", Warmup: 1, Iterations: 1,
		Modes: []string{report.ModeWallClock}, Date: "2026-11-30T00:00:00Z", Options: json.RawMessage(`{}`),
	}}
	for _, size := range []int64{1024, 4096} {
		row := report.Row{Operation: "all_reduce", Mode: report.ModeWallClock, InputBytesPerRank: size}
		for range world {
			row.DetcollSamplesUS = append(row.DetcollSamplesUS, []float64{float64(size) / 100})
		}
		row.DetcollUS = report.Slowest(row.DetcollSamplesUS)
		r.Rows = append(r.Rows, row)
	}
	path := filepath.Join(dir, name)
	if err := report.WriteFile(path, r); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestPlotCommand(t *testing.T) {
	dir := t.TempDir()
	b2 := writeReport(t, dir, "b2.json", 2, "cpu A")
	a2 := writeReport(t, dir, "a2.json", 2, "cpu A")
	b4 := writeReport(t, dir, "b4.json", 4, "cpu A")
	a4 := writeReport(t, dir, "a4.json", 4, "cpu A")
	other := writeReport(t, dir, "other.json", 2, "cpu B")
	bad := filepath.Join(dir, "bad.json")
	os.WriteFile(bad, []byte(`{"kind":"detcoll_bench","schema_version":1}`), 0o644)
	fig := filepath.Join(dir, "figs", "f")

	for _, tt := range []struct {
		name     string
		args     []string
		wantCode int
		want     string
	}{
		{"no before", []string{"--after", a2, "--output", fig}, 2, "--before and --after are required"},
		{"no output", []string{"--before", b2, "--after", a2}, 2, "--output is required"},
		{"bad output", []string{"--before", b2, "--after", a2, "--output", fig + ".pdf"}, 2, "want a path ending in .png or .svg"},
		{"arguments", []string{"--before", b2, "--after", a2, "--output", fig, "extra"}, 2, "unexpected arguments"},
		{"missing file", []string{"--before", b2, "--after", filepath.Join(dir, "none.json"), "--output", fig}, 1, "none.json"},
		{"invalid report", []string{"--before", bad, "--after", a2, "--output", fig}, 1, "bad.json: report: metadata"},
		{"device differs", []string{"--before", b2, "--after", other, "--output", fig}, 1, "differ in device: cpu A before, cpu B after"},
		{"unequal counts", []string{"--before", b2 + "," + b4, "--after", a2, "--output", fig}, 1, "2 before reports but 1 after"},
		{"no rows", []string{"--before", b2, "--after", a2, "--operation", "broadcast", "--output", fig}, 1, "no rows of broadcast"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			err := run(t.Context(), append([]string{"plot"}, tt.args...), &stdout, &stderr)
			if code := exitCode(err); code != tt.wantCode || err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("plot = %v (exit %d); want exit %d and an error containing %q", err, code, tt.wantCode, tt.want)
			}
			if _, err := os.Stat(filepath.Dir(fig)); err == nil {
				t.Errorf("a refused plot made %s", filepath.Dir(fig))
			}
		})
	}

	var stdout, stderr bytes.Buffer
	err := run(t.Context(), []string{"plot", "--before", b2 + "," + b4, "--after", a2 + ", " + a4, "--output", fig + ".svg"}, &stdout, &stderr)
	if err != nil {
		t.Fatalf("plot = %v", err)
	}
	for _, ext := range []string{".png", ".svg"} {
		if st, err := os.Stat(fig + ext); err != nil || st.Size() == 0 {
			t.Errorf("%s: %v; want a non-empty file", fig+ext, err)
		}
	}
	if want := "wrote " + fig + ".png and " + fig + ".svg\n"; stdout.String() != want {
		t.Errorf("stdout %q; want %q", stdout.String(), want)
	}
}
