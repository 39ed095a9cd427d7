"""The benchmark network: one network namespace per node, each joined by a
veth pair to a bridge in a hub namespace, all created by this module with
one unique name prefix and nothing created in (or moved through) the
host namespace: every `ip link add` runs inside the hub namespace and
puts the peer end straight into the node's namespace.  Addresses
(10.77.0.x/24) exist only inside these namespaces.  Each node's egress is
shaped with tc tbf.  remove() deletes every namespace (the veths and the
bridge go with them); sweep() removes those a killed run left behind.

Optionally (start_dns) a DNS server, dnsmasq, runs in the hub namespace at
HUB_ADDR on the bridge, serving only the A and SRV records it is given, and
each node namespace gets /etc/netns/NS/resolv.conf naming it (`ip netns
exec NS` bind-mounts that file as /etc/resolv.conf).  remove() stops it and
deletes those files; sweep() kills what a killed run left running in its
namespaces and deletes its files too."""
import json
import os
import re
import shutil
import signal
import subprocess
import time

PREFIX = "gbe"                       # gossipd bench-e2e; + pid + "-"
SUBNET = "10.77.0."
IFNAME = "eth0"
HUB_ADDR = SUBNET + "254"            # the hub's address on the bridge (DNS)
NETNS_ETC = "/etc/netns"             # ip netns exec's per-namespace /etc
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


def _drop_netns_etc():
    """Removes NETNS_ETC if it is empty (no one else's files in it)."""
    try:
        os.rmdir(NETNS_ETC)
    except OSError:
        pass


def sweep():
    """Deletes namespaces of earlier runs of this harness whose process is
    gone (the pid is in the name); returns their names."""
    gone = []
    for name in namespaces():
        m = re.match(r"^%s(\d+)-" % PREFIX, name)
        if m and not _alive(int(m.group(1))):
            # What ran inside (a DNS server) would keep it alive.
            for pid in ip("netns", "pids", name, check=False).stdout.split():
                try:
                    os.kill(int(pid), signal.SIGKILL)
                except (ProcessLookupError, ValueError):
                    pass
            ip("netns", "delete", name, check=False)
            gone.append(name)
    for name in os.listdir(NETNS_ETC) if os.path.isdir(NETNS_ETC) else []:
        m = re.match(r"^%s(\d+)-" % PREFIX, name)
        if m and not _alive(int(m.group(1))):
            shutil.rmtree(os.path.join(NETNS_ETC, name), ignore_errors=True)
            gone.append(os.path.join(NETNS_ETC, name))
    _drop_netns_etc()
    return gone


def skip_reason(exes=(), dns=False):
    """Why a test of namespaces cannot run here (None: it can): root,
    iproute2, dnsmasq if dns, the executables exes, and a namespace
    made and deleted."""
    if os.geteuid() != 0:
        return "needs root to create network namespaces"
    if not shutil.which("ip") or not shutil.which("ss"):
        return "needs iproute2 (ip, ss)"
    if dns and not shutil.which("dnsmasq"):
        return "needs dnsmasq (Debian package dnsmasq-base)"
    for exe in exes:
        if not os.access(exe, os.X_OK):
            return "no %s" % exe
    ok, why = can_create()
    return None if ok else "cannot create network namespaces here: " + why


def exit_unless_possible(build):
    """For the main of a test of namespaces with DNS: exits 77 (meson's
    "skipped") with skip_reason's reason when it cannot run here (the
    build directory build lacking gossipd or gossipctl included)."""
    import sys
    why = skip_reason([os.path.join(build, "daemon", "gossipd"),
                       os.path.join(build, "tools", "gossipctl", "gossipctl")], dns=True)
    if why:
        print("SKIP: " + why)
        sys.exit(77)


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
        self.dns = None                  # dnsmasq's Popen, while it runs
        self.dns_log = None

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

    def start_dns(self, hosts, srv=(), log=None):
        """Serves DNS at HUB_ADDR from the hub namespace (dnsmasq, started
        again if it runs): hosts is [(name, [ipv4, ...])], one A record per
        address; srv is [(srv_name, target, port)].  Nothing else: no
        upstream, no /etc/hosts, listening on HUB_ADDR only.  Each node
        namespace's resolv.conf names it (and bounds a lookup to 1 s, 2
        tries).  log: a file for dnsmasq's output (queries logged)."""
        self.stop_dns()
        if not any(a == HUB_ADDR for a in self._hub_addrs()):
            ip("-n", self.hub, "addr", "add", HUB_ADDR + "/24", "dev", "br0")
        for ns in self.ns:
            os.makedirs(os.path.join(NETNS_ETC, ns), exist_ok=True)
            with open(os.path.join(NETNS_ETC, ns, "resolv.conf"), "w") as f:
                f.write("nameserver %s\noptions timeout:1 attempts:2\n" % HUB_ADDR)
        cmd = ["ip", "netns", "exec", self.hub, "dnsmasq", "--keep-in-foreground",
               "--conf-file=/dev/null", "--no-resolv", "--no-hosts", "--no-poll",
               "--bind-interfaces", "--listen-address=" + HUB_ADDR, "--port=53",
               "--pid-file=", "--log-facility=-", "--log-queries"]
        for name, addrs in hosts:
            cmd += ["--host-record=%s,%s" % (name, a) for a in addrs]
        cmd += ["--srv-host=%s,%s,%d" % r for r in srv]
        self.dns_log = log
        out = open(log, "a") if log else subprocess.DEVNULL
        try:
            self.dns = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT)
        finally:
            if log:
                out.close()
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            if self.dns.poll() is not None:
                raise RuntimeError("dnsmasq exited with %d (see %s)"
                                   % (self.dns.returncode, log or "its output"))
            bound = subprocess.run(["ip", "netns", "exec", self.hub, "ss", "-Hlun",
                                    "sport = :53"], capture_output=True, text=True)
            if HUB_ADDR in bound.stdout:
                return
            time.sleep(0.05)
        self.stop_dns()
        raise RuntimeError("dnsmasq did not bind %s:53 within 10 s" % HUB_ADDR)

    def stop_dns(self):
        if self.dns is not None:
            self.dns.terminate()
            try:
                self.dns.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.dns.kill()
                self.dns.wait()
            self.dns = None

    def _hub_addrs(self):
        out = ip("-n", self.hub, "-j", "addr", "show", "dev", "br0").stdout
        return [a["local"] for d in json.loads(out or "[]")
                for a in d.get("addr_info", [])]

    def remove(self):
        self.stop_dns()
        for name in reversed(self.created):
            ip("netns", "delete", name, check=False)
            shutil.rmtree(os.path.join(NETNS_ETC, name), ignore_errors=True)
        self.created = []
        _drop_netns_etc()

    def __enter__(self):
        return self.create()

    def __exit__(self, *exc):
        self.remove()
