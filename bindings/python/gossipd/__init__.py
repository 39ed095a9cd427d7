"""gossipd: the Python client of gossipd's local API (proto/PROTOCOL.md
section 5), for trainers that gossip their model with PowerGossip.

    import gossipd
    g = gossipd.attach(model)     # PyTorch; socket: $GOSSIPD_SOCKET
    ...  optimizer.step(); g.step()  ...   # .offline: the daemon is away
    result = g.finish(1e-4)       # drain, average, detach

    with gossipd.Client(path, "numpy-trainer") as c:              # NumPy
        w, b = c.register([("w", (100, 100)), ("b", (100,))])

Modules: client (Client: a layer over libgossip's C client, through
ctypes), checks (the arguments' rules), errors (the exception classes),
pytorch (attach), protocol (the byte layout in Python, for the tests'
fake daemon only).  Importing the package needs only the standard
library; libgossip is loaded when the first Client is made (where it is
looked for: gossipd._lib, and LibraryNotFound when it is not found),
NumPy by Client.register(), PyTorch by attach().  Reference:
bindings/python/README.md.
"""
from ._lib import LibraryNotFound
from .checks import STEP_DRAIN, STEP_SYNC, AverageResult, FetchResult, StepStats
from .client import (Client, DEFAULT_SOCKET, DEFAULT_TIMEOUT, FinishResult,
                     StepResult, default_socket)
from .errors import (Busy, ClientClosed, ConnectFailed, ConnectionLost,
                     DaemonError, DaemonNotRunning, GossipdError,
                     InvalidArgument, NonFiniteParameters, NotOwner,
                     NotRegistered, OfflineError, OfflineWarning,
                     OptionsRefused, ParameterMoved, ProtocolError,
                     ShapeRefused, Timeout,
                     VersionMismatch)
from .pytorch import Attachment, attach
from . import protocol  # noqa: F401,E402  (the tests' codec: gossipd.protocol)

__version__ = "0.1.0"

__all__ = [
    "Client", "DEFAULT_SOCKET", "DEFAULT_TIMEOUT", "StepResult", "FinishResult",
    "default_socket", "attach", "Attachment",
    "STEP_SYNC", "STEP_DRAIN", "StepStats", "AverageResult", "FetchResult",
    "GossipdError", "InvalidArgument", "ClientClosed", "Timeout",
    "ConnectFailed", "DaemonNotRunning", "ConnectionLost", "ProtocolError",
    "VersionMismatch", "DaemonError", "Busy", "NotRegistered", "NotOwner",
    "ShapeRefused", "OptionsRefused", "NonFiniteParameters", "OfflineError",
    "OfflineWarning",
    "ParameterMoved", "LibraryNotFound",
]
