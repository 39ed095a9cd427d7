#!/usr/bin/env python3
"""Unit tests of gossipd.Client against a fake daemon (fakedaemon.py):
the requests on the wire, the shared buffer and its NumPy views, every
error path and its exception class, local validation.  Needs NumPy
(exit 77, a meson skip, without it).
"""
import errno
import fcntl
import json
import os
import shutil
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
import unittest
import warnings

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import fakedaemon  # noqa: E402
from fakedaemon import CLOSE, P, Raw  # noqa: E402

try:
    import numpy as np
except ImportError:
    print("SKIP: NumPy is not installed (python3-numpy)")
    sys.exit(77)

import gossipd  # noqa: E402

TENSORS = [("w", (3, 4)), ("b", (4,)), ("s", ())]


class Base(unittest.TestCase):
    def setUp(self):
        self.fake = fakedaemon.FakeDaemon()
        self.addCleanup(self.fake.close)

    def client(self, **kw):
        kw.setdefault("timeout", 10)
        c = gossipd.Client(self.fake.path, "unit", **kw)
        self.addCleanup(c.close)
        return c


class Requests(Base):
    def test_hello_then_each_request_on_the_wire(self):
        c = self.client()
        self.assertEqual(c.daemon_version, "fake 0.1")
        c.register(TENSORS)
        c.step()
        c.step(sync=True)
        c.drain()
        c.average(1e-4, time_limit_ms=500, max_rounds=7)
        c.status()
        c.detach()
        raw = [r[2] for r in self.fake.requests]
        self.assertEqual(raw, [
            P.encode_hello("unit"), P.encode_register(P.undo_nbytes(17), TENSORS),
            bytes([0x42, 0, 0, 0, 0]), bytes([0x42, 1, 0, 0, 0]),
            bytes([0x42, 2, 0, 0, 0]), P.encode_average(1e-4, 500, 7),
            bytes([0x44]), bytes([0x45])])
        fds = [len(r[3]) for r in self.fake.requests]
        self.assertEqual(fds, [0, 1, 0, 0, 0, 0, 0, 0], "one fd, with REGISTER only")

    def test_register_options_on_the_wire(self):
        c = self.client()
        with self.assertRaises(gossipd.InvalidArgument):
            c.register(TENSORS, method="powergosip")
        c.register(TENSORS, method="powergossip", rank=2, gamma=0.5)
        self.assertEqual(self.fake.types(), [P.HELLO, P.REGISTER])
        reg = P.decode_register(self.fake.requests[1][2])
        self.assertEqual(reg.options, P.RegisterOptions("powergossip", 2, 0.5))

    def test_replies_decoded(self):
        c = self.client()
        c.register(TENSORS)
        st = c.step()
        self.assertEqual(st, (1, 2, 2, 0, 1, 100, 200, 0.25))
        self.assertEqual(st.edges_applied, 2)
        self.assertEqual(c.average(0.1, max_rounds=3), (3, 0.5, True))
        self.assertEqual(c.status()["edges"][0]["state"], "up")
        self.assertEqual(c.wait_edges(1, timeout=1)["model"]["registered"], True)
        with self.assertRaises(gossipd.Timeout):
            c.wait_edges(2, timeout=0.05)
        c.status()                       # a wait timeout leaves it usable

    def test_wait_edges_timeout_names_last_error(self):
        """The timeout says why the edges that are not up are down."""
        why = "model mismatch (layouts differ): ours a; theirs b"
        self.fake.replies[P.STATUS] = P.encode_status_ok(json.dumps({
            "edges": [{"peer": "AAAABBBBCCCC=", "state": "up", "last_error": None},
                      {"peer": "DDDDEEEEFFFF=", "state": "connecting",
                       "last_error": why},
                      {"peer": "GGGGHHHHIIII=", "state": "down",
                       "last_error": None}]}))
        c = self.client()
        with self.assertRaises(gossipd.Timeout) as cm:
            c.wait_edges(3, timeout=0.05)
        msg = str(cm.exception)
        self.assertIn("only 1 of 3 edges up", msg)
        self.assertIn("peer DDDDEEEE (connecting): " + why, msg)
        self.assertNotIn("AAAABBBB", msg)
        # Without a last_error, what the state means.
        self.assertIn("peer GGGGHHHH (down): no link", msg)

    def test_wait_edges_timeout_says_the_neighbour_has_no_trainer(self):
        self.fake.replies[P.STATUS] = P.encode_status_ok(json.dumps({
            "edges": [{"peer": "JJJJKKKKLLLL=", "state": "idle", "last_error": None},
                      {"peer": "MMMMNNNNOOOO=", "state": "idle", "last_error": None}]}))
        c = self.client()
        with self.assertRaises(gossipd.Timeout) as cm:
            c.wait_edges(2, timeout=0.05)
        msg = str(cm.exception)
        self.assertIn("only 0 of 2 edges up", msg)
        for peer in ("JJJJKKKK", "MMMMNNNN"):
            self.assertIn("peer %s (idle): linked, but the neighbour has no "
                          "trainer attached" % peer, msg)

    def test_default_name_and_env_socket(self):
        old = os.environ.get("GOSSIPD_SOCKET")
        os.environ["GOSSIPD_SOCKET"] = self.fake.path
        try:
            with gossipd.Client(timeout=10) as c:
                c.status()
        finally:
            if old is None:
                del os.environ["GOSSIPD_SOCKET"]
            else:
                os.environ["GOSSIPD_SOCKET"] = old
        self.assertEqual(self.fake.requests[0][1].name, "python-%d" % os.getpid())


