#!/usr/bin/env python3
"""gossipd under the unit's system call filter, emulated with strace.

systemd cannot run the unit here (no systemd as PID 1), so this test
applies the same policy from outside: it reads the SystemCallFilter= lines
of deploy/gossipd.service.in, expands the @groups with
`systemd-analyze syscall-filter` (in order, as systemd combines them), and
runs a two-node cluster whose daemons run under
`strace -f -e inject=<every other syscall>:error=EPERM`, the unit's
SystemCallErrorNumber=EPERM.  Every STEP's math runs off the loop
(GSP_OFFLOAD_FLOATS=0) on a model big enough for OpenBLAS' and the
engine's threads.

The same filter is applied to `gossip-bench compute` on a 1024x1024
layout, where OpenBLAS runs its level-3 threads.

Passes when the trainers finish and converge, the benchmark completes, the daemons stop cleanly,
threads were created under the filter, and every denied call is one we
know to be harmless (ALLOWED_DENIALS).  Fails loudly without strace or
systemd-analyze.

usage: test_syscalls.py BUILD_DIR UNIT_TEMPLATE
"""
import os
import re
import shutil
import signal
import stat
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "tools"))
import gossipcluster as cluster  # noqa: E402

# Denied calls that are fine: OpenBLAS asks for NUMA placement of its
# buffers with mbind (in @resources) and ignores the EPERM.
ALLOWED_DENIALS = {"mbind"}


def fail(msg):
    print("FAIL: " + msg)
    sys.exit(1)


def syscall_groups():
    out = subprocess.run(["systemd-analyze", "syscall-filter"], check=True,
                         capture_output=True, text=True).stdout
    groups, cur = {}, None
    for line in out.splitlines():
        if line.startswith("@"):
            cur = groups.setdefault(line.split()[0], [])
        elif cur is not None and line.strip() and not line.strip().startswith("#"):
            cur.append(line.strip())
    return groups


def expand(names, groups):
    out = set()
    for n in names:
        out |= expand(groups[n], groups) if n.startswith("@") else {n}
    return out


def allowed_syscalls(unit):
    """The allow list that the unit's SystemCallFilter= lines build (the
    first line must be an allow list, as in gossipd.service)."""
    groups = syscall_groups()
    lines = re.findall(r"^SystemCallFilter=(.*)$", open(unit).read(), re.M)
    if not lines or lines[0].startswith("~"):
        fail("%s: expected an allow-list SystemCallFilter= first" % unit)
    allowed = set()
    for value in lines:
        deny = value.startswith("~")
        names = expand(value.lstrip("~").split(), groups)
        allowed = allowed - names if deny else allowed | names
    return allowed


