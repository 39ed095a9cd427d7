#!/usr/bin/env python3
"""tools/bench/latest.py: the combinations of the nodes' latest saved
models that tools/bench/bench-e2e's wall-clock measure evaluates (no root, no
torch: suite 'unit')."""
import os
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools"))
from bench import latest  # noqa: E402


class Combos(unittest.TestCase):
    def test_a_straggler_does_not_hold_the_others_back(self):
        # node 1 at half speed: at 4 s node 0 is at step 100, node 1 at 25
        fast = [(25, 1.0), (50, 2.0), (75, 3.0), (100, 4.0)]
        slow = [(25, 2.0), (50, 4.0), (75, 6.0), (100, 8.0)]
        got = latest.combos([fast, slow], 100)
        self.assertEqual(got, [(2.0, [50, 25]), (3.0, [75, 25]), (4.0, [100, 50]),
                               (6.0, [100, 75]), (8.0, [100, 100])])

    def test_formed_only_when_every_node_saved_one(self):
        self.assertEqual(latest.combos([[(25, 5.0)], [(25, 1.0)]], 10), [(5.0, [25, 25])])
        self.assertEqual(latest.combos([[(25, 5.0)], []], 10), [])
        self.assertEqual(latest.combos([], 10), [])

    def test_lockstep_nodes_give_the_steps(self):
        a = [(k, k / 10.0) for k in (25, 50, 75)]
        b = [(k, k / 10.0 + 0.01) for k in (25, 50, 75)]
        self.assertEqual([s for _, s in latest.combos([a, b], 10)],
                         [[25, 25], [50, 25], [50, 50], [75, 50], [75, 75]])

    def test_same_moment_is_one_combination(self):
        a, b = [(25, 1.0), (50, 2.0)], [(25, 1.0), (50, 2.0)]
        self.assertEqual(latest.combos([a, b], 10), [(1.0, [25, 25]), (2.0, [50, 50])])

    def test_cap_keeps_the_first_and_the_last(self):
        a = [(k, float(k)) for k in range(1, 40)]
        b = [(k, k + 0.5) for k in range(1, 40)]
        full = latest.combos([a, b], 1000)
        got = latest.combos([a, b], 5)
        self.assertEqual(len(got), 5)
        self.assertEqual((got[0], got[-1]), (full[0], full[-1]))
        self.assertEqual(got, sorted(got))
        self.assertEqual(latest.combos([a, b], 1), full[-1:])
        self.assertEqual(latest.combos([a, b], 0), [])


if __name__ == "__main__":
    unittest.main()
