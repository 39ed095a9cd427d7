"""The fewest bytes a system must send per node per training step: the
message payloads alone, no framing, no TCP/IP headers, no handshakes.
tools/bench-e2e divides the bytes the interfaces counted by these.

- PowerGossip (docs/ALGORITHM.md section 3): per edge and round, each end
  sends X V (m x r) on odd rounds and X^T U (k x r) on even ones for every
  matrix, r = min(rank, m, k), and every 1-D tensor (biases, BatchNorm)
  whole: 32 * sum r * (m or k) bits plus 32 bits per 1-D float.  Averaged
  over an odd and an even round: 4 * r * (m + k) / 2 bytes per matrix.
- exact gossip: the whole model to every neighbour.
- all-reduce (ring, the bandwidth-optimal one): 2 (n - 1) / n of the
  reduced bytes sent by every rank.
- PowerSGD (torch's powerSGD_hook): all-reduces of P (m x r), Q (k x r)
  for every compressed matrix and of the uncompressed tensors (1-D ones,
  and matrices whose (m + k) r * min_compression_rate >= m k)."""


def powergossip(mats, vecs, rank, degree):
    per_edge = sum(4 * min(rank, m, k) * (m + k) / 2 for m, k in mats) + 4 * sum(vecs)
    return degree * per_edge


def exact(mats, vecs, degree):
    return degree * 4 * (sum(m * k for m, k in mats) + sum(vecs))


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


def minimum(system, mats, vecs, nodes, degree=2, buffers=0):
    """Bytes per node per step for the system's name (None: none)."""
    if system.startswith("gossipd-powergossip-r"):
        return powergossip(mats, vecs + [buffers], int(system.rsplit("r", 1)[1]), degree)
    if system == "gossipd-exact":
        return exact(mats, vecs + [buffers], degree)
    if system == "ddp-allreduce":
        return allreduce(sum(m * k for m, k in mats) + sum(vecs), nodes)
    if system.startswith("ddp-powersgd-r"):
        return powersgd(mats, vecs, int(system.rsplit("r", 1)[1]), nodes)
    return None
