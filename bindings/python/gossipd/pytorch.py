"""gossipd.pytorch: gossip a torch.nn.Module's parameters in place.

This module owns attach() and the Attachment it returns: the choice of
the tensors to gossip, their wire names, moving each one into the shared
buffer once (param.data becomes a torch view of the mapping, so the
optimizer writes there and no step copies anything) and moving them back
into private memory at detach.  PyTorch is imported when attach() is
called, not before.

    g = gossipd.attach(model, name="w0")   # socket: $GOSSIPD_SOCKET
    g.wait_edges(2)
    for x, y in data:
        opt.zero_grad(); loss_fn(model(x), y).backward(); opt.step()
        g.step()        # ParameterMoved if a parameter left the buffer
    r = g.finish(1e-4)  # drain, average, detach: a FinishResult
"""
import hashlib

from .client import DEFAULT_TIMEOUT, FETCH_TIME_LIMIT_MS, FINISH_TIME_LIMIT_MS, Client, finish_run
from .errors import InvalidArgument, ParameterMoved
from .checks import WIRE_NAME_MAX


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


def _dtypes(torch):
    """{torch dtype: the wire dtype name} of what a buffer may hold."""
    return {torch.float32: "float32", torch.float16: "float16",
            torch.bfloat16: "bfloat16"}


def gossiped_tensors(model, buffers=False):
    """[(name, tensor)] that attach() would gossip: every parameter
    (each shared one once) and, with buffers=True, every floating-point
    buffer.  All must be of one dtype: float32, float16 or bfloat16.
    Raises InvalidArgument naming what cannot live in the shared buffer."""
    torch = _torch()
    kinds = _dtypes(torch)
    items = list(model.named_parameters())     # shared parameters once
    if buffers:
        items += [(n, b) for n, b in model.named_buffers()
                  if b.dtype in kinds]
    out, seen, problems = [], {}, []
    for name, t in items:
        if t.dtype not in kinds:
            problems.append("%s is %s (gossipd shares float32, float16 and "
                            "bfloat16: call model.float() first)" % (name, t.dtype))
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
    first = {}
    for name, t in out:
        first.setdefault(t.dtype, name)
    if len(first) > 1:
        problems.append("its tensors are of several dtypes (%s): one dtype per "
                        "model; convert it with model.to(dtype) first"
                        % ", ".join("%s is %s" % (n, d) for d, n in first.items()))
    if problems:
        raise InvalidArgument("cannot attach this model: " + "; ".join(problems))
    if not out:
        raise InvalidArgument("cannot attach this model: it has no parameters "
                              "to gossip")
    return out


def attach(model, socket=None, name=None, *, buffers=False,
           timeout=DEFAULT_TIMEOUT, reconnect=True, strict=False,
           method=None, rank=None, gamma=None, power_iterations=None,
           precision=None, group=False, join=False,
           join_time_limit_ms=FETCH_TIME_LIMIT_MS):
    """Connects to gossipd, registers model's parameters and moves them
    into the shared buffer (see the module docstring).  buffers=True also
    gossips floating-point buffers (BatchNorm running statistics); integer
    buffers such as num_batches_tracked always stay private.  timeout,
    reconnect and strict are Client's: across a daemon restart the client
    registers the same buffer again, so the parameters stay views of it
    and step() returns offline results meanwhile (OfflineWarning; with
    strict=True, OfflineError).  method, rank, gamma, power_iterations and
    precision choose the model's gossip settings (None: the daemon's; see
    Client.register).  A float16 or bfloat16 model is registered with its
    dtype: the daemon gossips a float32 master copy of it and writes the
    parameters back rounded (Client.register).  group=True joins the
    machine's local group: the trainers on this machine that attach the
    same model with group=True are one node, averaged by the daemon at
    each step (Client.register).  join=True starts from the network's
    model instead of this one's own initialisation: the daemon copies a
    neighbour's current parameters into the buffer (Client.fetch) before
    this returns, and the Attachment's `joined` says from whom (a
    FetchResult; None without join).  Returns an Attachment; the model
    is unchanged if this raises."""
    torch = _torch()
    tensors = gossiped_tensors(model, buffers)
    dtype = _dtypes(torch)[tensors[0][1].dtype]
    client = Client(socket, name, timeout, reconnect=reconnect, strict=strict)
    try:
        arrays = client.register([(wire_name(n), tuple(t.shape)) for n, t in tensors],
                                 method=method, rank=rank, gamma=gamma,
                                 power_iterations=power_iterations,
                                 precision=precision, dtype=dtype, group=group)
        views = [_torch_view(torch, a, dtype) for a in arrays]
        with torch.no_grad():
            for (_, t), v in zip(tensors, views):
                v.copy_(t.detach())
        joined = client.fetch(join_time_limit_ms) if join else None
        with torch.no_grad():
            for (_, t), v in zip(tensors, views):
                t.data = v
    except BaseException:
        client.close()
        raise
    a = Attachment(client, tensors, model, buffers)
    a.joined = joined
    return a


