#!/usr/bin/env python3
"""Calibration of detcoll bench's NCCL column against NCCL called natively.

Joins a `detcoll bench --backend cuda` report (its reference column) with
the JSON of ../shared/gpu/examples/nccl_direct.cu, run in the same device
call, and prints a markdown table per operation, size and mode: bench's
NCCL time, the native program's, their ratio, and whether they agree
within the 10% that issue 12 asks for.

    python3 tools/calibration.py BENCH.json NCCL_DIRECT.json > calibration.md
"""
import json
import sys

# nccl_direct.cu's names for bench's modes: its "eager" is one call between
# two events, host-synchronised per sample, as bench's synchronised mode.
MODES = {"synchronised": "eager_us", "pipelined": "pipelined_us", "graph": "graph_us"}


def table(bench, native):
    direct = {(r["op"], r["bytes_per_rank"]): r for r in native["rows"]}
    lines = ["| operation | bytes/rank | mode | bench NCCL us | native NCCL us | bench/native | within 10% |",
             "|---|---:|---|---:|---:|---:|---|"]
    worst = 0.0
    for row in bench["rows"]:
        d = direct.get((row["operation"], row["input_bytes_per_rank"]))
        if d is None or row["mode"] not in MODES:
            continue
        ours, theirs = row["reference_us"], d[MODES[row["mode"]]]
        ratio = ours / theirs
        worst = max(worst, abs(ratio - 1))
        lines.append(f"| {row['operation']} | {row['input_bytes_per_rank']} | {row['mode']} | {ours:.2f} | {theirs:.2f} | {ratio:.2f} | {'yes' if abs(ratio - 1) <= 0.10 else 'no'} |")
    lines.append("")
    lines.append(f"largest disagreement: {worst * 100:.0f}%")
    return "\n".join(lines)


def main(argv):
    if len(argv) != 3:
        sys.exit(__doc__)
    with open(argv[1]) as f:
        bench = json.load(f)
    with open(argv[2]) as f:
        native = json.load(f)
    print(table(bench, native))


if __name__ == "__main__":
    main(sys.argv)
