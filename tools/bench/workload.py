"""The workload every system of tools/bench/bench-e2e trains: Fashion-MNIST, one
shard per node, the same seeds, batches and initial model for every
system.  PyTorch and NumPy only."""
import gzip
import os

import numpy as np
import torch

DATA = "/usr/share/datasets/fashion-mnist"
MEAN, STD = 0.2860, 0.3530          # of the training images, in [0, 1]
MODELS = ("mlp", "cnn")
# The CNN: torch DDP all-reduce reaches 80 % at step 125 of 300 (as it
# reaches the MLP's 85 %), and never 85 % (best 84.4 %): docs/BENCHMARKS.md.
TARGET = {"mlp": 0.85, "cnn": 0.80}


def _idx(path):
    with gzip.open(path, "rb") as f:
        data = f.read()
    dims = data[3]
    shape = [int.from_bytes(data[4 + 4 * i:8 + 4 * i], "big") for i in range(dims)]
    return np.frombuffer(data, dtype=np.uint8, offset=4 + 4 * dims).reshape(shape)


def load(split, data_dir=DATA):
    """(images float32 N x 1 x 28 x 28, normalized; labels int64 N)."""
    pre = "train" if split == "train" else "t10k"
    x = _idx(os.path.join(data_dir, "%s-images-idx3-ubyte.gz" % pre))
    y = _idx(os.path.join(data_dir, "%s-labels-idx1-ubyte.gz" % pre))
    x = (x.astype(np.float32) / 255.0 - MEAN) / STD
    return (torch.from_numpy(x.reshape(-1, 1, 28, 28).copy()),
            torch.from_numpy(y.astype(np.int64)))


def shard(n_items, node, nodes, seed):
    """Node's indices: a contiguous 1/nodes of one seeded permutation."""
    perm = np.random.default_rng(seed).permutation(n_items)
    per = n_items // nodes
    return perm[node * per:(node + 1) * per]


class Batches:
    """Batches of batch items from one shard, reshuffled every epoch by a
    generator seeded per node: the same sequence in every system."""

    def __init__(self, x, y, idx, batch, seed):
        self.x, self.y, self.idx, self.batch = x, y, idx, batch
        self.rng = np.random.default_rng(seed)
        self.order, self.pos = self.rng.permutation(idx), 0

    def next(self):
        if self.pos + self.batch > len(self.order):
            self.order, self.pos = self.rng.permutation(self.idx), 0
        sel = torch.from_numpy(self.order[self.pos:self.pos + self.batch])
        self.pos += self.batch
        return self.x[sel], self.y[sel]


class ResBlock(torch.nn.Module):
    def __init__(self, cin, cout, stride):
        super().__init__()
        self.c1 = torch.nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.b1 = torch.nn.BatchNorm2d(cout)
        self.c2 = torch.nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.b2 = torch.nn.BatchNorm2d(cout)
        self.short = None
        if stride != 1 or cin != cout:
            self.short = torch.nn.Sequential(
                torch.nn.Conv2d(cin, cout, 1, stride, bias=False),
                torch.nn.BatchNorm2d(cout))

    def forward(self, x):
        out = torch.relu(self.b1(self.c1(x)))
        out = self.b2(self.c2(out))
        return torch.relu(out + (x if self.short is None else self.short(x)))


def build(name):
    """The model, initialized from seed 0 (the same at every node)."""
    torch.manual_seed(0)
    if name == "mlp":                 # 784-1024-1024-10: 1,863,690 parameters
        return torch.nn.Sequential(
            torch.nn.Flatten(), torch.nn.Linear(784, 1024), torch.nn.ReLU(),
            torch.nn.Linear(1024, 1024), torch.nn.ReLU(), torch.nn.Linear(1024, 10))
    if name == "cnn":                 # ResNet-8 style: stem + 3 residual blocks
        return torch.nn.Sequential(
            torch.nn.Conv2d(1, 16, 3, 1, 1, bias=False), torch.nn.BatchNorm2d(16),
            torch.nn.ReLU(), ResBlock(16, 16, 1), ResBlock(16, 32, 2),
            ResBlock(32, 64, 2), torch.nn.AdaptiveAvgPool2d(1),
            torch.nn.Flatten(), torch.nn.Linear(64, 10))
    raise ValueError("unknown model %r" % name)


def state_tensors(model):
    """The float tensors that define the model (parameters, then float
    buffers such as BatchNorm running statistics), in a fixed order."""
    return [t for _, t in model.named_parameters()] + \
        [b for _, b in model.named_buffers() if b.dtype == torch.float32]


def flat_state(model):
    return torch.cat([t.detach().reshape(-1) for t in state_tensors(model)]).numpy()


def load_flat(model, vec):
    off = 0
    with torch.no_grad():
        for t in state_tensors(model):
            n = t.numel()
            t.copy_(torch.from_numpy(np.asarray(vec[off:off + n])).view_as(t))
            off += n
    assert off == len(vec), (off, len(vec))


def accuracy(model, x, y, chunk=2000):
    model.eval()
    correct = 0
    with torch.no_grad():
        for i in range(0, len(y), chunk):
            correct += (model(x[i:i + chunk]).argmax(1) == y[i:i + chunk]).sum().item()
    model.train()
    return correct / len(y)


def matrices(model):
    """[(rows, cols)] of every parameter of 2+ dimensions (viewed as
    first dimension x the rest, as PowerGossip and PowerSGD do) and
    [size] of every other parameter."""
    mats, vecs = [], []
    for p in model.parameters():
        if p.dim() >= 2:
            mats.append((p.shape[0], p.numel() // p.shape[0]))
        else:
            vecs.append(p.numel())
    return mats, vecs
