package bench

import (
	"fmt"
	"io"
	"os"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/detcoll/detcoll/internal/core/num"
	"github.com/detcoll/detcoll/internal/core/settings"
	"github.com/detcoll/detcoll/internal/tools/report"
)

// Output is where a rank reports while it runs (rank 0: stderr and
// stdout; the others: nothing). A nil writer is silent.
type Output struct {
	Progress io.Writer // a line before each operation and size
	Table    io.Writer // a table row after each
}

// Measure measures cfg on this rank and returns the report, the same on
// every rank: detcoll is det, the reference ref (nil when cfg.Reference is
// none). It calls cfg.Validate before anything else. Every rank of g must
// call Measure with the same cfg. An error from a side ends the run; the
// caller should then fail its communicators (detcoll's Abort), so that
// peers waiting in a barrier fail too.
func Measure(cfg Config, g Group, det, ref Impl, out Output) (*report.Report, error) {
	if err := cfg.Validate(g.WorldSize()); err != nil {
		return nil, err
	}
	if (ref == nil) != (cfg.Reference == report.ReferenceNone) {
		return nil, fmt.Errorf("bench: reference %q, but the reference side is %v", cfg.Reference, ref)
	}
	sides := []Impl{det}
	if ref != nil {
		sides = append(sides, ref)
	}
	rep := &report.Report{Kind: report.Kind, SchemaVersion: report.SchemaVersion, Meta: newMeta(cfg, g.WorldSize(), sides)}
	table := newTable(out.Table, &rep.Meta, sides)
	total := len(cfg.Ops) * len(cfg.Sizes)
	for i, op := range cfg.Ops {
		for j, size := range cfg.Sizes {
			row := i*len(cfg.Sizes) + j
			if out.Progress != nil {
				fmt.Fprintf(out.Progress, "bench: [%d/%d] %s, %s per rank\n", row+1, total, op, report.SizeLabel(int64(size)))
			}
			s := Shape{DType: cfg.DType, Bytes: size, World: g.WorldSize(), Rank: g.Rank(), Red: cfg.Red}
			rows, err := measure(cfg, g, sides, op, s, row)
			if err != nil {
				return nil, fmt.Errorf("bench: %s, %d bytes: %w", op, size, err)
			}
			rep.Rows = append(rep.Rows, rows...)
			table.write(rows)
		}
	}
	table.end()
	if err := rep.Validate(); err != nil {
		return nil, fmt.Errorf("bench: the report is inconsistent (a harness bug): %w", err)
	}
	return rep, nil
}

// newMeta fills the run's metadata, then lets each side add its own.
func newMeta(cfg Config, world int, sides []Impl) report.Meta {
	m := report.Meta{
		WorldSize:  world,
		DType:      cfg.DType.String(),
		Backend:    cfg.Backend,
		Reference:  cfg.Reference,
		GoVersion:  runtime.Version(),
		Commit:     Commit(),
		Reduction:  reductionName(cfg.Red),
		Warmup:     cfg.Warmup,
		Iterations: cfg.Iterations,
		Modes:      cfg.Modes,
		Seed:       cfg.Seed,
		Date:       time.Now().UTC().Format(time.RFC3339),
		Hostname:   hostname(),
		Notes:      []string{},
	}
	if env := tuningEnv(os.Environ()); len(env) > 0 {
		m.Notes = append(m.Notes, "environment: "+strings.Join(env, " "))
	}
	if len(sides) > 1 {
		m.Notes = append(m.Notes, "samples alternate detcoll first and the reference first; each side's own barrier precedes each of its samples")
	}
	for _, s := range sides {
		s.Describe(&m)
	}
	return m
}

// tuningEnv returns the DETCOLL_* variables of env that may change what
// detcoll does (such as DETCOLL_CPU_ALLREDUCE_ONESHOT_MAX), sorted; never
// the secret.
func tuningEnv(env []string) []string {
	var out []string
	for _, kv := range env {
		if name, _, _ := strings.Cut(kv, "="); strings.HasPrefix(name, "DETCOLL_") && name != settings.Secret {
			out = append(out, kv)
		}
	}
	slices.Sort(out)
	return out
}

// mover is a side that says what its kernels move per call (detcoll's on
// the cuda backend).
type mover interface {
	Moves(op Op, s Shape) (*report.Moves, error)
}

// measure takes one operation and size's samples on this rank, gathers
// every rank's and returns the rows, one per mode.
func measure(cfg Config, g Group, sides []Impl, op Op, s Shape, row int) ([]report.Row, error) {
	input := Input(s.DType, s.Elements(), cfg.Seed, s.Rank, row)
	for _, side := range sides {
		if err := side.Prepare(op, s, input); err != nil {
			return nil, fmt.Errorf("%s: prepare: %w", side.Name(), err)
		}
		defer side.Release()
	}
	input = nil
	runtime.GC() // now, rather than in a timed call

	n, iters := len(sides), cfg.Iterations
	mine := make([]float64, len(cfg.Modes)*n*iters) // [mode][side][sample]
	for m, mode := range cfg.Modes {
		for i := range cfg.Warmup + iters {
			// The order depends on the sample index only: the same on
			// every rank. detcoll goes first on even samples.
			for k := range n {
				j := (i + k) % n
				if err := sides[j].Barrier(); err != nil {
					return nil, fmt.Errorf("%s: barrier: %w", sides[j].Name(), err)
				}
				d, err := sides[j].Time(mode)
				if err != nil {
					return nil, fmt.Errorf("%s: %s: %w", sides[j].Name(), mode, err)
				}
				if i >= cfg.Warmup {
					mine[(m*n+j)*iters+i-cfg.Warmup] = float64(d.Nanoseconds()) / 1e3
				}
			}
		}
	}

	all := make([]float64, g.WorldSize()*len(mine))
	if err := g.AllGather(mine, all); err != nil {
		return nil, fmt.Errorf("gather the samples: %w", err)
	}
	perRank := func(m, j int) [][]float64 {
		out := make([][]float64, g.WorldSize())
		for r := range out {
			at := r*len(mine) + (m*n+j)*iters
			out[r] = all[at : at+iters : at+iters]
		}
		return out
	}
	var moved *report.Moves
	if m, ok := sides[0].(mover); ok {
		s.Rank = 0
		var err error
		if moved, err = m.Moves(op, s); err != nil {
			return nil, err
		}
	}
	rows := make([]report.Row, len(cfg.Modes))
	for m, mode := range cfg.Modes {
		r := &rows[m]
		*r = report.Row{Operation: string(op), Mode: mode, InputBytesPerRank: int64(s.Bytes), DetcollMoves: moved}
		r.DetcollSamplesUS = perRank(m, 0)
		if n > 1 {
			r.ReferenceSamplesUS = perRank(m, 1)
		}
		r.Summarise(g.WorldSize()) // medians, spreads, bus bandwidths
	}
	return rows, nil
}

// reductionName is the report's name of red: "" for the sum.
func reductionName(red num.RedOp) string {
	if red == num.Sum {
		return ""
	}
	return red.String()
}
