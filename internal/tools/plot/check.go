package plot

import (
	"cmp"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/detcoll/detcoll/internal/tools/report"
)

// Input is one report and where it came from (for messages).
type Input struct {
	Name   string // the file's path
	Report *report.Report
}

// OperationAll, as Config.Operation, draws every operation of the
// reports, one figure each.
const OperationAll = "all"

// Request is one figure, of one of two kinds: reports drawn each on its
// own (Reports), or before/after pairs (Before and After: the i-th before
// report pairs with the i-th after report), never both.
type Request struct {
	// Reports are drawn each on its own, in its colour: detcoll's line
	// and band, and the report's reference.
	Reports       []Input
	Before, After []Input
	// Extra are more references, each drawn beside the after report of
	// its world size (a report whose reference is, say, PyTorch's
	// symmetric memory): its reference line, and its ratio.
	Extra []Input
	// Operation is the operation drawn, one of the reports' (Run turns
	// OperationAll into a Request per operation).
	Operation string
	// Mode is the timing mode drawn; "" means the one mode every report
	// has (an error when they have several).
	Mode string
}

// drawn are the reports whose detcoll lines are drawn: Reports, or Before
// and After.
func (req *Request) drawn() []Input {
	return slices.Concat(req.Reports, req.Before, req.After)
}

// Check reports every reason req cannot be drawn, joined, or nil.
func Check(req Request) error {
	var errs []error
	add := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	pairs := len(req.Before) > 0 || len(req.After) > 0
	switch {
	case len(req.Reports) > 0 && (pairs || len(req.Extra) > 0):
		add("reports to draw on their own and before/after pairs or extra references: give one kind or the other")
	case len(req.Reports) == 0 && !pairs:
		add("no reports: give reports to draw, or before and after ones")
	case len(req.Before) != len(req.After):
		add("%d before reports but %d after reports: they pair up in order, one pair per world size", len(req.Before), len(req.After))
	}
	if req.Operation == "" {
		add("no operation")
	}
	all := req.drawn()
	for _, in := range append(slices.Clone(all), req.Extra...) {
		if err := in.Report.Validate(); err != nil {
			add("%s: %v", in.Name, err)
		}
	}
	errs = append(errs, checkTwice(req)...)
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	if ops := operations(all); !slices.Contains(ops, req.Operation) {
		return fmt.Errorf("no rows of %s in any report: choose --operation %s or %s", req.Operation, strings.Join(ops, ", "), OperationAll)
	}
	mode, err := resolveMode(req.Mode, all)
	if err != nil {
		return err
	}
	for _, in := range req.Reports {
		errs = append(errs, checkRows(in, req.Operation, mode)...)
	}
	worlds := map[int]string{}
	for i := range req.Before {
		errs = append(errs, checkPair(req.Before[i], req.After[i], req.Operation, mode)...)
		w := req.After[i].Report.Meta.WorldSize
		if prev, ok := worlds[w]; ok {
			add("world size %d twice: %s and %s (one pair per world size)", w, prev, req.After[i].Name)
		}
		worlds[w] = req.After[i].Name
	}
	for _, x := range req.Extra {
		after, ok := afterOf(req, x)
		if !ok {
			add("%s: no after report of world size %d to draw it beside", x.Name, x.Report.Meta.WorldSize)
			continue
		}
		errs = append(errs, checkExtra(x, after, req.Operation, mode)...)
	}
	return errors.Join(errs...)
}

// checkTwice refuses a report given twice (by name): its lines would lie
// on each other's, and one would hide.
func checkTwice(req Request) []error {
	var errs []error
	seen := map[string]bool{}
	for _, in := range slices.Concat(req.Reports, req.Before, req.After, req.Extra) {
		name := filepath.Clean(in.Name)
		if !seen[name] {
			seen[name] = true
			continue
		}
		errs = append(errs, twiceError(in.Name, "", len(req.Reports) == 0))
	}
	return errs
}

// twiceError is the error for a report given twice, as name and, when it
// is the same file by another name, as other: each report once, since
// one line would hide the other. For pairs it says how to draw one report
// alone.
func twiceError(name, other string, pairs bool) error {
	what := name + " given twice"
	if other != "" && other != name {
		what = name + " and " + other + " are the same file"
	}
	if pairs {
		return fmt.Errorf("%s: give each report once; to draw one report alone, give it as an argument without --before and --after", what)
	}
	return fmt.Errorf("%s: give each report once", what)
}

// operations lists the operations of the reports' rows, in order of first
// appearance.
func operations(reports []Input) []string {
	var ops []string
	for _, in := range reports {
		for _, row := range in.Report.Rows {
			if !slices.Contains(ops, row.Operation) {
				ops = append(ops, row.Operation)
			}
		}
	}
	return ops
}

// afterOf is the after report that x is drawn beside: the one of its
// world size.
func afterOf(req Request, x Input) (Input, bool) {
	for _, a := range req.After {
		if a.Report.Meta.WorldSize == x.Report.Meta.WorldSize {
			return a, true
		}
	}
	return Input{}, false
}