class SharedBuffer(Base):
    def test_views_shapes_dtype_and_packing(self):
        c = self.client()
        w, b, s = c.register(TENSORS)
        self.assertEqual([a.shape for a in (w, b, s)], [(3, 4), (4,), ()])
        for a in (w, b, s):
            self.assertEqual(a.dtype, np.float32)
            self.assertTrue(a.flags.writeable and a.flags.c_contiguous)
        base, nbytes = c.buffer_range
        self.assertEqual(nbytes, 4 * 17)
        self.assertEqual([a.ctypes.data - base for a in (w, b, s)], [0, 48, 64])
        self.assertTrue(np.all(c.flat == 0), "a fresh buffer is zero-filled")

    def test_memfd_is_sealed_and_sized(self):
        c = self.client()
        c.register(TENSORS)
        want = fcntl.F_SEAL_SHRINK | fcntl.F_SEAL_GROW | fcntl.F_SEAL_SEAL
        self.assertEqual(self.fake.seals & want, want)
        # The parameters, then the undo section (PROTOCOL.md 5.4).
        self.assertEqual(self.fake.fd_size, P.undo_nbytes(17))
        self.assertEqual(self.fake.buffer[P.undo_offset(17):P.undo_offset(17) + 8], P.UNDO_MAGIC)

    def test_without_undo_section(self):
        c = self.client(undo_section=False)
        c.register(TENSORS)
        self.assertEqual(self.fake.fd_size, 4 * 17)
        self.assertEqual(c.buffer_range[1], 4 * 17)

    def test_writes_are_shared_both_ways(self):
        c = self.client()
        w, b, s = c.register(TENSORS)
        w[...] = np.arange(12, dtype=np.float32).reshape(3, 4)
        s[...] = 7
        self.assertEqual(list(self.fake.floats()[:12]), list(range(12)))
        c.step()                         # the fake adds 1.0 in its mapping
        np.testing.assert_array_equal(w, np.arange(12).reshape(3, 4) + 1)
        np.testing.assert_array_equal(b, np.ones(4))
        self.assertEqual(float(s), 8.0)

    def test_detach_unmaps_or_leaves_held_views_valid(self):
        c = self.client()
        c.register(TENSORS)
        self.assertTrue(c.detach(), "no views left: unmapped at once")
        self.assertIsNone(c.buffer_range)
        self.assertEqual(c.arrays, [])
        w, _, _ = c.register(TENSORS)
        w[0, 0] = 5
        self.assertFalse(c.detach(), "a held view keeps the mapping")
        w[1, 1] = 6                      # still valid memory, now private
        self.assertEqual((w[0, 0], w[1, 1]), (5, 6))
        self.assertTrue(c.close())

    def test_register_twice_is_busy_locally(self):
        c = self.client()
        c.register(TENSORS)
        with self.assertRaises(gossipd.Busy) as cm:
            c.register(TENSORS)
        self.assertIn("detach() first", str(cm.exception))
        self.assertEqual(self.fake.types().count(P.REGISTER), 1)


