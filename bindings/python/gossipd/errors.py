"""gossipd.errors: the exception classes of the Python client and the
mapping from the daemon's ERROR codes to them.

Every failure the package raises is a GossipdError.  `code` is the
negative errno or libgossip GSP_E* code behind it (None when there is
none), `text` the daemon's own explanation when it sent one.

    GossipdError
    +-- InvalidArgument (also ValueError)   refused locally, nothing was sent
    +-- ClientClosed                        the client was closed or broke before
    +-- Timeout (also TimeoutError)         a request or a wait ran out of time
    +-- ConnectFailed (also ConnectionError)
    |   +-- DaemonNotRunning                no socket, or a stale one
    +-- ConnectionLost (also ConnectionError)  the daemon went away mid-call
    +-- OfflineError (also ConnectionError)  a step while the daemon is away
    |                                        (strict=True)
    +-- ParameterMoved (also RuntimeError)  an attached parameter left the
    |                                       shared buffer (.double(), .to())
    +-- ProtocolError                       a reply that does not decode
    |   +-- VersionMismatch                 another major protocol version
    +-- DaemonError                         an ERROR reply (code and text)
        +-- Busy            -EBUSY   the daemon (or this client) holds a model
        +-- NotRegistered   -ENOENT  no model registered
        +-- NotOwner        -EPERM   the model belongs to another connection
        +-- ShapeRefused    the daemon refused the model description or size
        +-- OptionsRefused  the daemon refused REGISTER's options (method,
        |                   rank...): beyond its limits or not implemented
        +-- NonFiniteParameters  GSP_ENONFINITE: a NaN or infinity in the buffer

    OfflineWarning (a RuntimeWarning, not an exception raised)
                                            steps without gossip, daemon away
"""
import errno

# libgossip's own codes (libgossip/gossip.h), below -4096; the test
# py-c-client checks them against the header.
GSP_ENONFINITE = -4097
GSP_ESTATE = -4098
GSP_ESHAPE = -4099
GSP_EROUND = -4100

_GSP_NAME = {
    GSP_ENONFINITE: "GSP_ENONFINITE",
    GSP_ESTATE: "GSP_ESTATE",
    GSP_ESHAPE: "GSP_ESHAPE",
    GSP_EROUND: "GSP_EROUND",
}


def strerror(code):
    """Text for a negative errno or GSP_E* code: libgossip's
    gsp_strerror()."""
    from . import _lib
    if code is None:
        return "unknown error"
    return _lib.load().gsp_strerror(code).decode()


def code_name(code):
    """'EBUSY', 'GSP_ESHAPE'... or the number."""
    if code in _GSP_NAME:
        return _GSP_NAME[code]
    if code is not None and code < 0:
        return errno.errorcode.get(-code, str(code))
    return str(code)


class GossipdError(Exception):
    """Base class of everything gossipd raises."""

    def __init__(self, message, code=None, text=""):
        super().__init__(message)
        self.code = code
        self.text = text


class InvalidArgument(GossipdError, ValueError):
    """Bad input, refused before anything was sent to the daemon."""

    def __init__(self, message, code=-errno.EINVAL):
        super().__init__(message, code)


class ClientClosed(GossipdError):
    """The client was closed, or an earlier failure made it unusable."""


class Timeout(GossipdError, TimeoutError):
    """A request or a wait did not finish in time.  After a request
    timed out the stream is out of step: the client is unusable."""


class ConnectFailed(GossipdError, ConnectionError):
    """connect() to the daemon's socket failed (permission, path...)."""


class DaemonNotRunning(ConnectFailed):
    """No socket at that path (-ENOENT) or a stale one (-ECONNREFUSED)."""


class ConnectionLost(GossipdError, ConnectionError):
    """The daemon closed the connection (it stopped, restarted, or closed
    it after refusing a malformed request).  The client is offline and
    reconnects at its next call (unusable with reconnect=False); the
    parameter arrays stay valid."""


class OfflineError(GossipdError, ConnectionError):
    """A step found the daemon away and the client was made strict=True:
    nothing was gossiped.  The client stays offline and tries to
    reconnect at the next step; the parameters keep their values."""


class OfflineWarning(RuntimeWarning):
    """Steps run without gossip because the daemon is away (strict=False,
    the default): warned at the first such step and then at most once
    per OFFLINE_WARN_INTERVAL seconds while it lasts."""


class ParameterMoved(GossipdError, RuntimeError):
    """An attached tensor is no longer a view of the shared buffer (a
    .double(), .half(), .to() or .cuda() after attach(), or a parameter
    replaced): the daemon would gossip a stale buffer.  Nothing was sent;
    convert the model before attach(), or detach() and attach() again."""


class ProtocolError(GossipdError):
    """A reply that does not decode, or a message that breaks the layout.
    A client that received one is unusable."""


class VersionMismatch(ProtocolError):
    """The daemon speaks another major protocol version."""


class DaemonError(GossipdError):
    """The daemon answered ERROR.  The connection stays usable unless the
    daemon closed it (then the next call raises ConnectionLost)."""


class Busy(DaemonError):
    """-EBUSY: a model is registered already (by another trainer, or by
    this client: detach first)."""


class NotRegistered(DaemonError):
    """-ENOENT: STEP, AVERAGE or DETACH without a registered model."""


class NotOwner(DaemonError):
    """-EPERM: the registered model belongs to another connection."""


class ShapeRefused(DaemonError):
    """The daemon refused the model's description or size (-EINVAL,
    -EMSGSIZE, -EOVERFLOW or GSP_ESHAPE on REGISTER)."""


class OptionsRefused(DaemonError):
    """The daemon refused the settings REGISTER asked (-ERANGE: beyond its
    limits, such as a rank above MaxRank; -EOPNOTSUPP: not implemented,
    such as a 16-bit wire precision for exact gossip); its text says
    which."""


class NonFiniteParameters(DaemonError):
    """GSP_ENONFINITE: the buffer holds a NaN or infinity; nothing was
    sent.  Fix the parameters and STEP again."""


_BY_CODE = {
    -errno.EBUSY: Busy,
    -errno.ENOENT: NotRegistered,
    -errno.EPERM: NotOwner,
    -errno.EPROTONOSUPPORT: VersionMismatch,
    GSP_ESHAPE: ShapeRefused,
    GSP_ENONFINITE: NonFiniteParameters,
}
# Codes that mean "this model description" when they answer REGISTER.
_REGISTER_SHAPE = {-errno.EINVAL, -errno.EMSGSIZE, -errno.EOVERFLOW, GSP_ESHAPE}
# And "these options".
_REGISTER_OPTIONS = {-errno.ERANGE, -errno.EOPNOTSUPP}


def from_reply(request, code, text):
    """The exception for the daemon's ERROR (code, text) to `request`
    (a message name such as "REGISTER")."""
    cls = _BY_CODE.get(code, DaemonError)
    if request == "REGISTER" and code in _REGISTER_SHAPE:
        cls = ShapeRefused
    if request == "REGISTER" and code in _REGISTER_OPTIONS:
        cls = OptionsRefused
    message = "gossipd refused %s: %s (%s: %s)" % (
        request, text or strerror(code), code_name(code), strerror(code))
    return cls(message, code, text)
