"""The baselines someone training over a slow network would pick, for
tools/bench/bench-e2e: each rank steps its own optimizer (no DDP gradient
all-reduce) and the ranks talk every H steps over the gloo process group
the DDP systems use.  Named FAMILY-hH (localsgd-h16).

- localsgd-hH, local SGD (Stich 2018; Lin et al. 2018, "Don't use large
  mini-batches, use local SGD"): torch's PostLocalSGDOptimizer around
  the run's SGD with PeriodicModelAverager(period=H,
  warmup_steps=H - 1), which all-reduces the parameters to their mean
  after steps H, 2H, ...  (The averager counts from 0: with
  warmup_steps 0 it averaged after steps 1, H + 1, 2H + 1, one extra
  all-reduce at step 1 when the models had barely moved apart.)
- diloco-hH, DiLoCo (Douillard et al. 2023): H inner steps of the same
  SGD; then the change since the last outer step, theta_outer -
  theta_local, averaged over the ranks with one all-reduce, is the
  gradient of an outer torch.optim.SGD (lr 0.7, momentum 0.9, Nesterov:
  the paper's) on the outer parameters, and every rank sets its model to
  the new outer parameters.  The inner optimizer keeps its state.
- randpair-hH, random pairs (NoLoCo's communication pattern, Kolehmainen
  et al. 2025): after steps H, 2H, ... the ranks are paired by a
  permutation seeded by (seed, step), alike on every rank (pairs()); each
  pair swaps whole models (parameters and float buffers) with gloo
  isend/irecv and both take the pair's mean, (a + b) / 2, the same bits at
  both ends.  With an odd number of ranks one sits out.

local SGD and DiLoCo move the parameters only (torch's averager and the
paper do); BatchNorm statistics stay each rank's own.  Every family ends
with final_average(): one all-reduce of the whole state to its mean,
the model tools/bench/bench-e2e evaluates as the nodes' average.

torch is imported by the classes only: the harness needs parse() and
pairs() without it."""
import random

FAMILIES = ("localsgd", "diloco", "randpair")
OUTER_LR, OUTER_MOMENTUM = 0.7, 0.9          # DiLoCo's outer SGD, the paper's


def parse(system):
    """(family, H) for a baseline's name such as 'localsgd-h16', else None."""
    family, sep, period = system.partition("-h")
    if family in FAMILIES and sep and period.isdigit() and \
            period == str(int(period)) and int(period) >= 1:
        return family, int(period)
    return None


def pairs(n, seed, step):
    """The pairs of ranks that exchange after step: consecutive entries
    of one permutation of range(n) seeded by (seed, step), the same on
    every rank and in every process (a str seed is hashed by SHA-512,
    not by Python's randomized hash); with odd n the permutation's last
    rank sits out."""
    perm = random.Random("randpair:%d:%d" % (seed, step)).sample(range(n), n)
    return [(perm[i], perm[i + 1]) for i in range(0, n - 1, 2)]


def partner(n, seed, step, rank):
    """rank's partner after step (None: it sits out)."""
    for a, b in pairs(n, seed, step):
        if rank in (a, b):
            return b if rank == a else a
    return None


def _flat(model):
    import torch
    from bench import workload as W
    return torch.from_numpy(W.flat_state(model))


def _load(model, flat):
    from bench import workload as W
    W.load_flat(model, flat.numpy())


class Baseline:
    """One rank's side.  optimizer: what the training loop steps;
    after_step(step): the communication after optimizer step `step`
    (counted from 1); final_average(): the mean of every rank's model."""

    def __init__(self, model, opt, period):
        import torch.distributed as dist
        self.dist = dist
        self.model, self.optimizer, self.period = model, opt, period
        self.ranks, self.rank = dist.get_world_size(), dist.get_rank()

    def after_step(self, step):
        pass

    def final_average(self):
        flat = _flat(self.model)
        self.dist.all_reduce(flat)
        flat /= self.ranks
        _load(self.model, flat)


class LocalSGD(Baseline):
    def __init__(self, model, opt, period):
        super().__init__(model, opt, period)
        from torch.distributed.algorithms.model_averaging.averagers import \
            PeriodicModelAverager
        from torch.distributed.optim import PostLocalSGDOptimizer
        self.optimizer = PostLocalSGDOptimizer(
            opt, PeriodicModelAverager(period=period, warmup_steps=period - 1))


class DiLoCo(Baseline):
    def __init__(self, model, opt, period, outer_lr=OUTER_LR, outer_momentum=OUTER_MOMENTUM):
        super().__init__(model, opt, period)
        import torch
        self.torch = torch
        self.params = list(model.parameters())
        self.outer = [torch.nn.Parameter(p.detach().clone()) for p in self.params]
        self.outer_opt = torch.optim.SGD(self.outer, lr=outer_lr, momentum=outer_momentum,
                                         nesterov=outer_momentum > 0)

    def after_step(self, step):
        if step % self.period:
            return
        torch = self.torch
        with torch.no_grad():
            delta = torch.cat([(o - p).reshape(-1) for o, p in zip(self.outer, self.params)])
            self.dist.all_reduce(delta)
            delta /= self.ranks
            off = 0
            for o in self.outer:
                o.grad = delta[off:off + o.numel()].view_as(o)
                off += o.numel()
            self.outer_opt.step()
            for p, o in zip(self.params, self.outer):
                p.copy_(o)


class RandPair(Baseline):
    def __init__(self, model, opt, period, seed):
        super().__init__(model, opt, period)
        self.seed = seed

    def after_step(self, step):
        if step % self.period:
            return
        peer = partner(self.ranks, self.seed, step, self.rank)
        if peer is None:
            return
        mine = _flat(self.model)
        theirs = mine.new_empty(mine.shape)
        for req in (self.dist.isend(mine, peer), self.dist.irecv(theirs, peer)):
            req.wait()
        # (a + b) / 2 at both ends: addition commutes, so the bits agree
        _load(self.model, (mine + theirs) * 0.5)


def make(system, model, opt, cfg):
    """The baseline for system's name, over the default process group."""
    family, period = parse(system)
    if family == "localsgd":
        return LocalSGD(model, opt, period)
    if family == "diloco":
        return DiLoCo(model, opt, period, cfg["outer_lr"], cfg["outer_momentum"])
    return RandPair(model, opt, period, cfg["seed"])
