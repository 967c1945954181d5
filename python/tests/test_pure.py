"""The parts of the detcoll package that need neither torch nor a GPU."""

import os
import struct
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from detcoll import _lib  # noqa: E402
from detcoll.tree import extremum, int_reduce, order_key, shape, split, tree, wrap  # noqa: E402

try:
    import torch  # noqa: F401 - only to know whether the reference's tests can run
    HAVE_TORCH = True
except ImportError:
    HAVE_TORCH = False


class TreeTest(unittest.TestCase):
    def test_shapes(self):
        # The contract's examples (section 3).
        for world, want in [
            (1, "r0"),
            (2, "(r0+r1)"),
            (3, "((r0+r1)+r2)"),
            (4, "((r0+r1)+(r2+r3))"),
            (6, "(((r0+r1)+(r2+r3))+(r4+r5))"),
            (8, "(((r0+r1)+(r2+r3))+((r4+r5)+(r6+r7)))"),
        ]:
            self.assertEqual(shape(world), want, f"W={world}")

    def test_split(self):
        self.assertEqual([split(n) for n in range(2, 10)], [1, 2, 2, 4, 4, 4, 4, 8])

    def test_max_min(self):
        neg0, pos0, one, two, inf = 0x8000, 0x0000, 0x3F80, 0x4000, 0x7F80  # bfloat16 bits
        nan = 0x7FC1  # a NaN with a payload
        for a, b, mx, mn in [(neg0, pos0, pos0, neg0), (pos0, neg0, pos0, neg0), (one, two, two, one),
                             (0xBF80, one, one, 0xBF80), (inf, two, inf, two), (nan, one, 0x7FFF, 0x7FFF),
                             (one, nan, 0x7FFF, 0x7FFF)]:
            self.assertEqual(extremum(a, b, "bfloat16", True), mx, (hex(a), hex(b)))
            self.assertEqual(extremum(a, b, "bfloat16", False), mn, (hex(a), hex(b)))
        # The key orders every non-NaN bfloat16 as its value.
        values = [v for v in range(1 << 16) if (v & 0x7FFF) <= 0x7F80]
        as_float = lambda v: struct.unpack("<f", struct.pack("<I", v << 16))[0]
        by_key = sorted(values, key=lambda v: order_key(v, "bfloat16"))
        self.assertEqual([as_float(v) for v in by_key], sorted(as_float(v) for v in by_key))
        self.assertLess(order_key(0x8000, "bfloat16"), order_key(0, "bfloat16"))
        # Order-free: any tree over the same leaves gives the same bits.
        leaves = [0x3F80, 0x8000, 0x0000, 0xC000, 0x4040]
        self.assertEqual(tree(leaves, lambda a, b: extremum(a, b, "bfloat16", True)), 0x4040)
        self.assertEqual(tree(leaves[::-1], lambda a, b: extremum(a, b, "bfloat16", False)), 0xC000)


class IntegerTest(unittest.TestCase):
    def test_wrap(self):
        self.assertEqual(wrap(128, "int8"), -128)
        self.assertEqual(wrap(-1, "uint8"), 255)
        self.assertEqual(wrap(1 << 32, "uint32"), 0)
        self.assertEqual(wrap((1 << 63) + 5, "int64"), -(1 << 63) + 5)
        self.assertEqual(wrap(-1, "uint64"), (1 << 64) - 1)

    def test_reduce(self):
        for values, op, dtype, want in [
            ([100, 100], "sum", "int8", -56),            # wraps
            ([200, 100], "sum", "uint8", 44),
            ([-7, 2], "avg", "int32", -2),               # -5 / 2, truncated toward zero
            ([7, -2, 0], "avg", "int32", 1),             # 5 / 3
            ([127, 127, 2], "avg", "int8", 0),           # the wrapped sum (0), divided
            ([(1 << 64) - 1, 3], "avg", "uint64", 1),    # wraps to 2, then 2 / 2
            ([-5, 3, -9], "max", "int64", 3),
            ([-5, 3, -9], "min", "int64", -9),
            ([1 << 31, 5], "max", "uint32", 1 << 31),    # unsigned order
            ([5], "avg", "int8", 5),
        ]:
            self.assertEqual(int_reduce(values, op, dtype), want, (values, op, dtype))
        # Order-free: any order of the leaves gives the same result.
        leaves = [120, -77, 99, 64, -128, 3]
        for op in ("sum", "avg", "max", "min"):
            self.assertEqual(int_reduce(leaves, op, "int8"), int_reduce(leaves[::-1], op, "int8"), op)


