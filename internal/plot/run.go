package plot

import (
	"fmt"
	"io"

	"github.com/detcoll/detcoll/internal/report"
)

// Config is what detcoll plot draws, as its flags set it.
type Config struct {
	// Before and After are the reports' paths: the i-th before report is
	// paired with the i-th after one.
	Before, After []string
	// Extra are more references' reports (Request.Extra).
	Extra     []string
	Operation string // the operation to draw
	Mode      string // the timing mode; "" for the reports' only one
	// Output is the figure's path; FIG.png and FIG.svg are both written
	// (see OutputPaths).
	Output string
}

// ConfigError is a bad setting of a Config, found before any file is read
// (detcoll plot's usage error). Its text names the flag.
type ConfigError struct{ Err error }

func (e *ConfigError) Error() string { return e.Err.Error() }

// Unwrap returns e.Err.
func (e *ConfigError) Unwrap() error { return e.Err }

// Run is detcoll plot: it reads the reports, checks them (Check) and
// writes the figure as PNG and SVG, then says so on stdout. A bad cfg is
// a *ConfigError; nothing is written unless every check passed.
func Run(cfg Config, stdout io.Writer) error {
	switch {
	case len(cfg.Before) == 0 || len(cfg.After) == 0:
		return &ConfigError{fmt.Errorf("--before and --after are required")}
	case cfg.Output == "":
		return &ConfigError{fmt.Errorf("--output is required")}
	}
	png, svg, err := OutputPaths(cfg.Output)
	if err != nil {
		return &ConfigError{fmt.Errorf("--output: %w", err)}
	}
	req := Request{Operation: cfg.Operation, Mode: cfg.Mode}
	if req.Before, err = readReports(cfg.Before); err != nil {
		return err
	}
	if req.After, err = readReports(cfg.After); err != nil {
		return err
	}
	if req.Extra, err = readReports(cfg.Extra); err != nil {
		return err
	}
	if err := Write(req, png, svg); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "wrote %s and %s\n", png, svg)
	return nil
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
