package plot

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/detcoll/detcoll/internal/tools/report"
)

// Config is what detcoll plot draws, as its flags and arguments set it:
// Reports, or Before and After (with Extra), never both.
type Config struct {
	// Reports are the paths of reports drawn each on its own
	// (Request.Reports): the command's arguments.
	Reports []string
	// Before and After are the reports' paths: the i-th before report is
	// paired with the i-th after one.
	Before, After []string
	// Extra are more references' reports (Request.Extra).
	Extra []string
	// Operation is the operation to draw, or OperationAll for each of the
	// reports' operations, one figure each.
	Operation string
	Mode      string // the timing mode; "" for the reports' only one
	// Output is the figure's path; FIG.png and FIG.svg are both written
	// (see OutputPaths), or with OperationAll FIG-OP.png and FIG-OP.svg
	// per operation OP.
	Output string
}

// ConfigError is a bad setting of a Config, found before any report is
// read (detcoll plot's usage error). Its text names the flag.
type ConfigError struct{ Err error }

func (e *ConfigError) Error() string { return e.Err.Error() }

// Unwrap returns e.Err.
func (e *ConfigError) Unwrap() error { return e.Err }

// Run is detcoll plot: it reads the reports, checks them (Check) and
// writes the figures as PNG and SVG, then says so on stdout. A bad cfg is
// a *ConfigError; nothing is written unless every check of every figure
// passed.
func Run(cfg Config, stdout io.Writer) error {
	pairs := len(cfg.Before) > 0 || len(cfg.After) > 0
	switch {
	case len(cfg.Reports) > 0 && (pairs || len(cfg.Extra) > 0):
		return &ConfigError{fmt.Errorf("unexpected arguments %q with --before, --after or --extra: give reports either as arguments or with those flags, not both", cfg.Reports)}
	case len(cfg.Reports) == 0 && !pairs:
		return &ConfigError{fmt.Errorf("no reports: give them as arguments, or with --before and --after")}
	case len(cfg.Reports) == 0 && (len(cfg.Before) == 0 || len(cfg.After) == 0):
		return &ConfigError{fmt.Errorf("--before and --after are required together; to draw reports on their own, give them as arguments")}
	case cfg.Output == "":
		return &ConfigError{fmt.Errorf("--output is required")}
	}
	png, svg, err := OutputPaths(cfg.Output)
	if err != nil {
		return &ConfigError{fmt.Errorf("--output: %w", err)}
	}
	if err := sameFiles(slices.Concat(cfg.Reports, cfg.Before, cfg.After, cfg.Extra), pairs); err != nil {
		return &ConfigError{err}
	}
	req := Request{Mode: cfg.Mode}
	for _, r := range []struct {
		to    *[]Input
		paths []string
	}{{&req.Reports, cfg.Reports}, {&req.Before, cfg.Before}, {&req.After, cfg.After}, {&req.Extra, cfg.Extra}} {
		if *r.to, err = readReports(r.paths); err != nil {
			return err
		}
	}

	ops := []string{cfg.Operation}
	if cfg.Operation == OperationAll {
		ops = operations(req.drawn())
	}
	var errs []error
	for _, op := range ops {
		req.Operation = op
		errs = append(errs, Check(req))
	}
	if err := joinUnique(errs); err != nil {
		return err
	}
	for _, op := range ops {
		req.Operation = op
		p, s := png, svg
		if cfg.Operation == OperationAll {
			p, s = suffixed(png, op), suffixed(svg, op)
		}
		if err := Write(req, p, s); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "wrote %s and %s\n", p, s)
	}
	return nil
}

// sameFiles refuses a file given twice, by the same path or another (a
// link, "./r.json"): one of its lines would hide the other. A path that
// cannot be read is left to readReports to report.
func sameFiles(paths []string, pairs bool) error {
	stats := make([]os.FileInfo, len(paths))
	for i, path := range paths {
		stats[i], _ = os.Stat(path)
		for j := range i {
			if stats[i] != nil && stats[j] != nil && os.SameFile(stats[i], stats[j]) {
				return twiceError(paths[j], paths[i], pairs)
			}
		}
	}
	return nil
}

// suffixed is path with "-op" before its extension: fig.png, all_reduce
// gives fig-all_reduce.png.
func suffixed(path, op string) string {
	ext := filepath.Ext(path)
	return strings.TrimSuffix(path, ext) + "-" + op + ext
}

// joinUnique joins errs, each joined error's parts on their own, dropping
// nils and repeated texts: a pair's mismatch fails alike for every
// operation, and is said once.
func joinUnique(errs []error) error {
	var out []error
	seen := map[string]bool{}
	var add func(err error)
	add = func(err error) {
		if j, ok := err.(interface{ Unwrap() []error }); ok {
			for _, e := range j.Unwrap() {
				add(e)
			}
			return
		}
		if err != nil && !seen[err.Error()] {
			seen[err.Error()] = true
			out = append(out, err)
		}
	}
	for _, err := range errs {
		add(err)
	}
	return errors.Join(out...)
}

// readReports reads the reports at paths.
func readReports(paths []string) ([]Input, error) {
	var in []Input
	for _, path := range paths {
		r, err := report.ReadFile(path)
		if err != nil {
			return nil, err
		}
		in = append(in, Input{Name: path, Report: r})
	}
	return in, nil
}