@unittest.skipUnless(HAVE_TORCH, "torch is not installed")
class ReferenceTest(unittest.TestCase):
    """reference() with an operator (torch on the CPU)."""

    def setUp(self):
        from detcoll import torch as dtorch
        self.dtorch = dtorch

    def bits(self, t):
        return self.dtorch._int_view(t).tolist()

    def test_sum_unchanged(self):
        import torch
        xs = [torch.tensor([1.0, float("nan"), -0.0], dtype=torch.bfloat16), torch.tensor([2.0, 1.0, -0.0], dtype=torch.bfloat16)]
        self.assertEqual(self.bits(self.dtorch.reference(xs)), self.bits(self.dtorch.reference(xs, "SUM")))
        self.assertEqual([v & 0xFFFF for v in self.bits(self.dtorch.reference(xs))], [0x4040, 0x7FFF, 0x8000])

    def test_avg(self):
        import torch
        for dt, w in [(torch.bfloat16, 3), (torch.float16, 3), (torch.float32, 3), (torch.float64, 6)]:
            xs = [torch.tensor([1.0, 2.0, float("inf"), float("nan")], dtype=dt) for _ in range(w)]
            got = self.dtorch.reference(xs, "avg")
            s = self.dtorch.reference(xs)
            want = (s.double() / w).to(dt)  # the quotient of the rounded sum, rounded once (exact through float64)
            self.assertEqual(self.bits(got)[:3], self.bits(want)[:3], dt)
            self.assertEqual(self.bits(got)[3] & 0xFFFF, 0x7FFF if dt in (torch.bfloat16, torch.float16) else 0xFFFF, dt)

    def test_premul_sum(self):
        import torch
        x = [torch.tensor([3.0, -1.5], dtype=torch.float16), torch.tensor([1.0, 0.25], dtype=torch.float16)]
        got = self.dtorch.reference(x, "premul_sum", factors=[0.5, torch.tensor(4.0, dtype=torch.float16)])
        self.assertEqual(got.tolist(), [1.5 + 4.0, -0.75 + 1.0])
        # A factor rounds to the type first: 1/3 in float16, then each product rounds once.
        third = torch.tensor(1 / 3, dtype=torch.float32).to(torch.float16)
        y = [torch.tensor([3.0], dtype=torch.float16)]
        want = (torch.tensor([3.0]) * third.float()).to(torch.float16)
        self.assertEqual(self.bits(self.dtorch.reference(y, "premulsum", [1 / 3])), self.bits(want))
        with self.assertRaises(ValueError):
            self.dtorch.reference(x, "premul_sum")

    def test_premul_sum_bfloat16_as_nccl_reads_it(self):
        import torch
        # PyTorch hands NCCL a float32 for a bfloat16 factor, host or
        # device; NCCL reads its low half. Measured with NCCL alone, W=1:
        # 3.0 times 1/3, 0.5 and 0.7.
        x = [torch.tensor([3.0], dtype=torch.bfloat16)]
        for f, want in [(1 / 3, 0xAB80), (0.5, 0x0000), (0.7, 0x3406)]:
            got = self.dtorch.reference(x, "premul_sum", [f])
            self.assertEqual(self.bits(got)[0] & 0xFFFF, want, f)
        got = self.dtorch.reference(x, "premul_sum", [torch.tensor(0.7, dtype=torch.float32)])
        self.assertEqual(self.bits(got)[0] & 0xFFFF, 0x3406)

    def test_extremum_is_tree_extremum(self):
        import torch
        g = torch.Generator().manual_seed(5)
        special = [0x0000, 0x8000, 0x7F80, 0xFF80, 0x7FC1, 0xFFFF, 0x0001, 0x8001, 0x3F80]
        for w in (1, 2, 3, 5):
            cols = [torch.cat([torch.tensor(special, dtype=torch.int32), torch.randint(0, 1 << 16, (300,), generator=g, dtype=torch.int32)])
                    for _ in range(w)]
            for r in range(1, w):
                cols[r][:len(special)] = torch.tensor(special[r:] + special[:r], dtype=torch.int32)
            xs = [c.to(torch.int16).view(torch.bfloat16) for c in cols]
            for op, largest in (("max", True), ("min", False)):
                got = [v & 0xFFFF for v in self.bits(self.dtorch.reference(xs, op))]
                leaves = [[int(v) & 0xFFFF for v in c] for c in cols]
                want = [tree(list(col), lambda a, b: extremum(a, b, "bfloat16", largest)) for col in zip(*leaves)]
                if w == 1:
                    want = [extremum(v, v, "bfloat16", largest) for v in want]
                self.assertEqual(got, want, (w, op))

    def test_integers(self):
        import torch
        xs = [torch.tensor([100, -7, 127], dtype=torch.int8), torch.tensor([100, 2, 127], dtype=torch.int8)]
        self.assertEqual(self.dtorch.reference(xs, "sum").tolist(), [-56, -5, -2])
        self.assertEqual(self.dtorch.reference(xs, "avg").tolist(), [-28, -2, -1])
        self.assertEqual(self.dtorch.reference(xs, "max").tolist(), [100, 2, 127])
        u = [torch.tensor([250, 3], dtype=torch.uint8), torch.tensor([10, 4], dtype=torch.uint8)]
        self.assertEqual(self.dtorch.reference(u, "sum").tolist(), [4, 7])
        self.assertEqual(self.dtorch.reference(u, "min").tolist(), [10, 3])
        with self.assertRaises(ValueError):
            self.dtorch.reference(xs, "premul_sum", [1.0, 1.0])


