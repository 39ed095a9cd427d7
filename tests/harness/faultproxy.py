#!/usr/bin/env python3
"""A loopback TCP proxy that resets gossipd peer connections (the faults
suite, tests/integration/test_faults.py).  Standard library only.

One listening port per directed neighbour link (node i's Endpoint for
peer j), each forwarding to the real daemon's port.  Bytes are forwarded
unchanged; the proxy only reads the frame length prefix (proto/PROTOCOL.md
section 2: a u32 little-endian body length, in clear on every frame,
handshake and transport alike) to know where frames begin and end.  As
each frame's header completes, a seeded RNG decides, with probability
1 / mean_frames, to reset the connection in that frame:

- "inside": only the first k bytes of the frame go through, k drawn in
  1 .. 4 + len - 1 (inside the header or the body);
- "between": the whole frame goes through, and nothing after it.

Then both sides are closed abruptly: forwarding stops in both directions,
and after a pause of 0-5 ms (so that the receiver sometimes has read the
last bytes and sometimes not) both sockets are closed with SO_LINGER 0,
which sends an RST.  At most max_resets resets in all; then the proxy
only forwards.

Addresses are loopback only (127.0.0.0/8, ::1): anything else is
refused.  The proxy runs an asyncio loop in a thread of its own, so a
test drives it from ordinary blocking code; link() binds the listening
socket at once, so its port can go into a config before any daemon
starts.

    proxy = FaultProxy(seed=1, mean_frames=50, max_resets=400)
    host, port = proxy.link(0, 1, "127.0.0.1", daemon1_port)  # 0's Endpoint for 1
    ...
    proxy.close()
    print(proxy.summary())      # "resets 37 (inside 19, between 18) of 1850 frames..."

It counts the bytes it reads from each end of each link (link_bytes;
sent(i, j): what node i wrote to node j on both links' ports), so a
test can check the daemons' wire counters against it.  connect_wait
keeps a connection whose daemon behind does not listen yet (a cluster
starting) instead of dropping it with its first bytes unread.

first_frames[(src, dst)] lists, in order, the first frame (length prefix
included) that each connection of a link forwarded from the dialing
daemon: its HS_INIT, for tests that replay one.

Two more faults, each on demand:

- handshake_resets=N: the first N connections of every link are reset
  inside the handshake, at a random byte of the dialer's HS_INIT or of
  the answer (counted in handshake_cuts), whatever mean_frames says;
- blackhole(a, b): the links between nodes a and b stop forwarding,
  existing connections and new ones alike, without closing anything
  (a network that drops every packet), until blackhole(a, b, False).

gossipcluster.Cluster(..., proxy=proxy) points every Endpoint at the
proxy.  As a program (manual experiments, e.g. with tools/gossip-cluster):

    tests/harness/faultproxy.py --seed 1 --mean-frames 50 --max-resets 100 \\
        7100:7001 7101:7000        # listen on 7100, forward to 7001, ...
"""
import argparse
import asyncio
import ipaddress
import random
import signal
import socket
import struct
import sys
import threading
import time

LINGER_RST = struct.pack("ii", 1, 0)
MAX_PAUSE = 0.005        # seconds between the cut and the RST, at most


def check_loopback(host):
    """Refuses any address that is not on this machine's loopback."""
    try:
        addr = ipaddress.ip_address(host)
    except ValueError:
        raise ValueError("%r is not a numeric address" % host)
    if not addr.is_loopback:
        raise ValueError("%s is not a loopback address" % host)
    return host


class _Cutter:
    """Follows the frames of one direction of one connection and says
    where to cut.  feed(data) returns how many bytes of data to forward
    and whether to reset after them."""

    def __init__(self, proxy, rng, cut_first=False):
        self.proxy = proxy
        self.rng = rng
        self.cut_first = cut_first   # reset inside the first frame
        self.header = b""        # partial length prefix
        self.body_left = 0       # body bytes of the current frame to come
        self.pos = 0             # stream offset of the next byte fed
        self.cut_at = None       # stream offset to reset at, once decided
        self.kind = None

    def feed(self, data):
        start = self.pos
        i = 0
        while i < len(data) and self.cut_at is None:
            if self.body_left:
                take = min(self.body_left, len(data) - i)
                self.body_left -= take
                i += take
                if not self.body_left:
                    self.proxy.frames += 1
                continue
            take = min(4 - len(self.header), len(data) - i)
            self.header += data[i:i + take]
            i += take
            if len(self.header) < 4:
                continue
            frame_start = start + i - 4
            (length,) = struct.unpack("<I", self.header)
            self.header = b""
            self.body_left = length
            if not length:
                self.proxy.frames += 1       # malformed; the daemon says so
            if self.cut_first:
                self.cut_first = False
                self.proxy.handshake_cuts += 1
                self.kind = "inside"
                self.cut_at = max(frame_start + self.rng.randint(1, 3 + max(length, 1)),
                                  start)
            elif self.proxy._decide(self.rng):
                if self.rng.random() < self.proxy.inside_fraction and length:
                    self.kind = "inside"
                    cut = frame_start + self.rng.randint(1, 3 + length)
                else:
                    self.kind = "between"
                    cut = frame_start + 4 + length
                # A header split over two reads: its first bytes are gone.
                self.cut_at = max(cut, start)
        self.pos = start + len(data)
        if self.cut_at is not None and self.cut_at <= self.pos:
            return self.cut_at - start, True
        return len(data), False


