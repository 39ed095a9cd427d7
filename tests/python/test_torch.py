#!/usr/bin/env python3
"""Unit tests of gossipd.attach against a fake daemon (fakedaemon.py):
parameters live in the mapping and the optimizer writes there, the
daemon's writes reach the model, detach moves them back, and models that
cannot be shared are refused with a reason.  Needs NumPy and PyTorch
(exit 77, a meson skip, without them).
"""
import array
import os
import shutil
import sys
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import fakedaemon  # noqa: E402
from fakedaemon import P  # noqa: E402

try:
    import numpy  # noqa: F401
    import torch
except ImportError as e:
    print("SKIP: %s (python3-numpy and python3-torch)" % e)
    sys.exit(77)

import gossipd  # noqa: E402


def inside(t, rng):
    base, nbytes = rng
    return base <= t.data_ptr() and t.data_ptr() + t.element_size() * t.numel() <= base + nbytes


def mapping_of(addr):
    """The /proc/self/maps line of a mapping starting at addr, or None."""
    with open("/proc/self/maps") as f:
        for line in f:
            if int(line.split("-")[0], 16) == addr:
                return line
    return None


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = torch.nn.Linear(4, 3)
        self.bn = torch.nn.BatchNorm1d(3)
        self.fc2 = torch.nn.Linear(3, 3)
        self.scale = torch.nn.Parameter(torch.tensor(2.0))        # 0-d
        self.frozen = torch.nn.Parameter(torch.ones(2), requires_grad=False)
        self.empty = torch.nn.Parameter(torch.zeros(0))
        self.tied = self.fc2                                       # shared module

    def forward(self, x):
        return self.tied(torch.relu(self.bn(self.fc1(x)))) * self.scale


