#!/usr/bin/env python3
"""PyTorch symmetric-memory all-reduce, timed like detcoll bench, as a report.

A second reference for all_reduce on GPUs: torch.ops.symm_mem's one-shot and
two-shot all-reduce on buffers from torch.distributed._symmetric_memory.empty,
timed in the three modes of detcoll bench on the cuda backend (synchronised,
pipelined, graph: the same definitions, call counts and statistics), written as
a JSON report in detcoll bench's schema (internal/tools/report) with reference
"symm_mem", for

    detcoll plot --before A.json --after B.json --extra symm.json --mode graph --output fig.png

Run it as the ranks of a launcher, one GPU per rank (LOCAL_RANK):

    torchrun --standalone --nproc-per-node N tools/symm_mem.py --output symm.json
    detcoll run -n N -- python3 tools/symm_mem.py --output symm.json

or let it start N ranks itself (torch.multiprocessing):

    python3 tools/symm_mem.py -n N --output symm.json

Method, per size (input bytes per rank) and mode: each rank fills a symmetric
buffer with random values; every variant (one_shot, two_shot) is first tried
once, and all ranks agree (over a gloo group) on which variants work; then
--warmup untimed and --iterations timed samples, the variants alternating
which goes first, each sample after a barrier (an NCCL all-reduce of one int32
and a stream synchronisation, as detcoll bench's NCCL side). A variant's time
is the slowest rank's median; a row records the faster variant's samples, and
the report's notes say which variant each row holds and both times.

The report's detcoll fields are zeros: this tool times only the reference.
Plot draws an --extra report's reference line only, so the zeros are never
drawn; used as --before or --after it is refused (a time of 0).

When a variant or a whole mode is refused (at world size 1 two_shot's
out-of-place form is; symmetric memory may refuse more), that is said on
stderr and in the report's notes and the rows are left out, rather than
failing; if nothing at all could be measured no report is written (exit 1).

NVLink multicast stays off (TORCH_SYMM_MEM_DISABLE_MULTICAST=1,
NCCL_NVLS_ENABLE=0, set before torch is imported): the one-shot and two-shot
kernels read peers' buffers over NVLink without it.

The report building, statistics and checks are plain functions of plain data;
torch is imported only by the ranks (python/tests/test_symm_mem_report.py
runs without it).
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import re
import socket
import subprocess
import sys
import tempfile
import threading
import time
import warnings

# The report's identity and the vocabulary of internal/tools/report/report.go.
KIND = "detcoll_bench"
SCHEMA_VERSION = 1
REFERENCE = "symm_mem"  # report.ReferenceSymmMem
OPERATION = "all_reduce"
MODE_WALL_CLOCK = "wall_clock"
MODE_SYNCHRONISED = "synchronised"
MODE_PIPELINED = "pipelined"
MODE_GRAPH = "graph"
MODE_GRAPH_STEADY = "graph_steady"  # measured by detcoll bench only
ALL_MODES = [MODE_WALL_CLOCK, MODE_SYNCHRONISED, MODE_PIPELINED, MODE_GRAPH, MODE_GRAPH_STEADY]  # report.Modes
GPU_MODES = [MODE_SYNCHRONISED, MODE_PIPELINED, MODE_GRAPH]
REFERENCES = ["none", "mpi", "nccl", "symm_mem"]

# Element sizes of the report's dtypes (internal/core/num); the symm_mem kernels
# reduce bfloat16 and float32 only.
DTYPE_SIZES = {"bfloat16": 2, "float16": 2, "float32": 4, "float64": 8}
SYMM_DTYPES = ["bfloat16", "float32"]

VARIANTS = ["one_shot", "two_shot"]

# detcoll bench's defaults on cuda (cmd/detcoll/bench.go).
DEFAULT_SIZES = "1KiB,8KiB,64KiB,256KiB,1MiB,4MiB,16MiB,64MiB,256MiB"
DEFAULT_WARMUP = 20
DEFAULT_ITERATIONS = 100

# Calls per sample in the pipelined and graph modes, as internal/tools/bench
# (cudaside.go): 100 and 50, fewer for large sizes so that one sample moves at
# most 1 GiB per rank, never fewer than 4.
PIPELINED_CALLS = 100
GRAPH_CALLS = 50
SAMPLE_BYTES = 1 << 30
MIN_CALLS = 4

# The fields of report.go's structs, in their order (json tags).
REPORT_FIELDS = ["kind", "schema_version", "metadata", "rows"]
META_FIELDS = [
    "world_size", "dtype", "backend", "device", "driver_version", "cuda_version",
    "nccl_version", "mpi_version", "reference", "reference_dtype", "notes",
    "go_version", "commit", "warmup", "iterations", "timing_modes", "seed",
    "date", "hostname", "options",
]
ROW_FIELDS = [
    "operation", "mode", "input_bytes_per_rank", "detcoll_us", "reference_us",
    "detcoll_samples_us", "reference_samples_us",
]
# Fields a row may leave out: detcoll's reader derives the spread and the
# bus bandwidth from the samples (internal/tools/report); detcoll_moves is what
# detcoll's plan moves, which this script does not know.
OPTIONAL_ROW_FIELDS = [
    "detcoll_p10_us", "detcoll_p90_us", "reference_p10_us", "reference_p90_us",
    "detcoll_busbw_gbps", "reference_busbw_gbps", "detcoll_moves",
]


class NothingMeasured(Exception):
    """No row could be measured: there is no valid report to write."""


# ---------------------------------------------------------------------------
# Pure parts: sizes, statistics, timing arithmetic, the report.


def parse_size(s: str) -> int:
    """A byte count with an optional binary unit, as detcoll's --size-bytes:
    4096, 64KiB, 1MiB, 2GiB (K, M and G alone mean the same)."""
    units = [("GiB", 30), ("MiB", 20), ("KiB", 10), ("G", 30), ("M", 20), ("K", 10), ("B", 0)]
    num, shift = s, 0
    for suffix, sh in units:
        if s.endswith(suffix):
            num, shift = s[: -len(suffix)], sh
            break
    try:
        n = int(num)
    except ValueError:
        n = 0
    if not num.isdigit() or n <= 0 or n > (1 << 40) >> shift:
        raise ValueError(f"size {s!r}: want a positive byte count such as 4096, 64KiB or 1MiB")
    return n << shift


def parse_sizes(s: str) -> list:
    """A comma-separated list of parse_size."""
    return [parse_size(f.strip()) for f in s.split(",")]


def size_label(n: int) -> str:
    """report.SizeLabel: the largest binary unit that divides n exactly."""
    for shift, unit in ((30, "GiB"), (20, "MiB"), (10, "KiB")):
        if n >= 1 << shift and n % (1 << shift) == 0:
            return f"{n >> shift}{unit}"
    return f"{n}B"


def median(samples) -> float:
    """report.Median: the mean of the middle two for an even count; 0 for none.
    The same float64 operations as Go, so the same bits."""
    s = sorted(samples)
    n = len(s)
    if n == 0:
        return 0.0
    if n % 2 == 1:
        return float(s[n // 2])
    return (s[n // 2 - 1] + s[n // 2]) / 2


def slowest(per_rank) -> float:
    """report.Slowest: the largest of the ranks' medians."""
    worst = 0.0
    for s in per_rank:
        worst = max(worst, median(s))
    return worst


