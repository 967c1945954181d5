package plot

import (
	"fmt"
	"image/color"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	gplot "gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
	"gonum.org/v1/plot/vg/vgsvg"

	"github.com/detcoll/detcoll/internal/tools/report"
)

// Panel size, columns per row, and the PNG's resolution.
const (
	panelWidth  = 6 * vg.Inch
	panelHeight = 5 * vg.Inch
	maxCols     = 3
	pngDPI      = 150
)

// Colours: before orange, after blue, the reference grey and dashed; each
// detcoll line's band in its line's colour, translucent.
var (
	beforeColor    = color.RGBA{R: 230, G: 120, B: 0, A: 255}
	afterColor     = color.RGBA{R: 0, G: 90, B: 180, A: 255}
	referenceColor = color.RGBA{R: 110, G: 110, B: 110, A: 255}
	// The extra references, in turn: green, purple, red.
	extraColors = []color.Color{color.RGBA{G: 150, B: 60, A: 255}, color.RGBA{R: 130, G: 50, B: 160, A: 255}, color.RGBA{R: 200, G: 30, B: 30, A: 255}}
	// Reports drawn on their own, in turn: blue, orange, green, purple,
	// red, brown, pink, teal (each report's reference in its colour,
	// dashed).
	reportColors = []color.Color{afterColor, beforeColor, extraColors[0], extraColors[1], extraColors[2],
		color.RGBA{R: 140, G: 86, B: 75, A: 255}, color.RGBA{R: 220, G: 80, B: 160, A: 255}, color.RGBA{G: 150, B: 150, A: 255}}
	// referenceDashes draws a reference's line.
	referenceDashes = []vg.Length{vg.Points(5), vg.Points(3)}
)

// Write checks req (see Check) and only then draws it and writes the
// figure to pngPath and svgPath, creating their directories.
func Write(req Request, pngPath, svgPath string) error {
	if err := Check(req); err != nil {
		return err
	}
	mode, _ := resolveMode(req.Mode, req.drawn())
	if len(req.Reports) > 0 {
		p, r, err := reportsPanels(req.Reports, req.Operation, mode)
		if err != nil {
			return err
		}
		return writeFigure([]*gplot.Plot{p}, []*gplot.Plot{r}, pngPath, svgPath)
	}
	// Each pair is a column of two panels: latency, and below it the
	// ratio to each reference (a log-log latency plot hides a 20% gap).
	var panels, ratios []*gplot.Plot
	for i := range req.Before {
		var extras []Input
		for _, x := range req.Extra {
			if x.Report.Meta.WorldSize == req.After[i].Report.Meta.WorldSize {
				extras = append(extras, x)
			}
		}
		p, err := panel(req.Before[i], req.After[i], extras, req.Operation, mode)
		if err != nil {
			return err
		}
		r, err := ratioPanel(req.After[i], extras, req.Operation, mode)
		if err != nil {
			return err
		}
		panels, ratios = append(panels, p), append(ratios, r)
	}
	return writeFigure(panels, ratios, pngPath, svgPath)
}

// writeFigure lays panels out in rows of up to maxCols columns, each with
// its ratio panel below it when any panel has one (ratios[i] may be nil),
// and writes the figure as PNG and SVG.
func writeFigure(panels, ratios []*gplot.Plot, pngPath, svgPath string) error {
	cols := min(len(panels), maxCols)
	rows := (len(panels) + cols - 1) / cols
	withRatios := slices.ContainsFunc(ratios, func(p *gplot.Plot) bool { return p != nil })
	per := 1
	if withRatios {
		per = 2
	}
	grid := make([][]*gplot.Plot, rows*per)
	for r := range grid {
		grid[r] = make([]*gplot.Plot, cols)
	}
	for i := range panels {
		r, c := i/cols*per, i%cols
		grid[r][c] = panels[i]
		if withRatios {
			grid[r+1][c] = ratios[i]
		}
	}
	rows *= per
	w, h := vg.Length(cols)*panelWidth, vg.Length(rows)*panelHeight
	img := vgimg.NewWith(vgimg.UseWH(w, h), vgimg.UseDPI(pngDPI))
	svg := vgsvg.New(w, h)
	for _, c := range []vg.CanvasSizer{img, svg} {
		drawGrid(grid, draw.New(c))
	}
	if err := writeFile(pngPath, vgimg.PngCanvas{Canvas: img}.WriteTo); err != nil {
		return err
	}
	return writeFile(svgPath, svg.WriteTo)
}

func drawGrid(grid [][]*gplot.Plot, dc draw.Canvas) {
	tiles := draw.Tiles{Rows: len(grid), Cols: len(grid[0]), PadX: vg.Millimeter * 4, PadY: vg.Millimeter * 4,
		PadTop: vg.Millimeter * 2, PadBottom: vg.Millimeter * 2, PadLeft: vg.Millimeter * 2, PadRight: vg.Millimeter * 2}
	canvases := gplot.Align(grid, tiles, dc)
	for r := range grid {
		for c, p := range grid[r] {
			if p != nil {
				p.Draw(canvases[r][c])
			}
		}
	}
}