class _Conn:
    def __init__(self, client, upstream):
        self.socks = (client, upstream)
        self.tasks = []
        self.dead = False


class FaultProxy:
    """See the module's text.  seed: the RNG seed (each link direction
    draws from its own stream, derived from it); mean_frames: a reset
    about once per that many frames forwarded (0: never); max_resets: the
    cap; inside_fraction: the share of resets that cut inside a frame."""

    def __init__(self, seed=1, mean_frames=50, max_resets=100,
                 inside_fraction=0.5, host="127.0.0.1", connect_wait=0.0,
                 handshake_resets=0):
        self.seed = seed
        self.handshake_resets = handshake_resets
        self.handshake_cuts = 0      # resets inside a handshake (above)
        self.blocked = set()         # links that forward nothing (blackhole)
        self.link_conns = {}         # (src, dst) -> connections accepted
        self.accept_times = {}       # (src, dst) -> [time.monotonic() of each]
        # Seconds to keep trying the daemon behind a link before giving
        # up on a connection (0: one try).  While a cluster starts, a
        # dial may reach the proxy before the daemon behind listens; with
        # a wait its first bytes are not thrown away unread.
        self.connect_wait = connect_wait
        self.mean_frames = mean_frames
        self.max_resets = max_resets
        self.inside_fraction = inside_fraction
        self.host = check_loopback(host)
        self.enabled = True          # False: forward only, reset nothing
        self.frames = 0              # complete frames forwarded
        self.resets = 0
        self.resets_inside = 0
        self.resets_between = 0
        self.connections = 0         # accepted
        self.connect_failures = 0    # the daemon behind was not there
        self.links = {}              # (src, dst) -> listening port
        self.link_resets = {}        # (src, dst) -> resets
        # (src, dst) -> [bytes read from src, bytes read from dst] on
        # that link's connections: what each end wrote into them
        self.link_bytes = {}
        # (src, dst) -> connections that ended on an error (a reset by
        # either end): the bytes in flight then were never read
        self.link_errors = {}
        self.first_frames = {}       # (src, dst) -> [first frame forwarded]
        self._listeners = []
        self._conns = set()
        self._closed = False
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever,
                                       daemon=True, name="faultproxy")
        self.thread.start()

    # -- the test's side (any thread) --

    def link(self, src, dst, target_host, target_port, listen_port=0):
        """Listens for the directed link src -> dst (node src's Endpoint
        for peer dst) and forwards to target_host:target_port.  Returns
        (host, port) to write as the Endpoint.  The same link again
        returns the same port."""
        if (src, dst) in self.links:
            return self.host, self.links[(src, dst)]
        check_loopback(target_host)
        lsock = socket.socket(socket.AF_INET6 if ":" in self.host
                              else socket.AF_INET, socket.SOCK_STREAM)
        lsock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        lsock.bind((self.host, listen_port))
        lsock.listen(64)
        lsock.setblocking(False)
        port = lsock.getsockname()[1]
        self.links[(src, dst)] = port
        self.link_resets[(src, dst)] = 0
        self.link_bytes[(src, dst)] = [0, 0]
        self.link_errors[(src, dst)] = 0
        self.first_frames[(src, dst)] = []
        self.link_conns[(src, dst)] = 0
        self.accept_times[(src, dst)] = []
        self._listeners.append(lsock)
        asyncio.run_coroutine_threadsafe(
            self._serve(lsock, (src, dst), (target_host, target_port)), self.loop)
        return self.host, port

    def sent(self, src, dst):
        """Bytes node src wrote to node dst through the proxy, as the
        proxy read them (forwarded unless a reset cut them), on both
        links' ports: each end may have dialed."""
        fwd = self.link_bytes.get((src, dst), [0, 0])[0]
        rev = self.link_bytes.get((dst, src), [0, 0])[1]
        return fwd + rev

    def errors(self, a, b):
        """Connections between nodes a and b (either port) that ended on
        an error: what was in flight then is not in sent()."""
        return self.link_errors.get((a, b), 0) + self.link_errors.get((b, a), 0)

    def blackhole(self, a, b, on=True):
        """Stops (on) or resumes forwarding on both links between nodes
        a and b: their connections stay open, nothing goes through."""
        for link in ((a, b), (b, a)):
            if on:
                self.blocked.add(link)
            else:
                self.blocked.discard(link)

    def stats(self):
        return {"resets": self.resets, "inside": self.resets_inside,
                "between": self.resets_between, "frames": self.frames,
                "connections": self.connections,
                "connect_failures": self.connect_failures}

    def summary(self):
        how = ("1 in %s frames, cap %d" % (self.mean_frames, self.max_resets)
               if self.mean_frames and self.max_resets else "resets off")
        if self.handshake_resets:
            how += ", the first %d connections of each link cut in the handshake" % (
                self.handshake_resets)
        return ("resets %d (inside %d, between %d; in a handshake %d) of %d frames "
                "forwarded, %d connections (seed %s, %s)" % (
                    self.resets, self.resets_inside, self.resets_between,
                    self.handshake_cuts, self.frames, self.connections, self.seed, how))

    def close(self):
        """Stops listening, resets every connection, ends the thread.
        The counts stay readable."""
        if self._closed:
            return
        self._closed = True
        try:
            asyncio.run_coroutine_threadsafe(self._shutdown(), self.loop).result(10)
        finally:
            self.loop.call_soon_threadsafe(self.loop.stop)
            self.thread.join(timeout=10)
            if not self.thread.is_alive():
                self.loop.close()

    # -- the loop's side --

    def _decide(self, rng):
        if not self.enabled or not self.mean_frames:
            return False
        if self.resets >= self.max_resets:
            return False
        return rng.random() < 1.0 / self.mean_frames

    async def _serve(self, lsock, link, target):
        loop = asyncio.get_running_loop()
        while True:
            try:
                client, _ = await loop.sock_accept(lsock)
            except (OSError, asyncio.CancelledError):
                return
            self.connections += 1
            self.link_conns[link] += 1
            self.accept_times[link].append(time.monotonic())
            client.setblocking(False)
            loop.create_task(self._handle(client, link, target))

    async def _handle(self, client, link, target):
        loop = asyncio.get_running_loop()
        conn = _Conn(client, None)
        self._conns.add(conn)
        try:
            if not await self._connect(conn, target):
                self.connect_failures += 1
                self._abort(conn)
                return
            upstream = conn.socks[1]
            for s in conn.socks:
                s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            n = self.connections
            # Within the first handshake_resets of the link: one
            # direction's first frame is cut (HS_INIT or the answer).
            cut = [False, False]
            if self.link_conns[link] <= self.handshake_resets:
                cut[random.Random("%s:%s:%s:%d:hs" % (
                    self.seed, link[0], link[1], n)).randrange(2)] = True
            conn.tasks = [
                loop.create_task(self._pump(conn, client, upstream, link, 0,
                                            random.Random("%s:%s:%s:%d:fwd" % (
                                                self.seed, link[0], link[1], n)),
                                            self.first_frames[link], cut[0])),
                loop.create_task(self._pump(conn, upstream, client, link, 1,
                                            random.Random("%s:%s:%s:%d:rev" % (
                                                self.seed, link[0], link[1], n)),
                                            None, cut[1])),
            ]
            await asyncio.gather(*conn.tasks, return_exceptions=True)
        finally:
            # Both directions ended in order: an orderly close; else RST.
            self._abort(conn, rst=conn.dead)
            self._conns.discard(conn)

    async def _connect(self, conn, target):
        """Connects conn's upstream socket to target (retrying for
        connect_wait seconds); False if it could not."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.connect_wait
        while True:
            upstream = socket.socket(socket.AF_INET6 if ":" in target[0]
                                     else socket.AF_INET, socket.SOCK_STREAM)
            upstream.setblocking(False)
            conn.socks = (conn.socks[0], upstream)
            try:
                await asyncio.wait_for(loop.sock_connect(upstream, target), 5)
                return True
            except (OSError, asyncio.TimeoutError):
                if conn.dead or loop.time() >= deadline:
                    return False
            upstream.close()
            await asyncio.sleep(0.02)

    async def _pump(self, conn, src, dst, link, way, rng, first=None,
                    cut_first=False):
        """Forwards src to dst (way 0: from the dialing end, 1: back),
        counting the bytes; appends the first whole frame forwarded to
        the list first, if given; cut_first: resets inside the first
        frame.  Reads nothing while the link is blackholed."""
        loop = asyncio.get_running_loop()
        cutter = _Cutter(self, rng, cut_first)
        head = b""
        try:
            while not conn.dead:
                await self._unblocked(conn, link)
                data = await loop.sock_recv(src, 65536)
                await self._unblocked(conn, link)
                if not data:
                    # An orderly close goes through as one.
                    try:
                        dst.shutdown(socket.SHUT_WR)
                    except OSError:
                        pass
                    return
                self.link_bytes[link][way] += len(data)
                n, reset = cutter.feed(data)
                if n and not conn.dead:
                    await loop.sock_sendall(dst, data[:n])
                    if first is not None:
                        head += data[:n]
                        if len(head) >= 4:
                            end = 4 + struct.unpack("<I", head[:4])[0]
                            if len(head) >= end:
                                first.append(head[:end])
                                first = None
                if reset and not conn.dead:
                    await self._reset(conn, link, cutter.kind, rng)
                    return
        except asyncio.CancelledError:
            raise
        except OSError:
            # A reset or an error on one side is passed on as a reset.
            if not conn.dead:
                self.link_errors[link] += 1
            self._abort(conn)

    async def _unblocked(self, conn, link):
        """Waits while the link is blackholed."""
        while link in self.blocked and not conn.dead:
            await asyncio.sleep(0.01)

    async def _reset(self, conn, link, kind, rng):
        conn.dead = True
        self.resets += 1
        self.link_resets[link] += 1
        if kind == "inside":
            self.resets_inside += 1
        else:
            self.resets_between += 1
        me = asyncio.current_task()
        for t in conn.tasks:
            if t is not me:
                t.cancel()
        await asyncio.sleep(rng.random() * MAX_PAUSE)
        self._abort(conn)

    def _abort(self, conn, rst=True):
        """Closes both sockets, with an RST unless rst is False.  The fds
        leave the selector first (which cancels the pending handles), so
        a pump cancelled later cannot unregister a new socket that got
        the same fd number."""
        conn.dead = True
        for s in conn.socks:
            if s is None or s.fileno() < 0:
                continue
            self.loop.remove_reader(s.fileno())
            self.loop.remove_writer(s.fileno())
            if rst:
                try:
                    s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, LINGER_RST)
                except OSError:
                    pass
            s.close()
        me = asyncio.current_task()
        for t in conn.tasks:
            if t is not me:
                t.cancel()

    async def _shutdown(self):
        for lsock in self._listeners:
            if lsock.fileno() >= 0:
                self.loop.remove_reader(lsock.fileno())
            lsock.close()
        for conn in list(self._conns):
            self._abort(conn)
        me = asyncio.current_task()
        rest = [t for t in asyncio.all_tasks() if t is not me]
        for t in rest:
            t.cancel()
        await asyncio.gather(*rest, return_exceptions=True)


def main(argv=None):
    ap = argparse.ArgumentParser(
        description="Loopback TCP proxy that resets connections at random "
                    "frames (gossipd's faults suite).")
    ap.add_argument("--seed", default="1")
    ap.add_argument("--mean-frames", type=int, default=50,
                    help="a reset about once per N frames (0: never)")
    ap.add_argument("--max-resets", type=int, default=100)
    ap.add_argument("--inside-fraction", type=float, default=0.5)
    ap.add_argument("--handshake-resets", type=int, default=0,
                    help="reset the first N connections of each link in the handshake")
    ap.add_argument("--host", default="127.0.0.1", help="loopback address to listen on")
    ap.add_argument("--connect-wait", type=float, default=0.0,
                    help="seconds to keep trying a daemon that does not listen yet")
    ap.add_argument("--target-host", default="127.0.0.1")
    ap.add_argument("--duration", type=float, default=3600,
                    help="stop after this many seconds (default 3600)")
    ap.add_argument("maps", nargs="+", metavar="LISTEN:TARGET",
                    help="listen on port LISTEN, forward to TARGET")
    a = ap.parse_args(argv)
    proxy = FaultProxy(a.seed, a.mean_frames, a.max_resets, a.inside_fraction, a.host,
                       a.connect_wait, a.handshake_resets)
    try:
        for k, m in enumerate(a.maps):
            listen, _, target = m.partition(":")
            proxy.link(k, m, a.target_host, int(target), int(listen))
    except (ValueError, OSError) as e:
        proxy.close()
        print("faultproxy: %s" % e, file=sys.stderr)
        return 2
    stop = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.set())
    stop.wait(a.duration)
    proxy.close()
    print(proxy.summary())
    for k, m in enumerate(a.maps):
        got = proxy.link_bytes[(k, m)]
        print("%s: %d bytes in, %d bytes back" % (m, got[0], got[1]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
