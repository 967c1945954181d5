package main

import (
	"context"
	"errors"
	"flag"
	"io"
	"strings"

	"github.com/detcoll/detcoll/internal/tools/plot"
)

const plotSynopsis = `[--operation OP|all] [--mode M] --output FIG[.png|.svg] REPORT.json...
   or: detcoll plot --before A.json[,...] --after B.json[,...] [--extra R.json[,...]] [--operation OP|all] [--mode M] --output FIG[.png|.svg]

Draws latency against input size (log-log) from detcoll bench reports: per
size, the slowest rank's median time, and around each detcoll line a shaded
band from the largest of the ranks' 10th percentiles to the largest of
their 90th (the report's detcoll_p10_us and detcoll_p90_us). Writes FIG.png
and FIG.svg.

Reports given as arguments (one or more) share one panel, each in its own
colour: detcoll's line and band, labelled with the report's commit, backend
and world size (and its dtype, device or file where those do not tell the
reports apart), and the report's reference, dashed; below it, each
report's detcoll time over its reference's per size (the line at 1 marked).
Flags may come before or after the reports.

With --before and --after, one panel per before/after pair (the i-th
--before with the i-th --after; one pair per world size): detcoll before,
detcoll after, and the reference of the after report; below each, the
after run's time over each reference's per size. --extra adds references
measured elsewhere (a report whose reference is, say, PyTorch's symmetric
memory), each beside the after report of its world size.

--operation names one of the reports' operations (bench measures
all_reduce, reduce_scatter, all_gather, all_gather_many,
reduce_scatter_many and broadcast); any other name is refused with the
names the reports have. --operation all draws each operation of the
reports in a figure of its own: FIG-OP.png and FIG-OP.svg per operation OP.

Before drawing anything it refuses, all reasons at once: a file given
twice (as before and after it would hide a line: give it alone, as an
argument); a report without rows of the operation and mode; pairs that
differ in world size, backend, dtype, device, driver/CUDA/NCCL/MPI/Go
versions, warmup, iterations or the sizes of the operation; unequal counts
of before and after reports; a world size given twice.`

// runPlot is "detcoll plot": its flags and arguments make a plot.Config.
func runPlot(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("plot", plotSynopsis, stderr)
	before := fs.String("before", "", "reports of the earlier runs, comma-separated")
	after := fs.String("after", "", "reports of the later runs, comma-separated, in the same order")
	extra := fs.String("extra", "", "reports of more references, comma-separated (drawn beside the after report of their world size)")
	var cfg plot.Config
	fs.StringVar(&cfg.Operation, "operation", "all_reduce", "operation to draw, or all: a figure per operation (FIG-OP.png, FIG-OP.svg)")
	fs.StringVar(&cfg.Mode, "mode", "", "timing mode to draw (default: the reports' only mode)")
	fs.StringVar(&cfg.Output, "output", "", "figure path; .png and .svg are both written (required)")
	reports, err := parseInterspersed(fs, args)
	if err != nil {
		return err
	}
	cfg.Reports = reports
	cfg.Before, cfg.After, cfg.Extra = splitList(*before), splitList(*after), splitList(*extra)

	err = plot.Run(cfg, stdout)
	var ce *plot.ConfigError
	if errors.As(err, &ce) {
		return badFlag(err) // the Config mirrors the flags: a bad setting is a bad flag
	}
	return err
}

// parseInterspersed parses args into fs as parseFlags does, but lets
// flags follow the arguments too ("detcoll plot r.json --output f.png"),
// and returns the arguments; after "--" every one is an argument.
func parseInterspersed(fs *flag.FlagSet, args []string) ([]string, error) {
	var out []string
	for {
		if err := parseFlags(fs, args); err != nil {
			return nil, err
		}
		rest := fs.Args()
		if len(rest) == 0 {
			return out, nil
		}
		if n := len(args) - len(rest); n > 0 && args[n-1] == "--" {
			return append(out, rest...), nil
		}
		out, args = append(out, rest[0]), rest[1:]
	}
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
