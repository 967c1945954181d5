package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/detcoll/detcoll/internal/tools/report"
)

// writeReport writes a small valid report of world ranks to dir/name.
func writeReport(t *testing.T, dir, name string, world int, device string) string {
	t.Helper()
	return writeReportOps(t, dir, name, world, device, "all_reduce")
}

// writeReportOps is writeReport with rows of ops.
func writeReportOps(t *testing.T, dir, name string, world int, device string, ops ...string) string {
	t.Helper()
	r := &report.Report{Kind: report.Kind, SchemaVersion: report.SchemaVersion, Meta: report.Meta{
		WorldSize: world, DType: "float32", Backend: "cpu", Device: device, Reference: report.ReferenceNone,
		Notes: []string{}, GoVersion: "go1.26.8", Commit: "abc", Warmup: 1, Iterations: 1,
		Modes: []string{report.ModeWallClock}, Date: "2026-11-30T00:00:00Z", Options: json.RawMessage(`{}`),
	}}
	for _, op := range ops {
		for _, size := range []int64{1024, 4096} {
			row := report.Row{Operation: op, Mode: report.ModeWallClock, InputBytesPerRank: size}
			for range world {
				row.DetcollSamplesUS = append(row.DetcollSamplesUS, []float64{float64(size) / 100})
			}
			row.DetcollUS = report.Slowest(row.DetcollSamplesUS)
			r.Rows = append(r.Rows, row)
		}
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

// TestPlotReports: reports given as arguments, --operation all, and what
// is refused.
func TestPlotReports(t *testing.T) {
	dir := t.TempDir()
	r2 := writeReport(t, dir, "r2.json", 2, "cpu A")
	r4 := writeReport(t, dir, "r4.json", 4, "cpu A")
	many := writeReportOps(t, dir, "many.json", 2, "cpu A", "all_reduce", "all_gather", "broadcast")
	b := writeReportOps(t, dir, "b.json", 2, "cpu A", "all_reduce", "broadcast")
	a := writeReportOps(t, dir, "a.json", 2, "cpu A", "all_reduce", "broadcast")
	fig := filepath.Join(dir, "figs", "f")
	paths := func(ops ...string) []string {
		var p []string
		for _, op := range ops {
			p = append(p, fig+op+".png", fig+op+".svg")
		}
		return p
	}

	for _, tt := range []struct {
		name     string
		args     []string
		wantCode int
		want     string   // in the error; "" for success
		files    []string // written, in the order stdout names them
	}{
		{"one report", []string{"--output", fig, r2}, 0, "", paths("")},
		{"many reports", []string{"--output", fig + ".png", r2, r4, many}, 0, "", paths("")},
		{"flags after the reports", []string{r2, r4, "--output", fig + ".svg", "--mode", "wall_clock"}, 0, "", paths("")},
		{"reports after --", []string{"--output", fig, "--", r2}, 0, "", paths("")},
		{"operation all", []string{"--operation", "all", "--output", fig + ".png", many}, 0, "", paths("-all_reduce", "-all_gather", "-broadcast")},
		{"operation all of pairs", []string{"--before", b, "--after", a, "--operation", "all", "--output", fig}, 0, "", paths("-all_reduce", "-broadcast")},
		{"same report twice", []string{"--output", fig, r2, r2}, 2, r2 + " given twice: give each report once", nil},
		{"same file by another path", []string{"--output", fig, r2, dir + string(filepath.Separator) + "." + string(filepath.Separator) + "r2.json"}, 2, "are the same file: give each report once", nil},
		{"same file before and after", []string{"--before", r2, "--after", r2, "--output", fig}, 2,
			r2 + " given twice: give each report once; to draw one report alone, give it as an argument without --before and --after", nil},
		{"bad operation", []string{"--operation", "allreduce", "--output", fig, many}, 1,
			"no rows of allreduce in any report: choose --operation all_reduce, all_gather, broadcast or all", nil},
		{"operation all, a report lacks one", []string{"--operation", "all", "--output", fig, many, r2}, 1, r2 + " has no rows of all_gather in mode wall_clock", nil},
		{"reports and --before", []string{"--before", b, "--after", a, "--output", fig, r2}, 2, "unexpected arguments", nil},
		{"reports and --extra", []string{"--extra", b, "--output", fig, r2}, 2, "give reports either as arguments or with those flags, not both", nil},
		{"no reports", []string{"--output", fig}, 2, "no reports: give them as arguments, or with --before and --after", nil},
		{"no output", []string{r2}, 2, "--output is required", nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			err := run(t.Context(), append([]string{"plot"}, tt.args...), &stdout, &stderr)
			if code := exitCode(err); code != tt.wantCode || (tt.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tt.want)) {
				t.Fatalf("plot = %v (exit %d); want exit %d and an error containing %q", err, code, tt.wantCode, tt.want)
			}
			if err != nil {
				if strings.Contains(err.Error(), "\n") && tt.wantCode == 2 {
					t.Errorf("usage error %q; want one line", err)
				}
				if _, err := os.Stat(filepath.Dir(fig)); err == nil {
					t.Errorf("a refused plot made %s", filepath.Dir(fig))
				}
				return
			}
			var want string
			for i := 0; i < len(tt.files); i += 2 {
				want += "wrote " + tt.files[i] + " and " + tt.files[i+1] + "\n"
			}
			if stdout.String() != want {
				t.Errorf("stdout %q; want %q", stdout.String(), want)
			}
			written, _ := filepath.Glob(filepath.Join(filepath.Dir(fig), "*"))
			if slices.Sort(written); !slices.Equal(written, slices.Sorted(slices.Values(tt.files))) {
				t.Errorf("wrote %q; want %q", written, tt.files)
			}
			for _, f := range tt.files {
				if st, err := os.Stat(f); err != nil || st.Size() == 0 {
					t.Errorf("%s: %v; want a non-empty file", f, err)
				}
			}
			if err := os.RemoveAll(filepath.Dir(fig)); err != nil {
				t.Fatal(err)
			}
		})
	}
}
