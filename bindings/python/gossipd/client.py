"""gossipd.client: the trainer's side of gossipd's local API in Python, a
layer over libgossip's C client (libgossip/client.h) through ctypes.

The C client owns the connection and everything that keeps a model
consistent across failures: the framing, the timeouts, going offline and
reconnecting with backoff, registering the same buffer again, undoing a
write the daemon was killed inside, and waiting for the daemon to let go
of the buffer before it is touched again.  This module owns what is
Python's: checking arguments with messages that name them
(gossipd.checks), the exceptions (gossipd.errors) made from the C
client's failure record, the NumPy views of the buffer (its own mapping
of the C client's memfd, so that views held after detach() stay valid),
OfflineWarning and strict mode, finish() and wait_edges().  NumPy is
imported only by register(), libgossip (gossipd._lib) when the first
Client is made.  Nothing is printed: losing and regaining the daemon is
logged at INFO on the "gossipd" logger.
"""
import ctypes
import errno
import json
import logging
import math
import mmap
import os
import stat
import sys
import threading
import time
import warnings
from dataclasses import dataclass

from . import _lib, checks, errors
from .checks import STEP_DRAIN, STEP_SYNC, AverageResult, FetchResult, StepStats
from .errors import (ClientClosed, ConnectFailed, ConnectionLost,
                     DaemonNotRunning, GossipdError, InvalidArgument,
                     OfflineError, OfflineWarning, ProtocolError, Timeout,
                     VersionMismatch)

DEFAULT_SOCKET = "/run/gossipd/gossipd.sock"
DEFAULT_TIMEOUT = 60.0         # seconds: connecting, and each request's reply
OFFLINE_WARN_INTERVAL = 60.0   # seconds between two OfflineWarnings
FINISH_TIME_LIMIT_MS = 30000   # finish()'s AVERAGE, by default
FETCH_TIME_LIMIT_MS = 30000    # fetch()'s, by default
_SUN_PATH_MAX = 107            # sizeof(sockaddr_un.sun_path) - 1
_log = logging.getLogger("gossipd")


class StepResult(StepStats):
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


