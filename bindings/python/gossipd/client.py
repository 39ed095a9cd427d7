"""gossipd.client: the trainer's side of gossipd's local API in Python,
the counterpart of libgossip/client.c.

This module owns the connection (one blocking AF_UNIX stream socket, one
request at a time, serialized by a lock), the shared parameter buffer (a
sealed memfd mapped MAP_SHARED, passed with SCM_RIGHTS at REGISTER) and
the NumPy views into it.  Encoding and decoding are gossipd.protocol's;
the exception classes are gossipd.errors'.  NumPy is imported only by
register().
"""
import errno
import fcntl
import json
import math
import mmap
import operator
import os
import socket
import stat
import threading
import time

from . import errors, protocol as P
from .errors import (ClientClosed, ConnectFailed, ConnectionLost,
                     DaemonNotRunning, InvalidArgument, ProtocolError,
                     Timeout, VersionMismatch)

DEFAULT_SOCKET = "/run/gossipd/gossipd.sock"
_SUN_PATH_MAX = 107            # sizeof(sockaddr_un.sun_path) - 1


def default_socket():
    """$GOSSIPD_SOCKET, else /run/gossipd/gossipd.sock (as gossipctl)."""
    return os.environ.get("GOSSIPD_SOCKET") or DEFAULT_SOCKET


def _numpy():
    try:
        import numpy
    except ImportError as e:
        raise ImportError("gossipd needs NumPy for the parameter arrays: "
                          "apt install python3-numpy, or pip install numpy") from e
    return numpy


def shared_buffer(nbytes):
    """A memfd of nbytes zero bytes, sealed so that it can never shrink or
    grow (the daemon's mapping can never hit SIGBUS), and its MAP_SHARED
    read-write mapping: (fd, mmap)."""
    fd = os.memfd_create("gossip-params", os.MFD_CLOEXEC | os.MFD_ALLOW_SEALING)
    try:
        os.ftruncate(fd, nbytes)
        fcntl.fcntl(fd, fcntl.F_ADD_SEALS,
                    fcntl.F_SEAL_SHRINK | fcntl.F_SEAL_GROW | fcntl.F_SEAL_SEAL)
        mm = mmap.mmap(fd, nbytes, mmap.MAP_SHARED,
                       mmap.PROT_READ | mmap.PROT_WRITE)
    except BaseException:
        os.close(fd)
        raise
    return fd, mm


def _down_edges(st):
    """"; peer ABCDEFGH (connecting): <last_error>" for each edge of a
    status document that is not up and has a last_error."""
    out = ""
    for e in st.get("edges", []):
        if e.get("state") != "up" and e.get("last_error"):
            out += "; peer %s (%s): %s" % (str(e.get("peer", "?"))[:8],
                                          e.get("state"), e["last_error"])
    return out


def _is_socket(path):
    try:
        return stat.S_ISSOCK(os.stat(path).st_mode)
    except OSError:
        return False


