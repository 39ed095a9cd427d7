"""A local gossipd cluster: keys, configs and loopback ports generated per
run, daemons started and awaited through their sd_notify READY=1 (a
NOTIFY_SOCKET the caller owns), trainers run as real processes.  Product
code: gossip-run --local-cluster imports it (meson installs it beside the
package data), as do tools/gossip-cluster, the benchmark drivers of
tools/bench/ and the tests (tests/harness/ holds what only tests use).
Standard library only (the status reader is the gossipd package's Client,
whose import needs nothing else).
"""
import array
import fcntl
import math
import mmap
import os
import signal
import random
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "bindings", "python"))
import gossipd  # noqa: E402

READY_TIMEOUT = 20.0

# Daemons started at once, each batch awaited before the next: a batch's
# READY=1 datagrams must fit the notify socket's queue, which holds
# net.unix.max_dgram_qlen datagrams (the kernel's default is 10; systemd
# raises it to 512).  gossipd's sd_notify never blocks, so a READY=1 that
# finds the queue full is lost: 64 daemons started together on a loaded
# machine lost up to 9 of them while the drain thread waited for a CPU.
START_BATCH = 8


# Below Linux's ephemeral range (32768-60999 by default): a port picked
# here is not taken meanwhile as the local end of some outgoing
# connection (the proxy of the faults suite opens hundreds).
PORT_RANGE = (20000, 32000)


# What gossipd reads from its environment only when built with meson
# -Dtest_hooks=true (daemon/step.c).
TEST_HOOKS = ("GSP_OFFLOAD_FLOATS", "GSP_TEST_STEP_DELAY_MS")
_hooks_of = {}


def has_test_hooks(gossipd):
    """Whether the gossipd executable at that path reads TEST_HOOKS (its
    --version says "(test hooks)")."""
    if gossipd not in _hooks_of:
        out = subprocess.run([gossipd, "--version"], stdout=subprocess.PIPE,
                             stderr=subprocess.DEVNULL, text=True, timeout=30).stdout
        _hooks_of[gossipd] = "(test hooks)" in out
    return _hooks_of[gossipd]


def free_ports(n):
    """n distinct loopback TCP ports, free now, outside the ephemeral range."""
    socks, ports = [], []
    rng = random.Random()
    for _ in range(200 * n):
        if len(ports) == n:
            break
        port = rng.randrange(*PORT_RANGE)
        if port in ports:
            continue
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            s.close()
            continue
        socks.append(s)
        ports.append(port)
    for s in socks:
        s.close()
    if len(ports) < n:
        raise RuntimeError("no %d free ports in %d-%d" % ((n,) + PORT_RANGE))
    return ports


def ring(n):
    return [(i, (i + 1) % n) for i in range(n)] if n > 2 else [(0, 1)]


TOPOLOGIES = ("ring", "torus", "complete", "exponential")

# gossipd refuses Gamma = auto for a choco method (it is exact gossip's
# step for the graph, and Choco diverged there): the tools' "auto" gives
# Choco this one, the best point of top-k's grid and a stable one for sign
# (docs/BENCHMARKS.md, "Choco: a gamma grid").
CHOCO_GAMMA = "0.1"


def gamma_for(method, gamma):
    """The Gamma line's value for a Method (a name without the tools'
    "gossipd-" prefix): gamma, but CHOCO_GAMMA for a choco method's auto."""
    return CHOCO_GAMMA if gamma == "auto" and method.startswith("choco-") else gamma