class DaemonErrors(Base):
    CASES = [
        ("REGISTER", -errno.EBUSY, gossipd.Busy),
        ("REGISTER", -errno.EINVAL, gossipd.ShapeRefused),
        ("REGISTER", -errno.EMSGSIZE, gossipd.ShapeRefused),
        ("REGISTER", -4099, gossipd.ShapeRefused),
        ("REGISTER", -errno.EBADF, gossipd.DaemonError),
        ("REGISTER", -errno.ERANGE, gossipd.OptionsRefused),
        ("REGISTER", -errno.EOPNOTSUPP, gossipd.OptionsRefused),
        ("STEP", -errno.ENOENT, gossipd.NotRegistered),
        ("STEP", -errno.EPERM, gossipd.NotOwner),
        ("STEP", -4097, gossipd.NonFiniteParameters),
        ("STEP", -errno.EINVAL, gossipd.DaemonError),
        ("AVERAGE", -errno.EPERM, gossipd.NotOwner),
        ("DETACH", -errno.ENOENT, gossipd.NotRegistered),
        ("STATUS", -errno.ENOMEM, gossipd.DaemonError),
    ]
    CALL = {"REGISTER": lambda c: c.register(TENSORS), "STEP": lambda c: c.step(),
            "AVERAGE": lambda c: c.average(0, max_rounds=1),
            "DETACH": lambda c: c.detach(), "STATUS": lambda c: c.status()}
    TYPE = {"REGISTER": P.REGISTER, "STEP": P.STEP, "AVERAGE": P.AVERAGE,
            "DETACH": P.DETACH, "STATUS": P.STATUS}

    def test_each_code_maps_to_its_class_with_the_daemon_text(self):
        c = self.client()
        for request, code, cls in self.CASES:
            text = "because %d" % code
            self.fake.replies = {self.TYPE[request]: P.encode_error(code, text)}
            with self.assertRaises(cls, msg=(request, code)) as cm:
                self.CALL[request](c)
            e = cm.exception
            self.assertIsInstance(e, gossipd.DaemonError)
            self.assertEqual((e.code, e.text), (code, text))
            self.assertIn(request, str(e))
            self.assertIn(text, str(e))
        self.fake.replies = {}
        c.status()                       # an ERROR leaves the client usable
        self.assertIsNone(c.buffer_range, "a refused REGISTER maps nothing")

    def test_version_mismatch_either_way(self):
        self.fake.replies = {P.HELLO: P.encode_error(
            -errno.EPROTONOSUPPORT, "gossipd speaks protocol 2.x")}
        with self.assertRaises(gossipd.VersionMismatch) as cm:
            self.client()
        self.assertIn("2.x", str(cm.exception))
        self.fake.replies = {P.HELLO: Raw(P.frame(b"\xc0\x00\x02\x00\x00"))}
        with self.assertRaises(gossipd.VersionMismatch):
            self.client()


