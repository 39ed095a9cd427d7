#!/usr/bin/env python3
"""The script test_launcher.py runs under gossip-run, one mode per test:

  env OUTDIR          writes its environment to OUTDIR/env-RANK.json
  exit OUTDIR SPEC    SPEC "RANK:CODE,...": exits CODE (or kills itself
                      with SIGKILL for "kill"); other ranks exit 0
  term OUTDIR [ignore]  writes its pid to OUTDIR/started-RANK, waits for
                      SIGTERM and
                      writes OUTDIR/term-RANK (ignore: and keeps waiting)
  train OUTDIR        a NumPy model through gossipd.Client on
                      $GOSSIPD_SOCKET (the client's default), finish(), and
                      OUTDIR/train-RANK.json with the result and the pid of
                      the daemon it talked to
"""
import json
import os
import signal
import socket
import struct
import sys


def write(path, data=""):
    with open(path + ".tmp", "w") as f:
        f.write(data)
    os.rename(path + ".tmp", path)


def daemon_pid(path):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(path)
    pid = struct.unpack("3i", s.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, 12))[0]
    s.close()
    return pid


def train(out, rank):
    import numpy as np
    import gossipd
    c = gossipd.Client(name="launched-%d" % rank, timeout=30)
    w, b = c.register([("w", (8, 4)), ("b", (4,))])
    rng = np.random.default_rng(rank)          # each node its own start
    w[...] = rng.normal(size=w.shape)
    b[...] = rng.normal(size=b.shape)
    goal = rank + 1.0                          # each node its own optimum
    c.wait_edges(1, timeout=20)
    for _ in range(30):
        w -= 0.1 * (w - goal)
        b -= 0.1 * (b - goal)
        c.step()
    view = c.flat                              # readable after finish()
    r = c.finish(1e-5, time_limit_ms=10000)
    write(os.path.join(out, "train-%d.json" % rank), json.dumps(dict(
        reached=r.reached, estimate=r.estimate, rounds=r.rounds, bytes=r.bytes,
        seconds=r.seconds, final=view[:32 + 4].tolist(),
        daemon=daemon_pid(os.environ["GOSSIPD_SOCKET"]),
        env=[os.environ[k] for k in ("RANK", "LOCAL_RANK", "WORLD_SIZE",
                                     "LOCAL_WORLD_SIZE", "GROUP_RANK", "GOSSIPD_SOCKET")])))


def main(mode, out, *rest):
    rank = int(os.environ["RANK"])
    if mode == "env":
        write(os.path.join(out, "env-%d.json" % rank), json.dumps(dict(os.environ)))
    elif mode == "exit":
        spec = dict(x.split(":") for x in rest[0].split(","))
        what = spec.get(str(rank), "0")
        if what == "kill":
            os.kill(os.getpid(), signal.SIGKILL)
        sys.exit(int(what))
    elif mode == "term":
        signal.pthread_sigmask(signal.SIG_BLOCK, [signal.SIGTERM])
        write(os.path.join(out, "started-%d" % rank), str(os.getpid()))
        signal.sigwait([signal.SIGTERM])
        write(os.path.join(out, "term-%d" % rank))
        while rest and rest[0] == "ignore":
            signal.sigwait([signal.SIGTERM])
    elif mode == "train":
        train(out, rank)


if __name__ == "__main__":
    main(*sys.argv[1:])