def _torch_view(torch, array, dtype):
    """A torch tensor sharing a buffer array's memory (bfloat16: the
    uint16 bits, viewed)."""
    if dtype == "bfloat16":
        return torch.from_numpy(array.view("int16")).view(torch.bfloat16)
    return torch.from_numpy(array)


def _live_tensors(model, buffers):
    """{name: tensor} of the model now, as gossiped_tensors() names them."""
    live = dict(model.named_parameters())
    if buffers:
        live.update(model.named_buffers())
    return live


class Attachment:
    """A model attached to gossipd.  Not thread-safe beyond the client's
    own lock: call step() from the thread that runs the optimizer.

    Before each step(), drain(), average() and finish() it checks that
    every attached tensor is still the model's and still a view of the
    shared buffer (same address, dtype and shape): a .double(),
    .half(), .to() or .cuda() after attach() raises ParameterMoved
    instead of gossiping a stale buffer."""

    def __init__(self, client, tensors, model=None, buffers=False):
        self.client = client
        self.names = [n for n, _ in tensors]
        self.tensors = [t for _, t in tensors]
        self._model, self._buffers = model, buffers
        self._views = [(t.data_ptr(), t.dtype, tuple(t.shape)) for t in self.tensors]
        self._unmapped = None                  # detach()'s result
        self.joined = None                     # attach(join=True)'s FetchResult

    def check(self):
        """Raises ParameterMoved naming every attached tensor that is no
        longer the model's own or no longer a view of the shared buffer."""
        live = _live_tensors(self._model, self._buffers) if self._model is not None else {}
        bad = []
        for name, t, (ptr, dtype, shape) in zip(self.names, self.tensors, self._views):
            if self._model is not None and live.get(name) is not t:
                bad.append("%s was replaced by another tensor" % name)
            elif t.dtype != dtype or tuple(t.shape) != shape:
                bad.append("%s is now %s %s (attached as %s %s)"
                           % (name, t.dtype, tuple(t.shape), dtype, shape))
            elif t.data_ptr() != ptr:
                bad.append("%s moved out of the shared buffer (on %s)" % (name, t.device))
        if bad:
            raise ParameterMoved(
                "the model left gossipd's shared buffer: %s.  A .double(), "
                ".half(), .float(), .to() or .cuda() after attach() copies the "
                "parameters elsewhere, and gossip would go on with the stale "
                "buffer: convert the model before attach(), or detach() and "
                "attach() again" % "; ".join(bad))

    def step(self, flags=0, *, sync=False):
        """After each optimizer.step(): one gossip step, in place; a
        StepResult (offline=True while the daemon is away)."""
        self.check()
        return self.client.step(flags, sync=sync)

    def drain(self, *, sync=False):
        self.check()
        return self.client.drain(sync=sync)

    def average(self, target, time_limit_ms=0, max_rounds=0):
        self.check()
        return self.client.average(target, time_limit_ms, max_rounds)

    def fetch(self, time_limit_ms=FETCH_TIME_LIMIT_MS):
        """Catches up: a neighbour's current model into the parameters
        (Client.fetch), as for a restart from an old checkpoint."""
        self.check()
        return self.client.fetch(time_limit_ms)

    def finish(self, target, time_limit_ms=FINISH_TIME_LIMIT_MS, max_rounds=0, *,
               sync=False):
        """Ends the run in one call: drain, a network-wide AVERAGE towards
        target, detach (always: the model ends in private memory).  Every
        trainer should call it.  Returns a FinishResult (reached,
        estimate, rounds, seconds, bytes)."""
        self.check()
        return finish_run(self.client, target, time_limit_ms, max_rounds, sync,
                          self.detach)

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
        """DETACHes, copies the parameters into private memory, unmaps
        the buffer and closes the connection.  The copy comes after
        DETACH, whose own writes (a round a neighbour ended before ours,
        taken back) it must hold.  The model stays usable even if the
        daemon is gone (the error is raised after the copy).  Returns
        True if the buffer was unmapped at once, False if arrays you hold
        (such as g.client.arrays) keep it alive.  Idempotent: a second
        call returns the first one's result."""
        if not self.tensors:
            return self._unmapped
        try:
            if not self.client.closed:
                self.client._detach_model()
        finally:
            self._copy_back()
            self._unmapped = self.client.close()   # unmaps: no tensor views it now
        return self._unmapped

    close = detach

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.detach()
