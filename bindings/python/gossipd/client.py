"""gossipd.client: the trainer's side of gossipd's local API in Python,
the counterpart of libgossip/client.c.

This module owns the connection (one AF_UNIX stream socket, one request
at a time, serialized by a lock, every wait bounded by a timeout), the
shared parameter buffer (a sealed memfd mapped MAP_SHARED, passed with
SCM_RIGHTS at REGISTER, and kept to register it again with a restarted
daemon) and the NumPy views into it.  Encoding and decoding are
gossipd.protocol's; the exception classes are gossipd.errors'.  NumPy is
imported only by register().  Nothing is printed: losing and regaining
the daemon is logged at INFO on the "gossipd" logger.
"""
import errno
import fcntl
import json
import logging
import math
import mmap
import operator
import os
import socket
import stat
import sys
import threading
import time
import warnings
from dataclasses import dataclass

from . import errors, protocol as P, undo
from .errors import (ClientClosed, ConnectFailed, ConnectionLost,
                     DaemonNotRunning, GossipdError, InvalidArgument,
                     OfflineError, OfflineWarning, ProtocolError, Timeout,
                     VersionMismatch)

DEFAULT_SOCKET = "/run/gossipd/gossipd.sock"
DEFAULT_TIMEOUT = 60.0         # seconds: connecting, and each request's reply
RECONNECT_WAIT = 1.0           # the longest wait of one reconnect attempt
BACKOFF_FIRST, BACKOFF_MAX = 0.1, 0.5   # between reconnect attempts
RELEASE_WAIT = 10.0           # the longest wait for the daemon to let go of the buffer
OFFLINE_WARN_INTERVAL = 60.0  # seconds between two OfflineWarnings
FINISH_TIME_LIMIT_MS = 30000  # finish()'s AVERAGE, by default
_SUN_PATH_MAX = 107            # sizeof(sockaddr_un.sun_path) - 1
_AWAY = (errno.ECONNRESET, errno.EPIPE, errno.ENOTCONN)   # the daemon went
_log = logging.getLogger("gossipd")


class StepResult(P.StepStats):
    """What step() returns: the daemon's StepStats (a tuple of its 8
    fields), plus what the client adds as attributes:

    offline        True when the daemon was away and nothing was gossiped
                   (the fields are then the last gossiped step's, with
                   edges_applied, edges_projected, edges_skipped 0);
    offline_steps  steps taken offline in the client's life;
    reconnects     times the client connected and registered again;
    gossiped       not offline.
    """
    offline = False
    offline_steps = 0
    reconnects = 0

    def __new__(cls, stats, offline=False, offline_steps=0, reconnects=0):
        self = super().__new__(cls, *stats)
        self.offline = offline
        self.offline_steps = offline_steps
        self.reconnects = reconnects
        return self

    @property
    def gossiped(self):
        return not self.offline

    def __repr__(self):
        return "%s, offline=%r, offline_steps=%d, reconnects=%d)" % (
            super().__repr__()[:-1], self.offline, self.offline_steps,
            self.reconnects)


@dataclass(frozen=True)
class FinishResult:
    """What finish() measured.

    reached   the final AVERAGE's consensus estimate is finite and at most
              the target (the daemon's own flag is not enough: it has
              said reached with an estimate above the target);
    estimate  that estimate (NaN when no edge completed a round);
    rounds    the AVERAGE's gossip-only rounds;
    seconds   finish()'s wall-clock time: drain, average and detach;
    bytes     the bytes this node sent for the model since its REGISTER:
              the training steps' (DRAIN's bytes_sent) plus the AVERAGE's
              (its edges' wire_tx_bytes before and after it).
    """
    reached: bool
    estimate: float
    rounds: int
    seconds: float
    bytes: int


def _wire_tx(st):
    return sum(e.get("wire_tx_bytes", 0) for e in st.get("edges", []))


