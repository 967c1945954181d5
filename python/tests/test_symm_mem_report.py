"""tools/symm_mem.py's pure parts: the report it writes, from fake timings.

No torch, no GPU: the script imports torch only in its ranks. The report's
shape is checked against internal/tools/report/report.go's json tags and the
constants detcoll bench uses; when Go is on PATH, detcoll plot itself reads
the report as an --extra reference (it validates it as internal/tools/report does).
"""

import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import unittest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
SCRIPT = os.path.join(ROOT, "tools", "symm_mem.py")


def load():
    had_torch = "torch" in sys.modules
    spec = importlib.util.spec_from_file_location("symm_mem_tool", SCRIPT)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    if not had_torch and "torch" in sys.modules:
        raise AssertionError("importing tools/symm_mem.py imported torch")
    return mod


sm = load()


def read(*parts):
    with open(os.path.join(ROOT, *parts)) as f:
        return f.read()


def go_struct_tags(src, name, optional=False):
    """The json tags of Go struct name in src, in order: the ones always
    written, or (optional) the ones left out when empty (omitempty)."""
    m = re.search(r"type %s struct \{(.*?)\n\}" % name, src, re.S)
    if not m:
        raise AssertionError(f"no struct {name}")
    tags = re.findall(r'json:"([a-z0-9_]+)(,omitempty)?"', m.group(1))
    return [t for t, omit in tags if bool(omit) == optional]


W, ITERS = 2, 5
SIZES = [1 << 10, 64 << 10, 1 << 20]
MODES = ["synchronised", "pipelined", "graph"]


def fake_samples(base, rank_skew=0.5):
    """W ranks' samples around base; rank r's median is base + r * skew."""
    return [[base + r * rank_skew + d for d in (0.3, -0.2, 0.0, 0.1, -0.1)] for r in range(W)]


def fake_facts():
    return {
        "world_size": W,
        "dtype": "bfloat16",
        "device": "NVIDIA H200",
        "driver_version": "580.159.04",
        "cuda_version": "13.0",
        "nccl_version": "2.28.9",
        "go_version": "none (tools/symm_mem.py, Python 3.11.7)",
        "commit": "unknown",
        "warmup": 2,
        "iterations": ITERS,
        "seed": 1,
        "date": "2026-12-01T10:00:00Z",
        "hostname": "gpu-host",
        "options": {"tool": "tools/symm_mem.py"},
        "notes": ["environment: NCCL_NVLS_ENABLE=0"],
    }


def fake_measured(skip=()):
    """one_shot faster below 1 MiB, two_shot from 1 MiB; (bytes, mode, variant) in skip not measured."""
    out = {}
    for b in SIZES:
        for i, mode in enumerate(MODES):
            one = 10.0 + i if b < (1 << 20) else 30.0 + i
            two = 20.0 + i
            for v, t in (("one_shot", one), ("two_shot", two)):
                if (b, mode, v) not in skip:
                    out[(b, mode, v)] = fake_samples(t)
    return out


