#!/usr/bin/python3
"""One node's trainer for tools/bench/bench-e2e, run inside the node's network
namespace.  usage: worker.py CONFIG.json NODE

Talks to the harness with JSON lines: it prints {"event": ...} on stdout
and waits for a line on stdin ("go") at its barriers: once ready, and for
gossipd before and after the final AVERAGE.  There is no barrier while
training: at every evaluation point it writes its model to
OUT/model<NODE>-<STEP>.f32 (rank 0 only for DDP) and reports the seconds
since "go"; the harness evaluates the snapshots after training, so
evaluation neither pauses nor slows training.  (Pausing every node at an
evaluation barrier deadlocks gossipd: a node that is MaxStaleness rounds
behind waits in STEP for a neighbour that waits at the barrier.)

Systems: gossipd-* (attach() to the node's gossipd, STEP after each
optimizer step), ddp-allreduce and ddp-powersgd-rR (torch DDP over gloo),
localsgd-hH, diloco-hH and randpair-hH (tools/bench/baselines.py, over
the same gloo group; like gossipd they end with a barrier, one measured
all-reduce of the model to the nodes' mean, and a barrier), compute-only
(no communication)."""
import faulthandler
import json
import os
import select
import signal
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, os.path.join(HERE, "..", "..", "bindings", "python"))

import torch  # noqa: E402

from bench import baselines  # noqa: E402
from bench import workload as W  # noqa: E402


def emit(**rec):
    sys.stdout.write(json.dumps(rec) + "\n")
    sys.stdout.flush()


def command():
    """The harness' next line as words ([] when it is gone)."""
    return sys.stdin.readline().split()


def barrier():
    """True to go on, False when the harness says stop (or is gone)."""
    return command()[:1] == ["go"]


