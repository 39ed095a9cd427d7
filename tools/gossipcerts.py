"""Membership for a local gossipd cluster (gossipcluster.Cluster): a
cluster authority and one certificate per node, made with gossipctl
(ca-genkey, pubkey, cert-issue), and each node's [Cluster] section:
the Authority, its Certificate and one Seed.  A daemon with that section
and no [Peer] finds the others through the seed and computes its
neighbours (docs/MEMBERSHIP.md, "The daemon as a member"); and the
graph those members must form (spec_neighbours), checked over their
status (formed).  Standard library only.
"""
import base64
import hashlib
import os
import subprocess

import gossipcluster


class Membership:
    """Certificates for keys (Cluster.keys: (private key file, public
    key) per node), written in directory; seed: the "host:port" every
    node names as its Seed, or an SRV name for a SeedSRV."""

    def __init__(self, gossipctl, directory, keys, seed, names=None):
        self.gossipctl = gossipctl
        self.dir = directory
        self.seed = seed
        self.extra = ""         # more [Cluster] lines, e.g. "LeaveOnStop = on\n"
        self.ca = self._write("ca.key", self._run("ca-genkey"))
        self.authority = self._run("pubkey", "--ca", stdin=self.ca).strip()
        self.certs = []
        for i, (private, public) in enumerate(keys):
            signing = self._run("pubkey", "--signing", stdin=private).strip()
            name = names[i] if names else "node%d" % i
            self.certs.append(self._write("n%d.cert" % i, self._run(
                "cert-issue", "--ca", self.ca, "--name", name, "--pubkey", public,
                "--signing-key", signing)))

    def _run(self, *args, stdin=None):
        inp = open(stdin) if stdin else None
        try:
            out = subprocess.run([self.gossipctl] + list(args), stdin=inp,
                                 capture_output=True, text=True, timeout=30)
        finally:
            if inp:
                inp.close()
        if out.returncode != 0:
            raise RuntimeError("gossipctl %s: %s" % (args[0], out.stderr.strip()))
        return out.stdout

    def _write(self, name, text):
        path = os.path.join(self.dir, name)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as f:
            f.write(text)
        return path

    def section(self, i):
        """Node i's [Cluster] section: the seed as a Seed, or as a
        SeedSRV if it is an SRV name (_service._proto.name)."""
        key = "SeedSRV" if self.seed.startswith("_") else "Seed"
        return ("[Cluster]\nAuthority = %s\nCertificate = %s\n%s = %s\n%s"
                % (self.authority, self.certs[i], key, self.seed, self.extra))


def spec_neighbours(keys, topology="ring"):
    """Each key's neighbours in the specification: the topology's graph
    (gossipcluster.edges_of: gsp_graph_new's) over the keys sorted by
    BLAKE2b-256 of the raw key (docs/MEMBERSHIP.md, "Member table and
    computed graph")."""
    order = sorted(keys, key=lambda k: hashlib.blake2b(base64.b64decode(k),
                                                       digest_size=32).digest())
    nb = {k: set() for k in order}
    for a, b in (gossipcluster.edges_of(topology, len(order)) if len(order) > 1 else []):
        nb[order[a]].add(order[b])
        nb[order[b]].add(order[a])
    return nb


def not_formed(c, nodes, endpoint_of=None, topology="ring"):
    """Why the nodes of c (a gossipcluster.Cluster) have not formed their
    graph, or "" if they have: every node in nodes knows exactly them as
    alive members (none found dead), each at endpoint_of(j) if given, and
    its computed neighbours and its live edges are its neighbours in the
    specification over them.  A daemon that does not answer STATUS: not
    formed."""
    keys = {c.keys[i][1]: i for i in nodes}
    want = spec_neighbours(set(keys), topology)
    name = lambda ks: ",".join(sorted("n%d" % keys[k] if k in keys else k[:8] for k in ks))
    for i in nodes:
        try:
            st = gossipcluster.status(c.sockets[i])
        except OSError as e:
            return "node %d: no STATUS (%s)" % (i, e)
        cl = st["cluster"]
        alive = {m["key"]: m["endpoint"] for m in cl["members"]
                 if m["status"] == "alive" and m["probe"] != "dead"}
        edges = {e["peer"] for e in st["edges"] if e["state"] in ("idle", "up")}
        mine = want[c.keys[i][1]]
        if set(alive) != set(keys):
            return "node %d: members %s" % (i, name(alive))
        if set(cl["neighbours"]) != mine:
            return "node %d: neighbours %s, not %s" % (i, name(cl["neighbours"]), name(mine))
        if edges != mine:
            return "node %d: live edges %s, not %s" % (i, name(edges), name(mine))
        bad = [k for k, j in keys.items() if endpoint_of and alive[k] != endpoint_of(j)]
        if bad:
            return "node %d: endpoint of n%d %s" % (i, keys[bad[0]], alive[bad[0]])
    return ""


def formed(c, nodes, endpoint_of=None, topology="ring"):
    """Whether the nodes have formed their graph (not_formed says why not)."""
    return not not_formed(c, nodes, endpoint_of, topology)