def finish_run(client, target, time_limit_ms, max_rounds, sync, detach):
    """Client.finish() and Attachment.finish(): DRAIN, AVERAGE towards
    target, then detach() (called even when one of them raised, so that
    the model ends in private memory); a FinishResult."""
    t0 = time.monotonic()
    try:
        drained = client.drain(sync=sync)
        before = _wire_tx(client.status())
        avg = client.average(target, time_limit_ms, max_rounds)
        after = _wire_tx(client.status())
    finally:
        detach()
    reached = bool(avg.reached) and avg.estimate <= target   # False for NaN
    return FinishResult(reached, avg.estimate, avg.rounds,
                        time.monotonic() - t0,
                        drained.bytes_sent + max(after - before, 0))


_PKG_DIR = os.path.dirname(os.path.abspath(__file__))


def _caller_level():
    """warnings.warn's stacklevel for the first frame outside this package
    (the trainer's own call, whether through Client or Attachment)."""
    f, level = sys._getframe(1), 1
    while f is not None and os.path.dirname(os.path.abspath(f.f_code.co_filename)) == _PKG_DIR:
        f, level = f.f_back, level + 1
    return level


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


_STATE_WHY = {
    "idle": "linked, but the neighbour has no trainer attached (no model "
            "registered there)",
    "connecting": "no link yet (is the neighbour's gossipd running and "
                  "reachable at its Endpoint?)",
    "down": "no link (is the neighbour's gossipd running and reachable at "
            "its Endpoint?)",
    "handshake": "handshake under way",
    "leaving": "the peer was removed by a reload",
}


