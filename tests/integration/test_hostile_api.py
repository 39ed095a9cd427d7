#!/usr/bin/env python3
"""Hostile local clients against a real gossipd (suite 'integration'):
each attack asserts the daemon lives, the attacked connection is refused
or closed with the right counter, and its memory stays bounded.

usage: test_hostile_api.py BUILD_DIR [unittest options]
"""
import fcntl
import os
import socket
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "..", "tools"))
import gossipcluster as cluster  # noqa: E402

P = cluster.gossipd.protocol
BUILD = None


def connect(path):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(10)
    s.connect(path)
    return s


read_reply = cluster.read_reply


def hello(s, name="hostile"):
    s.sendall(P.frame(P.encode_hello(name)))
    return read_reply(s)


def rss_kb(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise AssertionError("no VmRSS for %d" % pid)


class HostileApi(unittest.TestCase):
    def setUp(self):
        self.c = cluster.Cluster(BUILD, 1, edges=[])
        if not os.environ.get("GSP_KEEP_TMP"):
            self.addCleanup(self.c.remove)
        self.addCleanup(lambda: self.assertEqual(self.c.sanitizer_reports(), []))
        self.addCleanup(self.c.close)
        self.c.start()
        self.sock = self.c.sockets[0]
        self.pid = self.c.procs[0].pid

    def alive(self):
        st = cluster.status(self.sock)
        self.assertIsNone(self.c.procs[0].poll(), "gossipd exited")
        return st

    def register(self, floats, seal):
        ts, n = P.tensor_list([("w", (floats,))])
        fd = os.memfd_create("hostile", os.MFD_CLOEXEC | os.MFD_ALLOW_SEALING)
        os.ftruncate(fd, 4 * n)
        if seal:
            fcntl.fcntl(fd, fcntl.F_ADD_SEALS, fcntl.F_SEAL_SHRINK | fcntl.F_SEAL_GROW)
        s = connect(self.sock)
        hello(s)
        socket.send_fds(s, [P.frame(P.encode_register(4 * n, ts))], [fd])
        return s, fd, read_reply(s)

    def test_unsealed_buffer_refused(self):
        # Mapped unsealed, a later ftruncate(0) would kill the daemon with
        # SIGBUS at its next STEP; it must be refused up front.
        s, fd, body = self.register(4096, seal=False)
        with s:
            code, text = P.decode_error(body)
            self.assertIn("F_SEAL_SHRINK", text)
            os.ftruncate(fd, 0)
            s.sendall(P.frame(P.encode_step()))
            code, text = P.decode_error(read_reply(s))
            self.assertIn("no model registered", text)
        os.close(fd)
        st = self.alive()
        self.assertFalse(st["model"]["registered"])

    def test_sealed_buffer_cannot_shrink_under_the_daemon(self):
        s, fd, body = self.register(4096, seal=True)
        with s:
            P.decode_empty(body, P.OK)
            with self.assertRaises(OSError):
                os.ftruncate(fd, 0)
            s.sendall(P.frame(P.encode_step()))
            self.assertIsNotNone(read_reply(s))
        os.close(fd)
        self.alive()

    def test_one_error_per_malformed_request(self):
        before = self.alive()["counters"]["api_malformed"]
        with connect(self.sock) as s:
            hello(s)
            ts, n = P.tensor_list([("w", (16,))])
            body = P.encode_register(64, ts)[:-3]          # cut short
            fd = os.memfd_create("hostile", os.MFD_CLOEXEC)
            socket.send_fds(s, [P.frame(body)], [fd])
            os.close(fd)
            replies = []
            while True:
                r = read_reply(s)
                if r is None:
                    break
                replies.append(r)
        self.assertEqual(len(replies), 1, replies)
        self.assertIn("malformed", P.decode_error(replies[0])[1])
        self.assertEqual(self.alive()["counters"]["api_malformed"], before + 1)
        self.assertEqual(self.c.log(0).count("closing it"), 1)

    def test_pipelined_requests_never_read_stay_bounded(self):
        rss0 = rss_kb(self.pid)
        s = connect(self.sock)
        s.setblocking(False)
        req = P.frame(P.encode_hello("x")) + P.frame(P.encode_status()) * 200000
        # The daemon stops reading once its reply is unsent, so the
        # socket buffers fill and stay full: no progress for a second
        # ends the sending (bounded: 1 MB or 30 s at most).
        sent = cluster.send_until_stalled(s, req, 30, 1.0)
        self.assertLess(sent, len(req), "the daemon read 1 MB of requests without replying")
        # Other clients are still served, quickly, and memory is bounded.
        for _ in range(20):
            self.alive()
        self.assertLess(rss_kb(self.pid) - rss0, 32 * 1024)
        s.close()
        self.alive()

    def test_client_cap(self):
        socks = []
        try:
            for _ in range(300):
                s = connect(self.sock)
                socks.append(s)
            # The 257th and later are closed at once, not kept.
            closed = 0
            for s in socks[256:]:
                s.settimeout(5)
                try:
                    if s.recv(1) == b"":
                        closed += 1
                except OSError:
                    closed += 1
            self.assertEqual(closed, len(socks) - 256)
        finally:
            for s in socks:
                s.close()
        # The daemon sees the 300 closes as its loop gets to them: until
        # then a new client may still meet the cap.  It must come back.
        self.assertTrue(cluster.eventually(self.serves, 10))
        self.alive()

    def serves(self):
        try:
            cluster.status(self.sock)
            return True
        except cluster.gossipd.ConnectionLost:
            return False

    def hello_as(self, uid, gid, groups):
        """HELLO from a child process with these credentials: the reply,
        or None if the daemon closed the connection."""
        r, w = os.pipe()
        pid = os.fork()
        if pid == 0:
            code = 1
            try:
                os.close(r)
                os.setgroups(groups)
                os.setgid(gid)
                os.setuid(uid)
                s = connect(self.sock)
                try:
                    body = hello(s)
                except (BrokenPipeError, ConnectionResetError):
                    body = None
                os.write(w, b"reply" if body else b"closed")
                code = 0
            except BaseException as e:
                os.write(w, ("error %r" % e).encode())
            finally:
                os._exit(code)
        os.close(w)
        out = b""
        while True:
            chunk = os.read(r, 100)
            if not chunk:
                break
            out += chunk
        os.close(r)
        os.waitpid(pid, 0)
        return out.decode()

    @unittest.skipUnless(os.geteuid() == 0, "needs root to switch users")
    def test_peer_credentials_checked(self):
        # The file mode would stop other users; with it opened up (or an
        # fd passed on), SO_PEERCRED still refuses them.
        os.chmod(os.path.dirname(self.sock), 0o711)
        os.chmod(self.sock, 0o666)
        self.assertEqual(self.hello_as(65534, 65534, []), "closed")
        self.assertIn("API: refused a connection: uid 65534", self.c.log(0))
        # In the socket's group (here root's, as a supplementary group):
        # served.
        self.assertEqual(self.hello_as(65534, 65534, [0]), "reply")
        self.alive()

    def test_control_bytes_in_names_are_escaped_in_logs(self):
        s, fd, body = None, None, None
        with connect(self.sock) as s:
            hello(s, "evil\ngossipd: info: forged line")
            ts, n = P.tensor_list([("w", (8,))])
            fd = os.memfd_create("hostile", os.MFD_CLOEXEC)   # unsealed: refused
            os.ftruncate(fd, 32)
            socket.send_fds(s, [P.frame(P.encode_register(32, ts))], [fd])
            os.close(fd)
            read_reply(s)
        log = self.c.log(0)
        self.assertIn("evil\\x0agossipd: info: forged line", log)
        self.assertNotIn("\ngossipd: info: forged line", log)


if __name__ == "__main__":
    BUILD = sys.argv.pop(1)
    unittest.main(verbosity=2)