class Broken(Base):
    def test_malformed_reply_breaks_the_client(self):
        c = self.client()
        self.fake.replies = {P.STATUS: P.encode_ok()}           # wrong type
        with self.assertRaises(gossipd.ProtocolError):
            c.status()
        with self.assertRaises(gossipd.ClientClosed):
            c.status()

    def test_bad_frame_lengths(self):
        for raw in (b"\0\0\0\0", b"\x01\x00\x10\x00", b"\x02\0\0\0\xc1\x00"):
            self.fake.replies = {P.STATUS: Raw(raw)}
            c = self.client()
            with self.assertRaises(gossipd.ProtocolError, msg=raw):
                c.status()

    def test_daemon_closing_is_connection_lost(self):
        """Without reconnecting, a lost connection is final."""
        c = self.client(reconnect=False)
        self.fake.replies = {P.STEP: CLOSE}
        with self.assertRaises(gossipd.ConnectionLost):
            c.step()
        with self.assertRaises(gossipd.ClientClosed):
            c.step()

    def test_request_timeout(self):
        gate = threading.Event()
        self.addCleanup(gate.set)
        c = self.client(timeout=0.2)
        self.fake.replies = {P.STEP: lambda v: gate.wait(5) and P.encode_ok()}
        with self.assertRaises(gossipd.Timeout):
            c.step()
        self.assertTrue(c.closed)
        with self.assertRaises(gossipd.ClientClosed):
            c.step()

    def test_a_drain_timeout_names_drain(self):
        """The timeout names the request that got no reply: DRAIN, not
        STEP; a sync one says what it waits for."""
        for sync, want in ((False, "DRAIN: no reply within 0.2s"),
                           (True, "DRAIN (sync): no reply within 0.2s")):
            gate = threading.Event()
            self.addCleanup(gate.set)
            c = self.client(timeout=0.2)       # no model: no release wait
            self.fake.replies = {P.STEP: lambda v: (gate.wait(5), P.encode_ok())[1]}
            with self.assertRaises(gossipd.Timeout) as cm:
                c.drain(sync=sync)
            gate.set()                         # the fake serves the next one
            self.assertTrue(str(cm.exception).startswith(want), str(cm.exception))
            self.assertNotIn("STEP", str(cm.exception))
            self.assertEqual("neighbour" in str(cm.exception), sync)
            self.fake.replies = {}

    def test_average_waits_its_time_limit_longer(self):
        gate = threading.Event()
        self.addCleanup(gate.set)
        c = self.client(timeout=0.2)
        self.fake.replies = {P.AVERAGE: lambda v: gate.wait(5) and P.encode_ok()}
        t0 = time.monotonic()
        with self.assertRaises(gossipd.Timeout):
            c.average(0, time_limit_ms=300)
        waited = time.monotonic() - t0
        self.assertTrue(0.49 <= waited < 3, "waited %.3f s" % waited)

    def test_default_timeout(self):
        self.assertEqual(gossipd.DEFAULT_TIMEOUT, 60.0)
        with gossipd.Client(self.fake.path) as c:
            self.assertEqual(c.timeout, 60.0)

    def test_close_wakes_a_blocked_call(self):
        gate = threading.Event()
        self.addCleanup(gate.set)
        c = self.client(timeout=None)
        self.fake.replies = {P.AVERAGE: lambda v: gate.wait(5) and P.encode_ok()}
        caught = []

        def run():
            try:
                c.average(0, time_limit_ms=1)
            except gossipd.GossipdError as e:
                caught.append(e)
        th = threading.Thread(target=run)
        th.start()
        while not any(r[0] == P.AVERAGE for r in self.fake.requests) and th.is_alive():
            th.join(0.01)
        c.close()
        th.join(5)
        self.assertFalse(th.is_alive())
        self.assertIsInstance(caught[0], gossipd.ConnectionLost)


def mapping_inode(addr):
    """The inode of the file mapped at addr in this process, or None."""
    with open("/proc/self/maps") as f:
        for line in f:
            parts = line.split()
            if int(parts[0].split("-")[0], 16) == addr:
                return int(parts[4])
    return None


def step_until(c, cond, seconds=5.0, limit=10 ** 7):
    """Steps until cond(result); bounded in time and count."""
    deadline = time.monotonic() + seconds
    for _ in range(limit):
        st = c.step()
        if cond(st) or time.monotonic() >= deadline:
            return st
    return st