// panel draws one pair: detcoll before and after, each with its band,
// the after report's reference and the extra references.
func panel(before, after Input, extras []Input, op, mode string) (*gplot.Plot, error) {
	m := &after.Report.Meta
	bs, as := selectRows(before.Report, op, mode), selectRows(after.Report, op, mode)
	p := latencyPlot(fmt.Sprintf("%s, W=%d, %s\n%s, %s, %s", op, m.WorldSize, m.DeviceLabel(), m.DType, mode, versions(m)), as)
	lines := []series{
		{label: "before: detcoll " + shortCommit(before.Report.Meta.Commit), rows: bs, band: true, color: beforeColor},
		{label: "after: detcoll " + shortCommit(m.Commit), rows: as, band: true, color: afterColor},
	}
	if m.Reference != report.ReferenceNone {
		lines = append(lines, series{label: referenceLabel(m) + " (after run)", rows: as, ref: true, color: referenceColor, dashes: referenceDashes})
	}
	for i, x := range extras {
		lines = append(lines, series{label: referenceLabel(&x.Report.Meta) + " (" + x.Name + ")", rows: selectRows(x.Report, op, mode), ref: true,
			color: extraColors[i%len(extraColors)], dashes: []vg.Length{vg.Points(2), vg.Points(2)}})
	}
	if err := addLines(p, lines); err != nil {
		return nil, err
	}
	return p, nil
}

// latencyPlot is an empty latency panel: log-log, titled, with a tick at
// each size of the rows.
func latencyPlot(title string, rows ...[]report.Row) *gplot.Plot {
	p := gplot.New()
	p.Title.Text = title
	p.X.Label.Text = "input bytes per rank"
	p.Y.Label.Text = "us per call, slowest rank's median; band p10-p90 (lower is better)"
	p.X.Scale, p.Y.Scale = gplot.LogScale{}, gplot.LogScale{}
	p.Y.Tick.Marker = gplot.LogTicks{Prec: -1}
	p.X.Tick.Marker = sizeTicks(rows...)
	p.Legend.Top, p.Legend.Left = true, true
	return p
}

// sizeTicks is a tick at each size of the rows, labelled like "64KiB".
func sizeTicks(rows ...[]report.Row) gplot.ConstantTicks {
	var all []int64
	for _, rs := range rows {
		all = append(all, sizes(rs)...)
	}
	slices.Sort(all)
	var ticks gplot.ConstantTicks
	for _, n := range slices.Compact(all) {
		ticks = append(ticks, gplot.Tick{Value: float64(n), Label: report.SizeLabel(n)})
	}
	return ticks
}

// ratioPanel draws, per size, the after run's detcoll time over each
// reference's time (below 1: detcoll faster), with the line at 1 marked;
// nil when there is no reference.
func ratioPanel(after Input, extras []Input, op, mode string) (*gplot.Plot, error) {
	m := &after.Report.Meta
	as := selectRows(after.Report, op, mode)
	type ref struct {
		label string
		rows  []report.Row
		color color.Color
	}
	var refs []ref
	if m.Reference != report.ReferenceNone {
		refs = append(refs, ref{referenceLabel(m), as, referenceColor})
	}
	for i, x := range extras {
		refs = append(refs, ref{referenceLabel(&x.Report.Meta), selectRows(x.Report, op, mode), extraColors[i%len(extraColors)]})
	}
	if len(refs) == 0 {
		return nil, nil
	}
	p := ratioPlot(fmt.Sprintf("%s, W=%d: detcoll %s / reference", op, m.WorldSize, shortCommit(m.Commit)), as)
	var lines []series
	for _, r := range refs {
		lines = append(lines, ratioSeries(p, "vs "+r.label, as, r.rows, r.color))
	}
	if err := addLines(p, lines); err != nil {
		return nil, err
	}
	return p, nil
}

// ratioPlot is an empty ratio panel, titled, with a tick at each size of
// the rows and the line at 1 marked.
func ratioPlot(title string, rows ...[]report.Row) *gplot.Plot {
	p := gplot.New()
	p.Title.Text = title
	p.X.Label.Text = "input bytes per rank"
	p.Y.Label.Text = "time ratio (below 1: detcoll faster)"
	p.X.Scale = gplot.LogScale{}
	p.X.Tick.Marker = sizeTicks(rows...)
	p.Legend.Top, p.Legend.Left = true, true
	one := plotter.NewFunction(func(float64) float64 { return 1 })
	one.Color, one.Dashes, one.Width = color.Black, []vg.Length{vg.Points(1), vg.Points(2)}, vg.Points(1)
	p.Add(one)
	p.Y.Min = 0
	return p
}

