package plot

import (
	"bytes"
	"math"
	"os"
	"path/filepath"
	"testing"

	"gonum.org/v1/plot/plotter"

	"github.com/detcoll/detcoll/internal/tools/report"
)

// TestWriteBands: a pair's figure has a band around both detcoll lines.
func TestWriteBands(t *testing.T) {
	dir := t.TempDir()
	png, svg := filepath.Join(dir, "f.png"), filepath.Join(dir, "f.svg")
	if err := Write(pair(spec{}, spec{}), png, svg); err != nil {
		t.Fatalf("Write = %v", err)
	}
	s, err := os.ReadFile(svg)
	if got := bytes.Count(s, []byte("fill-opacity")); err != nil || got != 2 {
		t.Errorf("SVG has %d translucent fills, %v; want 2: the before and after bands", got, err)
	}
}

func TestBand(t *testing.T) {
	for _, tt := range []struct {
		name    string
		samples [][]float64
		lo, hi  float64
	}{
		{"one rank", [][]float64{{11, 1, 10, 2, 9, 3, 8, 4, 7, 5, 6}}, 2, 10},
		{"interpolated", [][]float64{{1, 2}}, 1.1, 1.9},
		{"the largest rank's percentiles", [][]float64{{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}, {11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21}}, 12, 20},
		{"each bound the largest of the ranks'", [][]float64{{5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5}, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10}}, 5, 9},
		{"one sample: the line", [][]float64{{3}, {4}}, 4, 4},
		{"a 0 lower bound is raised to the line", [][]float64{{0, 0, 4, 8, 9, 10, 11, 12, 13, 14, 15}}, 0, 14},
	} {
		row := report.Row{DetcollSamplesUS: tt.samples, DetcollUS: report.Slowest(tt.samples)}
		lo, hi := band(row)
		want := tt.lo
		if want == 0 {
			want = row.DetcollUS
		}
		if row.DetcollUS <= 0 {
			t.Fatalf("%s: a line at %v, which Check refuses", tt.name, row.DetcollUS)
		}
		if math.Abs(lo-want) > 1e-12 || math.Abs(hi-tt.hi) > 1e-12 {
			t.Errorf("%s: band(%v) = %v, %v; want %v, %v", tt.name, tt.samples, lo, hi, want, tt.hi)
		}
		if lo > row.DetcollUS || hi < row.DetcollUS {
			t.Errorf("%s: band(%v) = %v, %v; want it to hold the line at %v", tt.name, tt.samples, lo, hi, row.DetcollUS)
		}
	}
}

// TestBandRing: the band's outline goes along the top edge by size and
// back along the bottom.
func TestBandRing(t *testing.T) {
	rows := []report.Row{
		{InputBytesPerRank: 1024, DetcollSamplesUS: [][]float64{{1, 2, 3}}, DetcollUS: 2},
		{InputBytesPerRank: 4096, DetcollSamplesUS: [][]float64{{10, 20, 30}}, DetcollUS: 20},
	}
	got := bandRing(rows)
	want := plotter.XYs{{X: 1024, Y: 2.8}, {X: 4096, Y: 28}, {X: 4096, Y: 12}, {X: 1024, Y: 1.2}}
	if len(got) != len(want) {
		t.Fatalf("bandRing = %v; want %v", got, want)
	}
	for i := range want {
		if got[i].X != want[i].X || math.Abs(got[i].Y-want[i].Y) > 1e-12 {
			t.Errorf("bandRing = %v; want %v", got, want)
			break
		}
	}
}
