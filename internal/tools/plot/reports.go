package plot

import (
	"fmt"
	"path/filepath"
	"strings"

	gplot "gonum.org/v1/plot"

	"github.com/detcoll/detcoll/internal/tools/report"
)

// reportsPanels draws reports on their own (Request.Reports): one latency
// panel with, per report in its colour, detcoll's line and band and the
// report's reference dashed; and below it each report's detcoll time over
// its reference's, or nil when no report has a reference.
func reportsPanels(reports []Input, op, mode string) (latency, ratio *gplot.Plot, err error) {
	rows := make([][]report.Row, len(reports))
	for i, in := range reports {
		rows[i] = selectRows(in.Report, op, mode)
	}
	labels := reportLabels(reports)
	title := op + ", " + mode
	if common := commonMeta(reports); common != "" {
		title += "\n" + common
	}
	latency = latencyPlot(title, rows...)
	var lines, ratios []series
	for i, in := range reports {
		m, c := &in.Report.Meta, reportColors[i%len(reportColors)]
		lines = append(lines, series{label: labels[i], rows: rows[i], band: true, color: c})
		if m.Reference == report.ReferenceNone {
			continue
		}
		ref := referenceLabel(m) + " [" + labels[i] + "]"
		lines = append(lines, series{label: ref, rows: rows[i], ref: true, color: c, dashes: referenceDashes})
		if ratio == nil {
			ratio = ratioPlot(op+": detcoll / its run's reference", rows...)
		}
		ratios = append(ratios, ratioSeries(ratio, labels[i]+" vs "+referenceLabel(m), rows[i], rows[i], c))
	}
	if err := addLines(latency, lines); err != nil {
		return nil, nil, err
	}
	if ratio != nil {
		if err := addLines(ratio, ratios); err != nil {
			return nil, nil, err
		}
	}
	return latency, ratio, nil
}

// reportLabels names each report's line: detcoll's commit, the backend and
// the world size; then the dtype and the device where the reports differ
// in them; then the file's name where two labels would still be the same
// (a line must never pass for another).
func reportLabels(reports []Input) []string {
	differ := func(field func(m *report.Meta) string) bool {
		for _, in := range reports[1:] {
			if field(&in.Report.Meta) != field(&reports[0].Report.Meta) {
				return true
			}
		}
		return false
	}
	dtypes := differ(func(m *report.Meta) string { return m.DType })
	devices := differ(func(m *report.Meta) string { return m.DeviceLabel() })
	labels := make([]string, len(reports))
	count := map[string]int{}
	for i, in := range reports {
		m := &in.Report.Meta
		parts := []string{"detcoll " + shortCommit(m.Commit), m.Backend, fmt.Sprintf("W=%d", m.WorldSize)}
		if m.Reduction != "" {
			parts = append(parts, m.Reduction)
		}
		if dtypes {
			parts = append(parts, m.DType)
		}
		if devices {
			parts = append(parts, m.DeviceLabel())
		}
		labels[i] = strings.Join(parts, ", ")
		count[labels[i]]++
	}
	bases := map[string]int{}
	for _, in := range reports {
		bases[filepath.Base(in.Name)]++
	}
	for i, in := range reports {
		if count[labels[i]] > 1 {
			name := filepath.Base(in.Name) // the file's name, its folder where two share a name
			if bases[name] > 1 {
				name = in.Name
			}
			labels[i] += " (" + name + ")"
		}
	}
	return labels
}

// commonMeta is what every report shares, for the panel's title: the
// device and the dtype on one line, the versions on the next, each where
// it is the same in all.
func commonMeta(reports []Input) string {
	same := func(field func(m *report.Meta) string) string {
		v := field(&reports[0].Report.Meta)
		for _, in := range reports[1:] {
			if field(&in.Report.Meta) != v {
				return ""
			}
		}
		return v
	}
	var first []string
	for _, v := range []string{same(func(m *report.Meta) string { return m.DeviceLabel() }), same(func(m *report.Meta) string { return m.DType })} {
		if v != "" {
			first = append(first, v)
		}
	}
	lines := []string{strings.Join(first, ", ")}
	if v := same(versions); v != "" {
		lines = append(lines, v)
	}
	return strings.TrimSpace(strings.Join(lines, "\n"))
}
