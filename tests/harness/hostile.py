"""tests/harness/hostile.py: a hostile client for the soak (tests/harness/soak), run in
a thread of its own against a cluster's daemons, on loopback only.

In a loop, at most `rate` attempts a second (and a small sleep after
each), for at most `duration` seconds and `max_attempts` attempts, it
takes the next kind of attack in turn and a daemon at random (seeded),
and makes one attempt:

on the daemon's API Unix socket
  api_garbage       connect, send 1-512 random bytes
  api_bad_register  HELLO, then a REGISTER cut short (with a memfd)
  api_pipeline      HELLO, then 1 MB of STATUS requests without reading
                    a reply, then close
  api_unsealed      HELLO, then a well-formed REGISTER of an unsealed
                    memfd
on the daemon's peer TCP port, from SOURCE (127.0.0.2: another loopback
address, so the daemon's per-address pre-authentication caps and
handshake rate count the attacker apart from the real peers, which come
from 127.0.0.1)
  peer_random       connect, send 1-256 random bytes
  peer_forged_init  an HS_INIT frame of the right size, type and version
                    with a random payload
  peer_trickle      the first TRICKLE_BYTES of an HS_INIT frame, one byte
                    per turn of the loop, then nothing

Each attempt is counted (attempts, per_node) with what the daemon did:
refused (refused, refused_per_node): it closed the connection by itself
(garbage, bad register, random, forged; a trickle by its handshake
deadline, 5 s from accept), stopped reading (pipeline: PROTOCOL.md 5.1),
or answered ERROR (unsealed); errors: a connect refused or a timeout
on our side.  An unsealed memfd accepted, or a trickled connection
still open after HOLD_MAX s, is an anomaly (anomalies).  REFUSED_BY
names the daemon counters (status "counters") that each refusal bumps.
Messages come from gossipd.protocol's encoders.  Standard library only;
every wait is bounded; stop() closes every connection it holds.

    h = Hostile(sockets, ports, seed=1, rate=10, duration=600)
    h.start(); ...; h.stop()
    print(h.summary()); h.refused_per_node[i]["api_garbage"]; h.anomalies
"""
import fcntl
import ipaddress
import os
import random
import select
import socket
import struct
import threading
import time

import gossipcluster as cluster

P = cluster.gossipd.protocol

KINDS = ("api_garbage", "api_bad_register", "api_pipeline", "api_unsealed",
         "peer_random", "peer_forged_init", "peer_trickle")
# Daemon counters a refused attack of each kind bumps (status "counters").
REFUSED_BY = {
    "api_garbage": ("api_malformed",),
    "api_bad_register": ("api_malformed",),
    "peer_random": ("rx_malformed", "hs_refused", "hs_mac1_bad", "version_mismatch",
                    "hs_rate_limited"),
    "peer_forged_init": ("rx_malformed", "hs_refused", "hs_mac1_bad", "version_mismatch",
                         "hs_rate_limited"),
}
# STATUS requests of one api_pipeline (1 MB): far more than the socket
# buffers hold, so a daemon that stopped reading is seen.
PIPELINE = P.frame(P.encode_status()) * 200000
HS_INIT_BODY = 129                 # PROTOCOL.md 4.2, without a certificate
TRICKLE_BYTES = 24                 # of the 131 of a whole HS_INIT frame
TRICKLE_MAX = 16                   # trickled connections open at once, at most
HOLD_MAX = 10.0                    # s: the handshake deadline (5 s) and slack
WAIT = 2.0                         # s: for a reply or a close
IP_BIND_ADDRESS_NO_PORT = getattr(socket, "IP_BIND_ADDRESS_NO_PORT", 24)


def loopback(host):
    if not ipaddress.ip_address(host).is_loopback:
        raise ValueError("%s is not a loopback address" % host)
    return host