def _down_edges(st):
    """"; peer ABCDEFGH (idle): <why>" for each edge of a status document
    that is not up: the daemon's last_error for it, else what its state
    means."""
    out = ""
    for e in st.get("edges", []):
        state = e.get("state")
        if state != "up":
            why = e.get("last_error") or _STATE_WHY.get(state, "not up")
            out += "; peer %s (%s): %s" % (str(e.get("peer", "?"))[:8], state, why)
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
                stats = c.step()       # stats.offline: the daemon is away
            c.drain()
            c.average(1e-4, time_limit_ms=30000)

    timeout (seconds; None: no limit) bounds connecting and each request,
    the whole call (AVERAGE: its time limit longer).  It must exceed what
    a step(sync=True), a drain() or the neighbours may take.

    reconnect: when the daemon goes away (restart, crash), step() returns
    at once with offline set and the client reconnects by itself,
    registering the same buffer again (see bindings/python/README.md).
    reconnect=False makes a lost connection final (ConnectionLost, then
    ClientClosed).

    undo_section: the buffer carries a copy of the parameters after them,
    so that a daemon killed inside a write into them (a step) is undone
    or redone whole (undo.py, PROTOCOL.md 5.4).  False halves the
    buffer's memory; such a kill may then land a round at one end only.

    strict: a step that finds the daemon away raises OfflineError instead
    of returning an offline StepResult (which warns with OfflineWarning
    the first time and then at most every OFFLINE_WARN_INTERVAL seconds).
    """

    def __init__(self, socket_path=None, name=None, timeout=DEFAULT_TIMEOUT, *,
                 reconnect=True, undo_section=True, strict=False):
        path = os.fspath(socket_path if socket_path is not None else default_socket())
        if not path:
            raise InvalidArgument("the socket path is empty")
        if len(os.fsencode(path)) > _SUN_PATH_MAX:
            raise InvalidArgument("socket path %r is longer than %d bytes"
                                  % (path, _SUN_PATH_MAX), -errno.ENAMETOOLONG)
        if name is None:
            name = "python-%d" % os.getpid()
        self._hello = P.encode_hello(name)     # validates the name first
        self.socket_path = path
        self.name = name
        self.timeout = timeout
        self.reconnect = reconnect
        self.undo_section = undo_section       # see undo.py
        self.strict = strict
        self._away = None                      # why the daemon is away
        self._warned_at = None                 # the last OfflineWarning
        self._pidfd = None                     # the daemon last connected to
        self._floats = 0
        self.offline_steps = 0
        self.reconnects = 0
        self._lock = threading.Lock()
        self._broken = None                    # why the client is unusable
        self._closing = False
        self._attempt = False                  # in a reconnect attempt
        self._sock = None                      # None while offline
        self._next_attempt = 0.0
        self._backoff = BACKOFF_FIRST
        self._mm = None
        self._memfd = None                     # kept to register again
        self._reg_body = None
        self._last = P.StepStats(0, 0, 0, 0, 0, 0, 0, math.nan)
        self._arrays = None
        self._flat = None
        h = self._open(timeout)
        self.daemon_version = h.name           # e.g. "gossipd 0.1.0"
        self.protocol_version = h.version

    def _open(self, wait):
        """Connects and says HELLO, each within wait seconds; the socket
        is self._sock afterwards, or closed when this raises."""
        self._sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            self._sock.settimeout(wait)
            self._connect(self.socket_path)
            h = P.decode_hello_ok(self._exchange("HELLO", self._hello, wait=wait))
            undo.close(self._pidfd)
            self._pidfd = undo.daemon_pidfd(self._sock)
            return h
        except ProtocolError as e:
            self._close_socket()
            if e.code == -errno.EPROTONOSUPPORT:
                raise VersionMismatch("gossipd at %s: %s" % (self.socket_path, e),
                                      e.code, e.text) from None
            raise
        except BaseException:
            self._close_socket()
            raise

    def _connect(self, path):
        try:
            self._sock.connect(path)
        except socket.timeout:
            raise Timeout("connecting to %s timed out" % path, -errno.ETIMEDOUT) from None
        except OSError as e:
            code = -(e.errno or errno.EIO)
            if e.errno in (errno.ENOENT, errno.EAGAIN):
                raise DaemonNotRunning("gossipd is not running: no socket at %s"
                                       % path if e.errno == errno.ENOENT else
                                       "gossipd at %s accepts no connection"
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

    def _undo_lost_write(self):
        """The connection is lost: a write the daemon was killed inside is
        undone (undo.py)."""
        if self._mm is not None and self.undo_section:
            undo.recover(self._mm, self._floats, self._pidfd, _numpy())

    def _close_socket(self):
        if self._sock is not None:
            self._sock.close()
        self._sock = None

    def _await_release(self):
        """Before closing a live connection with a model registered (a
        timeout, or close() without detach()): ends our side and reads to
        the daemon's EOF, at most RELEASE_WAIT seconds.  The daemon keeps
        the connection open until its implicit DETACH has let go of the
        buffer (a step still running, the neighbours' answers), so after
        the EOF only this process writes it (PROTOCOL.md 5.3)."""
        sock = self._sock
        if sock is None or self._mm is None:
            return
        deadline = time.monotonic() + RELEASE_WAIT
        try:
            sock.shutdown(socket.SHUT_WR)
            while True:
                left = deadline - time.monotonic()
                if left <= 0:
                    return
                sock.settimeout(left)
                if not sock.recv(4096):
                    return
        except OSError:       # socket.timeout included: give up waiting
            return

    def _fail(self, exc):
        """Marks the client unusable, closes its socket (the daemon then
        detaches) and returns exc to raise."""
        self._broken = str(exc)
        if isinstance(exc, Timeout):
            self._await_release()
        self._undo_lost_write()
        self._close_socket()
        return exc

    def _lost(self, exc):
        """The daemon went away: offline, the next step tries again."""
        self._undo_lost_write()
        self._close_socket()
        self._away = exc
        if not self._attempt:
            _log.info("gossipd at %s: %s; offline until it is back",
                      self.socket_path, exc)
            self._next_attempt = time.monotonic()
            self._backoff = BACKOFF_FIRST
        return exc

    def _left(self, deadline):
        """Sets the socket's timeout to what is left until deadline."""
        if deadline is not None:
            left = deadline - time.monotonic()
            if left <= 0:
                raise socket.timeout()
            self._sock.settimeout(left)

    def _recv_exact(self, n, deadline):
        buf = bytearray(n)
        view, got = memoryview(buf), 0
        while got < n:
            self._left(deadline)
            k = self._sock.recv_into(view[got:])
            if k == 0:
                raise ConnectionResetError(errno.ECONNRESET, "end of stream")
            got += k
        return bytes(buf)

    def _exchange(self, request, body, fd=None, wait=None):
        """Sends one request (with fd as SCM_RIGHTS) and returns the reply
        body, all within wait seconds (None: no limit); the daemon's
        ERROR becomes its DaemonError.  The lock is held (or the client
        is being built)."""
        deadline = None if wait is None else time.monotonic() + wait
        data = P.frame(body)
        try:
            if fd is not None:
                self._left(deadline)
                sent = socket.send_fds(self._sock, [data], [fd], socket.MSG_NOSIGNAL)
                data = data[sent:]
            if data:
                self._left(deadline)
                self._sock.sendall(data, socket.MSG_NOSIGNAL)
            reply = self._recv_exact(P.frame_length(self._recv_exact(P.FRAME_HEADER, deadline)),
                                     deadline)
        except socket.timeout:
            exc = Timeout("%s: no reply within %gs" % (request, wait), -errno.ETIMEDOUT)
            raise (self._lost(exc) if self._attempt else self._fail(exc)) from None
        except ProtocolError as e:
            raise self._fail(e) from None
        except OSError as e:
            exc = ConnectionLost("%s: connection to gossipd lost: %s"
                                 % (request, e.strerror or e), -(e.errno or errno.EIO))
            away = e.errno in _AWAY and self.reconnect and not self._closing
            raise (self._lost(exc) if away else self._fail(exc)) from None
        if reply[0] == P.ERROR:
            try:
                err = P.decode_error(reply)
            except ProtocolError as e:
                raise self._fail(e) from None
            raise errors.from_reply(request, err.code, err.text)
        return reply

    def _reconnect(self):
        """One attempt to reach the daemon again: connect, HELLO and, with
        a model registered, REGISTER of the same memfd and tensors.
        Returns None, or the exception saying why the daemon is still
        away (the next attempt is then scheduled with backoff).  Raises
        what waiting cannot cure (an ERROR to HELLO or REGISTER, another
        protocol version), which leaves the client unusable."""
        wait = RECONNECT_WAIT if self.timeout is None else min(self.timeout, RECONNECT_WAIT)
        self._attempt = True
        try:
            self._open(wait)
            if self._memfd is not None:
                self._decode(lambda b: P.decode_empty(b, P.OK),
                             self._exchange("REGISTER", self._reg_body, self._memfd, wait))
        except (DaemonNotRunning, ConnectionLost, Timeout) as e:
            if self._broken is not None:
                raise
            self._close_socket()
            self._away = e
            self._next_attempt = time.monotonic() + self._backoff
            self._backoff = min(2 * self._backoff, BACKOFF_MAX)
            return e
        except GossipdError as e:
            raise self._fail(e) from None
        finally:
            self._attempt = False
        self.reconnects += 1
        self._backoff = BACKOFF_FIRST
        _log.info("gossipd at %s: connected again%s", self.socket_path,
                  " and registered the model" if self._memfd is not None else "")
        return None

    def _usable(self):
        if self._broken is not None:
            raise ClientClosed("gossipd client unusable: %s" % self._broken,
                               -errno.ENOTCONN)

    def _call(self, request, body, fd=None, wait=None):
        """_exchange() under the lock, reconnecting first if the daemon
        was away (raising why if it still is)."""
        with self._lock:
            self._usable()
            if self._sock is None:
                away = self._reconnect()
                if away is not None:
                    raise away
            return self._exchange(request, body, fd, wait)

    def _decode(self, decoder, reply):
        try:
            return decoder(reply)
        except ProtocolError as e:
            raise self._fail(ProtocolError("unexpected reply: %s" % e, -errno.EBADMSG)) from None

    # ---- the model -------------------------------------------------------

    def register(self, tensors, *, method=None, rank=None, gamma=None,
                 power_iterations=None, precision=None):
        """Hands the daemon a model of float32 tensors, given as (name,
        shape) pairs or a {name: shape} mapping, packed in that order.
        Returns one writable NumPy float32 array per tensor, each a view
        into the shared buffer (zero-filled: write the initial model into
        them before the first step()).

        The options choose this model's settings (None: the daemon's
        config's): method ("powergossip", "exact", "choco-topk",
        "choco-randk", "choco-sign"), rank (powergossip, up to the daemon's
        MaxRank), gamma (> 0), power_iterations (gossip rounds per step:
        only 1 is implemented) and precision (on the wire: "float32"; the
        16-bit ones are refused, not implemented).  Every trainer of the
        graph must ask the same: the daemons refuse an edge between models
        of different settings, naming both.  Refusals: InvalidArgument
        (locally), DaemonError with code -ERANGE (beyond the daemon's
        limits) or -EOPNOTSUPP (not implemented) and the daemon's reason."""
        ts, floats = P.tensor_list(tensors)
        opts = P.register_options(method, rank, gamma, power_iterations, precision)
        nbytes = undo.nbytes(floats) if self.undo_section else 4 * floats
        body = P.encode_register(nbytes, ts, opts)   # size checks before any fd
        np = _numpy()
        if self._mm is not None:
            raise errors.Busy("this client already registered a model: "
                              "detach() first", -errno.EBUSY)
        fd, mm = shared_buffer(nbytes)
        if self.undo_section:
            undo.init(mm, floats)
        try:
            self._decode(lambda b: P.decode_empty(b, P.OK),
                         self._call("REGISTER", body, fd, self.timeout))
        except BaseException:
            mm.close()
            os.close(fd)
            raise
        self._mm, self._memfd, self._reg_body = mm, fd, body
        self._floats = floats
        self._last = P.StepStats(0, 0, 0, 0, 0, 0, 0, math.nan)
        self._flat = np.frombuffer(mm, dtype=np.float32, count=floats)
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
        the arrays.  While the daemon is away, or if it goes away during
        the DETACH, this only releases the buffer (the daemon holds no
        model of ours).  Returns True if the buffer was unmapped at once,
        False if arrays held elsewhere keep it alive."""
        self._detach_model()
        return self._release()

    def _detach_model(self):
        """DETACH, leaving the buffer mapped (Attachment copies the
        parameters out of it between this and _release())."""
        if not (self.offline and self._mm is not None):
            try:
                self._decode(lambda b: P.decode_empty(b, P.OK),
                             self._call("DETACH", P.encode_detach(), wait=self.timeout))
            except ConnectionLost:
                if not self.offline or self._mm is None:
                    raise      # a daemon that lost us detached the model

    def _release(self):
        """Drops this client's views, its memfd and unmaps; returns False
        when arrays held elsewhere keep the mapping alive (it then goes
        with them)."""
        mm, self._mm = self._mm, None
        fd, self._memfd, self._reg_body = self._memfd, None, None
        self._flat = self._arrays = None
        if fd is not None:
            os.close(fd)
        if mm is None:
            return True
        try:
            mm.close()
        except BufferError:
            return False               # exported views: unmapped by GC
        return True

    # ---- gossip ----------------------------------------------------------

    def _offline_step(self):
        """A step without gossip while the daemon is away: OfflineError
        when strict, else an offline StepResult and, the first time and
        then at most every OFFLINE_WARN_INTERVAL s, an OfflineWarning."""
        self.offline_steps += 1
        why = "gossipd at %s is away (%s): %d step%s without gossip so far" % (
            self.socket_path, self._away or "connection lost", self.offline_steps,
            "" if self.offline_steps == 1 else "s")
        if self.strict:
            raise OfflineError(why + "; nothing was gossiped (strict=True)",
                               -errno.ENOTCONN)
        now = time.monotonic()
        if self._warned_at is None or now - self._warned_at >= OFFLINE_WARN_INTERVAL:
            self._warned_at = now
            warnings.warn(why + "; training goes on alone and the client "
                          "reconnects (strict=True makes this an error)",
                          OfflineWarning, stacklevel=_caller_level())
        return StepResult(self._last._replace(edges_applied=0, edges_projected=0,
                                              edges_skipped=0),
                          True, self.offline_steps, self.reconnects)

    def step(self, flags=0, *, sync=False):
        """One gossip step, after each optimizer step: completed edge
        updates are applied into the buffer in place and the next round
        is projected.  sync=True (STEP_SYNC) waits until every connected
        edge's round in flight completed.  Returns a StepResult.

        While the daemon is away (a step without DRAIN) this returns at
        once with offline=True and nothing gossiped; at most one
        reconnect attempt per step, 0.1 s after the last one doubling to
        0.5 s.  It raises only what waiting cannot cure (the restarted
        daemon's ERROR to HELLO or REGISTER, such as Busy when another
        trainer registered meanwhile; VersionMismatch), Timeout, or a
        DaemonError answering the STEP itself."""
        body = P.encode_step(flags)            # validates flags
        if sync:
            body = P.encode_step(operator.index(flags) | P.STEP_SYNC)
        drain = bool(operator.index(flags) & P.STEP_DRAIN)
        request = ("DRAIN" if drain else "STEP") + (" (sync)" if sync else "")
        with self._lock:
            self._usable()
            if self._sock is None and not drain:
                if time.monotonic() < self._next_attempt or self._reconnect() is not None:
                    return self._offline_step()
            if self._sock is None:
                away = self._reconnect()
                if away is not None:
                    raise away
            try:
                reply = self._exchange(request, body, wait=self.timeout)
            except Timeout as e:
                if not sync:
                    raise
                raise Timeout("%s: sync=True waits for every neighbour's round "
                              "in flight, and one did not end (a neighbour "
                              "paused at a barrier or in evaluation, or gone); "
                              "drain() without sync waits at most the daemon's "
                              "DrainWait" % e, e.code) from None
            except ConnectionLost:
                if drain or self._broken is not None:
                    raise
                return self._offline_step()    # it went away just now
            self._last = self._decode(P.decode_step_ok, reply)
            return StepResult(self._last, False, self.offline_steps, self.reconnects)

    def drain(self, *, sync=False):
        """STEP with DRAIN, once at the end of a run: answers the rounds
        neighbours already sent and waits for the rounds in flight,
        starting no new one.  It does not wait for a straggler's round, and
        for the others at most the daemon's DrainWait (2 s by default), so
        a neighbour paused at a barrier holds no one; a round left in
        flight lands at a later request, or DETACH ends it at both ends.
        sync=True waits for every round (a synchronous run).  Returns a
        StepResult.  While the daemon is away it raises why
        (DaemonNotRunning, ConnectionLost, Timeout) after one reconnect
        attempt; the client stays offline."""
        return self.step(P.STEP_DRAIN, sync=sync)

    def average(self, target, time_limit_ms=0, max_rounds=0):
        """Gossip-only rounds until the consensus estimate is <= target,
        time_limit_ms passed or max_rounds ran (0 = no limit, not both).
        Every trainer should call it.  Returns AverageResult (not reaching
        the target is not an error).  Waits the timeout longer than
        time_limit_ms.  Offline: as drain()."""
        body = P.encode_average(target, time_limit_ms, max_rounds)
        wait = None if self.timeout is None else self.timeout + time_limit_ms / 1000.0
        return self._decode(P.decode_average_ok, self._call("AVERAGE", body, wait=wait))

    def status(self):
        """The daemon's status document (docs/DAEMON.md) as a dict.
        Offline: as drain()."""
        text = self._decode(P.decode_status_ok,
                            self._call("STATUS", P.encode_status(), wait=self.timeout))
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

    def finish(self, target, time_limit_ms=FINISH_TIME_LIMIT_MS, max_rounds=0, *,
               sync=False):
        """Ends the run in one call: drain(sync=sync), average(target,
        time_limit_ms, max_rounds) and detach() (always, even if one of
        them raised).  Every trainer of the network should call it.
        Returns a FinishResult (reached, estimate, rounds, seconds,
        bytes); not reaching the target is not an error."""
        return finish_run(self, target, time_limit_ms, max_rounds, sync, self.detach)

    # ---- lifetime --------------------------------------------------------

    def close(self):
        """Closes the connection (the daemon detaches implicitly) and
        unmaps the buffer as detach() does.  Idempotent."""
        self._closing = True
        sock = self._sock
        try:
            # Wakes a call blocked in another thread (ConnectionLost): at
            # once with no model, else with the daemon's EOF, once it let
            # go of the buffer.
            if sock is not None:
                sock.shutdown(socket.SHUT_RDWR if self._mm is None else socket.SHUT_WR)
        except OSError:
            pass
        with self._lock:
            if self._broken is None:
                self._await_release()
            self._broken = "closed"
            self._close_socket()
            undo.close(self._pidfd)
            self._pidfd = None
        return self._release()

    @property
    def closed(self):
        return self._broken is not None

    @property
    def offline(self):
        """True while the daemon is away and the client will reconnect."""
        return self._broken is None and self._sock is None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
