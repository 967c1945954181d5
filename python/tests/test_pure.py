"""The parts of the detcoll package that need neither torch nor a GPU."""

import os
import struct
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from detcoll import _lib  # noqa: E402
from detcoll.tree import extremum, order_key, shape, split, tree  # noqa: E402


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
