#!/usr/bin/env python3
"""Issue 12's performance goals, checked against detcoll bench reports.

    python3 tools/goals.py REPORT.json [--extra SYMM.json ...] > goals.md

For every row of a `detcoll bench --backend cuda` report (and the rows of
the --extra references of the same operation, mode and size: PyTorch
symmetric memory from tools/symm_mem.py), the ratio of detcoll's time to
the better reference's, the goal of that size and mode, and whether it is
met; then a count per band. The goals (issue 12, ../shared/perf/anchors.md):

- at most 256 KiB per rank: graph and pipelined <= 0.6, synchronised <= 0.9;
- 1 MiB to 16 MiB: <= 0.7 in every mode;
- at least 64 MiB: at least 1.2 x NCCL's throughput (time ratio <= 1/1.2)
  and ahead of every other reference (ratio < 1).

Sizes between the bands (none in the bench's defaults) have no goal.
"""
import json
import sys

KIB, MIB = 1 << 10, 1 << 20


def goal(size, mode, reference):
    """The largest time ratio detcoll/reference that meets the goal, or None."""
    if size <= 256 * KIB:
        return 0.9 if mode == "synchronised" else 0.6
    if MIB <= size <= 16 * MIB:
        return 0.7
    if size >= 64 * MIB:
        return 1 / 1.2 if reference == "nccl" else 1.0
    return None


def rows(report, extras):
    """Yields (operation, size, mode, detcoll us, {reference: us})."""
    refs = {}
    for x in extras:
        name = x["metadata"]["reference"]
        for r in x["rows"]:
            refs.setdefault((r["operation"], r["input_bytes_per_rank"], r["mode"]), {})[name] = r["reference_us"]
    own = report["metadata"]["reference"]
    for r in report["rows"]:
        key = (r["operation"], r["input_bytes_per_rank"], r["mode"])
        times = dict(refs.get(key, {}))
        if own != "none":
            times[own] = r["reference_us"]
        yield r["operation"], r["input_bytes_per_rank"], r["mode"], r["detcoll_us"], times


def verdicts(report, extras):
    """Yields one dict per row with a goal: the ratios and whether each is met."""
    for op, size, mode, ours, times in rows(report, extras):
        checks = []
        for ref, t in sorted(times.items()):
            g = goal(size, mode, ref)
            if g is None or t <= 0:
                continue
            ratio = ours / t
            checks.append((ref, t, ratio, g, ratio < g if g == 1.0 else ratio <= g))
        if checks:
            yield {"operation": op, "size": size, "mode": mode, "detcoll_us": ours, "checks": checks,
                   "met": all(c[4] for c in checks)}


def human(size):
    return f"{size // MIB} MiB" if size >= MIB else f"{size // KIB} KiB"


def table(report, extras):
    out = ["| operation | bytes/rank | mode | detcoll us | reference: us, ratio (goal) | met |",
           "|---|---:|---|---:|---|---|"]
    met = total = 0
    for v in verdicts(report, extras):
        total += 1
        met += v["met"]
        refs = "; ".join(f"{ref} {t:.2f}, {ratio:.2f} ({'<' if g == 1.0 else '<='} {g:.2f})" for ref, t, ratio, g, _ in v["checks"])
        out.append(f"| {v['operation']} | {human(v['size'])} | {v['mode']} | {v['detcoll_us']:.2f} | {refs} | {'yes' if v['met'] else 'no'} |")
    out.append("")
    out.append(f"{met} of {total} rows meet their goal.")
    return "\n".join(out)


def main(argv):
    args, extras = argv[1:], []
    while "--extra" in args:
        i = args.index("--extra")
        extras.append(args[i + 1])
        del args[i:i + 2]
    if len(args) != 1:
        sys.exit(__doc__)
    with open(args[0]) as f:
        report = json.load(f)
    loaded = []
    for path in extras:
        with open(path) as f:
            loaded.append(json.load(f))
    print(table(report, loaded))


if __name__ == "__main__":
    main(sys.argv)
