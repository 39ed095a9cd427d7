"""What the Python tests on real daemons share (test_register_options.py,
test_dtype.py, test_wire_precision.py): tools/ on the path for the
cluster harness (gossipcluster), NumPy or a skip (exit 77, which meson
counts as skipped), and the gossipd package.

    from daemonharness import np, cluster, gossipd, ClusterCase
"""
import os
import sys
import threading
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools"))
try:
    import numpy as np  # noqa: F401
except ImportError as e:
    print("SKIP: %s (python3-numpy)" % e)
    sys.exit(77)
import gossipcluster as cluster  # noqa: E402,F401
import gossipd  # noqa: E402,F401


class ClusterCase(unittest.TestCase):
    """A test over self.c, a gossipcluster.Cluster its setUp starts: a
    client of each daemon, and threads that drive several at once."""

    def client(self, i):
        api = gossipd.Client(self.c.sockets[i], "trainer%d" % i, timeout=30)
        self.addCleanup(api.close)
        return api

    def together(self, apis, fn):
        """fn(i, api) for every client at once, in threads; every error
        fails the test, with the daemons' logs."""
        errors = []

        def run(i, api):
            try:
                fn(i, api)
            except Exception as e:   # noqa: BLE001 (reported below)
                errors.append(e)
        threads = [threading.Thread(target=run, args=(i, a)) for i, a in enumerate(apis)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(120)
        self.assertEqual(errors, [], self.c.tail_logs())