class Finish(Base):
    def test_finish_drains_averages_detaches_and_measures(self):
        c = self.client()
        c.register(TENSORS)
        c.step()
        wire = iter([1000, 1600])

        def status(v):
            return P.encode_status_ok(json.dumps({
                "model": {"registered": True},
                "edges": [{"state": "up", "wire_tx_bytes": next(wire)}]}))
        self.fake.replies[P.STATUS] = status
        self.fake.replies[P.AVERAGE] = P.encode_average_ok(P.AverageResult(9, 5e-5, True))
        r = c.finish(1e-4, time_limit_ms=700, max_rounds=11)
        self.assertIsInstance(r, gossipd.FinishResult)
        self.assertEqual((r.reached, r.estimate, r.rounds), (True, 5e-5, 9))
        self.assertEqual(r.bytes, 100 + 600, "DRAIN's bytes_sent plus the AVERAGE's")
        self.assertTrue(0 <= r.seconds < 5)
        self.assertEqual(self.fake.types()[2:], [P.STEP, P.STEP, P.STATUS, P.AVERAGE,
                                                 P.STATUS, P.DETACH])
        self.assertEqual(self.fake.requests[3][2], bytes([0x42, 2, 0, 0, 0]))
        self.assertEqual(self.fake.requests[5][2], P.encode_average(1e-4, 700, 11))
        self.assertIsNone(c.buffer_range)

    def test_reached_needs_the_estimate_at_or_below_the_target(self):
        for est in (1.025e-4, float("nan")):
            c = self.client()
            c.register(TENSORS)
            self.fake.replies[P.AVERAGE] = P.encode_average_ok(P.AverageResult(4, est, True))
            r = c.finish(1e-4)
            self.assertFalse(r.reached, "estimate %g over the target" % est)

    def test_finish_detaches_even_when_drain_fails(self):
        c = self.client()
        c.register(TENSORS)
        self.fake.replies[P.STEP] = P.encode_error(-errno.EIO, "boom")
        with self.assertRaises(gossipd.DaemonError):
            c.finish(1e-4)
        self.assertEqual(self.fake.types()[-1], P.DETACH)
        self.assertIsNone(c.buffer_range)


