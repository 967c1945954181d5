package main

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/detcoll/detcoll/internal/plot"
	"github.com/detcoll/detcoll/internal/report"
)

const plotSynopsis = `--before A.json[,...] --after B.json[,...] [--operation OP] [--mode M] --output FIG[.png|.svg]

Draws latency against input size (log-log) from detcoll bench reports, one
panel per before/after pair (the i-th --before with the i-th --after; one
pair per world size): detcoll before, detcoll after, and the reference of
the after report. Writes FIG.png and FIG.svg.

Before drawing anything it refuses, all reasons at once, pairs that differ
in world size, backend, dtype, device, driver/CUDA/NCCL/MPI/Go versions,
warmup, iterations or the sizes of the operation; empty selections;
unequal counts of before and after reports; a world size given twice.`

// runPlot is "detcoll plot".
func runPlot(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("plot", plotSynopsis, stderr)
	before := fs.String("before", "", "reports of the earlier runs, comma-separated")
	after := fs.String("after", "", "reports of the later runs, comma-separated, in the same order")
	op := fs.String("operation", "all_reduce", "operation to draw")
	mode := fs.String("mode", "", "timing mode to draw (default: the reports' only mode)")
	output := fs.String("output", "", "figure path; .png and .svg are both written (required)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	switch {
	case fs.NArg() > 0:
		return usagef("unexpected arguments %q", fs.Args())
	case *before == "" || *after == "":
		return usagef("--before and --after are required")
	case *output == "":
		return usagef("--output is required")
	}
	png, svg, err := plot.OutputPaths(*output)
	if err != nil {
		return usagef("--output: %v", err)
	}
	req := plot.Request{Operation: *op, Mode: *mode}
	if req.Before, err = readReports(*before); err != nil {
		return err
	}
	if req.After, err = readReports(*after); err != nil {
		return err
	}
	if err := plot.Write(req, png, svg); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "wrote %s and %s\n", png, svg)
	return nil
}

// readReports reads a comma-separated list of reports.
func readReports(list string) ([]plot.Input, error) {
	var in []plot.Input
	for _, path := range strings.Split(list, ",") {
		path = strings.TrimSpace(path)
		r, err := report.ReadFile(path)
		if err != nil {
			return nil, err
		}
		in = append(in, plot.Input{Name: path, Report: r})
	}
	return in, nil
}
