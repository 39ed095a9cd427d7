"""Membership for a local gossipd cluster (gossipcluster.Cluster): a
cluster authority and one certificate per node, made with gossipctl
(ca-genkey, pubkey, cert-issue), and each node's [Cluster] section:
the Authority, its Certificate and one Seed.  A daemon with that section
and no [Peer] finds the others through the seed and computes its
neighbours (docs/MEMBERSHIP.md, "The daemon as a member").  Standard
library only.
"""
import os
import subprocess


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