def closed_by_peer(s, timeout):
    """Reads and drops what comes until the other end closes (True) or
    timeout seconds pass (False; 0: look once); at most 1 MiB."""
    deadline = time.monotonic() + timeout
    got = 0
    while got < 1 << 20:
        left = max(0.0, deadline - time.monotonic())
        if not select.select([s], [], [], left)[0]:
            return False
        try:
            data = s.recv(65536, socket.MSG_DONTWAIT)
        except BlockingIOError:
            continue
        except OSError:
            return True                     # reset
        if not data:
            return True
        got += len(data)
    return False


class Hostile:
    def __init__(self, sockets, ports, seed=1, rate=10.0, duration=600.0,
                 max_attempts=100000, host="127.0.0.1", source="127.0.0.2"):
        self.sockets = list(sockets)
        self.ports = list(ports)
        self.host = loopback(host)
        self.source = loopback(source)
        self.rng = random.Random(seed)
        self.rate = rate
        self.duration = duration
        self.max_attempts = max_attempts
        self.attempts = dict.fromkeys(KINDS, 0)
        self.refused = dict.fromkeys(KINDS, 0)
        self.errors = dict.fromkeys(KINDS, 0)
        self.per_node = [dict.fromkeys(KINDS, 0) for _ in self.sockets]
        self.refused_per_node = [dict.fromkeys(KINDS, 0) for _ in self.sockets]
        self.unsealed_refused_for_seals = 0
        self.open_at_stop = 0       # trickles we closed ourselves at the end
        self.anomalies = []
        self.trickles = []          # [sock, node, t_connect, bytes to send]
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True, name="hostile")

    def start(self):
        self._thread.start()

    def stop(self, timeout=30.0):
        """Ends the loop, closes every connection it holds."""
        self._stop.set()
        self._thread.join(timeout)
        if self._thread.is_alive():
            self.anomalies.append("the hostile client did not stop in %g s" % timeout)

    def total(self):
        return sum(self.attempts.values())

    def summary(self):
        return ", ".join("%s %d (refused %d%s)" % (
            k, self.attempts[k], self.refused[k],
            ", errors %d" % self.errors[k] if self.errors[k] else "") for k in KINDS) + (
            "; %d trickles still open at the stop" % self.open_at_stop)

    # -- the loop --

    def _run(self):
        t0 = time.monotonic()
        deadline = t0 + self.duration
        k = 0
        try:
            while (not self._stop.is_set() and time.monotonic() < deadline
                   and k < self.max_attempts):
                kind = KINDS[k % len(KINDS)]
                k += 1
                node = self.rng.randrange(len(self.sockets))
                if kind == "peer_trickle" and len(self.trickles) >= TRICKLE_MAX:
                    continue
                self._attempt(kind, node)
                self._tend_trickles()
                # At most `rate` a second, and a small sleep in any case.
                wait = max(0.005, t0 + k / self.rate - time.monotonic())
                self._stop.wait(wait)
        finally:
            self.open_at_stop = len(self.trickles)
            for t in self.trickles:
                t[0].close()
            self.trickles = []

    def _attempt(self, kind, node):
        self.attempts[kind] += 1
        self.per_node[node][kind] += 1
        try:
            refused = getattr(self, "_" + kind)(node)
        except (OSError, cluster.gossipd.GossipdError):
            self.errors[kind] += 1
            return
        if refused:
            self.refused[kind] += 1
            self.refused_per_node[node][kind] += 1

    def _api(self, node, hello=True):
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            s.settimeout(WAIT)
            s.connect(self.sockets[node])
            if hello:
                s.sendall(P.frame(P.encode_hello("hostile")))
                if cluster.read_reply(s) is None:
                    raise ConnectionResetError("closed after HELLO")
        except BaseException:
            s.close()
            raise
        return s

    def _peer(self, node):
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        try:
            s.settimeout(WAIT)
            # The local port is picked at connect(), per destination.
            s.setsockopt(socket.IPPROTO_IP, IP_BIND_ADDRESS_NO_PORT, 1)
            s.bind((self.source, 0))
            s.connect((self.host, self.ports[node]))
        except BaseException:
            s.close()
            raise
        return s

    def _api_garbage(self, node):
        with self._api(node, hello=False) as s:
            s.sendall(self.rng.randbytes(self.rng.randint(1, 512)))
            return closed_by_peer(s, WAIT)

    def _register(self, s, body, n_bytes, seal=False):
        fd = os.memfd_create("hostile", os.MFD_CLOEXEC | os.MFD_ALLOW_SEALING)
        try:
            os.ftruncate(fd, n_bytes)
            if seal:
                fcntl.fcntl(fd, fcntl.F_ADD_SEALS, fcntl.F_SEAL_SHRINK | fcntl.F_SEAL_GROW)
            socket.send_fds(s, [P.frame(body)], [fd])
        finally:
            os.close(fd)

    def _api_bad_register(self, node):
        with self._api(node) as s:
            ts, n = P.tensor_list([("w", (16,))])
            self._register(s, P.encode_register(4 * n, ts)[:-3], 4 * n)
            return closed_by_peer(s, WAIT)

    def _api_pipeline(self, node):
        """Refused: the daemon stopped reading before it had all (it
        reads no request while a reply is unsent, PROTOCOL.md 5.1)."""
        with self._api(node) as s:
            s.setblocking(False)
            return cluster.send_until_stalled(s, PIPELINE, 1.0, 0.2) < len(PIPELINE)

    def _api_unsealed(self, node):
        """Refused: an ERROR reply (for the seals, or because a trainer
        holds the model: both refuse the buffer)."""
        with self._api(node) as s:
            ts, n = P.tensor_list([("w", (256,))])
            self._register(s, P.encode_register(4 * n, ts), 4 * n)
            body = cluster.read_reply(s)
            if body is None:
                return False
            if body[:1] != bytes([P.ERROR]):
                self.anomalies.append("gossipd %d answered 0x%02x to the REGISTER of "
                                      "an unsealed memfd" % (node, body[0]))
                return False
            if "F_SEAL_SHRINK" in P.decode_error(body).text:
                self.unsealed_refused_for_seals += 1
            return True

    def _peer_random(self, node):
        with self._peer(node) as s:
            s.sendall(self.rng.randbytes(self.rng.randint(1, 256)))
            return closed_by_peer(s, WAIT)

    def _peer_forged_init(self, node):
        with self._peer(node) as s:
            head = struct.pack("<IBH", HS_INIT_BODY, 0x10, P.VERSION)
            s.sendall(head + self.rng.randbytes(HS_INIT_BODY - 3))
            return closed_by_peer(s, WAIT)

    def _peer_trickle(self, node):
        s = self._peer(node)
        s.setblocking(False)
        head = struct.pack("<IBH", HS_INIT_BODY, 0x10, P.VERSION)
        self.trickles.append([s, node, time.monotonic(),
                              head + self.rng.randbytes(TRICKLE_BYTES - len(head))])
        return False          # refused when the daemon closes it: _tend_trickles

    def _tend_trickles(self):
        """One more byte on each trickled connection; the ones the daemon
        closed are counted and dropped, the ones held too long too."""
        keep = []
        for t in self.trickles:
            s, node, t_open, rest = t
            if closed_by_peer(s, 0):
                self.refused["peer_trickle"] += 1
                self.refused_per_node[node]["peer_trickle"] += 1
                s.close()
                continue
            if time.monotonic() - t_open > HOLD_MAX:
                self.anomalies.append("gossipd %d held a trickled handshake open "
                                      "%.0f s" % (node, HOLD_MAX))
                s.close()
                continue
            if rest:
                try:
                    s.send(rest[:1])
                    t[3] = rest[1:]
                except OSError:
                    pass
            keep.append(t)
        self.trickles = keep