class Attach(unittest.TestCase):
    def setUp(self):
        torch.manual_seed(0)
        self.fake = fakedaemon.FakeDaemon()
        self.addCleanup(self.fake.close)

    def attach(self, model, **kw):
        g = gossipd.attach(model, socket=self.fake.path, name="torch-unit", timeout=10, **kw)
        self.addCleanup(g.detach)
        return g

    def test_params_move_into_the_mapping_once(self):
        m = Net()
        before = {n: p.detach().clone() for n, p in m.named_parameters()}
        params = dict(m.named_parameters())
        g = self.attach(m)
        self.assertEqual(g.names, ["scale", "frozen", "fc1.weight", "fc1.bias",
                                   "bn.weight", "bn.bias", "fc2.weight", "fc2.bias"])
        reg = [r[1] for r in self.fake.requests if r[0] == P.REGISTER][0]
        self.assertEqual([t.shape for t in reg.tensors],
                         [(), (2,), (3, 4), (3,), (3,), (3,), (3, 3), (3,)])
        rng = g.client.buffer_range
        for n, p in m.named_parameters():
            self.assertIs(p, params[n], "the Parameter objects stay")
            torch.testing.assert_close(p.detach(), before[n])
            if p.numel():
                self.assertTrue(inside(p, rng), n)
        self.assertFalse(m.frozen.requires_grad)
        self.assertTrue(m.fc1.weight.requires_grad)
        self.assertFalse(inside(m.bn.running_mean, rng), "buffers stay private")

    def test_16bit_models_attach_with_their_dtype(self):
        for dtype, name in ((torch.float16, "float16"), (torch.bfloat16, "bfloat16")):
            m = torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.Linear(3, 2)).to(dtype)
            before = {n: p.detach().clone() for n, p in m.named_parameters()}
            g = self.attach(m)
            reg = [r[1] for r in self.fake.requests if r[0] == P.REGISTER][-1]
            self.assertEqual(reg.options.dtype, name)
            # 23 values of 2 bytes: no undo section for a 16-bit buffer.
            self.assertEqual((reg.n_floats, reg.buffer_bytes), (23, 46))
            rng = g.client.buffer_range
            self.assertEqual(rng[1], 46)
            for n, p in m.named_parameters():
                self.assertEqual(p.dtype, dtype)
                self.assertTrue(inside(p, rng), n)
                self.assertTrue(torch.equal(p.detach(), before[n]), n)
            # The buffer holds the values' bits, in REGISTER order.
            bits = b"".join(before[n].view(torch.int16).numpy().tobytes() for n in g.names)
            self.assertEqual(bytes(self.fake.buffer[:46]), bits)
            (m[0].weight * 2).sum().backward()        # autograd on the views
            self.assertIs(g.detach(), True)
            for n, p in m.named_parameters():
                self.assertFalse(inside(p, rng), n)
                self.assertTrue(torch.equal(p.detach(), before[n]), n)

    def test_optimizer_writes_the_buffer_and_step_updates_the_model(self):
        m = Net()
        g = self.attach(m)
        opt = torch.optim.SGD(m.parameters(), lr=0.1, momentum=0.9)
        ptr = m.fc1.weight.data_ptr()
        m(torch.randn(8, 4)).sum().backward()
        opt.step()
        self.assertEqual(m.fc1.weight.data_ptr(), ptr, "optimizer.step() is in place")
        off = (ptr - g.client.buffer_range[0]) // 4
        seen = self.fake.floats()[off:off + 12]
        self.assertEqual(list(seen), m.fc1.weight.detach().flatten().tolist())
        w = m.fc1.weight.detach().clone()
        g.step()                                   # the fake adds 1.0
        torch.testing.assert_close(m.fc1.weight.detach(), w + 1)

    def test_detach_copies_back_and_the_model_stays_usable(self):
        m = Net()
        g = self.attach(m)
        rng = g.client.buffer_range
        g.step()
        nf = rng[1] // 4

        def take_back(value):
            # DETACH itself writes the buffer (a round taken back): the
            # copy must come after it.
            a = array.array("f", bytes(self.fake.buffer[:4 * nf]))
            self.fake.buffer[:4 * nf] = array.array("f", (x - 0.5 for x in a)).tobytes()
            return P.encode_ok()
        self.fake.replies[P.DETACH] = take_back
        values = {n: p.detach().clone() - 0.5 for n, p in m.named_parameters()}
        # The parameters are copied out before the unmap: nothing of the
        # model holds the mapping, so it goes at once.
        self.assertIs(g.detach(), True)
        self.assertEqual(self.fake.types()[-1], P.DETACH)
        for n, p in m.named_parameters():
            self.assertFalse(p.numel() and inside(p, rng), n)
            torch.testing.assert_close(p.detach(), values[n])
        self.assertTrue(g.client.closed)
        m(torch.randn(5, 4)).sum().backward()     # forward and backward work
        self.assertIsNotNone(m.fc1.weight.grad)
        self.assertIs(g.detach(), True)            # idempotent, same result
        self.assertIsNone(mapping_of(rng[0]), "unmapped")

    def test_detach_returns_false_while_an_array_keeps_the_mapping(self):
        m = Net()
        g = self.attach(m)
        held = g.client.arrays[0]                  # a view of the mapping
        self.assertIs(g.detach(), False)
        self.assertEqual(self.fake.types()[-1], P.DETACH)
        self.assertIs(g.detach(), False)
        held[...] = 1.0                            # still valid memory

    def moved(self, convert):
        """attach, step, convert the model: the next step, drain,
        average and finish raise ParameterMoved and send nothing."""
        m = Net()
        g = self.attach(m)
        g.step()
        convert(m)
        sent = len(self.fake.requests)
        for call in (g.step, g.drain, lambda: g.average(1e-4, max_rounds=1),
                     lambda: g.finish(1e-4)):
            with self.assertRaises(gossipd.ParameterMoved) as cm:
                call()
            self.assertIn("fc1.weight", str(cm.exception))
            self.assertIn("before attach()", str(cm.exception))
        self.assertEqual(len(self.fake.requests), sent, "nothing was sent")
        return str(cm.exception)

    def test_double_after_attach_is_an_error(self):
        msg = self.moved(lambda m: m.double())
        self.assertIn("torch.float64", msg)

    def test_to_float64_after_attach_is_an_error(self):
        msg = self.moved(lambda m: m.to(torch.float64))
        self.assertIn("torch.float64", msg)

    def test_half_then_float_after_attach_is_an_error(self):
        # float32 and the same shape again, but in new memory.
        msg = self.moved(lambda m: m.half().float())
        self.assertIn("moved out of the shared buffer", msg)

    def test_a_replaced_parameter_is_an_error(self):
        def replace(m):
            m.fc2.bias = torch.nn.Parameter(torch.zeros(3))
        m = Net()
        g = self.attach(m)
        replace(m)
        with self.assertRaises(gossipd.ParameterMoved) as cm:
            g.step()
        self.assertIn("fc2.bias was replaced", str(cm.exception))

    def test_finish_ends_the_run_in_one_call(self):
        m = Net()
        g = self.attach(m)
        rng = g.client.buffer_range
        g.step()
        self.fake.replies[P.AVERAGE] = P.encode_average_ok(P.AverageResult(5, 1e-6, True))
        r = g.finish(1e-4)
        self.assertEqual((r.reached, r.estimate, r.rounds), (True, 1e-6, 5))
        self.assertEqual(self.fake.types()[-4:], [P.STATUS, P.AVERAGE, P.STATUS, P.DETACH])
        self.assertFalse(g.attached)
        for n, p in m.named_parameters():
            self.assertFalse(p.numel() and inside(p, rng), n)
        self.assertIs(g.detach(), True)

    def test_detach_after_the_daemon_went_away_keeps_the_model(self):
        m = Net()
        g = self.attach(m, reconnect=False)
        self.fake.replies = {P.STEP: fakedaemon.CLOSE}
        with self.assertRaises(gossipd.ConnectionLost):
            g.step()
        w = m.fc1.weight.detach().clone()
        g.detach()
        torch.testing.assert_close(m.fc1.weight.detach(), w)

    def test_a_daemon_restart_keeps_the_params_in_the_same_buffer(self):
        """The daemon dies: steps are offline and the model trains on; it
        comes back on the same path: the client registers the same memfd,
        so the parameters are still views of the buffer it works on."""
        m = Net()
        g = self.attach(m)
        rng = g.client.buffer_range
        g.step()
        self.addCleanup(shutil.rmtree, self.fake.dir, True)
        self.fake.close(remove=False)
        opt = torch.optim.SGD(m.parameters(), lr=0.1)
        m(torch.randn(8, 4)).sum().backward()
        opt.step()
        st = g.step()
        self.assertTrue(st.offline)
        w = m.fc1.weight.detach().clone()
        fake = fakedaemon.FakeDaemon(dir=self.fake.dir)
        self.addCleanup(fake.close)
        deadline = time.monotonic() + 5
        while st.offline and time.monotonic() < deadline:
            st = g.step()
        self.assertFalse(st.offline, "not back after 5 s")
        self.assertEqual(st.reconnects, 1)
        self.assertEqual(fake.types(), [fakedaemon.P.HELLO, P.REGISTER, P.STEP])
        self.assertEqual(g.client.buffer_range, rng)
        for n, p in m.named_parameters():
            self.assertFalse(p.numel() and not inside(p, rng), n)
        torch.testing.assert_close(m.fc1.weight.detach(), w + 1)   # its write

    def test_buffers_on_request(self):
        m = Net()
        g = self.attach(m, buffers=True)
        self.assertIn("bn.running_mean", g.names)
        self.assertNotIn("bn.num_batches_tracked", g.names)
        self.assertTrue(inside(m.bn.running_var, g.client.buffer_range))
        m.train()
        m(torch.randn(8, 4))                       # updates running stats in place
        self.assertTrue(inside(m.bn.running_mean, g.client.buffer_range))

    def test_non_contiguous_param(self):
        m = torch.nn.Linear(3, 2)
        m.weight.data = torch.randn(3, 2).t()      # a transposed view
        want = m.weight.detach().clone()
        g = self.attach(m)
        torch.testing.assert_close(m.weight.detach(), want)
        self.assertTrue(m.weight.is_contiguous())
        self.assertTrue(inside(m.weight, g.client.buffer_range))

    def test_long_names_are_shortened_stably(self):
        name = "block" * 20 + ".weight"
        short = gossipd.pytorch.wire_name(name)
        self.assertLessEqual(len(short.encode()), 63)
        self.assertTrue(short.endswith(".weight"))
        self.assertEqual(short, gossipd.pytorch.wire_name(name))
        self.assertNotEqual(short, gossipd.pytorch.wire_name("x" + name))
        self.assertEqual(gossipd.pytorch.wire_name("fc.bias"), "fc.bias")

    def test_refusals_leave_the_model_untouched(self):
        cases = [
            (torch.nn.Linear(2, 2).double(), ["torch.float64", "model.float()"]),
            (torch.nn.Sequential(torch.nn.Linear(2, 2), torch.nn.Linear(2, 2).half()),
             ["several dtypes", "0.weight is torch.float32", "1.weight is torch.float16",
              "one dtype per model"]),
            (torch.nn.Module(), ["no parameters"]),
        ]
        shared = torch.nn.Module()
        base = torch.randn(4)
        shared.a = torch.nn.Parameter(base[:2])
        shared.b = torch.nn.Parameter(base[2:])
        cases.append((shared, ["a and b share memory"]))
        for model, words in cases:
            ptrs = [p.data_ptr() for p in model.parameters()]
            with self.assertRaises(gossipd.InvalidArgument) as cm:
                gossipd.attach(model, socket=self.fake.path)
            for w in words:
                self.assertIn(w, str(cm.exception))
            self.assertEqual([p.data_ptr() for p in model.parameters()], ptrs)
        self.assertEqual(self.fake.requests, [], "refused before connecting")

    def test_refused_register_leaves_the_model_untouched(self):
        self.fake.replies = {P.REGISTER: P.encode_error(-16, "held by 'other'")}
        m = torch.nn.Linear(2, 2)
        ptr = m.weight.data_ptr()
        with self.assertRaises(gossipd.Busy) as cm:
            gossipd.attach(m, socket=self.fake.path)
        self.assertIn("held by 'other'", str(cm.exception))
        self.assertEqual(m.weight.data_ptr(), ptr)


if __name__ == "__main__":
    unittest.main()
