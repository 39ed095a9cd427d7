"""The benchmark network: one network namespace per node, each joined by a
veth pair to a bridge in a hub namespace, all created by this module with
one unique name prefix and nothing created in (or moved through) the
host namespace: every `ip link add` runs inside the hub namespace and
puts the peer end straight into the node's namespace.  Addresses
(10.77.0.x/24) exist only inside these namespaces.  Each node's egress is
shaped with tc tbf.  remove() deletes every namespace (the veths and the
bridge go with them); sweep() removes those a killed run left behind."""
import json
import os
import re
import subprocess

PREFIX = "gbe"                       # gossipd bench-e2e; + pid + "-"
SUBNET = "10.77.0."
IFNAME = "eth0"
PROFILES = {"10mbit": 10e6, "100mbit": 100e6, "1gbit": 1e9, "unshaped": None}


def ip(*args, check=True):
    return subprocess.run(["ip"] + list(args), check=check,
                          capture_output=True, text=True)


def namespaces():
    out = ip("-j", "netns", "list", check=False).stdout.strip()
    return [d["name"] for d in json.loads(out)] if out else []


def _alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def sweep():
    """Deletes namespaces of earlier runs of this harness whose process is
    gone (the pid is in the name); returns their names."""
    gone = []
    for name in namespaces():
        m = re.match(r"^%s(\d+)-" % PREFIX, name)
        if m and not _alive(int(m.group(1))):
            ip("netns", "delete", name, check=False)
            gone.append(name)
    return gone


def can_create():
    """(True, "") if this process may create namespaces, else (False, why)."""
    name = "%s%d-probe" % (PREFIX, os.getpid())
    r = ip("netns", "add", name, check=False)
    if r.returncode != 0:
        return False, (r.stderr.strip() or "ip netns add failed")
    ip("netns", "delete", name, check=False)
    return True, ""


def tbf_burst(rate):
    """10 ms at rate, at least 64 KiB + one frame (GSO sends 64 KiB
    super-packets through the qdisc; a smaller bucket would drop them).
    At 10 Mbit/s the floor holds: 67,050 bytes, 54 ms of the rate, so
    the rate is exceeded by at most 0.54 Mbit over any second, 5 % over
    one second and under 1 % over a 6 s model exchange; latency 100 ms
    makes tbf's queue 125,000 bytes + the burst, room for two
    super-packets."""
    return max(int(rate / 8 / 100), 65536 + 1514)


class Net:
    def __init__(self, nodes, rate_bps, tag=""):
        self.nodes = nodes
        self.rate = rate_bps
        self.prefix = "%s%d-%s" % (PREFIX, os.getpid(), tag)
        self.hub = self.prefix + "hub"
        self.ns = [self.prefix + "n%d" % i for i in range(nodes)]
        self.addr = [SUBNET + str(i + 1) for i in range(nodes)]
        self.created = []

    def _add(self, name):
        ip("netns", "add", name)
        self.created.append(name)
        ip("-n", name, "link", "set", "lo", "up")

    def create(self):
        try:
            self._add(self.hub)
            ip("-n", self.hub, "link", "add", "br0", "type", "bridge")
            ip("-n", self.hub, "link", "set", "br0", "up")
            for i, ns in enumerate(self.ns):
                self._add(ns)
                ip("-n", self.hub, "link", "add", "h%d" % i, "type", "veth",
                   "peer", "name", IFNAME, "netns", ns)
                ip("-n", self.hub, "link", "set", "h%d" % i, "master", "br0", "up")
                ip("-n", ns, "addr", "add", self.addr[i] + "/24", "dev", IFNAME)
                ip("-n", ns, "link", "set", IFNAME, "up")
                if self.rate:
                    subprocess.run(
                        ["tc", "-n", ns, "qdisc", "add", "dev", IFNAME, "root",
                         "tbf", "rate", "%dbit" % self.rate, "burst",
                         str(tbf_burst(self.rate)), "latency", "100ms"],
                        check=True, capture_output=True, text=True)
        except subprocess.CalledProcessError as e:
            self.remove()
            raise RuntimeError("creating the namespaces failed: %s: %s"
                               % (" ".join(e.cmd), (e.stderr or "").strip()))
        return self

    def wrap(self, i):
        """The command prefix that runs a program in node i's namespace."""
        return ["ip", "netns", "exec", self.ns[i]]

    def tx_bytes(self, i):
        """Bytes node i's interface sent (the namespace's own counter)."""
        out = ip("-n", self.ns[i], "-j", "-s", "link", "show", "dev", IFNAME).stdout
        return json.loads(out)[0]["stats64"]["tx"]["bytes"]

    def tx_all(self):
        return [self.tx_bytes(i) for i in range(self.nodes)]

    def qdisc(self, i):
        return subprocess.run(["tc", "-n", self.ns[i], "qdisc", "show", "dev", IFNAME],
                              capture_output=True, text=True).stdout.strip()

    def remove(self):
        for name in reversed(self.created):
            ip("netns", "delete", name, check=False)
        self.created = []

    def __enter__(self):
        return self.create()

    def __exit__(self, *exc):
        self.remove()
