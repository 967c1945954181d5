package bench

import (
	"fmt"
	"io"
	"strings"

	"github.com/detcoll/detcoll/internal/tools/report"
)

// noiseRatio is the spread above which a side's time is marked noisy: its
// p90 more than this many times its p10. A median from such samples may
// not repeat from one run to the next.
const noiseRatio = 1.5

// noiseMark follows a noisy side's time; end explains it.
const noiseMark = "*"

// table writes the human-readable results as rows arrive: operation,
// input bytes per rank, mode (when there are several); detcoll's time
// (the slowest rank's median), its spread (p10 and p90, as report.Row
// has them), its algorithm and bus bandwidths in GB/s (report.Bandwidth);
// then, with a reference, the reference's time and bus bandwidth and the
// ratio of the times (below 1: detcoll is faster); last, where the rows
// say (the cuda backend), the bytes rank 0's kernels move per call: the
// path, then its own GPU's memory + its peers' (report.Moves). A noisy
// side's time is marked (noisy), and end explains the mark under the
// table. Ranks that share a GPU are said so above the header. At most 120
// columns before the bytes, with a mode column and a reference.
type table struct {
	w         io.Writer // nil: no table
	modes     bool      // a mode column
	reference string    // the reference's name; "" for none
	world     int
	sharing   string // above the header: how ranks shared GPUs, if they did
	reduction string // above the header: the reductions' operator, if not the sum
	header    bool   // written
	marked    bool   // a time has the noise mark
}

func newTable(w io.Writer, m *report.Meta, sides []Impl) *table {
	t := &table{w: w, modes: len(m.Modes) > 1, world: m.WorldSize}
	if m.Reduction != "" {
		t.reduction = fmt.Sprintf("# reductions: %s (all_reduce, reduce_scatter and reduce_scatter_many)", m.Reduction)
	}
	if m.GPUSharing != "" {
		t.sharing = fmt.Sprintf("# %s: the times are one GPU's (its memory and the protocol), not NVLink's", m.DeviceLabel())
	}
	if len(sides) > 1 {
		t.reference = sides[1].Name()
	}
	return t
}

// cells are one line of the table, formatted, marks apart.
type cells struct {
	op, size, mode         string
	det, detMark           string
	p10, p90, algbw, busbw string
	ref, refMark, refBusbw string
	ratio                  string
	moved                  string
}

func (t *table) write(rows []report.Row) {
	if t.w == nil {
		return
	}
	if !t.header {
		t.header = true
		for _, line := range []string{t.reduction, t.sharing} {
			if line != "" {
				fmt.Fprintln(t.w, line)
			}
		}
		moved := ""
		if len(rows) > 0 && rows[0].DetcollMoves != nil {
			moved = "moved: path local+peer"
		}
		t.line(cells{moved: moved, op: "operation", size: "bytes/rank", mode: "mode", det: "detcoll us", p10: "p10 us", p90: "p90 us",
			algbw: "algbw", busbw: "busbw", ref: t.reference + " us", refBusbw: "busbw", ratio: "detcoll/" + t.reference})
	}
	for _, r := range rows {
		algbw, _ := report.Bandwidth(r.Operation, r.InputBytesPerRank, t.world, r.DetcollUS)
		c := cells{
			op: r.Operation, size: report.SizeLabel(r.InputBytesPerRank), mode: r.Mode,
			det: formatUS(r.DetcollUS), detMark: t.mark(r.DetcollP10US, r.DetcollP90US),
			p10: formatUS(r.DetcollP10US), p90: formatUS(r.DetcollP90US),
			algbw: t.formatGBps(r.Operation, algbw), busbw: t.formatGBps(r.Operation, r.DetcollBusBW),
		}
		if r.ReferenceUS > 0 {
			c.ref, c.refMark = formatUS(r.ReferenceUS), t.mark(r.ReferenceP10US, r.ReferenceP90US)
			c.refBusbw = t.formatGBps(r.Operation, r.ReferenceBusBW)
			c.ratio = fmt.Sprintf("%.2f", r.DetcollUS/r.ReferenceUS)
		}
		if m := r.DetcollMoves; m != nil {
			c.moved = fmt.Sprintf("%s %s+%s", m.Path, formatBytes(m.LocalRead+m.LocalWrite), formatBytes(m.PeerRead+m.PeerWrite))
		}
		t.line(c)
	}
}

// end writes what follows the last row: the noise mark's meaning, if a
// time has it.
func (t *table) end() {
	if t.w == nil || !t.marked {
		return
	}
	fmt.Fprintf(t.w, "%s noisy: p90 > %.1f x p10, so the median may not repeat; take more --iterations or quiet the machine\n", noiseMark, noiseRatio)
	if t.reference != "" {
		fmt.Fprintln(t.w, "  (the reference's p10 and p90 are in the JSON report)")
	}
}

// mark is the noise mark for a side with this spread, or "".
func (t *table) mark(p10, p90 float64) string {
	if p90 > noiseRatio*p10 {
		t.marked = true
		return noiseMark
	}
	return ""
}

func (t *table) line(c cells) {
	var b strings.Builder
	fmt.Fprintf(&b, "%-19s %10s", c.op, c.size)
	if t.modes {
		fmt.Fprintf(&b, " %-12s", c.mode)
	}
	fmt.Fprintf(&b, " %10s%-1s %7s %7s %7s %7s", c.det, c.detMark, c.p10, c.p90, c.algbw, c.busbw)
	if t.reference != "" {
		fmt.Fprintf(&b, " %10s%-1s %7s %12s", c.ref, c.refMark, c.refBusbw, c.ratio)
	}
	if c.moved != "" {
		fmt.Fprintf(&b, "  %s", c.moved)
	}
	fmt.Fprintln(t.w, strings.TrimRight(b.String(), " "))
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

// formatGBps shows a bandwidth in GB/s as nccl-tests does, two decimals;
// "-" for an operation that has none.
func (t *table) formatGBps(op string, gbps float64) string {
	if _, ok := report.BusFactor(op, t.world); !ok {
		return "-"
	}
	return fmt.Sprintf("%.2f", gbps)
}

// formatBytes shows a byte count in about three digits, binary units.
func formatBytes(n int64) string {
	switch {
	case n < 1<<10:
		return fmt.Sprintf("%dB", n)
	case n < 1<<20:
		return fmt.Sprintf("%.3gK", float64(n)/(1<<10))
	case n < 1<<30:
		return fmt.Sprintf("%.3gM", float64(n)/(1<<20))
	}
	return fmt.Sprintf("%.3gG", float64(n)/(1<<30))
}
