#!/usr/bin/python3
"""Facts about the models the baselines saved in a bench-e2e run (2 nodes,
the MLP, H = 2, a model at every step), as JSON for test_bench_smoke.py,
which runs this with the python3 that has torch and numpy.

usage: baseline_models.py STEPS LOCALSGD_DIR DILOCO_DIR RANDPAIR_DIR

Local SGD, DiLoCo and random pairs take the same inner steps from the
same model, seeds and batches, so until their first exchange (step 1)
their models are the same bits, and the model local SGD averages at
step 2 is the mean of the models the other two exchange there.  With 2
nodes the random pair is the two nodes, so:
- DiLoCo's first outer step, Nesterov SGD (lr, momentum) on the
  averaged change, moves the initial model theta0 by lr (1 + momentum)
  times (local SGD's average - theta0);
- random pairs conserve the mean: the mean of their models after the
  exchange is local SGD's average."""
import json
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                                "tools"))
from bench import baselines  # noqa: E402
from bench import workload as W  # noqa: E402


def load(d, node, step):
    return np.fromfile(os.path.join(d, "model%d-%s.f32" % (node, step)), dtype=np.float32)


def rel(a, b):
    """|a - b| / |b| in float64."""
    a, b = a.astype(np.float64), b.astype(np.float64)
    return float(np.linalg.norm(a - b) / np.linalg.norm(b))


def main(steps, dirs):
    out = {}
    for family, d in zip(baselines.FAMILIES, dirs):
        out[family] = dict(equal={str(k): bool(np.array_equal(load(d, 0, k), load(d, 1, k)))
                                  for k in list(range(1, steps + 1)) + ["avg"]})
    ls, dl, rp = dirs
    out["step1_same_bits"] = all(np.array_equal(load(ls, i, 1), load(o, i, 1))
                                 for o in (dl, rp) for i in (0, 1))
    theta0 = W.flat_state(W.build("mlp")).astype(np.float64)
    mean2 = load(ls, 0, 2).astype(np.float64)
    c = baselines.OUTER_LR * (1 + baselines.OUTER_MOMENTUM)
    out["diloco_outer_step_error"] = rel(load(dl, 0, 2) - theta0, c * (mean2 - theta0))
    out["randpair_mean_error"] = rel((load(rp, 0, 2).astype(np.float64) + load(rp, 1, 2)) / 2,
                                     mean2)
    print(json.dumps(out))


if __name__ == "__main__":
    main(int(sys.argv[1]), sys.argv[2:5])
