#!/usr/bin/env python3
"""A small PyTorch trainer for the integration test: an MLP regression on
node-local synthetic data, attached to one gossipd with gossipd.attach,
STEP after each optimizer step, DRAIN and AVERAGE at the end, DETACH.
Writes what the test checks (parameters, pointer checks, results) as
JSON.

usage: torch_trainer.py SOCKET INDEX STEPS OUT.json
"""
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "..", "bindings", "python"))
import torch  # noqa: E402

import gossipd  # noqa: E402


def in_range(t, rng):
    base, nbytes = rng
    return base <= t.data_ptr() and t.data_ptr() + 4 * t.numel() <= base + nbytes


def main(sock, index, steps, out):
    torch.set_num_threads(1)
    torch.manual_seed(0)
    w_true = torch.randn(10, 1)                  # one task for every node
    torch.manual_seed(100 + index)               # its own data and init
    x = torch.randn(256, 10)
    y = x @ w_true + 0.1 * torch.randn(256, 1)
    model = torch.nn.Sequential(torch.nn.Linear(10, 32), torch.nn.Tanh(),
                                torch.nn.Linear(32, 32), torch.nn.Tanh(),
                                torch.nn.Linear(32, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    loss_fn = torch.nn.MSELoss()
    res = {}

    g = gossipd.attach(model, socket=sock, name="torch-%d" % index, timeout=120)
    rng = g.client.buffer_range
    ptrs = [p.data_ptr() for p in model.parameters()]
    res["in_mapping"] = all(in_range(p, rng) for p in model.parameters())
    res["initial"] = g.client.flat.tolist()
    with torch.no_grad():
        res["loss0"] = loss_fn(model(x), y).item()
    g.wait_edges(2, timeout=60)
    estimates = []
    for _ in range(steps):
        opt.zero_grad()
        loss_fn(model(x), y).backward()
        opt.step()
        st = g.step()
        estimates.append(st.consensus_estimate)
    res["ptr_stable"] = ptrs == [p.data_ptr() for p in model.parameters()]
    res["before_average"] = g.client.flat.tolist()
    drained = g.drain()
    # DRAIN reports the totals since REGISTER, as STEP does.
    res["drain_totals"] = (drained.step == st.step and
                           drained.bytes_sent >= st.bytes_sent > 0 and
                           drained.bytes_received >= st.bytes_received > 0)
    res["average"] = list(g.average(1e-7, time_limit_ms=20000))
    res["final"] = g.client.flat.tolist()
    res["estimates"] = estimates
    # DETACH itself may write the buffer (a round a neighbour's end counts
    # lands, one it ended before is taken back: DAEMON.md), so the model
    # must keep what DETACH left, not what AVERAGE returned.  This view
    # keeps the mapping readable after DETACH.
    view = g.client.flat
    g.detach()
    res["outside_after_detach"] = not any(in_range(p, rng) for p in model.parameters())
    flat = torch.cat([p.detach().flatten() for p in model.parameters()])
    res["detached"] = view.tolist()
    res["kept_values"] = flat.tolist() == res["detached"]
    del view
    with torch.no_grad():
        res["loss1"] = loss_fn(model(x), y).item()
    with open(out, "w") as f:
        json.dump(res, f)


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4])
