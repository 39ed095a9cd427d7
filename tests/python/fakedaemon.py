"""A scripted stand-in for gossipd's API socket, for the Python client's
unit tests: a Unix socket in a temporary directory, one thread per
connection, requests decoded with gossipd.protocol and recorded, the
REGISTER fd received with socket.recv_fds and mapped, replies from a
per-type table the test can override.  Standard library only.

self.replies[type] overrides a reply: a message body (framed here), a
Raw byte string, CLOSE, or a callable of the decoded request.
FakeDaemon(dir=...) serves the socket of a daemon that close(remove=False)
stopped (a restart on the same path); hangup = True closes every new
connection unanswered; fd_inos lists the inode of each REGISTER's fd.
Default replies: HELLO -> HELLO_OK "fake 0.1"; REGISTER -> OK (the buffer
is mapped); STEP -> the daemon "gossips" by adding 1.0 to every float of
the buffer, then STEP_OK; AVERAGE -> AVERAGE_OK(3, 0.5, True); STATUS ->
a small JSON document; DETACH -> OK (unmapped).
"""
import array
import errno
import fcntl
import json
import mmap
import os
import shutil
import socket
import struct
import sys
import tempfile
import threading

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "..", "bindings", "python"))
from gossipd import protocol as P  # noqa: E402

IO_TIMEOUT = 10.0


CLOSE = "close"                 # a reply: close the connection instead


class Raw:
    """A reply sent as these exact bytes (frame header included)."""

    def __init__(self, data):
        self.data = data


class FakeDaemon:
    def __init__(self, dir=None):
        self.dir = dir or tempfile.mkdtemp(prefix="gossipd-fake-")
        self.path = os.path.join(self.dir, "api.sock")
        self.srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.srv.bind(self.path)
        self.srv.listen(8)
        self.srv.settimeout(0.1)
        self.requests = []          # (type, value, raw body, fds)
        self.replies = {}           # type -> reply body, or a callable(value)
        self.close_after = set()    # types after whose reply the link closes
        self.buffer = None          # mmap of the registered fd
        self.seals = None
        self.fd_size = None
        self.steps = 0
        self.fd_inos = []
        self.hangup = False
        self.lock = threading.Lock()
        self.stopping = False
        self.threads = []
        self.conns = []
        self.accepter = threading.Thread(target=self._accept, daemon=True)
        self.accepter.start()

    # ---- default behaviour ----------------------------------------------

    def floats(self):
        """The registered buffer as an array of floats (a copy)."""
        return array.array("f", bytes(self.buffer))

    def _default(self, t, value, fds):
        if t == P.HELLO:
            return P.encode_hello_ok("fake 0.1")
        if t == P.REGISTER:
            if len(fds) != 1:
                return P.encode_error(-errno.EBADF, "REGISTER needs the buffer's fd")
            fd = fds[0]
            self.fd_inos.append(os.fstat(fd).st_ino)
            self.seals = fcntl.fcntl(fd, fcntl.F_GET_SEALS)
            self.fd_size = os.fstat(fd).st_size
            self.buffer = mmap.mmap(fd, value.buffer_bytes, mmap.MAP_SHARED,
                                    mmap.PROT_READ | mmap.PROT_WRITE)
            return P.encode_ok()
        if t == P.STEP:
            self.steps += 1
            a = self.floats()
            self.buffer[:] = array.array("f", (x + 1.0 for x in a)).tobytes()
            return P.encode_step_ok(P.StepStats(self.steps, 2, 2, 0, 1, 100, 200, 0.25))
        if t == P.AVERAGE:
            return P.encode_average_ok(P.AverageResult(3, 0.5, True))
        if t == P.STATUS:
            return P.encode_status_ok(json.dumps({
                "model": {"registered": self.buffer is not None},
                "edges": [{"state": "up"}, {"state": "down"}]}))
        if t == P.DETACH:
            if self.buffer is not None:
                self.buffer.close()
            self.buffer = None
            return P.encode_ok()
        return P.encode_error(-errno.EPROTO, "unexpected")

    # ---- serving --------------------------------------------------------

    def _accept(self):
        while not self.stopping:
            try:
                s, _ = self.srv.accept()
            except (socket.timeout, OSError):
                continue
            self.conns.append(s)
            if self.hangup:
                s.close()
                continue
            th = threading.Thread(target=self._serve, args=(s,), daemon=True)
            self.threads.append(th)
            th.start()

    def _serve(self, s):
        s.settimeout(IO_TIMEOUT)
        buf, fds = b"", []
        with s:
            while not self.stopping:
                try:
                    data, got, _, _ = socket.recv_fds(s, 1 << 16, 4)
                except OSError:
                    return
                if not data:
                    return
                buf += data
                fds += got
                while len(buf) >= 4:
                    (n,) = struct.unpack_from("<I", buf)
                    if len(buf) < 4 + n:
                        break
                    body, buf = buf[4:4 + n], buf[4 + n:]
                    if not self._answer(s, body, fds):
                        return
                    fds = []

    def _answer(self, s, body, fds):
        t, value = P.decode_any(body)
        with self.lock:
            self.requests.append((t, value, body, list(fds)))
            reply = self.replies.get(t)
            if callable(reply):
                reply = reply(value)
            if reply is None:
                reply = self._default(t, value, fds)
        for fd in fds:
            os.close(fd)
        if reply == CLOSE:
            return False
        try:
            s.sendall(reply.data if isinstance(reply, Raw) else P.frame(reply))
        except OSError:
            return False         # the client went away (timeouts, close)
        return t not in self.close_after

    def types(self):
        return [r[0] for r in self.requests]

    def close(self, remove=True):
        """Stops serving: the socket file goes; the directory too unless
        remove is False (a restart follows)."""
        self.stopping = True
        self.accepter.join(2)
        for c in self.conns:
            try:
                c.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        for th in self.threads:
            th.join(2)
        self.srv.close()
        if self.buffer is not None:
            self.buffer.close()
            self.buffer = None
        try:
            os.unlink(self.path)
        except FileNotFoundError:
            pass
        if remove:
            shutil.rmtree(self.dir, ignore_errors=True)