class Restarts(Base):
    """The daemon dies and comes back on the same socket path."""

    def killed(self):
        """A client that registered and stepped once; then the daemon
        dies (its socket file goes)."""
        c = self.client()
        w, _, _ = c.register(TENSORS)
        w[...] = 1
        st = c.step()
        self.assertFalse(st.offline)
        self.assertTrue(st.gossiped)
        self.assertEqual(st.step, 1)
        self.addCleanup(shutil.rmtree, self.fake.dir, True)
        self.fake.close(remove=False)
        return c, w

    def restart(self):
        fake = fakedaemon.FakeDaemon(dir=self.fake.dir)
        self.addCleanup(fake.close)
        return fake

    def test_offline_steps_then_the_same_memfd_registered_again(self):
        c, w = self.killed()
        ino = self.fake.fd_inos[0]
        t0 = time.monotonic()
        for _ in range(1000):
            st = c.step()
            self.assertTrue(st.offline)
        self.assertLess(time.monotonic() - t0, 1.0, "offline steps are cheap")
        self.assertEqual((st.offline_steps, st.reconnects, st.step, st.edges_applied),
                         (1000, 0, 1, 0))
        self.assertIn("offline=True", repr(st))
        self.assertTrue(c.offline)
        for call in (c.status, c.drain, lambda: c.average(0, max_rounds=1)):
            with self.assertRaises(gossipd.DaemonNotRunning):
                call()
        self.assertTrue(c.offline and not c.closed)
        np.testing.assert_array_equal(w, 2)     # trained on, untouched

        fake = self.restart()
        st = step_until(c, lambda st: not st.offline)
        self.assertFalse(st.offline, "not back after 5 s")
        self.assertEqual((st.reconnects, st.step), (1, 1))
        self.assertEqual(fake.types(), [P.HELLO, P.REGISTER, P.STEP])
        self.assertEqual(fake.requests[1][2], self.fake.requests[1][2],
                         "the same tensors")
        self.assertEqual(fake.fd_inos, [ino], "the same memfd")
        self.assertEqual(mapping_inode(c.buffer_range[0]), ino)
        np.testing.assert_array_equal(w, 3)     # the new daemon's write
        self.assertFalse(c.step().offline)

    def test_reconnect_attempts_are_rate_limited(self):
        c = self.client()
        c.register(TENSORS)
        c.step()
        self.fake.hangup = True                 # accepts, then hangs up
        self.fake.replies = {P.STEP: CLOSE}
        steps, t0 = 0, time.monotonic()
        while time.monotonic() - t0 < 1.0 and steps < 10 ** 7:
            self.assertTrue(c.step().offline)
            steps += 1
        attempts = len(self.fake.conns) - 1
        # At about 0, 0.1, 0.3 and 0.7 s.
        self.assertTrue(3 <= attempts <= 6, "%d attempts" % attempts)
        self.assertGreater(steps, 1000)

    def test_permanent_errors_are_raised_not_retried(self):
        for reply, cls in [
                ({P.REGISTER: P.encode_error(-errno.EBUSY, "held by trainer 'other'")},
                 gossipd.Busy),
                ({P.HELLO: Raw(P.frame(b"\xc0\x00\x02\x00\x00"))}, gossipd.VersionMismatch)]:
            with self.subTest(cls=cls.__name__):
                self.fake = fakedaemon.FakeDaemon()
                self.addCleanup(self.fake.close)
                c, w = self.killed()
                fake = self.restart()
                fake.replies = reply
                with self.assertRaises(cls) as cm:
                    step_until(c, lambda st: not st.offline)
                if cls is gossipd.Busy:
                    self.assertIn("held by trainer 'other'", str(cm.exception))
                with self.assertRaises(gossipd.ClientClosed):
                    c.step()
                self.assertEqual(len(fake.conns), 1, "one attempt, not retried")
                self.assertEqual(fake.types().count(P.REGISTER),
                                 1 if cls is gossipd.Busy else 0)
                np.testing.assert_array_equal(w, 2)   # the model is kept

    def test_offline_steps_warn_first_and_at_intervals(self):
        c, _ = self.killed()
        with warnings.catch_warnings(record=True) as seen:
            warnings.simplefilter("always")
            for _ in range(50):
                self.assertTrue(c.step().offline)
            self.assertEqual(len(seen), 1, [str(w.message) for w in seen])
            w = seen[0]
            self.assertIs(w.category, gossipd.OfflineWarning)
            self.assertIn("1 step without gossip", str(w.message))
            self.assertTrue(os.path.samefile(w.filename, __file__),
                             "the warning points at the trainer's call")
            c._warned_at -= gossipd.client.OFFLINE_WARN_INTERVAL   # time passes
            self.assertTrue(c.step().offline)
            self.assertEqual(len(seen), 2)
            self.assertIn("51 steps without gossip", str(seen[1].message))

    def test_strict_offline_steps_raise(self):
        c = self.client(strict=True)
        w, _, _ = c.register(TENSORS)
        c.step()
        self.addCleanup(shutil.rmtree, self.fake.dir, True)
        self.fake.close(remove=False)
        with warnings.catch_warnings():
            warnings.simplefilter("error")          # and no warning instead
            for n in (1, 2):
                with self.assertRaises(gossipd.OfflineError) as cm:
                    c.step()
                self.assertIn("%d step" % n, str(cm.exception))
        self.assertTrue(c.offline and not c.closed, "still reconnects")
        fake = self.restart()
        deadline = time.monotonic() + 5       # the backoff passes
        while True:
            try:
                self.assertFalse(c.step().offline)
                break
            except gossipd.OfflineError:
                self.assertLess(time.monotonic(), deadline, "not back after 5 s")
        self.assertEqual(fake.types(), [P.HELLO, P.REGISTER, P.STEP])

    def test_detach_offline_releases_locally(self):
        c = self.killed()[0]
        self.assertTrue(c.step().offline)
        self.assertTrue(c.detach())
        self.assertIsNone(c.buffer_range)
        fake = self.restart()
        c.register(TENSORS)                     # reconnects, registers anew
        self.assertEqual(fake.types(), [P.HELLO, P.REGISTER])
        self.assertFalse(c.step().offline)
        # Lost during the DETACH: the daemon detached with the connection.
        fake.replies = {P.DETACH: CLOSE}
        self.assertTrue(c.detach())
        self.assertTrue(c.offline)


