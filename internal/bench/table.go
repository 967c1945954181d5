package bench

import (
	"fmt"
	"io"
	"strings"

	"github.com/detcoll/detcoll/internal/report"
)

// table writes the human-readable results as rows arrive: operation,
// input bytes per rank, mode (when there are several), the slowest rank's
// median of detcoll and of the reference, and their ratio (below 1:
// detcoll is faster).
type table struct {
	w         io.Writer // nil: no table
	modes     bool      // a mode column
	reference string    // the reference's name; "" for none
	header    bool      // written
}

func newTable(w io.Writer, m *report.Meta, sides []Impl) *table {
	t := &table{w: w, modes: len(m.Modes) > 1}
	if len(sides) > 1 {
		t.reference = sides[1].Name()
	}
	return t
}

func (t *table) write(rows []report.Row) {
	if t.w == nil {
		return
	}
	if !t.header {
		t.header = true
		t.line("operation", "bytes/rank", "mode", "detcoll us", t.reference+" us", "detcoll/"+t.reference)
	}
	for _, r := range rows {
		ratio := ""
		if r.ReferenceUS > 0 {
			ratio = fmt.Sprintf("%.2f", r.DetcollUS/r.ReferenceUS)
		}
		t.line(r.Operation, report.SizeLabel(r.InputBytesPerRank), r.Mode, formatUS(r.DetcollUS), formatUS(r.ReferenceUS), ratio)
	}
}

func (t *table) line(op, size, mode, det, ref, ratio string) {
	var b strings.Builder
	fmt.Fprintf(&b, "%-20s %10s", op, size)
	if t.modes {
		fmt.Fprintf(&b, " %-12s", mode)
	}
	fmt.Fprintf(&b, " %12s", det)
	if t.reference != "" {
		fmt.Fprintf(&b, " %12s %12s", ref, ratio)
	}
	fmt.Fprintln(t.w, b.String())
}

// formatUS shows microseconds with about three significant digits.
func formatUS(us float64) string {
	switch {
	case us < 10:
		return fmt.Sprintf("%.2f", us)
	case us < 100:
		return fmt.Sprintf("%.1f", us)
	}
	return fmt.Sprintf("%.0f", us)
}
