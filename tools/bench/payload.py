"""The fewest bytes a system must send per node per training step: the
message payloads alone, no framing, no TCP/IP headers, no handshakes.
tools/bench/bench-e2e divides the bytes the interfaces counted by these.

- PowerGossip (docs/ALGORITHM.md section 3): per edge and round, each end
  sends X V (m x r) on odd rounds and X^T U (k x r) on even ones for every
  matrix, r = min(rank, m, k), and every 1-D tensor (biases, BatchNorm)
  whole: 32 * sum r * (m or k) bits plus 32 bits per 1-D float.  Averaged
  over an odd and an even round: 4 * r * (m + k) / 2 bytes per matrix.
- exact gossip: the whole model to every neighbour.
- Choco (libgossip/choco.c), per edge and round, every tensor t of
  numel_t floats: top-k and random-k k_t = ceil(fraction numel_t)
  entries of (u32 index, f32 value); sign a f32 scale and numel_t/8
  bytes of signs.
- all-reduce (ring, the bandwidth-optimal one): 2 (n - 1) / n of the
  reduced bytes sent by every rank.
- PowerSGD (torch's powerSGD_hook): all-reduces of P (m x r), Q (k x r)
  for every compressed matrix and of the uncompressed tensors (1-D ones,
  and matrices whose (m + k) r * min_compression_rate >= m k).
- local SGD and DiLoCo (tools/bench/baselines.py): one all-reduce of the
  parameters every H steps.
- random pairs: the whole model (parameters and float buffers) to one
  partner every H steps, by 2 floor(n / 2) of the n nodes."""
import math

from bench import baselines


def powergossip(mats, vecs, rank, degree):
    per_edge = sum(4 * min(rank, m, k) * (m + k) / 2 for m, k in mats) + 4 * sum(vecs)
    return degree * per_edge


def exact(mats, vecs, degree):
    return degree * 4 * (sum(m * k for m, k in mats) + sum(vecs))


def choco(mats, vecs, kind, fraction, degree):
    sizes = [m * k for m, k in mats] + list(vecs)
    if kind == "sign":
        per_edge = sum(4 + math.ceil(t / 8) for t in sizes if t)
    else:
        per_edge = sum(8 * min(t, max(1, math.ceil(fraction * t))) for t in sizes if t)
    return degree * per_edge


def allreduce(floats, nodes):
    return 2 * (nodes - 1) / nodes * 4 * floats


def powersgd(mats, vecs, rank, nodes, min_compression_rate=2):
    floats = sum(vecs)
    for m, k in mats:
        r = min(rank, m, k)
        if (m + k) * r * min_compression_rate < m * k:
            floats += (m + k) * r
        else:
            floats += m * k
    return allreduce(floats, nodes)


def minimum(system, mats, vecs, nodes, degree=2, buffers=0, choco_fraction=0.01):
    """Bytes per node per step for the system's name (None: none)."""
    if system.startswith("gossipd-powergossip-r"):
        return powergossip(mats, vecs + [buffers], int(system.rsplit("r", 1)[1]), degree)
    if system == "gossipd-exact":
        return exact(mats, vecs + [buffers], degree)
    if system.startswith("gossipd-choco-"):
        return choco(mats, vecs + [buffers], system.rsplit("-", 1)[1], choco_fraction,
                     degree)
    if system == "ddp-allreduce":
        return allreduce(sum(m * k for m, k in mats) + sum(vecs), nodes)
    if system.startswith("ddp-powersgd-r"):
        return powersgd(mats, vecs, int(system.rsplit("r", 1)[1]), nodes)
    base = baselines.parse(system)
    if base:
        family, period = base
        params = sum(m * k for m, k in mats) + sum(vecs)
        if family == "randpair":
            return 4 * (params + buffers) * (2 * (nodes // 2) / nodes) / period
        return allreduce(params, nodes) / period
    return None