@unittest.skipUnless(os.environ.get("GSP_SLOW_TESTS"),
                     "60 s; meson runs it as py-default-timeout")
class DefaultTimeout(Base):
    def test_a_step_never_answered_times_out_after_60s(self):
        gate = threading.Event()
        self.addCleanup(gate.set)
        c = gossipd.Client(self.fake.path, "default")
        self.addCleanup(c.close)
        self.fake.replies = {P.STEP: lambda v: gate.wait(90) and P.encode_ok()}
        t0 = time.monotonic()
        with self.assertRaises(gossipd.Timeout):
            c.step()
        waited = time.monotonic() - t0
        self.assertTrue(59.9 <= waited < 65, "waited %.1f s" % waited)
        self.assertTrue(c.closed)


class Connect(unittest.TestCase):
    def test_no_socket_is_daemon_not_running(self):
        with self.assertRaises(gossipd.DaemonNotRunning) as cm:
            gossipd.Client("/nonexistent/gossipd.sock")
        self.assertEqual(cm.exception.code, -errno.ENOENT)
        self.assertIsInstance(cm.exception, ConnectionError)

    def test_stale_socket_is_daemon_not_running(self):
        fake = fakedaemon.FakeDaemon()
        path = fake.path + ".stale"
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.bind(path)
        s.close()
        try:
            with self.assertRaises(gossipd.DaemonNotRunning) as cm:
                gossipd.Client(path)
            self.assertEqual(cm.exception.code, -errno.ECONNREFUSED)
        finally:
            fake.close()

    def test_not_a_socket(self):
        with self.assertRaises(gossipd.ConnectFailed) as cm:
            gossipd.Client(os.path.abspath(__file__))
        self.assertNotIsInstance(cm.exception, gossipd.DaemonNotRunning)
        self.assertIn("not a socket", str(cm.exception))


class LocalValidation(Base):
    """Bad input raises InvalidArgument (a ValueError) and sends nothing."""

    def refused(self, fn, *words):
        before = len(self.fake.requests)
        with self.assertRaises(gossipd.InvalidArgument) as cm:
            fn()
        self.assertIsInstance(cm.exception, ValueError)
        for w in words:
            self.assertIn(w, str(cm.exception))
        self.assertEqual(len(self.fake.requests), before, "nothing sent")

    def test_inputs(self):
        c = self.client()
        self.refused(lambda: gossipd.Client("x" * 200), "longer than")
        self.refused(lambda: gossipd.Client(""), "empty")
        self.refused(lambda: gossipd.Client(self.fake.path, "n" * 129), "128")
        self.refused(lambda: c.register([]), "1..65536")
        self.refused(lambda: c.register([("L" * 64, (2,))]), "'LLL", "63")
        self.refused(lambda: c.register([("w", (2, 0))]), "'w'", ">= 1")
        self.refused(lambda: c.register({"w": (1,) * 9}), "9 dimensions")
        self.refused(lambda: c.step(8), "unknown STEP flags")
        self.refused(lambda: c.average(1e-3), "not both 0")
        self.refused(lambda: c.average(-1, max_rounds=1), "target")
        self.refused(lambda: c.average(float("nan"), max_rounds=1), "nan")

    def test_numpy_shapes_and_mapping_accepted(self):
        c = self.client()
        a, b = c.register({"a": np.zeros((2, 3)).shape, "b": np.int64(5)})
        self.assertEqual((a.shape, b.shape), ((2, 3), (5,)))