def _timeout_ms(timeout):
    """Client's timeout (seconds, None: no limit) as gsp_client_options'."""
    if timeout is None:
        return _lib.NO_TIMEOUT
    if not timeout >= 0:
        raise InvalidArgument("timeout must be >= 0 seconds or None, not %r"
                              % (timeout,))
    return max(1, min(math.ceil(timeout * 1000), _lib.NO_TIMEOUT - 1))


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
    or redone whole (PROTOCOL.md 5.4).  False halves the buffer's memory;
    such a kill may then land a round at one end only.

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
        name_bytes = checks.text_bytes(name, checks.NAME_MAX, "name")
        opts = _lib.Options(name_bytes, _timeout_ms(timeout),
                            (0 if reconnect else _lib.NO_RECONNECT) |
                            (0 if undo_section else _lib.NO_UNDO))
        self._lib = _lib.load()
        self.socket_path = path
        self.name = name
        self._timeout = timeout
        self.reconnect = reconnect
        self.undo_section = undo_section
        self.strict = strict
        self._warned_at = None                 # the last OfflineWarning
        self._lock = threading.Lock()          # one call on the C client at a time
        self._handle_lock = threading.Lock()   # _c against its free (close())
        self._c = None                         # the gsp_client, while open
        self._mm = None                        # our mapping of its memfd
        self._floats = 0
        self._arrays = None
        self._flat = None
        self._last = StepStats(0, 0, 0, 0, 0, 0, 0, math.nan)
        self.offline_steps = 0
        self.reconnects = 0
        handle, failure = ctypes.c_void_p(), _lib.Failure()
        r = self._lib.gsp_client_connect_opts(os.fsencode(path), ctypes.byref(opts),
                                              ctypes.byref(handle), ctypes.byref(failure))
        if r < 0:
            raise self._error("HELLO", r, failure, connecting=True)
        self._c = handle
        version = ctypes.c_uint16()
        self.daemon_version = self._lib.gsp_client_daemon(
            handle, ctypes.byref(version)).decode("utf-8", "surrogateescape")
        self.protocol_version = version.value

    # ---- failures --------------------------------------------------------

    def _error(self, request, code, failure, connecting=False, wait=None):
        """The exception for a call that returned code, with the C
        client's failure record."""
        stage, path = failure.stage, self.socket_path
        text = failure.text.decode("utf-8", "surrogateescape")
        if stage == _lib.STAGE_DAEMON:
            return errors.from_reply(request, code, text)
        if stage == _lib.STAGE_VERSION:
            v = failure.version
            return VersionMismatch("gossipd at %s speaks protocol version %d.%d, "
                                   "another major version than libgossip's client"
                                   % (path, v >> 8, v & 0xFF), code)
        if stage in (_lib.STAGE_FRAME, _lib.STAGE_REPLY):
            what = ("a frame of length %d" % failure.frame_len
                    if stage == _lib.STAGE_FRAME else
                    "a reply of type 0x%02x" % failure.reply_type
                    if failure.unexpected_type else
                    "a reply that does not decode (type 0x%02x)" % failure.reply_type)
            return ProtocolError("%s: unexpected reply from gossipd: %s"
                                 % (request, what), code)
        if stage == _lib.STAGE_CONNECT or (connecting and code == -errno.ETIMEDOUT):
            return self._connect_error(code)
        if stage == _lib.STAGE_LOCAL:
            if code == -errno.ENOTCONN:
                return ClientClosed("gossipd client unusable: %s" % (
                    self._broken_why or "closed"), code)
            if code in (-errno.EINVAL, -errno.EMSGSIZE, -errno.EOVERFLOW):
                return InvalidArgument("%s refused locally: %s"
                                       % (request, errors.strerror(code)), code)
            return GossipdError("%s: %s" % (request, errors.strerror(code)), code)
        if code == -errno.ETIMEDOUT:
            return Timeout("%s: no reply within %gs" % (request, wait), code)
        if code == -errno.ECANCELED:
            return ConnectionLost("%s: the client was closed meanwhile" % request, code)
        return ConnectionLost("%s: connection to gossipd lost: %s"
                              % (request, errors.strerror(code)), code)

    def _connect_error(self, code):
        path = self.socket_path
        if code == -errno.ETIMEDOUT:
            return Timeout("connecting to %s timed out" % path, code)
        if code in (-errno.ENOENT, -errno.EAGAIN):
            return DaemonNotRunning("gossipd is not running: no socket at %s" % path
                                    if code == -errno.ENOENT else
                                    "gossipd at %s accepts no connection" % path, code)
        if code == -errno.ECONNREFUSED and _is_socket(path):
            return DaemonNotRunning("gossipd is not running: %s is a stale socket"
                                    % path, code)
        if code == -errno.EACCES:
            return ConnectFailed("no permission on %s: is this user in the "
                                 "socket's group?" % path, code)
        why = errors.strerror(code) if _is_socket(path) or not os.path.exists(path) \
            else "not a socket"
        return ConnectFailed("cannot connect to %s: %s" % (path, why), code)

    _broken_why = None

    def _failed(self, request, code, wait=None):
        """The exception for the call on the C client that returned code;
        remembers why the client broke, if it did."""
        failure = self._lib.gsp_client_last_failure(self._c).contents
        exc = self._error(request, code, failure, wait=wait)
        if self._state() == _lib.UNUSABLE and self._broken_why is None:
            self._broken_why = str(exc)
        return exc

    @property
    def timeout(self):
        """The longest wait of connecting and of each request, in seconds
        (None: no limit); may be changed for the calls that follow."""
        return self._timeout

    @timeout.setter
    def timeout(self, value):
        ms = _timeout_ms(value)
        with self._lock:
            if self._c is not None:
                self._lib.gsp_client_set_timeout(self._c, ms)
        self._timeout = value

    def _state(self):
        with self._handle_lock:
            return self._lib.gsp_client_state_of(self._c) if self._c else _lib.UNUSABLE

    def _usable(self):
        if self._c is None:
            raise ClientClosed("gossipd client unusable: %s"
                               % (self._broken_why or "closed"), -errno.ENOTCONN)

    # ---- the model -------------------------------------------------------

    def register(self, tensors, *, method=None, rank=None, gamma=None,
                 power_iterations=None, precision=None, dtype=None, group=False):
        """Hands the daemon a model of tensors of dtype ("float32", the
        default, "float16" or "bfloat16", or a NumPy dtype), given as
        (name, shape) pairs or a {name: shape} mapping, packed in that
        order.  Returns one writable NumPy array per tensor, each a view
        into the shared buffer (zero-filled: write the initial model into
        them before the first step()): float32 or float16 arrays, and for
        bfloat16 uint16 arrays of the values' bits (NumPy has no bfloat16;
        torch views them as torch.bfloat16).

        A 16-bit model: the daemon keeps a float32 master copy, reads
        your changes of the buffer into it at each step and writes the
        master back rounded to nearest even, so gossip conserves the
        network average of the masters exactly as for float32 and, after
        each step that applied an update, the buffer is within half a
        16-bit unit in the last place of its master (PROTOCOL.md 5.3).  Its buffer has no undo section.

        The options choose this model's settings (None: the daemon's
        config's): method ("powergossip", "exact", "choco-topk",
        "choco-randk", "choco-sign"), rank (powergossip, up to the daemon's
        MaxRank), gamma (> 0), power_iterations (gossip rounds per step:
        only 1 is implemented) and precision (powergossip's factors on the
        wire: "float32", or "float16" / "bfloat16" for half the bytes).
        Every trainer of the
        graph must ask the same: the daemons refuse an edge between models
        of different settings, naming both.  Refusals: InvalidArgument
        (locally), DaemonError with code -ERANGE (beyond the daemon's
        limits) or -EOPNOTSUPP (not implemented) and the daemon's reason.

        group=True joins the machine's local group: the trainers on this
        machine that register the same model (tensors, settings, float32)
        with group=True share one node of the graph.  At each step the
        daemon replaces their buffers by their mean and gossips it with the
        neighbours; a trainer that has not sent its step within the
        daemon's LocalWait is left out of that step and takes the node's
        change at its next step (PROTOCOL.md 5.3, "Local group").  Every
        trainer's step() returns the same result and leaves the same
        parameters.  drain() and average() work only while
        the group has one trainer (DaemonError -EOPNOTSUPP otherwise).  A
        model that differs from the group's is refused (-EINVAL), with
        both summaries."""
        ts, floats = checks.tensor_list(tensors)
        np = _numpy()
        if dtype is not None and not isinstance(dtype, str):
            dtype = np.dtype(dtype).name             # np.float16 -> "float16"
        o = checks.register_options(method, rank, gamma, power_iterations, precision,
                                    None if dtype == "float32" else dtype, group)
        if self._mm is not None:
            raise errors.Busy("this client already registered a model: "
                              "detach() first", -errno.EBUSY)
        arr = (_lib.Tensor * len(ts))()
        for t, src in zip(arr, ts):
            t.name = checks.text_bytes(src.name, checks.WIRE_NAME_MAX, "name")
            t.ndim = len(src.shape)
            for d, n in enumerate(src.shape):
                t.shape[d] = n
        copts = None
        if o is not None:
            copts = _lib.RegisterOptions(
                o.method.encode() if o.method else None, o.rank or 0, o.gamma or 0.0,
                o.power_iterations or 0,
                checks.PRECISIONS.index(o.precision) + 1 if o.precision else 0,
                checks.DTYPES.index(o.dtype) + 1 if o.dtype else 0,
                1 if o.group else 0)
        params = ctypes.POINTER(ctypes.c_float)()
        with self._lock:
            self._usable()
            r = self._lib.gsp_client_register_opts(
                self._c, arr, len(ts), ctypes.byref(copts) if copts else None,
                ctypes.byref(params))
            if r < 0:
                raise self._failed("REGISTER", r, self.timeout)
            fd = self._lib.gsp_client_buffer_fd(self._c)
            size = os.fstat(fd).st_size
            self._mm = mmap.mmap(fd, size, mmap.MAP_SHARED,
                                 mmap.PROT_READ | mmap.PROT_WRITE)
        self._floats = floats
        self._last = StepStats(0, 0, 0, 0, 0, 0, 0, math.nan)
        kind = {None: np.float32, "float16": np.float16,
                "bfloat16": np.uint16}[o.dtype if o else None]
        self._flat = np.frombuffer(self._mm, dtype=kind, count=floats)
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
        """The whole buffer as one array of the model's dtype (None when
        none; bfloat16: uint16 bits)."""
        return self._flat

    @property
    def buffer_range(self):
        """(address, nbytes) of the parameters' mapping, or None."""
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
        """DETACH, leaving this module's mapping in place (Attachment
        copies the parameters out of it between this and _release())."""
        with self._lock:
            self._usable()
            r = self._lib.gsp_client_detach(self._c)
            if r < 0:
                raise self._failed("DETACH", r, self.timeout)

    def _release(self):
        """Drops this client's views and unmaps its mapping; returns False
        when arrays held elsewhere keep the mapping alive (it then goes
        with them)."""
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

    def _offline_step(self, res):
        """A step without gossip while the daemon is away: OfflineError
        when strict, else an offline StepResult and, the first time and
        then at most every OFFLINE_WARN_INTERVAL s, an OfflineWarning."""
        why = self._lib.gsp_client_last_failure(self._c).contents
        away = self._error("STEP", why.code, why) if why.code else "connection lost"
        msg = "gossipd at %s is away (%s): %d step%s without gossip so far" % (
            self.socket_path, away, res.offline_steps,
            "" if res.offline_steps == 1 else "s")
        if self.strict:
            raise OfflineError(msg + "; nothing was gossiped (strict=True)",
                               -errno.ENOTCONN)
        now = time.monotonic()
        if self._warned_at is None or now - self._warned_at >= OFFLINE_WARN_INTERVAL:
            self._warned_at = now
            warnings.warn(msg + "; training goes on alone and the client "
                          "reconnects (strict=True makes this an error)",
                          OfflineWarning, stacklevel=_caller_level())
        return StepResult(self._last._replace(edges_applied=0, edges_projected=0,
                                              edges_skipped=0),
                          True, res.offline_steps, res.reconnects)

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
        flags = checks.step_flags(flags) | (STEP_SYNC if sync else 0)
        drain = bool(flags & STEP_DRAIN)
        request = ("DRAIN" if drain else "STEP") + (" (sync)" if sync else "")
        res = _lib.StepResult()
        with self._lock:
            self._usable()
            was = self._state()
            r = self._lib.gsp_client_step(self._c, flags, ctypes.byref(res))
            if r < 0:
                if was == _lib.OFFLINE and self._state() == _lib.UNUSABLE:
                    request = "REGISTER (reconnecting)"
                exc = self._failed(request, r, self.timeout)
                if isinstance(exc, Timeout) and sync:
                    exc = Timeout("%s: sync=True waits for every neighbour's round "
                                  "in flight, and one did not end (a neighbour "
                                  "paused at a barrier or in evaluation, or gone); "
                                  "drain() without sync waits at most the daemon's "
                                  "DrainWait" % exc, exc.code)
                raise exc
            self.offline_steps, self.reconnects = res.offline_steps, res.reconnects
            if res.offline:
                if was != _lib.OFFLINE:
                    _log.info("gossipd at %s: connection lost; offline until it "
                              "is back", self.socket_path)
                return self._offline_step(res)
            if was == _lib.OFFLINE:
                _log.info("gossipd at %s: connected again and registered the "
                          "model", self.socket_path)
            self._last = StepStats(res.step, res.edges_applied, res.edges_projected,
                                   res.edges_skipped, res.max_staleness,
                                   res.bytes_sent, res.bytes_received,
                                   res.consensus_estimate)
            return StepResult(self._last, False, res.offline_steps, res.reconnects)

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
        return self.step(STEP_DRAIN, sync=sync)

    def average(self, target, time_limit_ms=0, max_rounds=0):
        """Gossip-only rounds until the consensus estimate is <= target,
        time_limit_ms passed or max_rounds ran (0 = no limit, not both).
        Every trainer should call it.  Returns AverageResult (not reaching
        the target is not an error).  Waits the timeout longer than
        time_limit_ms.  Offline: as drain()."""
        target, time_limit_ms, max_rounds = checks.average_args(
            target, time_limit_ms, max_rounds)
        res = _lib.AverageResult()
        wait = None if self.timeout is None else self.timeout + time_limit_ms / 1000.0
        with self._lock:
            self._usable()
            r = self._lib.gsp_client_average(self._c, target, time_limit_ms,
                                             max_rounds, ctypes.byref(res))
            if r < 0:
                raise self._failed("AVERAGE", r, wait)
        return AverageResult(res.rounds, res.estimate, bool(res.reached))

    def fetch(self, time_limit_ms=FETCH_TIME_LIMIT_MS):
        """Copies a neighbour's current model into the buffer: the daemon
        asks a peer whose edge is up (the same model: layout, dtype and
        settings) for a snapshot, verifies it against the peer's hash and
        writes it into the buffer before this returns.  For a trainer that
        joins a running job (right after register(), before the first
        step) or restarts from an old checkpoint; the network's average
        moves by the difference, as with any write of the trainer's.
        Returns FetchResult(bytes, seconds, peer); bytes 0 and peer ""
        when every neighbour up said its model has not stepped yet (a job
        that starts: the buffer keeps its own model).  No copy within
        time_limit_ms (no neighbour with this model, say): DaemonError
        with code -ETIMEDOUT and the daemon's reason; a local group:
        -EOPNOTSUPP.  The buffer is unchanged when it raises.  Offline: as
        drain()."""
        time_limit_ms = int(time_limit_ms)
        if time_limit_ms <= 0 or time_limit_ms >= 1 << 32:
            raise InvalidArgument("time_limit_ms must be in 1..2^32-1")
        res = _lib.FetchResult()
        wait = None if self.timeout is None else self.timeout + time_limit_ms / 1000.0
        with self._lock:
            self._usable()
            r = self._lib.gsp_client_fetch(self._c, time_limit_ms, ctypes.byref(res))
            if r < 0:
                raise self._failed("FETCH", r, wait)
        return FetchResult(res.bytes, res.took_ms / 1000.0,
                           res.peer.decode("ascii", "replace"))

    def status(self):
        """The daemon's status document (docs/DAEMON.md) as a dict.
        Offline: as drain()."""
        out = ctypes.c_void_p()
        with self._lock:
            self._usable()
            r = self._lib.gsp_client_status(self._c, ctypes.byref(out))
            if r < 0:
                raise self._failed("STATUS", r, self.timeout)
        try:
            text = ctypes.string_at(out).decode("utf-8", "surrogateescape")
        finally:
            _libc_free(out)
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
        """Closes the connection (the daemon detaches implicitly, and the
        C client waits until it let go of the buffer) and unmaps the
        buffer as detach() does.  A call blocked in another thread
        returns at once with ConnectionLost.  Idempotent."""
        with self._handle_lock:
            if self._c is not None:
                self._lib.gsp_client_interrupt(self._c)
        with self._lock:
            with self._handle_lock:
                c, self._c = self._c, None
            if c is not None:
                self._lib.gsp_client_close(c)
        return self._release()

    @property
    def closed(self):
        return self._state() == _lib.UNUSABLE

    @property
    def offline(self):
        """True while the daemon is away and the client will reconnect."""
        return self._state() == _lib.OFFLINE

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        if getattr(self, "_c", None) is not None:
            self._lib.gsp_client_close(self._c)
            self._c = None


_libc = ctypes.CDLL(None)
_libc.free.argtypes = [ctypes.c_void_p]
_libc.free.restype = None


def _libc_free(p):
    _libc.free(p)
