package plot

import (
	"image/color"

	gplot "gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"

	"github.com/detcoll/detcoll/internal/tools/report"
)

// The band around a detcoll line spans these percentiles of the samples.
const (
	bandLow  = 10
	bandHigh = 90
)

// bandAlpha is the opacity of a band's fill: lines and other bands show
// through it.
const bandAlpha = 56

// band returns the bounds of the band around row's detcoll time: the
// largest of the ranks' 10th and of their 90th percentiles
// (report.SlowestPercentile, the report's detcoll_p10_us and
// detcoll_p90_us), as the time is the largest of their medians, so the
// band holds the line. They come from the samples, so a report made in
// code without its summary fields draws the same. A lower bound of 0,
// which a log scale cannot show, is raised to the line.
func band(row report.Row) (lo, hi float64) {
	lo = report.SlowestPercentile(row.DetcollSamplesUS, bandLow)
	hi = report.SlowestPercentile(row.DetcollSamplesUS, bandHigh)
	if lo <= 0 {
		lo = row.DetcollUS
	}
	// Holding the line even where rounding would not.
	return min(lo, row.DetcollUS), max(hi, row.DetcollUS)
}

// bandRing is the outline of the band of rows (sorted by size): along its
// top edge by size, then back along its bottom edge.
func bandRing(rows []report.Row) plotter.XYs {
	ring := make(plotter.XYs, 2*len(rows))
	for i, r := range rows {
		lo, hi := band(r)
		x := float64(r.InputBytesPerRank)
		ring[i] = plotter.XY{X: x, Y: hi}
		ring[len(ring)-1-i] = plotter.XY{X: x, Y: lo}
	}
	return ring
}

// addBand shades the band of rows in c, translucent (bandAlpha), with no
// outline; it adds nothing for no rows.
func addBand(p *gplot.Plot, rows []report.Row, c color.Color) error {
	if len(rows) == 0 {
		return nil
	}
	poly, err := plotter.NewPolygon(bandRing(rows))
	if err != nil {
		return err
	}
	poly.LineStyle.Width, poly.LineStyle.Color = 0, color.Transparent
	fill := color.NRGBAModel.Convert(c).(color.NRGBA)
	fill.A = bandAlpha
	poly.Color = fill
	p.Add(poly)
	return nil
}
