package bench

import (
	"bufio"
	"fmt"
	"io"
	"runtime"

	"github.com/detcoll/detcoll/internal/tools/report"
)

// WriteBenchfmt writes r in the Go benchmark format, for benchstat: a few
// configuration lines, then one line per timed sample and side, named
// Benchmark<Op>/<dtype>/<size>/side=<side>[/mode=<mode>] (the mode only
// when the report has several), with the sample's slowest rank as ns/op
// and the input bytes per rank over it as MB/s. "benchstat -col /side
// FILE" compares the sides of one run; "benchstat -filter /side:detcoll
// OLD NEW" detcoll in two runs. Sample i of every rank was taken together
// (a barrier precedes it), so its slowest rank is the time the job waited
// for that call; benchstat's median of these is at least the report's
// slowest rank's median.
func WriteBenchfmt(w io.Writer, r *report.Report) error {
	bw := bufio.NewWriter(w)
	m := &r.Meta
	fmt.Fprintf(bw, "goos: %s\ngoarch: %s\npkg: github.com/detcoll/detcoll/cmd/detcoll\n", runtime.GOOS, runtime.GOARCH)
	fmt.Fprintf(bw, "cpu: %s\nbackend: %s\nworld: %d\ncommit: %s\n", m.Device, m.Backend, m.WorldSize, m.Commit)
	if m.MPIVersion != "" {
		fmt.Fprintf(bw, "mpi: %s\n", m.MPIVersion)
	}
	for _, row := range r.Rows {
		name := fmt.Sprintf("Benchmark%s/%s/%s", Op(row.Operation).BenchName(), m.DType, report.SizeLabel(row.InputBytesPerRank))
		mode := ""
		if len(m.Modes) > 1 {
			mode = "/mode=" + row.Mode
		}
		sides := []struct {
			name    string
			samples [][]float64
		}{{"detcoll", row.DetcollSamplesUS}, {m.Reference, row.ReferenceSamplesUS}}
		for _, side := range sides {
			if len(side.samples) == 0 {
				continue
			}
			for i := range side.samples[0] {
				var slowest float64
				for _, s := range side.samples {
					slowest = max(slowest, s[i])
				}
				ns := slowest * 1e3
				fmt.Fprintf(bw, "%s/side=%s%s \t1\t%.0f ns/op", name, side.name, mode, ns)
				if ns > 0 {
					fmt.Fprintf(bw, "\t%.2f MB/s", float64(row.InputBytesPerRank)*1e3/ns)
				}
				fmt.Fprintln(bw)
			}
		}
	}
	return bw.Flush()
}