def torus_shape(n):
    """The most nearly square a x b = n with 2 <= a <= b, as
    libgossip/topology.c builds it, or None (n prime or < 4)."""
    best = None
    a = 2
    while a * a <= n:
        if n % a == 0:
            best = a
        a += 1
    return None if best is None else (best, n // best)


def edges_of(topology, n):
    """The edges (lo, hi) of gsp_graph_new(topology, n), each once: the
    same graph gossipd's Gamma = auto assumes.  ValueError for a torus on
    a prime n (or n < 4)."""
    if topology == "ring":
        return ring(n)
    if topology == "complete":
        return [(i, j) for i in range(n) for j in range(i + 1, n)]
    if topology == "torus":
        shape = torus_shape(n)
        if shape is None:
            raise ValueError("a torus needs n = a x b with a, b >= 2, not %d" % n)
        a, b = shape
        pairs = []
        for r in range(a):
            for c in range(b):
                i = r * b + c
                pairs += [(i, r * b + (c + 1) % b), (i, ((r + 1) % a) * b + c)]
    elif topology == "exponential":
        jmax = 0
        while (1 << jmax) < n:
            jmax += 1
        pairs = [(i, (i + (1 << j)) % n) for i in range(n) for j in range(jmax)]
    else:
        raise ValueError("unknown topology %r" % topology)
    return sorted({(min(a, b), max(a, b)) for a, b in pairs if a != b})


class Notify:
    """The cluster's NOTIFY_SOCKET, drained by a thread for the whole run.
    Every daemon sends READY=1 at start-up and STOPPING=1 at SIGTERM (and
    WATCHDOG=1 under a watchdog).  A datagram socket nobody reads fills
    up, and then sd_notify() blocks the daemon that sends: with 64
    daemons, stopping took minutes.  READY=1 datagrams are counted until
    wait_ready() claims them; the others are only counted."""

    def __init__(self, path):
        self.path = path
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.sock.bind(path)
        self.sock.settimeout(0.2)
        self.cond = threading.Condition()
        self.ready = 0                 # READY=1 not yet claimed
        self.counts = {}               # every KEY=VALUE line seen
        self.closing = False
        self.thread = threading.Thread(target=self._drain, daemon=True,
                                       name="notify-drain")
        self.thread.start()

    def _drain(self):
        while not self.closing:
            try:
                msg = self.sock.recv(4096).decode(errors="replace")
            except socket.timeout:
                continue
            except OSError:
                return
            with self.cond:
                for line in msg.split("\n"):
                    if line:
                        self.counts[line] = self.counts.get(line, 0) + 1
                if "READY=1" in msg.split("\n"):
                    self.ready += 1
                    self.cond.notify_all()

    def claim_ready(self, count, timeout):
        """Waits until count READY=1 are unclaimed and claims them;
        returns how many were claimed (fewer on timeout)."""
        deadline = time.monotonic() + timeout
        with self.cond:
            while self.ready < count:
                left = deadline - time.monotonic()
                if left <= 0:
                    break
                self.cond.wait(left)
            got = min(self.ready, count)
            self.ready -= got
            return got

    def close(self):
        self.closing = True
        self.thread.join(timeout=5)
        self.sock.close()


def read_floats(path):
    a = array.array("f")
    with open(path, "rb") as f:
        a.frombytes(f.read())
    return a


class Cluster:
    """n daemons on loopback by default.  hosts (one address per node,
    e.g. inside network namespaces) and wrap (a command prefix per node,
    e.g. ["ip", "netns", "exec", NS]) put them elsewhere; ports then
    defaults to 7000 on every node.  proxy (e.g. a faultproxy.FaultProxy)
    goes between the nodes: node i's Endpoint for peer j is then
    proxy.link(i, j, host, port) instead of peer j's own address, one
    port per directed link; close() closes it too.  indexed writes each
    node's Index and its peers' (AverageSchedule = matching needs them; so
    does sim_seed).  gossipd: the daemon's binary (default: build's
    daemon/gossipd; gossip-run passes the installed one)."""

    def __init__(self, build, n, edges=None, node_conf="", tmp=None, sim_seed=None,
                 hosts=None, wrap=None, ports=None, proxy=None, indexed=False,
                 gossipd=None):
        self.build = build
        self.gossipd = gossipd or self.bin("daemon", "gossipd")
        self.n = n
        self.edges = edges if edges is not None else ring(n)
        self.dir = tmp or tempfile.mkdtemp(prefix="gossipd-it-")
        self.node_conf = node_conf
        self.sim_seed = sim_seed
        self.indexed = indexed or sim_seed is not None   # Index lines
        self.endpoint_host = "127.0.0.1"   # or a name, e.g. "localhost"
        self.hosts = hosts                 # per node; overrides the above
        self.wrap = wrap or (lambda i: [])
        self.listen_only = set()           # nodes that never dial
        self.peer_names = False            # Name = node<j> in each [Peer]
        self.procs = [None] * n
        self.logs = [os.path.join(self.dir, "gossipd%d.log" % i) for i in range(n)]
        self.sockets = [os.path.join(self.dir, "s%d" % i) for i in range(n)]
        self.keys = [self.make_key(i) for i in range(n)]
        self.ports = ports or ([7000] * n if hosts else free_ports(n))
        self.notify_path = os.path.join(self.dir, "notify")
        self.notify = Notify(self.notify_path)
        self.proxy = proxy
        # A gossipcerts.Membership: [Cluster] sections instead of [Peer]s.
        self.membership = None

    def host(self, i):
        return self.hosts[i] if self.hosts else "127.0.0.1"

    def bin(self, *parts):
        return os.path.join(self.build, *parts)

    def make_key(self, i):
        """A private key file and its public key, via gossipd itself."""
        path = os.path.join(self.dir, "k%d" % i)
        conf = os.path.join(self.dir, "key%d.conf" % i)
        with open(conf, "w") as f:
            f.write("[Node]\nPrivateKeyFile = %s\n" % path)
        out = subprocess.run([self.gossipd, "--config", conf,
                              "--check-config"], capture_output=True,
                             text=True, check=True)
        return path, out.stdout.strip()

    def neighbours(self, i):
        """Node i's neighbours in ascending order: the order gossip-sim
        gives a node's edges, so updates are summed in the same order."""
        return sorted([b for a, b in self.edges if a == i] +
                      [a for a, b in self.edges if b == i])

    def endpoint(self, i, j):
        """Node i's Endpoint for peer j, "host:port": peer j's own
        address, or the proxy's port for the link i -> j."""
        host = self.hosts[j] if self.hosts else self.endpoint_host
        port = self.ports[j]
        if self.proxy is not None:
            host, port = self.proxy.link(i, j, self.host(j), port)
        return ("[%s]:%d" if ":" in host else "%s:%d") % (host, port)

    def write_config(self, i, extra_peers=(), node_conf=None, drop_peers=(), weights=None):
        """Writes node i's config: its neighbours (less drop_peers) as
        [Peer]s, with a Weight for those in weights ({peer: w}), or with
        membership its [Cluster] section instead, then extra_peers
        ((public key, endpoint) pairs)."""
        path = os.path.join(self.dir, "n%d.conf" % i)
        with open(path, "w") as f:
            f.write("[Node]\nListenAddress = %s:%d\nPrivateKeyFile = %s\n"
                    "Socket = %s\nLogLevel = debug\n%s\n"
                    % (self.host(i), self.ports[i], self.keys[i][0], self.sockets[i],
                       self.node_conf if node_conf is None else node_conf))
            if self.sim_seed is not None:
                f.write("SimSeed = %d\n" % self.sim_seed)
            if self.indexed:
                f.write("Index = %d\n" % i)
            if self.membership is not None:
                f.write(self.membership.section(i))
            for j in ([] if self.membership else self.neighbours(i)):
                if j in drop_peers:
                    continue
                f.write("[Peer]\nPublicKey = %s\n" % self.keys[j][1])
                if self.peer_names:
                    f.write("Name = node%d\n" % j)
                if i not in self.listen_only:
                    f.write("Endpoint = %s\n" % self.endpoint(i, j))
                if weights and j in weights:
                    f.write("Weight = %r\n" % weights[j])
                if self.indexed:
                    f.write("Index = %d\n" % j)
            for pub, endpoint in extra_peers:
                f.write("[Peer]\nPublicKey = %s\n" % pub)
                if endpoint:
                    f.write("Endpoint = %s\n" % endpoint)
        return path

    def start(self, nodes=None, extra_env=None, **kw):
        """Starts the daemons of nodes (all), with extra_env added to
        their environment, START_BATCH at a time, each batch awaited
        through its READY=1; kw goes to write_config.  A test that sets a
        test hook (TEST_HOOKS) is skipped when gossipd was built without
        them."""
        nodes = list(range(self.n) if nodes is None else nodes)
        env = dict(os.environ, NOTIFY_SOCKET=self.notify_path, **(extra_env or {}))
        if any(k in env for k in TEST_HOOKS) and not has_test_hooks(self.bin("daemon", "gossipd")):
            raise unittest.SkipTest("%s needs gossipd built with meson -Dtest_hooks=true "
                                    "(tools/run-tests builds it so)"
                                    % "/".join(k for k in TEST_HOOKS if k in env))
        for k in range(0, len(nodes), START_BATCH):
            batch = nodes[k:k + START_BATCH]
            for i in batch:
                conf = self.write_config(i, **kw)
                log = open(self.logs[i], "a")
                self.procs[i] = subprocess.Popen(
                    self.wrap(i) + [self.gossipd, "--config", conf],
                    stderr=log, stdout=log, env=env)
                log.close()
            self.wait_ready(len(batch))

    def wait_ready(self, count):
        """Counts READY=1 datagrams: one per daemon, never a sleep."""
        ready = self.notify.claim_ready(count, READY_TIMEOUT)
        if ready < count:
            raise AssertionError("only %d of %d daemons became ready:\n%s"
                                 % (ready, count, self.tail_logs()))

    def trainer(self, i, *args):
        cmd = [self.bin("tests", "harness", "gossip-testtrainer"), "--socket",
               self.sockets[i], "--node-index", str(i), "--quiet"] + list(args)
        return subprocess.Popen(cmd, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)

    def train(self, i, *args):
        """gossip-train as node i's trainer: shard i of n, JSON lines."""
        cmd = [self.bin("examples", "gossip-train"), "--socket", self.sockets[i],
               "--node", str(i), "--nodes", str(self.n), "--json"] + list(args)
        return subprocess.Popen(cmd, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)

    def run_trainers(self, args_of, timeout=300):
        procs = [self.trainer(i, *args_of(i)) for i in range(self.n)]
        outs = []
        for i, p in enumerate(procs):
            out, err = p.communicate(timeout=timeout)
            outs.append((p.returncode, out, err))
        for i, (rc, out, err) in enumerate(outs):
            if rc != 0:
                raise AssertionError("trainer %d exited %d: %s\n%s"
                                     % (i, rc, err, self.tail_logs()))
        return outs

    def stop(self, i, sig=signal.SIGTERM, timeout=5.0):
        """Signals daemon i; returns (exit code, seconds to exit)."""
        p = self.procs[i]
        t0 = time.monotonic()
        p.send_signal(sig)
        rc = p.wait(timeout=timeout)
        self.procs[i] = None
        return rc, time.monotonic() - t0

    def close(self):
        for i, p in enumerate(self.procs):
            if p is not None:
                p.kill()
                p.wait()
        if self.proxy is not None:
            self.proxy.close()
        self.notify.close()

    def remove(self):
        """Deletes the cluster's directory (keys, configs, logs)."""
        import shutil
        shutil.rmtree(self.dir, ignore_errors=True)

    def sanitizer_reports(self):
        """Lines of AddressSanitizer/UBSan/LeakSanitizer reports in any log."""
        bad = []
        for i in range(self.n):
            if os.path.exists(self.logs[i]):
                bad += ["gossipd %d: %s" % (i, line) for line in self.log(i).splitlines()
                        if "Sanitizer" in line or "runtime error" in line]
        return bad

    def log(self, i):
        with open(self.logs[i], errors="replace") as f:
            return f.read()

    def tail_logs(self, lines=15):
        out = []
        for i in range(self.n):
            if os.path.exists(self.logs[i]):
                out.append("--- gossipd %d ---\n" % i +
                           "\n".join(self.log(i).splitlines()[-lines:]))
        return "\n".join(out)


def owned_by(case, c):
    """Hands Cluster c to the unittest.TestCase case: at cleanup it is
    closed, its logs must hold no sanitizer report, and its directory is
    removed (kept with GSP_KEEP_TMP=1).  Returns c."""
    if not os.environ.get("GSP_KEEP_TMP"):
        case.addCleanup(c.remove)
    case.addCleanup(lambda: case.assertEqual(c.sanitizer_reports(), []))
    case.addCleanup(c.close)
    return c


def network_stats(initial, final):
    """(mean_drift, error0, error1) over lists of per-node float arrays."""
    n, f = len(final), len(final[0])
    mean0 = [sum(x[j] for x in initial) / n for j in range(f)]
    mean1 = [sum(x[j] for x in final) / n for j in range(f)]
    drift = max(abs(a - b) for a, b in zip(mean0, mean1))
    scale = max(abs(a) for a in mean0)
    err0 = sum((x[j] - mean0[j]) ** 2 for x in initial for j in range(f)) / n
    err1 = sum((x[j] - mean1[j]) ** 2 for x in final for j in range(f)) / n
    return drift / scale, err0, err1


def spread(xs):
    """The largest distance of a value from its mean over the arrays xs
    (measure's drift is relative to that of the initial arrays)."""
    mean = [sum(v) / len(xs) for v in zip(*xs)]
    return max(abs(v - m) for x in xs for v, m in zip(x, mean))


def measure(x0, x1):
    """(drift, rms0, rms1): the network average's drift relative to the
    initial spread (the largest distance of a value from its mean over
    the nodes, as in test_stragglers.py), and the root mean square
    distance of the values from their mean over the nodes, initial and
    final (the consensus error; it falls as the nodes agree)."""
    n, f = len(x0), len(x0[0])
    mean0 = [sum(x[k] for x in x0) / n for k in range(f)]
    mean1 = [sum(x[k] for x in x1) / n for k in range(f)]
    drift = max(abs(mean1[k] - mean0[k]) for k in range(f)) / spread(x0)
    rms0 = math.sqrt(sum((x[k] - mean0[k]) ** 2 for x in x0 for k in range(f)) / (n * f))
    rms1 = math.sqrt(sum((x[k] - mean1[k]) ** 2 for x in x1 for k in range(f)) / (n * f))
    return drift, rms0, rms1


def read_reply(s):
    """One frame's body from the blocking socket s (the local API's
    framing, PROTOCOL.md 2), or None if the connection closed first."""
    head = b""
    while len(head) < 4:
        chunk = s.recv(4 - len(head))
        if not chunk:
            return None
        head += chunk
    (n,) = struct.unpack("<I", head)
    body = b""
    while len(body) < n:
        chunk = s.recv(n - len(body))
        if not chunk:
            return None
        body += chunk
    return body


def register_raw(path, name, tensors, values=None):
    """HELLO as `name` and REGISTER `tensors` ((name, shape) pairs) with a
    memfd (sealed, as gossipd requires) holding `values` (floats; zeros
    when None), standard library only; returns (socket, reply body, the
    buffer mapped).  The registration lasts while the socket is open."""
    P = gossipd.protocol
    ts, floats = P.tensor_list(tensors)
    fd = os.memfd_create("params", os.MFD_CLOEXEC | os.MFD_ALLOW_SEALING)
    os.ftruncate(fd, 4 * floats)
    fcntl.fcntl(fd, fcntl.F_ADD_SEALS, fcntl.F_SEAL_SHRINK | fcntl.F_SEAL_GROW)
    buf = mmap.mmap(fd, 4 * floats)
    if values is not None:
        buf[:] = array.array("f", values).tobytes()
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(10)
    s.connect(path)
    s.sendall(P.frame(P.encode_hello(name)))
    read_reply(s)
    socket.send_fds(s, [P.frame(P.encode_register(4 * floats, ts))], [fd])
    os.close(fd)
    return s, read_reply(s), buf


def send_until_stalled(s, data, timeout, stall):
    """Sends data on the non-blocking socket s until all is sent, timeout
    seconds pass, or the peer takes nothing for stall seconds (it stopped
    reading and the buffers are full); returns the bytes sent."""
    import select
    sent, deadline = 0, time.monotonic() + timeout
    while sent < len(data) and time.monotonic() < deadline:
        if not select.select([], [s], [], stall)[1]:
            break
        try:
            sent += s.send(data[sent:sent + 65536])
        except BlockingIOError:
            pass
    return sent


def status(path):
    """The daemon's status document, read with the Python client
    (bindings/python/gossipd; only its standard-library part is used)."""
    with gossipd.Client(path, "integration-test", timeout=10) as api:
        return api.status()


def eventually(cond, timeout=15.0, interval=0.02):
    """Polls cond() until it is true or the timeout passes; returns its
    last value.  A bounded wait for a condition, not a fixed delay."""
    import select
    deadline = time.monotonic() + timeout
    while True:
        value = cond()
        if value or time.monotonic() >= deadline:
            return value
        select.select([], [], [], interval)


def kill(proc):
    """Kills a trainer and collects its pipes."""
    proc.kill()
    proc.communicate()