// ratioSeries is, size by size, the detcoll time of det over the
// reference time of ref (rows of the same sizes); it raises p's y range to
// show it.
func ratioSeries(p *gplot.Plot, label string, det, ref []report.Row, c color.Color) series {
	ratio := make([]report.Row, len(det))
	for i := range det {
		ratio[i] = report.Row{InputBytesPerRank: det[i].InputBytesPerRank, DetcollUS: det[i].DetcollUS / ref[i].ReferenceUS}
		p.Y.Max = max(p.Y.Max, ratio[i].DetcollUS*1.1, 1.2)
	}
	return series{label: label, rows: ratio, color: c}
}

// addLines adds each series as a line with points, and to the legend;
// the bands first, so that no band covers a line.
func addLines(p *gplot.Plot, lines []series) error {
	for _, l := range lines {
		if l.band {
			if err := addBand(p, l.rows, l.color); err != nil {
				return fmt.Errorf("plot: %s: %w", l.label, err)
			}
		}
	}
	for _, l := range lines {
		xys := make(plotter.XYs, len(l.rows))
		for i, r := range l.rows {
			xys[i].X, xys[i].Y = float64(r.InputBytesPerRank), r.DetcollUS
			if l.ref {
				xys[i].Y = r.ReferenceUS
			}
		}
		line, points, err := plotter.NewLinePoints(xys)
		if err != nil {
			return fmt.Errorf("plot: %s: %w", l.label, err)
		}
		line.Color, line.Dashes, line.Width = l.color, l.dashes, vg.Points(1.5)
		points.Color, points.Radius = l.color, vg.Points(2.5)
		p.Add(line, points)
		p.Legend.Add(l.label, line, points)
	}
	return nil
}

// series is one line of a panel.
type series struct {
	label  string
	rows   []report.Row
	ref    bool // draw ReferenceUS, not DetcollUS
	band   bool // shade the spread of the detcoll samples (see band)
	color  color.Color
	dashes []vg.Length
}

// referenceLabel names the reference with its version: "Open MPI v4.1.4
// (float32)", "NCCL 2.28.3".
func referenceLabel(m *report.Meta) string {
	var s string
	switch m.Reference {
	case report.ReferenceMPI:
		s, _, _ = strings.Cut(m.MPIVersion, ",")
		if s == "" {
			s = "MPI"
		}
	case report.ReferenceNCCL:
		s = strings.TrimSpace("NCCL " + m.NCCLVersion)
	case report.ReferenceSymmMem:
		s = "PyTorch symmetric memory"
	default:
		s = m.Reference
	}
	if m.ReferenceDType != "" {
		s += " (" + m.ReferenceDType + ")"
	}
	return s
}

// versions lists the versions that apply, for the panel's title.
func versions(m *report.Meta) string {
	parts := []string{m.GoVersion}
	for _, v := range []struct{ name, value string }{
		{"driver", m.DriverVersion}, {"CUDA", m.CUDAVersion}, {"NCCL", m.NCCLVersion},
	} {
		if v.value != "" {
			parts = append(parts, v.name+" "+v.value)
		}
	}
	if mpi, _, _ := strings.Cut(m.MPIVersion, ","); mpi != "" {
		parts = append(parts, mpi)
	}
	return strings.Join(parts, ", ")
}

// shortCommit is a commit as a line's label shows it: a full hash cut to
// 12 digits, as git describe --abbrev=12 has it, keeping a "-dirty" mark;
// anything else as it is.
func shortCommit(c string) string {
	hash, dirty, _ := strings.Cut(c, "-")
	if len(hash) <= 12 || strings.Trim(hash, "0123456789abcdef") != "" {
		return c
	}
	if dirty != "" {
		return hash[:12] + "-" + dirty
	}
	return hash[:12]
}

// writeFile creates path (and its directory) and writes it with write.
func writeFile(path string, write func(w io.Writer) (int64, error)) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	_, err = write(f)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("plot: write %s: %w", path, err)
	}
	return nil
}

// OutputPaths returns the PNG and SVG paths of an --output argument:
// "fig.png", "fig.svg" or "fig" all give fig.png and fig.svg.
func OutputPaths(path string) (pngPath, svgPath string, err error) {
	stem := path
	switch ext := filepath.Ext(path); ext {
	case ".png", ".svg":
		stem = strings.TrimSuffix(path, ext)
	case "":
	default:
		return "", "", fmt.Errorf("output %q: want a path ending in .png or .svg (both are written), or none", path)
	}
	if stem == "" || strings.HasSuffix(stem, string(filepath.Separator)) {
		return "", "", fmt.Errorf("output %q: no file name", path)
	}
	return stem + ".png", stem + ".svg", nil
}