// checkExtra checks that an extra reference was measured like the after
// report it is drawn beside, at the same sizes, with a reference time.
func checkExtra(x, after Input, op, mode string) []error {
	var errs []error
	m, a := &x.Report.Meta, &after.Report.Meta
	for _, d := range []struct {
		what string
		x, a any
	}{{"dtype", m.DType, a.DType}, {"device", m.DeviceLabel(), a.DeviceLabel()}, {"backend", m.Backend, a.Backend}} {
		if d.x != d.a {
			errs = append(errs, fmt.Errorf("%s and %s differ in %s: %v and %v", x.Name, after.Name, d.what, d.x, d.a))
		}
	}
	if m.Reference == report.ReferenceNone {
		errs = append(errs, fmt.Errorf("%s has no reference to draw", x.Name))
	}
	xs, as := selectRows(x.Report, op, mode), selectRows(after.Report, op, mode)
	if !slices.Equal(sizes(xs), sizes(as)) {
		errs = append(errs, fmt.Errorf("%s and %s differ in the sizes of %s: %v and %v", x.Name, after.Name, op, sizes(xs), sizes(as)))
	}
	for _, r := range xs {
		if r.ReferenceUS <= 0 {
			errs = append(errs, fmt.Errorf("%s: %s at %d bytes has no reference time", x.Name, op, r.InputBytesPerRank))
		}
	}
	return errs
}

// resolveMode returns the mode to draw: the one asked for, or the only
// mode of every report.
func resolveMode(mode string, all []Input) (string, error) {
	if mode != "" {
		return mode, nil
	}
	var modes []string
	for _, in := range all {
		for _, m := range in.Report.Meta.Modes {
			if !slices.Contains(modes, m) {
				modes = append(modes, m)
			}
		}
	}
	if len(modes) != 1 {
		return "", fmt.Errorf("the reports have timing modes %v: choose one with --mode", modes)
	}
	return modes[0], nil
}

// checkPair compares a before and an after report field by field and
// checks that both have rows of op and mode, at the same sizes, with
// times a log scale can show.
func checkPair(before, after Input, op, mode string) []error {
	var errs []error
	b, a := &before.Report.Meta, &after.Report.Meta
	differ := func(what string, x, y any) {
		if x != y {
			errs = append(errs, fmt.Errorf("%s and %s differ in %s: %v before, %v after", before.Name, after.Name, what, x, y))
		}
	}
	differ("world size", b.WorldSize, a.WorldSize)
	differ("backend", b.Backend, a.Backend)
	differ("dtype", b.DType, a.DType)
	differ("device", b.DeviceLabel(), a.DeviceLabel())
	differ("reduction", b.Reduction, a.Reduction)
	differ("driver version", b.DriverVersion, a.DriverVersion)
	differ("CUDA version", b.CUDAVersion, a.CUDAVersion)
	differ("NCCL version", b.NCCLVersion, a.NCCLVersion)
	differ("MPI version", b.MPIVersion, a.MPIVersion)
	differ("Go version", b.GoVersion, a.GoVersion)
	differ("warmup", b.Warmup, a.Warmup)
	differ("iterations", b.Iterations, a.Iterations)

	errs = append(errs, checkRows(before, op, mode)...)
	errs = append(errs, checkRows(after, op, mode)...)
	bs, as := selectRows(before.Report, op, mode), selectRows(after.Report, op, mode)
	if len(bs) > 0 && len(as) > 0 && !slices.Equal(sizes(bs), sizes(as)) {
		errs = append(errs, fmt.Errorf("%s and %s differ in the sizes of %s: %v before, %v after", before.Name, after.Name, op, sizes(bs), sizes(as)))
	}
	return errs
}

// checkRows checks that in has rows of op in mode, with times a log
// scale can show.
func checkRows(in Input, op, mode string) []error {
	var errs []error
	rows := selectRows(in.Report, op, mode)
	if len(rows) == 0 {
		errs = append(errs, fmt.Errorf("%s has no rows of %s in mode %s: choose an --operation and --mode that every report has", in.Name, op, mode))
	}
	for _, r := range rows {
		if r.DetcollUS <= 0 || (in.Report.Meta.Reference != report.ReferenceNone && r.ReferenceUS <= 0) {
			errs = append(errs, fmt.Errorf("%s: %s at %d bytes has a time of 0, which a log scale cannot show", in.Name, op, r.InputBytesPerRank))
		}
	}
	return errs
}

// selectRows returns r's rows of op in mode, by size.
func selectRows(r *report.Report, op, mode string) []report.Row {
	var rows []report.Row
	for _, row := range r.Rows {
		if row.Operation == op && row.Mode == mode {
			rows = append(rows, row)
		}
	}
	slices.SortFunc(rows, func(x, y report.Row) int { return cmp.Compare(x.InputBytesPerRank, y.InputBytesPerRank) })
	return rows
}

func sizes(rows []report.Row) []int64 {
	s := make([]int64, len(rows))
	for i, r := range rows {
		s[i] = r.InputBytesPerRank
	}
	return s
}