class PureTest(unittest.TestCase):
    def test_sizes(self):
        self.assertEqual(sm.parse_sizes("1KiB, 4096,2M,1GiB,3B"), [1024, 4096, 2 << 20, 1 << 30, 3])
        for bad in ("", "0", "-1KiB", "1.5MiB", "KiB", "1TiB"):
            with self.assertRaises(ValueError, msg=bad):
                sm.parse_size(bad)
        self.assertEqual([sm.size_label(n) for n in (1000, 1024, 3 << 20, 1 << 30)], ["1000B", "1KiB", "3MiB", "1GiB"])

    def test_defaults_are_detcoll_bench_defaults(self):
        bench = read("cmd", "detcoll", "bench.go")
        self.assertIn('defaultCUDABenchSizes = "%s"' % sm.DEFAULT_SIZES, bench)
        self.assertIn('"warmup", %d,' % sm.DEFAULT_WARMUP, bench)
        self.assertIn('"iterations", %d,' % sm.DEFAULT_ITERATIONS, bench)
        side = read("internal", "tools", "bench", "cudaside.go")
        for name, v in (("pipelinedCalls", sm.PIPELINED_CALLS), ("graphCalls", sm.GRAPH_CALLS),
                        ("sampleBytes", sm.SAMPLE_BYTES), ("minCalls", sm.MIN_CALLS)):
            m = re.search(r"\b%s\s*=\s*([0-9<]+(?:\s*<<\s*\d+)?)" % name, side)
            self.assertIsNotNone(m, name)
            self.assertEqual(eval(m.group(1)), v, name)  # a Go integer constant: digits and <<
        # bench's own note: 4 and 4 at 256 MiB.
        self.assertEqual((sm.pipelined_calls(256 << 20), sm.graph_calls(256 << 20)), (4, 4))
        self.assertEqual((sm.pipelined_calls(1 << 10), sm.graph_calls(16 << 20)), (100, 50))
        self.assertEqual(sm.pipelined_calls(16 << 20), 64)

    def test_statistics(self):
        self.assertEqual(sm.median([3.0, 1.0, 2.0]), 2.0)
        self.assertEqual(sm.median([4.0, 1.0, 2.0, 3.0]), 2.5)
        self.assertEqual(sm.median([]), 0.0)
        self.assertEqual(sm.slowest([[1.0, 2.0, 3.0], [5.0, 4.0, 9.0]]), 5.0)

    def test_per_call(self):
        # Go: time.Duration(ms * 1e6) (truncated), / calls (integer), in us.
        self.assertEqual(sm.per_call_us(0.0123456, 1), 12.345)
        self.assertEqual(sm.per_call_us(1.0, 3), 333.333)
        self.assertEqual(sm.per_call_us(0.5, 100), 5.0)

    def test_report_matches_report_go(self):
        src = read("internal", "tools", "report", "report.go")
        self.assertEqual(go_struct_tags(src, "Report"), sm.REPORT_FIELDS)
        self.assertEqual(go_struct_tags(src, "Meta"), sm.META_FIELDS)
        self.assertEqual(go_struct_tags(src, "Row"), sm.ROW_FIELDS)
        self.assertEqual(go_struct_tags(src, "Row", optional=True), sm.OPTIONAL_ROW_FIELDS)
        self.assertIn('Kind          = "%s"' % sm.KIND, src)
        self.assertIn("SchemaVersion = %d" % sm.SCHEMA_VERSION, src)
        self.assertIn('ReferenceSymmMem = "%s"' % sm.REFERENCE, src)
        for mode in sm.ALL_MODES:
            self.assertIn('= "%s"' % mode, src)

        rep = sm.build_report(fake_facts(), SIZES, MODES, sm.VARIANTS, fake_measured(), [])
        sm.validate(rep)
        back = json.loads(sm.dumps(rep))  # JSON all the way (no NaN, no tuples)
        self.assertEqual(back, rep)
        self.assertEqual(list(back), sm.REPORT_FIELDS)
        self.assertEqual(list(back["metadata"]), sm.META_FIELDS)
        m = back["metadata"]
        self.assertEqual((m["reference"], m["backend"], m["reference_dtype"], m["mpi_version"]), ("symm_mem", "cuda", "", ""))
        self.assertEqual(m["timing_modes"], MODES)
        self.assertEqual(m["notes"][0], "environment: NCCL_NVLS_ENABLE=0")
        self.assertTrue(any("synchronised = events around one call" in n for n in m["notes"]))
        self.assertIsInstance(m["options"], dict)

        rows = back["rows"]
        self.assertEqual(len(rows), len(SIZES) * len(MODES))
        self.assertEqual([(r["input_bytes_per_rank"], r["mode"]) for r in rows], [(b, mo) for b in SIZES for mo in MODES])
        measured = fake_measured()
        chosen = [n for n in m["notes"] if n.startswith("each row holds the faster variant")][0]
        for r in rows:
            self.assertEqual(list(r), sm.ROW_FIELDS)
            self.assertEqual(r["operation"], "all_reduce")
            b, mode = r["input_bytes_per_rank"], r["mode"]
            want = "one_shot" if b < (1 << 20) else "two_shot"
            self.assertEqual(r["reference_samples_us"], measured[(b, mode, want)])
            # The slowest rank's median: rank 1's, 0.5 above rank 0's.
            self.assertEqual(r["reference_us"], sm.median(measured[(b, mode, want)][1]))
            self.assertEqual(r["detcoll_us"], 0)
            self.assertEqual(r["detcoll_samples_us"], [[0.0] * ITERS] * W)
            self.assertIn(f"{sm.size_label(b)} {mode}: {want} (one_shot ", chosen)

    def test_refusals(self):
        # two_shot refused everywhere, graph refused for one_shot at 1 MiB:
        # rows from one_shot only, no graph row at 1 MiB, and the notes say why.
        skip = {(b, mo, "two_shot") for b in SIZES for mo in MODES} | {(1 << 20, "graph", "one_shot")}
        fails = [(None, None, "two_shot", "two_shot_all_reduce_out: Not implemented for world_size=1"),
                 (1 << 20, "graph", "one_shot", "graph capture refused: x")]
        rep = sm.build_report(fake_facts(), SIZES, MODES, sm.VARIANTS, fake_measured(skip), fails)
        sm.validate(rep)
        self.assertEqual(len(rep["rows"]), len(SIZES) * len(MODES) - 1)
        notes = rep["metadata"]["notes"]
        self.assertIn("refused: every size, every mode, two_shot: two_shot_all_reduce_out: Not implemented for world_size=1", notes)
        self.assertIn("refused: 1MiB, graph, one_shot: graph capture refused: x", notes)

        # No graph row at all: graph leaves timing_modes, and a note says so.
        skip = {(b, "graph", v) for b in SIZES for v in sm.VARIANTS}
        rep = sm.build_report(fake_facts(), SIZES, MODES, sm.VARIANTS, fake_measured(skip), [(None, "graph", None, "no")])
        sm.validate(rep)
        self.assertEqual(rep["metadata"]["timing_modes"], ["synchronised", "pipelined"])
        self.assertIn("timing modes asked for but with no rows: graph", rep["metadata"]["notes"])

        with self.assertRaisesRegex(sm.NothingMeasured, "world_size=1"):
            sm.build_report(fake_facts(), SIZES, MODES, sm.VARIANTS, {}, fails[:1])

    def test_validate_refuses(self):
        good = sm.build_report(fake_facts(), SIZES, MODES, sm.VARIANTS, fake_measured(), [])
        for what, edit, msg in [
            ("unknown field", lambda r: r["rows"][0].update(note="x"), "unknown fields"),
            ("median", lambda r: r["rows"][0].update(reference_us=r["rows"][0]["reference_us"] + 1e-9), "the samples give"),
            ("iterations", lambda r: r["rows"][1]["reference_samples_us"][0].pop(), "samples"),
            ("date", lambda r: r["metadata"].update(date="2026-12-01T10:00:00+01:00"), "date"),
            ("mode", lambda r: r["metadata"].update(timing_modes=["graph"]), "not among the timing_modes"),
            ("size", lambda r: r["rows"][0].update(input_bytes_per_rank=1023), "multiple"),
            ("go", lambda r: r["metadata"].update(go_version=""), "go_version"),
        ]:
            rep = json.loads(json.dumps(good))
            edit(rep)
            with self.assertRaisesRegex(ValueError, msg, msg=what):
                sm.validate(rep)

    def test_write(self):
        rep = sm.build_report(fake_facts(), SIZES, MODES, sm.VARIANTS, fake_measured(), [])
        with tempfile.TemporaryDirectory() as d:
            p = os.path.join(d, "sub", "symm.json")
            sm.write_report(p, rep)
            with open(p) as f:
                text = f.read()
            self.assertTrue(text.endswith("}\n"))
            self.assertEqual(json.loads(text), rep)
            self.assertEqual(os.listdir(os.path.dirname(p)), ["symm.json"])

    def test_args(self):
        a = sm.parse_args(["--output", "x.json", "--sizes", "1KiB,2KiB", "--modes", "graph", "--variants", "one_shot"])
        self.assertEqual((a.size_list, a.mode_list, a.variant_list, a.dtype), ([1024, 2048], ["graph"], ["one_shot"], "bfloat16"))
        a = sm.parse_args([])
        self.assertEqual((a.size_list, a.mode_list, a.warmup, a.iterations), (sm.parse_sizes(sm.DEFAULT_SIZES), MODES, 20, 100))
        for bad in (["--sizes", "3B"], ["--modes", "wall_clock"], ["--variants", "one_shot,one_shot"], ["--iterations", "0"]):
            with self.assertRaises(SystemExit, msg=bad):
                with open(os.devnull, "w") as null:
                    old, sys.stderr = sys.stderr, null
                    try:
                        sm.parse_args(bad)
                    finally:
                        sys.stderr = old

    def test_driver_version(self):
        line = "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.159.03  Release Build  (dvs-builder@U16-I3-B03-4-3)\n"
        self.assertEqual(sm.parse_driver_version(line), "580.159.03")
        self.assertEqual(sm.parse_driver_version("nothing"), "")