def calibrate(model_name, batches, cfg, n=8):
    """Median seconds of one local forward, backward and optimizer step
    (a separate copy of the model, no communication), after two warm-up
    steps.  Every node calibrates at the same time, so the figure is a
    step's compute time with all the trainers computing, as in the run
    (measured alone it was 11 ms against about 90 ms in the run): the
    straggler's extra sleep per step."""
    m = W.build(model_name)
    opt = torch.optim.SGD(m.parameters(), lr=cfg["lr"], momentum=cfg["momentum"])
    times = []
    for i in range(n + 2):
        x, y = batches.next()
        t = time.perf_counter()
        opt.zero_grad()
        torch.nn.functional.cross_entropy(m(x), y).backward()
        opt.step()
        if i >= 2:
            times.append(time.perf_counter() - t)
    return sorted(times)[n // 2]


def group_setup(cfg, node):
    """The gloo process group of the DDP systems and the baselines."""
    import torch.distributed as dist
    from datetime import timedelta
    dist.init_process_group("gloo", init_method="tcp://%s:%d" % (
        cfg["master_addr"], cfg["master_port"]), rank=node,
        world_size=cfg["nodes"], timeout=timedelta(seconds=300))


def ddp_setup(model, cfg, node):
    import torch.distributed as dist
    group_setup(cfg, node)
    kw = {}
    if cfg.get("bucket_cap_mb"):
        # One bucket from the first step: under gloo, torch 1.13's
        # powerSGD_hook with two buckets in flight dies at its first
        # compressed step (gloo EnforceNotMet "op.preamble.length <=
        # op.nbytes").  DDP's first bucket has its own cap (1 MiB).
        kw["bucket_cap_mb"] = cfg["bucket_cap_mb"]
        dist._DEFAULT_FIRST_BUCKET_BYTES = int(cfg["bucket_cap_mb"] * 2 ** 20)
    ddp = torch.nn.parallel.DistributedDataParallel(model, **kw)
    if cfg["system"].startswith("ddp-powersgd-r"):
        from torch.distributed.algorithms.ddp_comm_hooks import powerSGD_hook as P
        state = P.PowerSGDState(
            process_group=None, matrix_approximation_rank=int(cfg["system"].rsplit("r", 1)[1]),
            start_powerSGD_iter=2, use_error_feedback=True, warm_start=True,
            random_seed=cfg["seed"])
        ddp.register_comm_hook(state, P.powerSGD_hook)
    return ddp


def main(cfg, node):
    torch.set_num_threads(1)
    system = cfg["system"]
    x, y = W.load("train")
    idx = W.shard(len(y), node, cfg["nodes"], cfg["seed"])
    batches = W.Batches(x, y, idx, cfg["batch"], cfg["seed"] * 1000 + node)
    # Every node calibrates (so the figure is taken under the run's
    # contention); only a straggler sleeps, and for the median of all
    # nodes' figures, which the harness sends with "go": the straggler's
    # own figure, one node's 8 steps, once came out 30 % above the median
    # (0.74 s against 0.57 s) and gave that system's straggler a longer
    # sleep than the next system's.
    compute_s = calibrate(cfg["model"], W.Batches(x, y, idx, cfg["batch"], 7), cfg)
    straggler = node in cfg["stragglers"]
    model = W.build(cfg["model"])
    net, g, base = model, None, None
    if system.startswith("ddp-"):
        net = ddp_setup(model, cfg, node)
    opt = torch.optim.SGD(net.parameters(), lr=cfg["lr"], momentum=cfg["momentum"])
    if baselines.parse(system):
        group_setup(cfg, node)
        base = baselines.make(system, model, opt, cfg)
        opt = base.optimizer
    if system.startswith("gossipd-"):
        import gossipd
        has_buffers = len(W.state_tensors(model)) > len(list(model.parameters()))
        g = gossipd.attach(model, socket=cfg["sockets"][node], name="bench-%d" % node,
                           buffers=has_buffers)
        g.wait_edges(cfg["degree"][node], timeout=120)
    out = os.path.join(cfg["out"], "model%d-%%s.f32" % node)
    save = not system.startswith("ddp-") or node == 0
    emit(event="ready", calibrated_compute_s=compute_s)
    words = command()           # "go SLEEP"
    go = words[:1] == ["go"]
    extra = float(words[1]) if straggler and len(words) > 1 else 0.0
    t0 = time.monotonic()
    step = 0
    compute = 0.0
    while go and step < cfg["steps"]:
        xb, yb = batches.next()
        t = time.perf_counter()
        opt.zero_grad()
        loss = torch.nn.functional.cross_entropy(net(xb), yb)
        loss.backward()
        opt.step()
        compute += time.perf_counter() - t
        if extra:
            time.sleep(extra)
        if g is not None:
            g.step()
        step += 1
        if base is not None:
            base.after_step(step)
        if step % cfg["eval_every"] == 0 or step == cfg["steps"]:
            if save:
                W.flat_state(model).tofile(out % step)
            emit(event="eval", step=step, t=time.monotonic() - t0,
                 loss=loss.item(), compute_s=compute)
    if g is not None:
        # No DRAIN before AVERAGE: when one end of an edge has started a
        # round the other end will not start (it reached its last STEP
        # with the previous round still in flight), that end's DRAIN
        # waits for ever (seen here with 2 nodes; docs/BENCHMARKS.md).
        # AVERAGE, which every node runs after the barrier, completes
        # the round in flight.
        # Until every node is done, keep stepping (gossip only, no
        # training): a neighbour still training may be MaxStaleness
        # rounds behind and wait in STEP for this node's next round.
        emit(event="trained", step=step)
        gossip_only = 0
        while not select.select([sys.stdin], [], [], 0.005)[0]:
            g.step()
            gossip_only += 1
        # The line that ended them is read here: left for barrier(), it
        # started the AVERAGE at once, before the harness read the
        # status (whose engine counts then lagged: docs/BENCHMARKS.md).
        go_on = barrier()
        emit(event="gossip_only", steps=gossip_only)
        if go_on and barrier():
            t = time.perf_counter()
            r = g.average(cfg["average_target"], time_limit_ms=cfg["average_time_ms"])
            sec = time.perf_counter() - t
            W.flat_state(model).tofile(out % "avg")
            emit(event="averaged", seconds=sec, result=list(r))
            barrier()
        g.detach()
    if base is not None:
        # the final all-reduce, timed between two barriers like
        # gossipd's AVERAGE: the harness reads the interface counters
        # at both
        emit(event="trained", step=step)
        if barrier():
            t = time.perf_counter()
            base.final_average()
            sec = time.perf_counter() - t
            W.flat_state(model).tofile(out % "avg")
            emit(event="averaged", seconds=sec)
            barrier()
    if system.startswith("ddp-") or base is not None:
        import torch.distributed as dist
        dist.destroy_process_group()
    emit(event="done", step=step)


if __name__ == "__main__":
    faulthandler.register(signal.SIGUSR1)      # stacks into the log on demand
    with open(sys.argv[1]) as f:
        config = json.load(f)
    main(config, int(sys.argv[2]))
