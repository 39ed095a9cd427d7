"""gossipd: the Python client of gossipd's local API (proto/PROTOCOL.md
section 5), for trainers that gossip their model with PowerGossip.

    import gossipd
    g = gossipd.attach(model)     # PyTorch; socket: $GOSSIPD_SOCKET
    ...  optimizer.step(); g.step()  ...   # .offline: the daemon is away
    result = g.finish(1e-4)       # drain, average, detach

    with gossipd.Client(path, "numpy-trainer") as c:              # NumPy
        w, b = c.register([("w", (100, 100)), ("b", (100,))])

Modules: protocol (the byte layout), errors (the exception classes),
client (Client: connection, shared buffer, NumPy views), pytorch
(attach).  Importing the package needs only the standard library; NumPy
is imported by Client.register(), PyTorch by attach().  Reference:
bindings/python/README.md.
"""
from .client import (Client, DEFAULT_SOCKET, DEFAULT_TIMEOUT, FinishResult,
                     StepResult, default_socket)
from .errors import (Busy, ClientClosed, ConnectFailed, ConnectionLost,
                     DaemonError, DaemonNotRunning, GossipdError,
                     InvalidArgument, NonFiniteParameters, NotOwner,
                     NotRegistered, OfflineError, OfflineWarning,
                     OptionsRefused, ParameterMoved, ProtocolError,
                     ShapeRefused, Timeout,
                     VersionMismatch)
from .protocol import STEP_DRAIN, STEP_SYNC, AverageResult, StepStats
from .pytorch import Attachment, attach

__version__ = "0.1.0"

__all__ = [
    "Client", "DEFAULT_SOCKET", "DEFAULT_TIMEOUT", "StepResult", "FinishResult",
    "default_socket", "attach", "Attachment",
    "STEP_SYNC", "STEP_DRAIN", "StepStats", "AverageResult",
    "GossipdError", "InvalidArgument", "ClientClosed", "Timeout",
    "ConnectFailed", "DaemonNotRunning", "ConnectionLost", "ProtocolError",
    "VersionMismatch", "DaemonError", "Busy", "NotRegistered", "NotOwner",
    "ShapeRefused", "OptionsRefused", "NonFiniteParameters", "OfflineError",
    "OfflineWarning",
    "ParameterMoved",
]