@unittest.skipIf(shutil.which("go") is None, "go is not on PATH: detcoll plot not run")
class PlotTest(unittest.TestCase):
    """detcoll plot reads the report (internal/tools/report's Read and Validate)
    and draws it as an --extra reference beside a detcoll report."""

    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.mkdtemp()
        cls.bin = os.path.join(cls.dir, "detcoll")
        subprocess.run(["go", "build", "-buildvcs=false", "-o", cls.bin, "./cmd/detcoll"], cwd=ROOT, check=True)
        symm = sm.build_report(fake_facts(), SIZES, MODES, sm.VARIANTS, fake_measured(), [])
        cls.symm = os.path.join(cls.dir, "symm.json")
        sm.write_report(cls.symm, symm)
        # A detcoll bench report of the same machine and sizes, no reference.
        after = json.loads(json.dumps(symm))
        after["metadata"].update(reference="none", go_version="go1.26.8", notes=[])
        for r in after["rows"]:
            r["detcoll_samples_us"] = fake_samples(8.0)
            r["detcoll_us"] = sm.slowest(r["detcoll_samples_us"])
            r["reference_us"], r["reference_samples_us"] = 0, []
        cls.after = os.path.join(cls.dir, "after.json")
        with open(cls.after, "w") as f:
            f.write(sm.dumps(after))
        # plot refuses one file as both before and after: a copy of each.
        cls.before = os.path.join(cls.dir, "before.json")
        shutil.copy(cls.after, cls.before)
        cls.symm2 = os.path.join(cls.dir, "symm-copy.json")
        shutil.copy(cls.symm, cls.symm2)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.dir)

    def plot(self, *args):
        return subprocess.run([self.bin, "plot", *args], capture_output=True, text=True)

    def test_extra(self):
        for mode in MODES:
            fig = os.path.join(self.dir, f"fig-{mode}.png")
            p = self.plot("--before", self.before, "--after", self.after, "--extra", self.symm, "--mode", mode, "--output", fig)
            self.assertEqual(p.returncode, 0, p.stderr)
            self.assertTrue(os.path.getsize(fig) > 0)

    def test_not_a_detcoll_run(self):
        # Its detcoll times are 0: plot refuses it as the after run.
        fig = os.path.join(self.dir, "bad.png")
        p = self.plot("--before", self.symm2, "--after", self.symm, "--mode", "graph", "--output", fig)
        self.assertNotEqual(p.returncode, 0)
        self.assertIn("a time of 0", p.stderr)


if __name__ == "__main__":
    unittest.main()
