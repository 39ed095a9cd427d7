"""What the Python tests on real daemons share (test_register_options.py,
test_dtype.py, test_wire_precision.py): tools/ on the path for the
cluster harness (gossipcluster), NumPy or a skip (exit 77, which meson
counts as skipped), and the gossipd package.

    from daemonharness import np, cluster, gossipd
"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools"))
try:
    import numpy as np  # noqa: F401
except ImportError as e:
    print("SKIP: %s (python3-numpy)" % e)
    sys.exit(77)
import gossipcluster as cluster  # noqa: E402,F401
import gossipd  # noqa: E402,F401
