package bench

import (
	"bytes"
	"strings"
	"testing"

	"github.com/detcoll/detcoll/internal/tools/report"
)

// tableRow is a row of op at size on world ranks whose every rank took
// det's and ref's samples (nil: no reference).
func tableRow(op Op, size int64, world int, det, ref []float64) report.Row {
	r := report.Row{Operation: string(op), Mode: report.ModeWallClock, InputBytesPerRank: size}
	for range world {
		r.DetcollSamplesUS = append(r.DetcollSamplesUS, det)
		if ref != nil {
			r.ReferenceSamplesUS = append(r.ReferenceSamplesUS, ref)
		}
	}
	r.Summarise(world)
	return r
}

func scale(s []float64, by float64) []float64 {
	out := make([]float64, len(s))
	for i, v := range s {
		out[i] = v * by
	}
	return out
}

func TestTable(t *testing.T) {
	quiet := []float64{10, 10, 10, 10, 10, 10, 10, 10, 10, 10}
	// Nine samples at 1 us and one at 400 us, the case: the median
	// says 1 us, the p90 says otherwise.
	spiky := []float64{1, 1, 1, 1, 400, 1, 1, 1, 1, 1}
	for _, tt := range []struct {
		name      string
		reference string
		modes     []string
		sharing   string
		rows      []report.Row
		want      string
	}{
		{
			name: "reference, quiet", reference: "mpi", modes: []string{report.ModeWallClock},
			rows: []report.Row{
				// 1 MB in 10 us: algbw 100 GB/s; W=4: busbw 150 (all_reduce),
				// 75 (reduce_scatter); all_gather moves 4 x the input.
				tableRow(AllReduce, 1e6, 4, quiet, []float64{20, 20, 20}),
				tableRow(ReduceScatter, 1e6, 4, quiet, quiet),
				tableRow(AllGather, 1e6, 4, quiet, quiet),
				tableRow(Broadcast, 1e6, 4, quiet, quiet),
			},
			want: "" +
				"operation           bytes/rank detcoll us   p10 us  p90 us   algbw   busbw     mpi us    busbw  detcoll/mpi\n" +
				"all_reduce            1000000B       10.0     10.0    10.0  100.00  150.00       20.0    75.00         0.50\n" +
				"reduce_scatter        1000000B       10.0     10.0    10.0  100.00   75.00       10.0    75.00         1.00\n" +
				"all_gather            1000000B       10.0     10.0    10.0  400.00  300.00       10.0   300.00         1.00\n" +
				"broadcast             1000000B       10.0     10.0    10.0  100.00  100.00       10.0   100.00         1.00\n",
		},
		{
			name: "no reference, noisy", reference: "none", modes: []string{report.ModeWallClock},
			rows: []report.Row{tableRow(AllGather, 1024, 2, spiky, nil), tableRow(AllGather, 2048, 2, quiet, nil)},
			want: "" +
				"operation           bytes/rank detcoll us   p10 us  p90 us   algbw   busbw\n" +
				"all_gather                1KiB       1.00*    1.00    40.9    2.05    1.02\n" +
				"all_gather                2KiB       10.0     10.0    10.0    0.41    0.20\n" +
				"* noisy: p90 > 1.5 x p10, so the median may not repeat; take more --iterations or quiet the machine\n",
		},
		{
			name: "modes, the reference noisy", reference: "nccl", modes: []string{report.ModeSynchronised, report.ModeGraph},
			rows: []report.Row{func() report.Row {
				// 64 MiB in 200 us: algbw 335.54 GB/s, busbw 7/8 of it.
				r := tableRow(ReduceScatterMany, 64<<20, 8, scale(quiet, 20), scale(spiky, 100))
				r.Mode = report.ModeGraph
				return r
			}()},
			want: "" +
				"operation           bytes/rank mode         detcoll us   p10 us  p90 us   algbw   busbw    nccl us    busbw detcoll/nccl\n" +
				"reduce_scatter_many      64MiB graph               200      200     200  335.54  293.60        100*  587.20         2.00\n" +
				"* noisy: p90 > 1.5 x p10, so the median may not repeat; take more --iterations or quiet the machine\n" +
				"  (the reference's p10 and p90 are in the JSON report)\n",
		},
		{
			name: "a shared GPU, bytes moved", reference: "none", modes: []string{report.ModeWallClock}, sharing: report.SharingMPS,
			rows: []report.Row{func() report.Row {
				r := tableRow(AllReduce, 1024, 2, quiet, nil)
				r.DetcollMoves = &report.Moves{Path: "ll", LocalRead: 3072, LocalWrite: 1024, PeerWrite: 2048}
				return r
			}(), func() report.Row {
				r := tableRow(AllReduce, 1<<20, 2, quiet, nil)
				r.DetcollMoves = &report.Moves{Path: "push", LocalRead: 5 << 19, LocalWrite: 3 << 19, PeerWrite: 1 << 20}
				return r
			}()},
			want: "" +
				"# NVIDIA H200, 2 ranks per GPU under MPS: the times are one GPU's (its memory and the protocol), not NVLink's\n" +
				"operation           bytes/rank detcoll us   p10 us  p90 us   algbw   busbw  moved: path local+peer\n" +
				"all_reduce                1KiB       10.0     10.0    10.0    0.10    0.10  ll 4K+2K\n" +
				"all_reduce                1MiB       10.0     10.0    10.0  104.86  104.86  push 4M+1M\n",
		},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var buf bytes.Buffer
			m := &report.Meta{WorldSize: len(tt.rows[0].DetcollSamplesUS), Modes: tt.modes}
			if tt.sharing != "" {
				m.Device, m.GPUSharing, m.RanksPerGPU = "NVIDIA H200", tt.sharing, 2
			}
			sides := []Impl{&fakeImpl{name: "detcoll"}}
			if tt.reference != "none" {
				sides = append(sides, &fakeImpl{name: tt.reference})
			}
			tbl := newTable(&buf, m, sides)
			tbl.write(tt.rows[:1])
			tbl.write(tt.rows[1:])
			tbl.end()
			if got := buf.String(); got != tt.want {
				t.Errorf("table:\n%s\nwant:\n%s", got, tt.want)
			}
			for _, line := range strings.Split(buf.String(), "\n") {
				if len(line) > 120 {
					t.Errorf("a line of %d characters; want at most 120: %q", len(line), line)
				}
			}
		})
	}
}

func TestNoisy(t *testing.T) {
	for _, tt := range []struct {
		p10, p90 float64
		want     bool
	}{
		{10, 15, false}, // 1.5 x: not above
		{10, 15.01, true},
		{1, 400, true},
		{0, 0, false}, // no samples
		{0, 1, true},
	} {
		tbl := &table{}
		if got := tbl.mark(tt.p10, tt.p90) == noiseMark; got != tt.want || tbl.marked != tt.want {
			t.Errorf("mark(p10 %v, p90 %v) noisy = %v, table marked %v; want %v", tt.p10, tt.p90, got, tbl.marked, tt.want)
		}
	}
}

// TestEveryOpHasABusFactor: the bandwidth columns know every operation
// bench measures.
func TestEveryOpHasABusFactor(t *testing.T) {
	for _, op := range Ops {
		if _, ok := report.BusFactor(string(op), 4); !ok {
			t.Errorf("report.BusFactor(%q) = no factor; want one", op)
		}
	}
}