class Client:
    """A connection to gossipd's API socket.

        with gossipd.Client("/run/gossipd/gossipd.sock", "my-trainer") as c:
            w, b = c.register([("w", (100, 100)), ("b", (100,))])
            w[...] = initial_w; b[...] = initial_b
            for _ in range(steps):
                train(w, b)
                stats = c.step()
            c.drain()
            c.average(1e-4, time_limit_ms=30000)

    timeout (seconds, None = wait forever) bounds each request; a STEP
    with SYNC or an AVERAGE waits for the neighbours, so leave it None in
    training unless you want a stuck neighbour to fail the trainer.
    """

    def __init__(self, socket_path=None, name=None, timeout=None):
        path = os.fspath(socket_path if socket_path is not None else default_socket())
        if not path:
            raise InvalidArgument("the socket path is empty")
        if len(os.fsencode(path)) > _SUN_PATH_MAX:
            raise InvalidArgument("socket path %r is longer than %d bytes"
                                  % (path, _SUN_PATH_MAX), -errno.ENAMETOOLONG)
        if name is None:
            name = "python-%d" % os.getpid()
        hello = P.encode_hello(name)           # validates the name first
        self.socket_path = path
        self.name = name
        self._lock = threading.Lock()
        self._broken = None                    # why the client is unusable
        self._mm = None
        self._arrays = None
        self._flat = None
        self._sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            self._sock.settimeout(timeout)
            self._connect(path)
            h = P.decode_hello_ok(self._call("HELLO", hello))
        except ProtocolError as e:
            self._sock.close()
            if e.code == -errno.EPROTONOSUPPORT:
                raise VersionMismatch("gossipd at %s: %s" % (path, e), e.code, e.text) from None
            raise
        except BaseException:
            self._sock.close()
            raise
        self.daemon_version = h.name           # e.g. "gossipd 0.1.0"
        self.protocol_version = h.version

    def _connect(self, path):
        try:
            self._sock.connect(path)
        except socket.timeout:
            raise Timeout("connecting to %s timed out" % path, -errno.ETIMEDOUT) from None
        except OSError as e:
            code = -(e.errno or errno.EIO)
            if e.errno == errno.ENOENT:
                raise DaemonNotRunning("gossipd is not running: no socket at %s"
                                       % path, code) from None
            if e.errno == errno.ECONNREFUSED and _is_socket(path):
                raise DaemonNotRunning("gossipd is not running: %s is a stale "
                                       "socket" % path, code) from None
            if e.errno == errno.EACCES:
                raise ConnectFailed("no permission on %s: is this user in the "
                                    "socket's group?" % path, code) from None
            why = e.strerror if _is_socket(path) or not os.path.exists(path) \
                else "not a socket"
            raise ConnectFailed("cannot connect to %s: %s" % (path, why),
                                code) from None

    # ---- one request, one reply ------------------------------------------

    def _fail(self, exc):
        """Marks the stream unusable and returns exc to raise."""
        self._broken = str(exc)
        return exc

    def _recv_exact(self, n):
        buf = bytearray(n)
        view, got = memoryview(buf), 0
        while got < n:
            k = self._sock.recv_into(view[got:])
            if k == 0:
                raise ConnectionResetError(errno.ECONNRESET, "end of stream")
            got += k
        return bytes(buf)

    def _call(self, request, body, fd=None):
        """Sends one request (with fd as SCM_RIGHTS) and returns the reply
        body; the daemon's ERROR becomes its DaemonError."""
        with self._lock:
            if self._broken is not None:
                raise ClientClosed("gossipd client unusable: %s" % self._broken,
                                   -errno.ENOTCONN)
            data = P.frame(body)
            try:
                if fd is not None:
                    sent = socket.send_fds(self._sock, [data], [fd], socket.MSG_NOSIGNAL)
                    data = data[sent:]
                if data:
                    self._sock.sendall(data, socket.MSG_NOSIGNAL)
                reply = self._recv_exact(P.frame_length(self._recv_exact(P.FRAME_HEADER)))
            except socket.timeout:
                raise self._fail(Timeout("%s: no reply within %gs"
                                         % (request, self._sock.gettimeout()),
                                         -errno.ETIMEDOUT)) from None
            except ProtocolError as e:
                raise self._fail(e) from None
            except OSError as e:
                raise self._fail(ConnectionLost(
                    "%s: connection to gossipd lost: %s" % (request, e.strerror or e),
                    -(e.errno or errno.EIO))) from None
            if reply[0] == P.ERROR:
                try:
                    err = P.decode_error(reply)
                except ProtocolError as e:
                    raise self._fail(e) from None
                raise errors.from_reply(request, err.code, err.text)
            return reply

    def _decode(self, decoder, reply):
        try:
            return decoder(reply)
        except ProtocolError as e:
            raise self._fail(ProtocolError("unexpected reply: %s" % e, -errno.EBADMSG)) from None

    # ---- the model -------------------------------------------------------

    def register(self, tensors):
        """Hands the daemon a model of float32 tensors, given as (name,
        shape) pairs or a {name: shape} mapping, packed in that order.
        Returns one writable NumPy float32 array per tensor, each a view
        into the shared buffer (zero-filled: write the initial model into
        them before the first step())."""
        ts, floats = P.tensor_list(tensors)
        nbytes = 4 * floats
        body = P.encode_register(nbytes, ts)   # size checks before any fd
        np = _numpy()
        if self._mm is not None:
            raise errors.Busy("this client already registered a model: "
                              "detach() first", -errno.EBUSY)
        fd, mm = shared_buffer(nbytes)
        try:
            self._decode(lambda b: P.decode_empty(b, P.OK),
                         self._call("REGISTER", body, fd))
        except BaseException:
            mm.close()
            raise
        finally:
            os.close(fd)                       # the mapping keeps the memory
        self._mm = mm
        self._flat = np.frombuffer(mm, dtype=np.float32)
        self._arrays, off = [], 0
        for t in ts:
            n = math.prod(t.shape)
            self._arrays.append(self._flat[off:off + n].reshape(t.shape))
            off += n
        return list(self._arrays)

    @property
    def arrays(self):
        """The per-tensor views of the registered buffer ([] when none)."""
        return list(self._arrays or [])

    @property
    def flat(self):
        """The whole buffer as one float32 array (None when none)."""
        return self._flat

    @property
    def buffer_range(self):
        """(address, nbytes) of the mapping, or None."""
        if self._flat is None:
            return None
        return self._flat.ctypes.data, self._flat.nbytes

    def detach(self):
        """Gives the model back; on success the buffer is unmapped once no
        array viewing it is left (arrays still held keep it alive, as
        memory private to this process).  Copy out what you need, or keep
        the arrays."""
        self._decode(lambda b: P.decode_empty(b, P.OK),
                     self._call("DETACH", P.encode_detach()))
        return self._release()

    def _release(self):
        """Drops this client's views and unmaps; returns False when arrays
        held elsewhere keep the mapping alive (it then goes with them)."""
        mm, self._mm = self._mm, None
        self._flat = self._arrays = None
        if mm is None:
            return True
        try:
            mm.close()
        except BufferError:
            return False               # exported views: unmapped by GC
        return True

    # ---- gossip ----------------------------------------------------------

    def step(self, flags=0, *, sync=False):
        """One gossip step, after each optimizer step: completed edge
        updates are applied into the buffer in place and the next round
        is projected.  sync=True (STEP_SYNC) waits until every connected
        edge's round in flight completed.  Returns StepStats."""
        body = P.encode_step(flags)            # validates flags
        if sync:
            body = P.encode_step(operator.index(flags) | P.STEP_SYNC)
        return self._decode(P.decode_step_ok, self._call("STEP", body))

    def drain(self):
        """STEP with DRAIN, once at the end of a run: settles every edge
        without starting new rounds, so each round lands at both ends or
        at neither.  Returns StepStats."""
        return self.step(P.STEP_DRAIN)

    def average(self, target, time_limit_ms=0, max_rounds=0):
        """Gossip-only rounds until the consensus estimate is <= target,
        time_limit_ms passed or max_rounds ran (0 = no limit, not both).
        Every trainer should call it.  Returns AverageResult (not reaching
        the target is not an error)."""
        return self._decode(P.decode_average_ok, self._call(
            "AVERAGE", P.encode_average(target, time_limit_ms, max_rounds)))

    def status(self):
        """The daemon's status document (docs/DAEMON.md) as a dict."""
        text = self._decode(P.decode_status_ok,
                            self._call("STATUS", P.encode_status()))
        try:
            return json.loads(text)
        except ValueError as e:
            raise ProtocolError("status is not JSON: %s" % e, -errno.EBADMSG) from None

    def wait_edges(self, n, timeout=30.0, interval=0.01):
        """Polls STATUS until at least n edges are "up" (the neighbours
        registered the same model); returns the status.  Timeout after
        `timeout` seconds (the client stays usable); its message gives
        each edge that is not up with the daemon's last_error for it (a
        model mismatch, a refused key...)."""
        deadline = time.monotonic() + timeout
        while True:
            st = self.status()
            up = sum(1 for e in st.get("edges", []) if e.get("state") == "up")
            if up >= n:
                return st
            if time.monotonic() >= deadline:
                raise Timeout("only %d of %d edges up after %gs%s"
                              % (up, n, timeout, _down_edges(st)),
                              -errno.ETIMEDOUT)
            time.sleep(interval)

    # ---- lifetime --------------------------------------------------------

    def close(self):
        """Closes the connection (the daemon detaches implicitly) and
        unmaps the buffer as detach() does.  Idempotent."""
        try:   # wakes a call blocked in another thread (ConnectionLost)
            self._sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        with self._lock:
            self._broken = "closed"
            self._sock.close()
        return self._release()

    @property
    def closed(self):
        return self._broken is not None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