class LibraryTest(unittest.TestCase):
    def test_named(self):
        with tempfile.TemporaryDirectory() as d:
            p = os.path.join(d, _lib.LIBRARY_NAME)
            open(p, "w").close()
            self.assertEqual(_lib.library_path({_lib.ENV_LIB: p}), p)
            self.assertEqual(_lib.preload_line({_lib.ENV_LIB: p}), f"LD_PRELOAD={p}")

    def test_named_but_missing(self):
        with self.assertRaisesRegex(FileNotFoundError, "is not a file"):
            _lib.library_path({_lib.ENV_LIB: "/nonexistent/libdetcoll-nccl.so"})

    def test_on_library_path(self):
        with tempfile.TemporaryDirectory() as d:
            p = os.path.join(d, _lib.LIBRARY_NAME)
            open(p, "w").close()
            self.assertEqual(_lib.library_path({"LD_LIBRARY_PATH": "/nowhere:" + d}), p)

    def test_nowhere(self):
        with self.assertRaisesRegex(FileNotFoundError, "go build -buildmode=c-shared"):
            _lib.library_path({"LD_LIBRARY_PATH": "/nowhere"})

    def test_loaded(self):
        with tempfile.NamedTemporaryFile("w", delete=False) as f:
            f.write("7f00-7f01 r-xp 00000000 08:01 1 /opt/x/libdetcoll-nccl.so\n")
        try:
            self.assertTrue(_lib.loaded(f.name))
        finally:
            os.unlink(f.name)
        self.assertFalse(_lib.loaded("/nonexistent/maps"))


class ProblemsTest(unittest.TestCase):
    def test_nothing_missing(self):
        self.assertEqual(_lib.problems(find_spec=lambda name: object(), load=lambda name: None), [])

    def test_no_driver_no_torch(self):
        def no(name):
            raise OSError(f"{name}: cannot open shared object file")

        got = _lib.problems(find_spec=lambda name: None, load=no)
        self.assertEqual(len(got), 2, got)
        self.assertIn("no CUDA driver", got[0])
        self.assertIn("torch is not installed", got[1])


class MainTest(unittest.TestCase):
    def run_main(self, *args, env=None):
        import subprocess

        e = dict(os.environ)
        e.update(env or {})
        here = os.path.join(os.path.dirname(__file__), "..")
        e["PYTHONPATH"] = here
        return subprocess.run([sys.executable, "-m", "detcoll", *args], capture_output=True, text=True, env=e)

    def test_help(self):
        r = self.run_main("--help")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("LD_PRELOAD", r.stdout)

    def test_path(self):
        with tempfile.TemporaryDirectory() as d:
            p = os.path.join(d, _lib.LIBRARY_NAME)
            open(p, "w").close()
            r = self.run_main(env={_lib.ENV_LIB: p})
            self.assertEqual((r.returncode, r.stdout.strip()), (0, p), r.stderr)

    def test_missing(self):
        r = self.run_main(env={_lib.ENV_LIB: "/nonexistent/libdetcoll-nccl.so"})
        self.assertEqual(r.returncode, 1)
        self.assertIn("is not a file", r.stderr)

    def test_bad_flag(self):
        r = self.run_main("--nope")
        self.assertEqual(r.returncode, 2)


class EnableTest(unittest.TestCase):
    def test_warns_what_is_missing(self):
        # Without a CUDA driver or torch, enable says so at once.
        from detcoll import torch as dtorch

        with tempfile.TemporaryDirectory() as d:
            p = os.path.join(d, _lib.LIBRARY_NAME)
            open(p, "w").close()
            old = _lib.problems, _lib.loaded
            _lib.problems, _lib.loaded = (lambda: ["no CUDA driver (test)"]), (lambda: True)
            try:
                with self.assertWarnsRegex(RuntimeWarning, "no CUDA driver"):
                    self.assertEqual(dtorch.enable({_lib.ENV_LIB: p}), p)
            finally:
                _lib.problems, _lib.loaded = old

    def test_after_torch(self):
        # torch already imported: enable must refuse, saying how instead.
        from detcoll import torch as dtorch

        with tempfile.TemporaryDirectory() as d:
            p = os.path.join(d, _lib.LIBRARY_NAME)
            open(p, "w").close()
            sys.modules.setdefault("torch", type(sys)("torch"))
            try:
                with self.assertRaisesRegex(dtorch.NotEnabledError, "LD_PRELOAD="):
                    dtorch.enable({_lib.ENV_LIB: p})
            finally:
                if getattr(sys.modules.get("torch"), "__file__", None) is None:
                    del sys.modules["torch"]


if __name__ == "__main__":
    unittest.main()
