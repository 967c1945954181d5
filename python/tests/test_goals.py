"""tools/goals.py: the bands, the better reference, the counts."""
import importlib.util
import os
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
spec = importlib.util.spec_from_file_location("goals", os.path.join(HERE, "..", "..", "tools", "goals.py"))
goals = importlib.util.module_from_spec(spec)
spec.loader.exec_module(goals)


def report(reference, rows):
    return {"metadata": {"reference": reference},
            "rows": [{"operation": op, "input_bytes_per_rank": size, "mode": mode, "detcoll_us": ours, "reference_us": ref}
                     for op, size, mode, ours, ref in rows]}


class GoalsTest(unittest.TestCase):
    def test_bands(self):
        self.assertEqual(goals.goal(1024, "graph", "nccl"), 0.6)
        self.assertEqual(goals.goal(256 << 10, "synchronised", "nccl"), 0.9)
        self.assertEqual(goals.goal(1 << 20, "pipelined", "nccl"), 0.7)
        self.assertEqual(goals.goal(16 << 20, "graph", "symm_mem"), 0.7)
        self.assertIsNone(goals.goal(512 << 10, "graph", "nccl"))
        self.assertAlmostEqual(goals.goal(64 << 20, "graph", "nccl"), 1 / 1.2)
        self.assertEqual(goals.goal(256 << 20, "graph", "symm_mem"), 1.0)

    def test_every_reference_must_be_beaten(self):
        bench = report("nccl", [("all_reduce", 1 << 20, "graph", 6.0, 10.0),   # 0.6 vs NCCL: met
                                ("all_reduce", 64 << 20, "graph", 190.0, 244.0)])  # 0.78 vs NCCL
        symm = report("symm_mem", [("all_reduce", 1 << 20, "graph", 0, 8.0),      # 0.75 vs symm: missed
                                   ("all_reduce", 64 << 20, "graph", 0, 214.0)])  # 0.89 < 1: met
        v = list(goals.verdicts(bench, [symm]))
        self.assertEqual([x["met"] for x in v], [False, True])
        self.assertIn("1 of 2 rows meet their goal.", goals.table(bench, [symm]))

    def test_rows_without_a_goal_or_reference_are_left_out(self):
        bench = report("none", [("all_reduce", 1024, "graph", 3.0, 0.0)])
        self.assertEqual(list(goals.verdicts(bench, [])), [])


if __name__ == "__main__":
    unittest.main()
