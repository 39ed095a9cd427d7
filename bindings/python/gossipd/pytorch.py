"""gossipd.pytorch: gossip a torch.nn.Module's parameters in place.

This module owns attach() and the Attachment it returns: the choice of
the tensors to gossip, their wire names, moving each one into the shared
buffer once (param.data becomes a torch view of the mapping, so the
optimizer writes there and no step copies anything) and moving them back
into private memory at detach.  PyTorch is imported when attach() is
called, not before.

    g = gossipd.attach(model, socket="/run/gossipd/gossipd.sock", name="w0")
    g.wait_edges(2)
    for x, y in data:
        opt.zero_grad(); loss_fn(model(x), y).backward(); opt.step()
        g.step()
    g.drain(); g.average(1e-4, time_limit_ms=30000)
    g.detach()          # the model keeps its values, in private memory
"""
import hashlib

from .client import DEFAULT_TIMEOUT, Client
from .errors import InvalidArgument
from .protocol import WIRE_NAME_MAX


def _torch():
    try:
        import torch
    except ImportError as e:
        raise ImportError("gossipd.attach needs PyTorch: apt install "
                          "python3-torch, or pip install torch") from e
    return torch


def wire_name(name, cap=WIRE_NAME_MAX):
    """name as a tensor name of at most cap bytes.  Longer names keep
    their tail behind an 8-hex-digit hash of the whole name, so every
    node derives the same, distinct names from the same model."""
    b = name.encode()
    if len(b) <= cap:
        return name
    h = hashlib.blake2b(b, digest_size=4).hexdigest()
    return h + "~" + b[-(cap - 9):].decode("utf-8", "ignore")


def _storage_ptr(t):
    s = t.untyped_storage() if hasattr(t, "untyped_storage") else t.storage()
    return s.data_ptr()


def gossiped_tensors(model, buffers=False):
    """[(name, tensor)] that attach() would gossip: every parameter
    (each shared one once) and, with buffers=True, every float32 buffer.
    Raises InvalidArgument naming what cannot live in the shared buffer."""
    torch = _torch()
    items = list(model.named_parameters())     # shared parameters once
    if buffers:
        items += [(n, b) for n, b in model.named_buffers()
                  if b.dtype == torch.float32]
    out, seen, problems = [], {}, []
    for name, t in items:
        if t.dtype != torch.float32:
            problems.append("%s is %s (gossipd shares float32 only: call "
                            "model.float() first)" % (name, t.dtype))
        elif t.device.type != "cpu":
            problems.append("%s is on %s (gossipd shares CPU memory)"
                            % (name, t.device))
        elif t.layout != torch.strided:
            problems.append("%s has layout %s (dense tensors only)"
                            % (name, t.layout))
        elif t.numel() == 0:
            continue                           # nothing to gossip
        elif _storage_ptr(t) in seen:
            problems.append("%s and %s share memory; gossipd would separate "
                            "them" % (seen[_storage_ptr(t)], name))
        else:
            seen[_storage_ptr(t)] = name
            out.append((name, t))
    if problems:
        raise InvalidArgument("cannot attach this model: " + "; ".join(problems))
    if not out:
        raise InvalidArgument("cannot attach this model: it has no parameters "
                              "to gossip")
    return out


def attach(model, socket=None, name=None, *, buffers=False,
           timeout=DEFAULT_TIMEOUT, reconnect=True):
    """Connects to gossipd, registers model's parameters and moves them
    into the shared buffer (see the module docstring).  buffers=True also
    gossips float32 buffers (BatchNorm running statistics); integer
    buffers such as num_batches_tracked always stay private.  timeout and
    reconnect are Client's: across a daemon restart the client registers
    the same buffer again, so the parameters stay views of it and step()
    returns offline results meanwhile.  Returns an Attachment; the model
    is unchanged if this raises."""
    torch = _torch()
    tensors = gossiped_tensors(model, buffers)
    client = Client(socket, name, timeout, reconnect=reconnect)
    try:
        arrays = client.register([(wire_name(n), tuple(t.shape)) for n, t in tensors])
        with torch.no_grad():
            for (_, t), a in zip(tensors, arrays):
                a[...] = t.detach().numpy()
            for (_, t), a in zip(tensors, arrays):
                t.data = torch.from_numpy(a)
    except BaseException:
        client.close()
        raise
    return Attachment(client, tensors)


class Attachment:
    """A model attached to gossipd.  Not thread-safe beyond the client's
    own lock: call step() from the thread that runs the optimizer."""

    def __init__(self, client, tensors):
        self.client = client
        self.names = [n for n, _ in tensors]
        self.tensors = [t for _, t in tensors]
        self._unmapped = None                  # detach()'s result

    def step(self, flags=0, *, sync=False):
        """After each optimizer.step(): one gossip step, in place; a
        StepResult (offline=True while the daemon is away)."""
        return self.client.step(flags, sync=sync)

    def drain(self, *, sync=False):
        return self.client.drain(sync=sync)

    def average(self, target, time_limit_ms=0, max_rounds=0):
        return self.client.average(target, time_limit_ms, max_rounds)

    def status(self):
        return self.client.status()

    def wait_edges(self, n, timeout=30.0):
        return self.client.wait_edges(n, timeout)

    @property
    def attached(self):
        return bool(self.tensors)

    def _copy_back(self):
        """Every tensor back into private memory with its current values;
        the Parameter objects (and requires_grad, optimizer state) stay."""
        for t in self.tensors:
            t.data = t.data.clone()
        self.tensors = []

    def detach(self):
        """DETACHes, copies the parameters into private memory and closes
        the connection.  The copy comes after DETACH, whose own writes (a
        round a neighbour ended before ours, taken back) it must hold; the
        tensors keep the shared buffer mapped until then.  The model stays
        usable even if the daemon is gone (the error is raised after the
        copy).  Returns False: the tensors' views held the buffer at
        DETACH, so it is unmapped once they are gone.  Idempotent: a
        second call returns the first one's result."""
        if not self.tensors:
            return self._unmapped
        unmapped = None
        try:
            if not self.client.closed:
                unmapped = self.client.detach()
        finally:
            self._copy_back()
            released = self.client.close()     # unmaps if detach() did not run
            self._unmapped = released if unmapped is None else unmapped
        return self._unmapped

    close = detach

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.detach()
