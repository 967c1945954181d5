package verify

import (
	"fmt"
	"io"
	"time"

	"github.com/detcoll/detcoll"
)

// Row is the outcome of one operation, element type and size.
type Row struct {
	Op      string
	DType   detcoll.DType
	Bytes   int // input bytes per rank
	Err     error
	PerCall time.Duration // median of the timed calls
}

// table agrees on each row with every rank as the row completes, and rank
// 0 prints it at once: a row passes only if it passed on every rank, and
// its time is the slowest rank's. Every rank counts the same failures.
type table struct {
	c              *detcoll.Comm // a host communicator of the ranks
	w              io.Writer     // rank 0's stdout; nil on the others
	failed, rows   int
	mine, everyone []float64 // agree's buffers
}

func newTable(c *detcoll.Comm, stdout io.Writer) *table {
	t := &table{c: c, mine: make([]float64, 2), everyone: make([]float64, 2*c.WorldSize())}
	if c.Rank() == 0 {
		t.w = stdout
	}
	return t
}

// printf prints on rank 0.
func (t *table) printf(format string, args ...any) {
	if t.w != nil {
		fmt.Fprintf(t.w, format, args...)
	}
}

func (t *table) header(backend string) {
	t.printf("detcoll verify: %d ranks, %s backend\n", t.c.WorldSize(), backend)
	t.printf("%-23s %-9s %12s  %-4s %12s  %s\n", "operation", "dtype", "bytes/rank", "pass", "time/call", "detail")
}

// add agrees on r with every rank (a collective on the host
// communicator), counts it and prints it.
func (t *table) add(r Row) error {
	t.mine[0], t.mine[1] = float64(r.PerCall), 0
	if r.Err == nil {
		t.mine[1] = 1
	}
	if err := detcoll.AllGather(t.c, t.mine, t.everyone); err != nil {
		return fmt.Errorf("verify: agree on %s, %v, %d bytes: %w", r.Op, r.DType, r.Bytes, err)
	}
	for p := range t.c.WorldSize() {
		r.PerCall = max(r.PerCall, time.Duration(t.everyone[2*p]))
		if t.everyone[2*p+1] != 1 && r.Err == nil {
			r.Err = fmt.Errorf("failed on rank %d", p)
		}
	}
	t.rows++
	pass, detail := "yes", ""
	if r.Err != nil {
		pass, detail = "NO", r.Err.Error()
		t.failed++
	}
	t.printf("%-23s %-9v %12d  %-4s %12s  %s\n", r.Op, r.DType, r.Bytes, pass, fmtDur(r.PerCall), detail)
	return nil
}

func (t *table) summary() {
	t.printf("%d of %d checks passed on every rank\n", t.rows-t.failed, t.rows)
}

// err is the run's outcome once every row is in.
func (t *table) err() error {
	if t.failed > 0 {
		return fmt.Errorf("%d checks failed", t.failed)
	}
	return nil
}

func fmtDur(d time.Duration) string {
	switch {
	case d < time.Millisecond:
		return fmt.Sprintf("%.1f us", float64(d)/1e3)
	default:
		return fmt.Sprintf("%.2f ms", float64(d)/1e6)
	}
}