def main():
    build, unit = os.path.abspath(sys.argv[1]), sys.argv[2]
    for tool in ("strace", "systemd-analyze"):
        if not shutil.which(tool):
            fail("%s is not installed (tools/run-tests installs it)" % tool)
    allowed = allowed_syscalls(unit)
    for needed in ("clone3", "futex", "epoll_wait", "sendmsg", "recvmsg"):
        if needed not in allowed:
            fail("the unit's filter denies %s" % needed)
    denied = "!" + ",".join("?" + n for n in sorted(allowed))
    # Traced: the denied calls, and thread creation.
    traced = "!" + ",".join("?" + n for n in sorted(allowed - {"clone", "clone3"}))

    tmp = tempfile.mkdtemp(prefix="gossipd-seccomp-")
    try:
        # A build tree whose gossipd runs under strace with the filter.
        fake = os.path.join(tmp, "build")
        os.makedirs(os.path.join(fake, "daemon"))
        os.makedirs(os.path.join(fake, "tests", "harness"))
        os.symlink(os.path.join(build, "tests", "harness", "gossip-testtrainer"),
                   os.path.join(fake, "tests", "harness", "gossip-testtrainer"))
        wrapper = os.path.join(fake, "daemon", "gossipd")
        with open(wrapper, "w") as f:
            f.write('#!/bin/sh\nexec strace -f -qq -o "%s/strace.$$" -e trace=%s '
                    '-e inject=%s:error=EPERM "%s" "$@"\n'
                    % (tmp, traced, denied, os.path.join(build, "daemon", "gossipd")))
        os.chmod(wrapper, stat.S_IRWXU)
        os.environ["GSP_OFFLOAD_FLOATS"] = "0"
        os.environ["GSP_THREADS"] = "2"
        os.makedirs(os.path.join(tmp, "cluster"))
        c = cluster.Cluster(fake, 2, tmp=os.path.join(tmp, "cluster"),
                            node_conf="Method = powergossip\nRank = 4\nGamma = auto\n"
                                      "Topology = ring\nNodes = 2\n")
        try:
            c.start()
            init = [os.path.join(c.dir, "init%d" % i) for i in range(2)]
            final = [os.path.join(c.dir, "final%d" % i) for i in range(2)]
            c.run_trainers(lambda i: [
                # SYNC steps: every step completes a round, so progress
                # does not depend on how busy the machine is.
                "--data", "random:512x512,512", "--seed", "3", "--steps", "200",
                "--sync", "--wait-edges", "1", "--dump-initial", init[i], "--dump", final[i]],
                timeout=600)
            drift, e0, e1 = cluster.network_stats(
                [cluster.read_floats(p) for p in init],
                [cluster.read_floats(p) for p in final])
            for i in range(2):
                # SIGTERM to gossipd itself: strace exits with its status.
                strace = c.procs[i]
                with open("/proc/%d/task/%d/children" % (strace.pid, strace.pid)) as f:
                    os.kill(int(f.read().split()[0]), signal.SIGTERM)
                rc = strace.wait(timeout=20)
                c.procs[i] = None
                if rc != 0:
                    fail("gossipd %d exited %d under the filter:\n%s"
                         % (i, rc, c.tail_logs()))
        finally:
            c.close()
        # The engine's step in-process at a size where OpenBLAS runs its
        # level-3 threads: gossip-bench under the same filter.
        shapes = os.path.join(tmp, "bench.shapes")
        with open(shapes, "w") as f:
            f.write("w 1024x1024\nb 1024\n")
        bench = subprocess.run(
            ["strace", "-f", "-qq", "-o", os.path.join(tmp, "strace.bench"),
             "-e", "trace=" + traced, "-e", "inject=%s:error=EPERM" % denied,
             os.path.join(build, "tools", "bench", "gossip-bench"), "compute", "--shapes",
             shapes, "--threads", "2", "--edges", "1,4", "--ranks", "4",
             "--repeat", "2"], capture_output=True, text=True, timeout=300)
        if bench.returncode != 0:
            fail("gossip-bench under the filter exited %d:\n%s"
                 % (bench.returncode, bench.stdout + bench.stderr))
        if not e1 < e0 / 2 or drift > 1e-5:
            fail("no progress under the filter: error %g -> %g, drift %g"
                 % (e0, e1, drift))
        # Denied calls and threads created, for the daemons and the bench.
        calls = {"gossipd": {}, "gossip-bench": {}}
        threads = {"gossipd": 0, "gossip-bench": 0}
        for name in os.listdir(tmp):
            if not name.startswith("strace."):
                continue
            who = "gossip-bench" if name == "strace.bench" else "gossipd"
            for line in open(os.path.join(tmp, name), errors="replace"):
                m = re.match(r"\d+ +(\w+)\(", line)
                if not m:
                    continue
                if "(INJECTED)" in line:
                    calls[who][m.group(1)] = calls[who].get(m.group(1), 0) + 1
                elif m.group(1) in ("clone", "clone3") and "= -1" not in line:
                    threads[who] += 1
        for who in ("gossipd", "gossip-bench"):
            print("%s: %d threads created; denied by the filter (EPERM): %s"
                  % (who, threads[who], ", ".join(
                      "%s x%d" % kv for kv in sorted(calls[who].items())) or "none"))
        print("consensus error %.3g -> %.3g" % (e0, e1))
        if threads["gossipd"] < 2 or threads["gossip-bench"] < 1:
            fail("expected threads (libuv pool, engine, OpenBLAS) under the filter")
        unexpected = (set(calls["gossipd"]) | set(calls["gossip-bench"])) - ALLOWED_DENIALS
        if unexpected:
            fail("gossipd needs system calls the unit denies: %s"
                 % ", ".join(sorted(unexpected)))
        print("ok")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
