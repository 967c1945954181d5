// Package verify is the body of "detcoll verify": each rank runs every
// operation over a sweep of sizes and offsets, checks each result bit for
// bit against the reference tree (or the exact concatenation, for gathers)
// and across offsets and repeats, and times the calls; rank 0 prints one
// table row per operation, type and size, pass or fail on every rank.
package verify

import (
	"context"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/detcoll/detcoll"
)

// Config selects what to check.
type Config struct {
	DTypes []detcoll.DType // element types of the reductions
	Sizes  []int           // approximate input bytes per rank
	Seed   uint64
}

// Row is the outcome of one operation, element type and size on this rank.
type Row struct {
	Op      string
	DType   detcoll.DType
	Bytes   int // input bytes per rank
	Err     error
	PerCall time.Duration // median of the timed calls
}

// offsets (in elements) at which outputs are placed: aligned, odd and
// off a 16-byte line.
var offsets = []int{0, 1, 3}

// Run runs the checks on c and returns this rank's rows. A failed check is
// a row with Err set; an error from the communicator itself (a peer lost,
// a timeout) ends the run and is returned.
func Run(c *detcoll.Comm, cfg Config) ([]Row, error) {
	var rows []Row
	call := 0
	for _, dt := range cfg.DTypes {
		for _, op := range reduceOps {
			for _, sz := range cfg.Sizes {
				call++
				n := elements(sz, dt, op, c.WorldSize())
				row := Row{Op: op.name, DType: dt, Bytes: n * dt.Size() * op.inScale(c.WorldSize())}
				var err error
				row.PerCall, err = op.run(c, dt, n, cfg.Seed, call)
				if err != nil && c.Err() != nil {
					return rows, err
				}
				row.Err = err
				rows = append(rows, row)
			}
		}
	}
	for _, op := range gatherOps {
		for _, sz := range cfg.Sizes {
			call++
			n := sz + 1 // odd byte counts
			row := Row{Op: op.name, DType: detcoll.TypeUint8, Bytes: n}
			var err error
			row.PerCall, err = op.run(c, detcoll.TypeUint8, n, cfg.Seed, call)
			if err != nil && c.Err() != nil {
				return rows, err
			}
			row.Err = err
			rows = append(rows, row)
		}
	}
	return rows, nil
}

// elements turns an approximate byte size into an odd element count (a
// tail that no vector width divides), rounded for ReduceScatter to a
// multiple of the world size.
func elements(bytes int, dt detcoll.DType, op operation, w int) int {
	n := max(bytes/dt.Size(), 1) | 1
	if op.inScale(w) > 1 {
		n = max(n/w, 1) | 1
	}
	return n
}

// Agree combines every rank's rows: a row passes only if it passed on
// every rank, and its time is the slowest rank's. Every rank gets the same
// result.
func Agree(ctx context.Context, c *detcoll.Comm, rows []Row) ([]Row, error) {
	w := c.WorldSize()
	mine := make([]float64, 2*len(rows))
	for i, r := range rows {
		mine[2*i] = float64(r.PerCall)
		if r.Err == nil {
			mine[2*i+1] = 1
		}
	}
	all := make([]float64, w*len(mine))
	if err := detcoll.AllGather(c, mine, all); err != nil {
		return nil, err
	}
	out := slices.Clone(rows)
	for i := range out {
		for p := range w {
			v := all[p*len(mine):]
			out[i].PerCall = max(out[i].PerCall, time.Duration(v[2*i]))
			if v[2*i+1] != 1 && out[i].Err == nil {
				out[i].Err = fmt.Errorf("failed on rank %d", p)
			}
		}
	}
	return out, nil
}

// Print writes the table and returns the number of failed rows.
func Print(w io.Writer, world int, backend string, rows []Row) int {
	fmt.Fprintf(w, "detcoll verify: %d ranks, %s backend\n", world, backend)
	fmt.Fprintf(w, "%-18s %-9s %12s  %-4s %12s  %s\n", "operation", "dtype", "bytes/rank", "pass", "time/call", "detail")
	failed := 0
	for _, r := range rows {
		pass, detail := "yes", ""
		if r.Err != nil {
			pass, detail = "NO", r.Err.Error()
			failed++
		}
		fmt.Fprintf(w, "%-18s %-9v %12d  %-4s %12s  %s\n", r.Op, r.DType, r.Bytes, pass, fmtDur(r.PerCall), detail)
	}
	fmt.Fprintf(w, "%d of %d checks passed on every rank\n", len(rows)-failed, len(rows))
	return failed
}

func fmtDur(d time.Duration) string {
	switch {
	case d < time.Millisecond:
		return fmt.Sprintf("%.1f us", float64(d)/1e3)
	default:
		return fmt.Sprintf("%.2f ms", float64(d)/1e6)
	}
}
