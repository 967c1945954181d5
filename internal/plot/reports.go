package plot

import (
	"fmt"
	"strings"

	gplot "gonum.org/v1/plot"

	"github.com/detcoll/detcoll/internal/report"
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
		parts := []string{"detcoll " + m.Commit, m.Backend, fmt.Sprintf("W=%d", m.WorldSize)}
		if dtypes {
			parts = append(parts, m.DType)
		}
		if devices {
			parts = append(parts, m.DeviceLabel())
		}
		labels[i] = strings.Join(parts, ", ")
		count[labels[i]]++
	}
	for i, in := range reports {
		if count[labels[i]] > 1 {
			labels[i] += " (" + in.Name + ")"
		}
	}
	return labels
}

// commonMeta is what every report shares, for the panel's title: the
// device, the dtype and the versions, each where it is the same in all.
func commonMeta(reports []Input) string {
	var parts []string
	for _, field := range []func(m *report.Meta) string{
		func(m *report.Meta) string { return m.DeviceLabel() },
		func(m *report.Meta) string { return m.DType },
		versions,
	} {
		v := field(&reports[0].Report.Meta)
		same := true
		for _, in := range reports[1:] {
			same = same && field(&in.Report.Meta) == v
		}
		if same && v != "" {
			parts = append(parts, v)
		}
	}
	return strings.Join(parts, ", ")
}