def calls_per_sample(nbytes: int, most: int) -> int:
    return min(most, max(MIN_CALLS, SAMPLE_BYTES // max(nbytes, 1)))


def pipelined_calls(nbytes: int) -> int:
    """bench.PipelinedCalls."""
    return calls_per_sample(nbytes, PIPELINED_CALLS)


def graph_calls(nbytes: int) -> int:
    """bench.GraphCalls."""
    return calls_per_sample(nbytes, GRAPH_CALLS)


def calls_in(mode: str, nbytes: int) -> int:
    """The calls one sample of mode times."""
    if mode == MODE_PIPELINED:
        return pipelined_calls(nbytes)
    if mode == MODE_GRAPH:
        return graph_calls(nbytes)
    return 1


def per_call_us(elapsed_ms: float, calls: int) -> float:
    """One sample in microseconds per call from an event span in ms, with
    detcoll bench's arithmetic: the span as whole nanoseconds (truncated),
    divided by the calls in whole nanoseconds, then in us."""
    ns = int(float(elapsed_ms) * 1e6)
    return (ns // calls) / 1e3


def timing_note() -> str:
    """How the modes were timed (detcoll bench's note, for this tool)."""
    return (
        "GPU timing, on a non-blocking stream of the rank's own (torch.cuda.Stream), by device events "
        "(torch.cuda.Event, cudaEventElapsedTime): synchronised = events around one call, the host waiting for the "
        "end event; pipelined = calls enqueued back to back between two events, span / calls; graph = calls "
        "captured in one CUDA graph (torch.cuda.CUDAGraph) on first use (then one untimed replay), one replay "
        "between two events, span / calls; calls per sample: min(%d pipelined or %d graph, max(%d, %d MiB / input "
        "bytes per rank)), so %d and %d at 256 MiB (the definitions and counts of detcoll bench)"
        % (PIPELINED_CALLS, GRAPH_CALLS, MIN_CALLS, SAMPLE_BYTES >> 20, pipelined_calls(256 << 20), graph_calls(256 << 20))
    )


def choose(candidates: dict, order) -> tuple:
    """The variant of candidates (variant -> per-rank samples) with the
    smallest slowest-rank median, the first of order on a tie; returns
    (variant, samples)."""
    best = None
    for v in order:
        if v not in candidates:
            continue
        if best is None or slowest(candidates[v]) < slowest(candidates[best]):
            best = v
    if best is None:
        raise ValueError("no candidates")
    return best, candidates[best]


def build_report(facts: dict, sizes, modes, variants, measured, failures) -> dict:
    """The report of one run.

    facts: what ran where, the metadata that is not derived here: world_size,
    dtype, device, driver_version, cuda_version, nccl_version, go_version,
    commit, warmup, iterations, seed, date, hostname, options (a dict), notes
    (a list of lines, first in the report's notes).
    sizes, modes, variants: what was asked for, in order.
    measured: {(bytes, mode, variant): per-rank samples in us}, only what was
    measured.
    failures: [(bytes or None, mode or None, variant or None, reason)], what
    was refused (None: every size, mode or variant).

    Rows: per size, per mode (in the order of modes), the faster variant;
    a (size, mode) with no variant measured has no row, and a mode with no
    row at all is left out of timing_modes. Raises NothingMeasured when
    there is no row.
    """
    world, iters = facts["world_size"], facts["iterations"]
    rows, chosen = [], []
    for nbytes in sizes:
        for mode in modes:
            cand = {v: measured[(nbytes, mode, v)] for v in variants if (nbytes, mode, v) in measured}
            if not cand:
                continue
            v, samples = choose(cand, variants)
            times = ", ".join(f"{w} {slowest(cand[w]):g}" for w in variants if w in cand)
            chosen.append(f"{size_label(nbytes)} {mode}: {v} ({times})")
            rows.append({
                "operation": OPERATION,
                "mode": mode,
                "input_bytes_per_rank": nbytes,
                "detcoll_us": 0.0,
                "reference_us": slowest(samples),
                "detcoll_samples_us": [[0.0] * iters for _ in range(world)],
                "reference_samples_us": [list(map(float, s)) for s in samples],
            })
    reasons = [failure_line(f) for f in failures]
    if not rows:
        raise NothingMeasured("; ".join(reasons) or "no size, mode or variant was measured")
    timed = [m for m in modes if any(r["mode"] == m for r in rows)]
    notes = list(facts.get("notes", []))
    notes += [
        timing_note(),
        "detcoll_us and detcoll_samples_us are 0: tools/symm_mem.py times only the reference, PyTorch's symmetric "
        "memory; draw it with detcoll plot --extra beside a detcoll bench report of the same world size, device, "
        "dtype and sizes",
        "symm_mem: torch.ops.symm_mem.one_shot_all_reduce_out (one_shot) and two_shot_all_reduce_out (two_shot) on a "
        "buffer from torch.distributed._symmetric_memory.empty, rendezvoused on the WORLD group, out of place into a "
        "torch.empty output (forms that were refused and replaced are noted below); sum in the element type; each "
        "sample after a barrier (an NCCL all-reduce, max, of one int32 on the timed stream, then a stream "
        "synchronisation); variants: " + ", ".join(variants),
        "each row holds the faster variant of its size and mode by the slowest rank's median; samples alternate "
        "which variant goes first; the chosen variant and every variant's time (us) per row: " + "; ".join(chosen),
    ]
    if len(timed) < len(modes):
        notes.append("timing modes asked for but with no rows: " + ", ".join(m for m in modes if m not in timed))
    notes += ["refused: " + r for r in reasons]
    meta = {
        "world_size": world,
        "dtype": facts["dtype"],
        "backend": "cuda",
        "device": facts["device"],
        "driver_version": facts.get("driver_version", ""),
        "cuda_version": facts.get("cuda_version", ""),
        "nccl_version": facts.get("nccl_version", ""),
        "mpi_version": "",
        "reference": REFERENCE,
        "reference_dtype": "",
        "notes": notes,
        "go_version": facts["go_version"],
        "commit": facts.get("commit") or "unknown",
        "warmup": facts["warmup"],
        "iterations": iters,
        "timing_modes": timed,
        "seed": facts["seed"],
        "date": facts["date"],
        "hostname": facts.get("hostname", ""),
        "options": facts.get("options", {}),
    }
    return {"kind": KIND, "schema_version": SCHEMA_VERSION, "metadata": meta, "rows": rows}


def failure_line(f) -> str:
    nbytes, mode, variant, reason = f
    where = ", ".join(x for x in (
        size_label(nbytes) if nbytes is not None else "every size",
        mode or "every mode",
        variant or "every variant",
    ))
    return f"{where}: {reason}"


_RFC3339_UTC = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$")


def validate(rep: dict) -> None:
    """Raises ValueError for the first thing internal/tools/report's Validate (and
    Read's unknown-field check) would refuse."""

    def fail(msg):
        raise ValueError("report: " + msg)

    def fields(obj, want, what):
        if not isinstance(obj, dict):
            fail(f"{what}: not an object")
        extra = [k for k in obj if k not in want]
        if extra:
            fail(f"{what}: unknown fields {extra}")

    def is_int(x):
        return isinstance(x, int) and not isinstance(x, bool)

    fields(rep, REPORT_FIELDS, "report")
    if rep.get("kind") != KIND:
        fail(f"kind {rep.get('kind')!r}, want {KIND!r}")
    if rep.get("schema_version") != SCHEMA_VERSION:
        fail(f"schema version {rep.get('schema_version')!r}; want {SCHEMA_VERSION}")
    m = rep.get("metadata")
    fields(m, META_FIELDS, "metadata")
    dt = m.get("dtype")
    if not is_int(m.get("world_size")) or m["world_size"] < 1:
        fail(f"metadata: world_size {m.get('world_size')!r}: want >= 1")
    if dt not in DTYPE_SIZES:
        fail(f"metadata: dtype {dt!r}: want bfloat16, float16, float32 or float64")
    if m.get("backend") not in ("cpu", "cuda"):
        fail(f"metadata: backend {m.get('backend')!r}: want cpu or cuda")
    for k in ("device", "go_version", "commit"):
        if not isinstance(m.get(k), str) or m[k] == "":
            fail(f"metadata: {k}: empty")
    for k in ("driver_version", "cuda_version", "nccl_version", "mpi_version", "reference_dtype", "hostname", "date"):
        if not isinstance(m.get(k, ""), str):
            fail(f"metadata: {k}: not a string")
    if m.get("reference") not in REFERENCES:
        fail(f"metadata: reference {m.get('reference')!r}: want one of {REFERENCES}")
    rdt = m.get("reference_dtype", "")
    if m["reference"] == "none" and rdt:
        fail(f"metadata: reference_dtype {rdt!r} without a reference")
    if rdt and rdt not in DTYPE_SIZES:
        fail(f"metadata: reference_dtype {rdt!r}")
    if not is_int(m.get("warmup")) or m["warmup"] < 0:
        fail(f"metadata: warmup {m.get('warmup')!r}: want >= 0")
    if not is_int(m.get("iterations")) or m["iterations"] < 1:
        fail(f"metadata: iterations {m.get('iterations')!r}: want >= 1")
    if not is_int(m.get("seed")) or not 0 <= m["seed"] < 1 << 64:
        fail(f"metadata: seed {m.get('seed')!r}: want a uint64")
    modes = m.get("timing_modes")
    if not isinstance(modes, list) or not modes:
        fail("metadata: timing_modes: none")
    for i, mode in enumerate(modes):
        if mode not in ALL_MODES:
            fail(f"metadata: timing_modes[{i}] {mode!r}: want one of {ALL_MODES}")
        if mode in modes[:i]:
            fail(f"metadata: timing_modes[{i}] {mode!r}: listed twice")
    if not isinstance(m.get("options"), dict):
        fail("metadata: options: want a JSON object")
    if not isinstance(m.get("notes", []), list) or not all(isinstance(n, str) for n in m.get("notes", [])):
        fail("metadata: notes: want a list of strings")
    if not _RFC3339_UTC.match(m.get("date", "")):
        fail(f"metadata: date {m.get('date')!r}: want RFC 3339 in UTC, such as 2026-01-02T15:04:05Z")
    rows = rep.get("rows")
    if not isinstance(rows, list) or not rows:
        fail("no rows")
    seen = set()
    for i, row in enumerate(rows):
        fields(row, ROW_FIELDS, f"rows[{i}]")
        key = (row.get("operation"), row.get("mode"), row.get("input_bytes_per_rank"))
        if key in seen:
            fail(f"rows[{i}]: a second row for {key}")
        seen.add(key)
        if not row.get("operation"):
            fail(f"rows[{i}]: operation: empty")
        if row.get("mode") not in modes:
            fail(f"rows[{i}]: mode {row.get('mode')!r} is not among the timing_modes {modes}")
        b = row.get("input_bytes_per_rank")
        if not is_int(b) or b <= 0 or b % DTYPE_SIZES[dt]:
            fail(f"rows[{i}]: input_bytes_per_rank {b!r}: want a positive multiple of the {dt} size")
        sides = ["detcoll"] + ([] if m["reference"] == "none" else ["reference"])
        if m["reference"] == "none" and (row.get("reference_us", 0) != 0 or row.get("reference_samples_us")):
            fail(f"rows[{i}]: reference times in a report without a reference")
        for side in sides:
            per_rank = row.get(side + "_samples_us")
            if not isinstance(per_rank, list) or len(per_rank) != m["world_size"]:
                fail(f"rows[{i}]: {side}_samples_us: want world_size {m['world_size']} ranks")
            for r, s in enumerate(per_rank):
                if not isinstance(s, list) or len(s) != m["iterations"]:
                    fail(f"rows[{i}]: {side}_samples_us[{r}]: want iterations {m['iterations']} samples")
                for j, v in enumerate(s):
                    if isinstance(v, bool) or not isinstance(v, (int, float)) or not (0 <= v < float("inf")):
                        fail(f"rows[{i}]: {side}_samples_us[{r}][{j}] {v!r}: want a finite time >= 0")
            if row.get(side + "_us") != slowest(per_rank):
                fail(f"rows[{i}]: {side}_us {row.get(side + '_us')!r}: the samples give {slowest(per_rank)!r}")


def dumps(rep: dict) -> str:
    """The report as detcoll writes it: indented by two spaces, a final newline."""
    return json.dumps(rep, indent=2, allow_nan=False) + "\n"


def write_report(path: str, rep: dict) -> None:
    """Validates rep and writes it to path, creating its directory; the file
    appears whole or not at all (written beside path and renamed)."""
    validate(rep)
    data = dumps(rep)
    d = os.path.dirname(os.path.abspath(path))
    os.makedirs(d, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=d, prefix="." + os.path.basename(path) + ".")
    try:
        with os.fdopen(fd, "w") as f:
            f.write(data)
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def utc_now() -> str:
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def parse_driver_version(text: str) -> str:
    """The version in /proc/driver/nvidia/version's first line, as bench's
    parseDriverVersion; "" when none."""
    m = re.search(r"\s(\d+\.\d+(?:\.\d+)*)\s", text + " ")
    return m.group(1) if m else ""


def commit() -> str:
    """detcoll's commit, as bench.Commit: DETCOLL_COMMIT, else git describe of
    this file's repository, else "unknown"."""
    c = os.environ.get("DETCOLL_COMMIT", "")
    if c:
        return c
    try:
        out = subprocess.run(
            ["git", "describe", "--always", "--dirty", "--abbrev=12"],
            cwd=os.path.dirname(os.path.abspath(__file__)), capture_output=True, text=True, timeout=5,
        )
        if out.returncode == 0 and out.stdout.strip():
            return out.stdout.strip()
    except (OSError, subprocess.SubprocessError):
        pass
    return "unknown"


def env_notes(env) -> list:
    """The NCCL_*, TORCH_SYMM_MEM* and DETCOLL_* variables of env (never the
    secret), sorted."""
    keep = sorted(
        f"{k}={v}" for k, v in env.items()
        if (k.startswith("NCCL_") or k.startswith("TORCH_SYMM_MEM") or k.startswith("DETCOLL_")) and k != "DETCOLL_SECRET"
    )
    return keep


# ---------------------------------------------------------------------------
# Arguments.


def parse_args(argv):
    p = argparse.ArgumentParser(
        prog="tools/symm_mem.py",
        description="Times PyTorch symmetric-memory all-reduce (one-shot and two-shot) in detcoll bench's three GPU "
        "modes and writes a detcoll bench report with reference symm_mem (for detcoll plot --extra).",
    )
    p.add_argument("-n", type=int, default=0,
                   help="local ranks to start when no launcher (torchrun, detcoll run) started this process "
                   "(default: the number of visible GPUs)")
    p.add_argument("--output", default="", help="write the JSON report here (parent directories are created)")
    p.add_argument("--sizes", "--size-bytes", dest="sizes", default=DEFAULT_SIZES,
                   help="input bytes per rank, a list (units KiB, MiB, GiB); default: detcoll bench's on cuda, " + DEFAULT_SIZES)
    p.add_argument("--dtype", default="bfloat16", choices=SYMM_DTYPES,
                   help="element type (the symm_mem kernels reduce bfloat16 and float32)")
    p.add_argument("--warmup", type=int, default=DEFAULT_WARMUP, help="untimed samples per size, mode and variant")
    p.add_argument("--iterations", type=int, default=DEFAULT_ITERATIONS, help="timed samples per size, mode and variant")
    p.add_argument("--modes", default=",".join(GPU_MODES), help="timing modes, a list of " + ", ".join(GPU_MODES))
    p.add_argument("--variants", default=",".join(VARIANTS),
                   help="symm_mem all-reduces to time, a list of one_shot, two_shot; each row holds the faster")
    p.add_argument("--seed", type=int, default=1, help="seed of the random inputs")
    p.add_argument("--timeout", type=float, default=300.0,
                   help="seconds without progress after which a rank gives up (exit 3), e.g. a peer that refused a call")
    a = p.parse_args(argv)
    try:
        a.size_list = parse_sizes(a.sizes)
    except ValueError as e:
        p.error(f"--sizes: {e}")
    esize = DTYPE_SIZES[a.dtype]
    for i, s in enumerate(a.size_list):
        if s % esize:
            p.error(f"--sizes: {s} bytes: want a multiple of the {a.dtype} size, {esize}")
        if s in a.size_list[:i]:
            p.error(f"--sizes: {s} bytes listed twice")
    a.mode_list = [m.strip() for m in a.modes.split(",")]
    a.variant_list = [v.strip() for v in a.variants.split(",")]
    for flag, got, allowed in (("--modes", a.mode_list, GPU_MODES), ("--variants", a.variant_list, VARIANTS)):
        for i, x in enumerate(got):
            if x not in allowed:
                p.error(f"{flag}: {x!r}: want one of {', '.join(allowed)}")
            if x in got[:i]:
                p.error(f"{flag}: {x!r} listed twice")
    if a.warmup < 0:
        p.error("--warmup: want >= 0")
    if a.iterations < 1:
        p.error("--iterations: want > 0")
    if a.n < 0:
        p.error("-n: want >= 1")
    if not 0 <= a.seed < 1 << 64:
        p.error("--seed: want a uint64")
    return a


# ---------------------------------------------------------------------------
# The ranks (torch from here on).


def say(msg: str) -> None:
    print("symm_mem: " + msg, file=sys.stderr, flush=True)


def short(e: BaseException) -> str:
    """An exception in one line, its first line and at most 300 characters."""
    text = str(e).strip().splitlines()
    line = f"{type(e).__name__}: {text[0] if text else ''}"
    return line if len(line) <= 300 else line[:297] + "..."


class Watchdog:
    """Ends the process (exit 3) when no progress is made for timeout
    seconds: a peer that refused a call leaves the others waiting in a
    kernel, and a hung batch on the device machine costs its whole budget."""

    def __init__(self, rank: int, timeout: float):
        self.rank, self.timeout = rank, timeout
        self.where, self.last = "start", time.monotonic()
        threading.Thread(target=self._run, daemon=True).start()

    def tick(self, where: str = "") -> None:
        if where:
            self.where = where
        self.last = time.monotonic()

    def _run(self):
        while True:
            time.sleep(min(5.0, self.timeout / 4))
            if time.monotonic() - self.last > self.timeout:
                say(f"rank {self.rank}: no progress for {self.timeout:g} s at {self.where}; giving up")
                os._exit(3)


def gpu_facts(torch, device: int) -> dict:
    facts = {"device": torch.cuda.get_device_name(device), "driver_version": "", "cuda_version": "", "nccl_version": ""}
    try:
        with open("/proc/driver/nvidia/version") as f:
            facts["driver_version"] = parse_driver_version(f.read())
    except OSError:
        pass
    try:  # the CUDA version the driver supports, as detcoll (cuDriverGetVersion)
        import ctypes

        v = ctypes.c_int()
        if ctypes.CDLL("libcuda.so.1").cuDriverGetVersion(ctypes.byref(v)) == 0:
            facts["cuda_version"] = f"{v.value // 1000}.{v.value % 1000 // 10}"
    except (OSError, AttributeError):
        pass
    try:
        v = torch.cuda.nccl.version()
        facts["nccl_version"] = ".".join(map(str, v)) if isinstance(v, tuple) else str(v)
    except Exception:  # noqa: BLE001 (a torch without NCCL: leave it empty)
        pass
    return facts


def worker(rank: int, world: int, local: int, args, run_facts: dict) -> int:
    """One rank's whole run; returns the exit status."""
    import torch
    import torch.distributed as dist

    torch.cuda.set_device(local)
    dev = torch.device("cuda", local)
    dist.init_process_group("nccl", rank=rank, world_size=world, device_id=dev)
    try:
        return measure(torch, dist, rank, world, dev, args, run_facts)
    finally:
        dist.destroy_process_group()


def measure(torch, dist, rank, world, dev, args, run_facts) -> int:
    import torch.distributed._symmetric_memory as symm

    dtype = {"bfloat16": torch.bfloat16, "float32": torch.float32}[args.dtype]
    esize = DTYPE_SIZES[args.dtype]
    gloo = dist.new_group(backend="gloo")  # host-side agreement: never waits on the GPU
    group_name = dist.group.WORLD.group_name
    lead = rank == 0
    notes = []

    def agree(local_err):
        """Every rank's error (None: fine) for one attempt, so that all
        ranks take the same decision; returns the first error, named by rank."""
        errs = [None] * world
        dist.all_gather_object(errs, local_err, group=gloo)
        for r, e in enumerate(errs):
            if e is not None:
                return f"rank {r}: {e}" if world > 1 else e
        return None

    try:  # needed before torch 2.8 or so; deprecated (a FutureWarning) since
        enable = getattr(symm, "enable_symm_mem_for_group", None)
        if enable is not None:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", FutureWarning)
                enable(group_name)
    except Exception as e:  # noqa: BLE001 (refused by this torch)
        notes.append(f"enable_symm_mem_for_group: {short(e)}")
    backend = ""
    try:
        get_backend = getattr(symm, "get_backend", None)
        if get_backend is not None:
            backend = str(get_backend(dev))
    except Exception:  # noqa: BLE001
        pass

    ops = torch.ops.symm_mem
    stream = torch.cuda.Stream(device=dev)
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    word = torch.zeros(1, dtype=torch.int32, device=dev)
    dog = Watchdog(rank, args.timeout)

    def barrier():
        dist.all_reduce(word, op=dist.ReduceOp.MAX)
        stream.synchronize()

    measured, failures = {}, []
    forms_used = {}  # variant -> set of form names
    total = len(args.size_list)
    with torch.cuda.stream(stream):
        for row, nbytes in enumerate(args.size_list):
            n = nbytes // esize
            label = size_label(nbytes)
            if lead:
                say(f"[{row + 1}/{total}] {OPERATION}, {label} per rank")
            dog.tick(f"{label}: allocate")
            # Buffers: the symmetric input, random and non-zero; an output
            # poisoned with 0x5A bytes.
            err = None
            try:
                t = symm.empty(n, device=dev, dtype=dtype)
                symm.rendezvous(t, group_name)
                g = torch.Generator(device=dev)
                g.manual_seed((args.seed * 1000003 + rank * 1009 + row) % (1 << 63))
                t.copy_(torch.randn(n, generator=g, device=dev, dtype=torch.float32).to(dtype))
                out = torch.empty(n, device=dev, dtype=dtype)
                out.view(torch.uint8).fill_(0x5A)
                stream.synchronize()
            except Exception as e:  # noqa: BLE001
                err = short(e)
            err = agree(err)
            if err is not None:
                say(f"{label}: symmetric buffer refused: {err}")
                failures.append((nbytes, None, None, "symmetric buffer refused: " + err))
                continue

            # The calls; two_shot's out-of-place form is refused at world
            # sizes other than 2, 4 and 8 (then it runs in place), and the
            # one-shot form without _out allocates its output per call.
            forms = {
                "one_shot": [
                    ("one_shot_all_reduce_out", lambda: ops.one_shot_all_reduce_out(t, "sum", group_name, out)),
                    ("one_shot_all_reduce", lambda: ops.one_shot_all_reduce(t, "sum", group_name)),
                ],
                "two_shot": [
                    ("two_shot_all_reduce_out", lambda: ops.two_shot_all_reduce_out(t, "sum", group_name, out)),
                    ("two_shot_all_reduce_ (in place)", lambda: ops.two_shot_all_reduce_(t, "sum", group_name)),
                ],
            }
            call, graphs = {}, {}
            # Resolve each variant's form with one untimed call.
            for v in args.variant_list:
                dog.tick(f"{label}: first {v} call")
                refusals, chosen = [], None
                for name, fn in forms[v]:
                    try:
                        fn()
                        chosen = (name, fn)
                        break
                    except Exception as e:  # noqa: BLE001
                        refusals.append(f"{name}: {short(e)}")
                err = agree(None if chosen else "; ".join(refusals))
                names = [None] * world
                dist.all_gather_object(names, chosen[0] if chosen else None, group=gloo)
                if err is None and len(set(names)) != 1:
                    err = "the ranks chose different forms: " + ", ".join(map(str, names))
                if err is not None:
                    say(f"{label} {v}: refused: {err}")
                    failures.append((nbytes, None, v, err))
                    continue
                stream.synchronize()
                if refusals and rank == 0:
                    msg = f"{v}: {'; '.join(refusals)}; ran {chosen[0]} instead"
                    if msg not in notes:
                        notes.append(msg)
                        say(msg)
                forms_used.setdefault(v, set()).add(chosen[0])
                call[v] = chosen[1]

            for mode in args.mode_list:
                live = [v for v in args.variant_list if v in call]
                calls = calls_in(mode, nbytes)
                if mode == MODE_GRAPH:
                    for v in list(live):
                        dog.tick(f"{label} {mode} {v}: capture")
                        err = None
                        try:
                            graph = torch.cuda.CUDAGraph()
                            # thread_local: other threads (NCCL's watchdog) may
                            # query events meanwhile.
                            with torch.cuda.graph(graph, stream=stream, capture_error_mode="thread_local"):
                                for _ in range(calls):
                                    call[v]()
                            graphs[v] = graph
                        except Exception as e:  # noqa: BLE001
                            err = short(e)
                        err = agree(err)
                        if err is not None:
                            say(f"{label} {mode} {v}: capture refused: {err}")
                            failures.append((nbytes, mode, v, "graph capture refused: " + err))
                            live.remove(v)
                            graphs.pop(v, None)
                            continue
                        graphs[v].replay()  # untimed, so that no timed replay pays for the upload
                        stream.synchronize()
                if not live:
                    continue
                samples = {v: [] for v in live}
                for i in range(args.warmup + args.iterations):
                    for k in range(len(live)):
                        v = live[(i + k) % len(live)]
                        dog.tick(f"{label} {mode} {v}: sample {i}")
                        barrier()
                        start.record(stream)
                        if mode == MODE_SYNCHRONISED:
                            call[v]()
                        elif mode == MODE_PIPELINED:
                            for _ in range(calls):
                                call[v]()
                        else:
                            graphs[v].replay()
                        end.record(stream)
                        end.synchronize()
                        if i >= args.warmup:
                            samples[v].append(per_call_us(start.elapsed_time(end), calls))
                dog.tick(f"{label} {mode}: gather")
                for v in live:
                    per_rank = [None] * world
                    dist.all_gather_object(per_rank, samples[v], group=gloo)
                    measured[(nbytes, mode, v)] = per_rank
                if lead:
                    times = "  ".join(f"{v} {slowest(measured[(nbytes, mode, v)]):10.2f} us" for v in live)
                    print(f"{OPERATION:10s} {label:>7s} {mode:12s} {times}", flush=True)
            del t, out, call, graphs
            graph = None
            stream.synchronize()
            torch.cuda.empty_cache()
        dog.tick("end")
        barrier()

    facts = dict(run_facts)
    facts.update(gpu_facts(torch, dev.index))
    facts["world_size"] = world
    facts["notes"] = run_facts["notes"] + notes + [
        f"PyTorch {torch.__version__} (CUDA runtime {torch.version.cuda}), torch.distributed._symmetric_memory"
        + (f" backend {backend}" if backend else "")
        + "; the process group is NCCL (nccl_version is PyTorch's NCCL, used for the barrier only); "
        "host-side agreement and the gather of samples over a gloo group; inputs: torch.randn in float32 cast to "
        + args.dtype + ", per rank and size from the seed (not the bytes detcoll bench uses)",
    ]
    facts["options"] = dict(run_facts["options"], torch=torch.__version__, symm_mem_backend=backend,
                            forms={v: sorted(f) for v, f in sorted(forms_used.items())})
    try:
        rep = build_report(facts, args.size_list, args.mode_list, args.variant_list, measured, failures)
    except NothingMeasured as e:
        if lead:
            say(f"nothing was measured, so no report: {e}")
        return 1
    if lead:
        for line in rep["metadata"]["notes"]:
            if line.startswith("refused: ") or line.startswith("timing modes asked for"):
                say(line)
        if args.output:
            write_report(args.output, rep)
            say(f"wrote {args.output}")
    return 0


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def spawned(index: int, world: int, args, run_facts: dict, port: int) -> None:
    os.environ.update(RANK=str(index), WORLD_SIZE=str(world), LOCAL_RANK=str(index), LOCAL_WORLD_SIZE=str(world),
                      MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    code = worker(index, world, index, args, run_facts)
    if code:
        sys.exit(code)


def main(argv=None) -> int:
    args = parse_args(sys.argv[1:] if argv is None else argv)
    # NVLink multicast stays off (the device machine's policy), before torch
    # reads either variable.
    os.environ["TORCH_SYMM_MEM_DISABLE_MULTICAST"] = "1"
    os.environ["NCCL_NVLS_ENABLE"] = "0"
    import platform

    import torch

    run_facts = {
        "dtype": args.dtype,
        "go_version": f"none (tools/symm_mem.py, Python {platform.python_version()})",
        "commit": commit(),
        "warmup": args.warmup,
        "iterations": args.iterations,
        "seed": args.seed,
        "date": utc_now(),
        "hostname": socket.gethostname(),
        "options": {"tool": "tools/symm_mem.py", "variants": args.variant_list, "group": "WORLD",
                    "multicast": "off (TORCH_SYMM_MEM_DISABLE_MULTICAST=1)"},
        "notes": [],
    }
    env = env_notes(os.environ)
    if env:
        run_facts["notes"].append("environment: " + " ".join(env))

    if "RANK" in os.environ and "WORLD_SIZE" in os.environ:
        rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
        local = int(os.environ.get("LOCAL_RANK", rank))
        return worker(rank, world, local, args, run_facts)

    n = args.n or torch.cuda.device_count()
    if n < 1:
        say("no GPU visible and -n not given")
        return 1
    if n > torch.cuda.device_count():
        say(f"-n {n}: only {torch.cuda.device_count()} GPUs visible (one per rank)")
        return 1
    import torch.multiprocessing as mp

    try:
        mp.spawn(spawned, args=(n, args, run_facts, free_port()), nprocs=n, join=True)
    except mp.ProcessExitedException as e:
        say(f"a rank failed: {e}")
        return e.exit_code if e.exit_code and e.exit_code > 0 else 1
    except mp.ProcessRaisedException as e:
        say(f"a rank failed:\n{e}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