class KilledInsideAWrite(unittest.TestCase):
    """A daemon killed inside its write into the parameters (dyingdaemon.py,
    a process of its own): libgossip's client, under the Python one,
    puts the parameters back as they were before the write and keeps what
    the write added in the undo section (PROTOCOL.md 5.4); the step is
    offline and the model trains on."""

    def test_the_write_is_undone_and_its_delta_kept(self):
        d = tempfile.mkdtemp(prefix="gossipd-dying-")
        self.addCleanup(shutil.rmtree, d, True)
        path = os.path.join(d, "api.sock")
        proc = subprocess.Popen([sys.executable, os.path.join(HERE, "dyingdaemon.py"),
                                 path])
        self.addCleanup(proc.kill)
        deadline = time.monotonic() + 10
        while not os.path.exists(path):
            self.assertIsNone(proc.poll(), "dyingdaemon.py exited")
            self.assertLess(time.monotonic(), deadline, "no socket after 10 s")
            time.sleep(0.01)
        c = gossipd.Client(path, "dying", timeout=10)
        self.addCleanup(c.close)
        w, = c.register([("w", (5,))])
        w[...] = np.arange(1, 6)
        self.assertFalse(c.step().offline)
        np.testing.assert_array_equal(w, np.arange(2, 7))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", gossipd.OfflineWarning)
            st = c.step()                  # the daemon dies inside its write
        self.assertTrue(st.offline)
        self.assertEqual(proc.wait(10), -9)
        np.testing.assert_array_equal(w, np.arange(2, 7), "the write was undone")
        at = P.undo_offset(5)
        self.assertEqual(struct.unpack_from("=I", c._mm, at + P.UNDO_STATE_AT)[0],
                         P.UNDO_UNDONE)
        delta = np.frombuffer(c._mm, dtype=np.float32, count=5, offset=at + P.UNDO_HEADER)
        np.testing.assert_array_equal(delta, [100, 100, 0, 0, 0],
                                      "the copy keeps what the write added")
        del delta


class LibraryLoading(unittest.TestCase):
    """Without libgossip the package says what it tried and how to point
    it at the library; it never falls back to something else."""

    def test_a_missing_library_is_refused_clearly(self):
        env = dict(os.environ, GOSSIPD_LIBGOSSIP="/nonexistent/libgossip.so")
        code = ("import gossipd\n"
                "try:\n"
                "    gossipd.Client('/nonexistent/gossipd.sock')\n"
                "except ImportError as e:\n"
                "    print(type(e).__name__, e)\n")
        out = subprocess.run([sys.executable, "-c", code], env=env, timeout=60,
                             capture_output=True, text=True)
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertTrue(out.stdout.startswith("LibraryNotFound "), out.stdout)
        for words in ("$GOSSIPD_LIBGOSSIP: /nonexistent/libgossip.so (no such file)",
                      "GOSSIPD_LIBGOSSIP=/path/to/libgossip.so"):
            self.assertIn(words, out.stdout)
        self.assertTrue(issubclass(gossipd.LibraryNotFound, ImportError))

    def test_the_source_tree_finds_its_build(self):
        built = os.path.join(HERE, "..", "..", "build", "libgossip", "libgossip.so")
        if not os.path.exists(built):
            self.skipTest("no build/ in this source tree")
        env = {k: v for k, v in os.environ.items() if k != "GOSSIPD_LIBGOSSIP"}
        out = subprocess.run([sys.executable, "-c",
                              "from gossipd import _lib; print(_lib.load()._name)"],
                             env=env, timeout=60, capture_output=True, text=True)
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertTrue(os.path.samefile(out.stdout.strip(), built), out.stdout)


if __name__ == "__main__":
    unittest.main()
