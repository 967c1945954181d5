package main

import (
	"context"
	"errors"
	"io"
	"strings"

	"github.com/detcoll/detcoll/internal/plot"
)

const plotSynopsis = `--before A.json[,...] --after B.json[,...] [--extra R.json[,...]] [--operation OP] [--mode M] --output FIG[.png|.svg]

Draws latency against input size (log-log) from detcoll bench reports, one
panel per before/after pair (the i-th --before with the i-th --after; one
pair per world size): detcoll before, detcoll after, and the reference of
the after report; below each, the after run's time over each reference's
per size (the line at 1 marked). --extra adds references measured
elsewhere (a report whose reference is, say, PyTorch's symmetric memory),
each beside the after report of its world size. Writes FIG.png and FIG.svg.

Before drawing anything it refuses, all reasons at once, pairs that differ
in world size, backend, dtype, device, driver/CUDA/NCCL/MPI/Go versions,
warmup, iterations or the sizes of the operation; empty selections;
unequal counts of before and after reports; a world size given twice.`

// runPlot is "detcoll plot": its flags make a plot.Config.
func runPlot(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("plot", plotSynopsis, stderr)
	before := fs.String("before", "", "reports of the earlier runs, comma-separated")
	after := fs.String("after", "", "reports of the later runs, comma-separated, in the same order")
	extra := fs.String("extra", "", "reports of more references, comma-separated (drawn beside the after report of their world size)")
	var cfg plot.Config
	fs.StringVar(&cfg.Operation, "operation", "all_reduce", "operation to draw")
	fs.StringVar(&cfg.Mode, "mode", "", "timing mode to draw (default: the reports' only mode)")
	fs.StringVar(&cfg.Output, "output", "", "figure path; .png and .svg are both written (required)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usagef("unexpected arguments %q", fs.Args())
	}
	cfg.Before, cfg.After, cfg.Extra = splitList(*before), splitList(*after), splitList(*extra)

	err := plot.Run(cfg, stdout)
	var ce *plot.ConfigError
	if errors.As(err, &ce) {
		return badFlag(err) // the Config mirrors the flags: a bad setting is a bad flag
	}
	return err
}

// splitList splits a comma-separated list of paths; "" is none.
func splitList(list string) []string {
	if list == "" {
		return nil
	}
	var out []string
	for _, path := range strings.Split(list, ",") {
		out = append(out, strings.TrimSpace(path))
	}
	return out
}
