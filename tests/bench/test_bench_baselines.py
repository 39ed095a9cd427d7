#!/usr/bin/env python3
"""tools/bench/baselines.py without torch (suite 'unit'): the baselines'
names, and random-pair averaging's pairs, which every rank computes on
its own and must agree on."""
import os
import subprocess
import sys
import unittest

TOOLS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools")
sys.path.insert(0, TOOLS)
from bench import baselines  # noqa: E402


class Names(unittest.TestCase):
    def test_family_and_period(self):
        self.assertEqual(baselines.parse("localsgd-h16"), ("localsgd", 16))
        self.assertEqual(baselines.parse("diloco-h1"), ("diloco", 1))
        self.assertEqual(baselines.parse("randpair-h64"), ("randpair", 64))
        for bad in ("localsgd", "localsgd-h", "localsgd-h0", "localsgd-h08", "localsgd-h-2",
                    "localsgd-hx", "local-h2", "ddp-allreduce", "diloco-h2x"):
            self.assertIsNone(baselines.parse(bad), bad)


class Pairs(unittest.TestCase):
    def test_a_matching_of_all_but_one_odd_rank(self):
        for n in range(2, 12):
            for step in range(1, 30):
                got = baselines.pairs(n, 1, step)
                ranks = [r for p in got for r in p]
                self.assertEqual(len(got), n // 2, (n, step))
                self.assertEqual(len(set(ranks)), len(ranks), (n, step, got))
                self.assertTrue(set(ranks) <= set(range(n)))
                out = [r for r in range(n) if baselines.partner(n, 1, step, r) is None]
                self.assertEqual(len(out), n % 2, (n, step))
                for r in ranks:         # partners are mutual
                    self.assertEqual(baselines.partner(
                        n, 1, step, baselines.partner(n, 1, step, r)), r)

    def test_the_pairs_change_with_the_step(self):
        seen = {tuple(sorted(tuple(sorted(p)) for p in baselines.pairs(8, 1, s)))
                for s in range(1, 21)}
        self.assertGreater(len(seen), 10)
        # and every rank sits out now and then with odd n
        out = {r for s in range(1, 60) for r in range(5)
               if baselines.partner(5, 1, s, r) is None}
        self.assertEqual(out, set(range(5)))

    def test_every_process_draws_the_same_pairs(self):
        """Each rank computes the pairs in its own process: they must not
        depend on the process' hash seed."""
        code = ("import sys; sys.path.insert(0, %r); from bench import baselines; "
                "print([baselines.pairs(8, 3, s) for s in range(1, 9)])" % TOOLS)
        outs = {subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                               env=dict(os.environ, PYTHONHASHSEED=h), check=True).stdout
                for h in ("1", "2", "random")}
        self.assertEqual(len(outs), 1, outs)
        self.assertEqual(outs.pop().strip(), str([baselines.pairs(8, 3, s) for s in range(1, 9)]))


if __name__ == "__main__":
    unittest.main()
