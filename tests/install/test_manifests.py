#!/usr/bin/env python3
"""The deployment files of deploy/kubernetes/ and deploy/cloud-init/, read
as the daemon needs them (no cluster and no VM here):

  - every YAML file of deploy/ passes yamllint --strict (deploy/.yamllint),
    and every Kubernetes object reads back whole through the API models of
    the Kubernetes Python client (Debian's python3-kubernetes): a misspelt
    or unknown field is dropped on the way and shows as a difference, a
    value of the wrong type or a missing required field is refused;
  - Kubernetes: the Service is headless with publishNotReadyAddresses
    (pods find each other before any is ready); its port's name and
    protocol make the SRV name of the ConfigMap's SeedSRV; the
    StatefulSet's serviceName is that Service and its pods match the
    selector; the Service's port, its targetPort, the container port and
    ListenAddress are one port (a headless Service's SRV records carry the
    Service's port, dialled as is); MetricsListen is the port "metrics";
    the state volume holds the key, the certificate link and
    $STATE_DIRECTORY in both containers that use it; the trainer shares
    the socket's emptyDir and $GOSSIPD_SOCKET; non-root, read-only root
    file systems; probes that wait longer than gossipctl's own timeout
    and minutes before a kill; Nodes equals the replicas;
  - cloud-init: a #cloud-config that writes /etc/gossipd/gossipd.conf
    (the unit's ConfigurationDirectory), a Seed that is a DNS name on
    ListenAddress's port, the key (0600, owned by the unit's user, written
    once that user exists), the certificate, the build's packages, and
    enables gossipd.service after installing it;
  - both embedded gossipd.conf files pass gossipd --check-config, with the
    site's values (key, certificate, authority) replaced by the test's
    own from gossipctl.  Until this gossipd knows every [Cluster] key the
    files use, that one check is skipped with the daemon's reason; the
    same files without [Cluster] are checked in any case.

A missing tool is a failure, not a skip: tools/run-tests installs them.

usage: test_manifests.py BUILD_DIR SOURCE_DIR [DEPLOY_DIR] [unittest options]
(DEPLOY_DIR, SOURCE_DIR/deploy by default, lets a copy be checked.)
"""
import difflib
import importlib
import json
import os
import re
import subprocess
import sys
import tempfile
import unittest


def debian_module(name, package):
    """A module of a Debian package, also when this interpreter is not
    /usr/bin/python3 (its dist-packages then come last on the path)."""
    try:
        return importlib.import_module(name)
    except ImportError:
        if "/usr/lib/python3/dist-packages" not in sys.path:
            sys.path.append("/usr/lib/python3/dist-packages")
    try:
        return importlib.import_module(name)
    except ImportError:
        raise AssertionError("%s is missing: install %s (tools/run-tests does)"
                             % (name, package)) from None


yaml = debian_module("yaml", "python3-yaml")

BUILD = SOURCE = DEPLOY = None
# The [Cluster] keys that are being added to gossipd: an older build that
# refuses one of them skips the full --check-config (and says so).
CLUSTER_KEYS = ("Seed", "SeedSRV", "ResolveIntervalSeconds", "Authority",
                "Certificate", "RevocationList")
PLACEHOLDER = "CHANGE-ME"


def read(path):
    with open(path) as f:
        return f.read()


def conf_items(text):
    """gossipd.conf as (section, key, value) triples, in order (sections
    and keys may repeat, so not configparser)."""
    out, section = [], None
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith(("#", ";")):
            continue
        if line.startswith("[") and line.endswith("]"):
            section = line[1:-1]
            continue
        key, sep, value = line.partition("=")
        if not sep:
            raise AssertionError("not key = value: %r" % line)
        out.append((section, key.strip(), value.strip()))
    return out


def conf_values(items, section, key):
    return [v for s, k, v in items if s == section and k == key]


def conf_one(items, section, key):
    values = conf_values(items, section, key)
    if len(values) != 1:
        raise AssertionError("[%s] %s given %d times" % (section, key, len(values)))
    return values[0]


def port_of(address):
    """The port of a:b:c:d:port, [v6]:port or name:port."""
    return int(address.rsplit(":", 1)[1])


def unit_setting(name):
    """A setting of deploy/gossipd.service.in, its @sub@ removed (the
    single-daemon unit's value)."""
    m = re.search(r"^%s=(.*)$" % name, read(os.path.join(SOURCE, "deploy",
                                                         "gossipd.service.in")), re.M)
    return m.group(1).replace("@sub@", "")


def gossipctl_timeout():
    h = read(os.path.join(SOURCE, "tools", "gossipctl", "ipc.h"))
    return int(re.search(r"#define GCTL_TIMEOUT_SECONDS (\d+)", h).group(1))


def run(args, **kw):
    return subprocess.run(args, capture_output=True, text=True, timeout=60, **kw)


class Credentials:
    """An authority, a node key and its certificate from the build's
    gossipctl, in a temporary directory: what the site's placeholders
    stand for."""

    def __init__(self, tmp):
        ctl = os.path.join(BUILD, "tools", "gossipctl", "gossipctl")
        self.dir = tmp

        def out(args, stdin=None):
            p = run([ctl] + args, input=stdin)
            if p.returncode != 0:
                raise AssertionError("gossipctl %s: %s" % (args[0], p.stderr))
            return p.stdout

        ca, node = out(["ca-genkey"]), out(["genkey"])
        self.authority = out(["pubkey", "--ca"], ca).strip()
        self.key = self.write("node.key", node)
        self.ca_key = self.write("ca.key", ca)
        self.cert = self.write("node.cert", out([
            "cert-issue", "--ca", self.ca_key, "--name", "test",
            "--pubkey", out(["pubkey"], node).strip(),
            "--signing-key", out(["pubkey", "--signing"], node).strip()]))
        self.revoked = self.write("revoked", out(["revoke", "--ca", self.ca_key,
                                                  "--serial", "1"]))

    def write(self, name, text):
        path = os.path.join(self.dir, name)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as f:
            f.write(text)
        return path

    def substitute(self, text):
        """text with the site's values (key, certificate, revocation list,
        authority) replaced by these; every other line as written."""
        values = {"PrivateKeyFile": self.key, "Certificate": self.cert,
                  "RevocationList": self.revoked, "Authority": self.authority}
        out = []
        for line in text.splitlines():
            key = line.partition("=")[0].strip()
            if "=" in line and not line.lstrip().startswith("#") and key in values:
                line = "%s = %s" % (key, values[key])
            out.append(line)
        return "\n".join(out) + "\n"


class ConfigCheck(unittest.TestCase):
    """gossipd --check-config on a deployment's gossipd.conf."""

    def check_config(self, text, what):
        with tempfile.TemporaryDirectory(prefix="gossipd-manifests-") as tmp:
            cred = Credentials(tmp)
            leftover = [line for line in cred.substitute(text).splitlines()
                        if PLACEHOLDER in line]
            self.assertEqual(leftover, [], "%s: placeholders outside the site's keys"
                             % what)
            path = os.path.join(tmp, "gossipd.conf")
            with open(path, "w") as f:
                f.write(cred.substitute(text))
            p = run([os.path.join(BUILD, "daemon", "gossipd"), "--config", path,
                     "--check-config"], cwd=tmp)
        return p

    def without_cluster(self, text):
        out, skip = [], False
        for line in text.splitlines():
            s = line.strip()
            if s.startswith("[") and s.endswith("]"):
                skip = s == "[Cluster]"
            if not skip:
                out.append(line)
        return "\n".join(out) + "\n"

    def assert_node_part_parses(self, text, what):
        p = self.check_config(self.without_cluster(text), what)
        self.assertEqual(p.returncode, 0, "%s without [Cluster]: %s" % (what, p.stderr))

    def assert_parses(self, text, what):
        p = self.check_config(text, what)
        unknown = re.search(r"unknown section \[Cluster\]|unknown key '(\w+)' in \[Cluster\]",
                            p.stderr)
        if p.returncode != 0 and unknown and (unknown.group(1) is None or
                                              unknown.group(1) in CLUSTER_KEYS):
            self.skipTest("%s: this gossipd does not know [Cluster] yet: %s"
                          % (what, p.stderr.strip()))
        self.assertEqual(p.returncode, 0, "%s: %s" % (what, p.stderr))


class Lint(unittest.TestCase):
    def test_yamllint(self):
        p = run(["yamllint", "--strict", "-c", os.path.join(DEPLOY, ".yamllint"), DEPLOY])
        self.assertEqual(p.returncode, 0, "yamllint:\n" + p.stdout + p.stderr)

    def test_kubernetes_objects_read_back_whole(self):
        api = debian_module("kubernetes.client", "python3-kubernetes").ApiClient()

        class Response:
            def __init__(self, doc):
                self.data = json.dumps(doc)

        for doc in Kubernetes.objects():
            kind = "V1" + doc["kind"]
            try:
                back = api.sanitize_for_serialization(api.deserialize(Response(doc), kind))
            except (ValueError, TypeError) as e:
                self.fail("%s %s: %s" % (doc["kind"], doc["metadata"]["name"], e))
            if back != doc:
                diff = difflib.unified_diff(
                    json.dumps(doc, indent=1, sort_keys=True).splitlines(),
                    json.dumps(back, indent=1, sort_keys=True).splitlines(), lineterm="")
                self.fail("%s: fields the API does not have (-) or of the wrong type:\n%s"
                          % (doc["kind"], "\n".join(diff)))


class Kubernetes(ConfigCheck):
    """deploy/kubernetes/: what gossipd relies on in the objects that
    kustomization.yaml ties together."""

    @staticmethod
    def kustomization():
        return yaml.safe_load(read(os.path.join(DEPLOY, "kubernetes", "kustomization.yaml")))

    @classmethod
    def objects(cls):
        out = []
        for name in cls.kustomization()["resources"]:
            out += [d for d in yaml.safe_load_all(read(os.path.join(DEPLOY, "kubernetes",
                                                                    name))) if d]
        return out

    def setUp(self):
        self.by_kind = {}
        for doc in self.objects():
            self.assertNotIn(doc["kind"], self.by_kind, "one %s only" % doc["kind"])
            self.by_kind[doc["kind"]] = doc
        for kind in ("Service", "StatefulSet", "ConfigMap"):
            self.assertIn(kind, list(self.by_kind), "kustomization.yaml's resources")
        self.svc = self.by_kind["Service"]
        self.sts = self.by_kind["StatefulSet"]
        self.pod = self.sts["spec"]["template"]["spec"]
        self.containers = {c["name"]: c for c in self.pod["containers"]}
        self.gossipd = self.containers["gossipd"]
        self.init = {c["name"]: c for c in self.pod.get("initContainers", [])}
        self.volumes = {v["name"]: v for v in self.pod["volumes"]}
        self.conf_text = self.config_map_file()
        self.conf = conf_items(self.conf_text)

    def config_map_file(self):
        """The ConfigMap file that gossipd's --config names, through the
        volume mounted at its directory."""
        cmd = self.gossipd["command"]
        path = cmd[cmd.index("--config") + 1]
        mount = self.mount_at(self.gossipd, os.path.dirname(path))
        cm_name = self.volumes[mount["name"]]["configMap"]["name"]
        cm = self.by_kind["ConfigMap"]
        self.assertEqual(cm["metadata"]["name"], cm_name)
        return cm["data"][os.path.basename(path)]

    def mount_at(self, container, path):
        found = [m for m in container.get("volumeMounts", []) if m["mountPath"] == path]
        self.assertEqual(len(found), 1, "%s: one volume mounted at %s"
                         % (container["name"], path))
        return found[0]

    def env(self, container, name):
        values = [e["value"] for e in container.get("env", []) if e["name"] == name]
        return values[0] if values else None

    def test_every_manifest_is_in_the_kustomization(self):
        files = sorted(f for f in os.listdir(os.path.join(DEPLOY, "kubernetes"))
                       if f.endswith(".yaml") and f != "kustomization.yaml")
        self.assertEqual(sorted(self.kustomization()["resources"]), files)

    def test_service_is_headless_and_publishes_unready_pods(self):
        spec = self.svc["spec"]
        self.assertEqual(spec.get("clusterIP"), "None", "a headless Service")
        self.assertIs(spec.get("publishNotReadyAddresses"), True,
                      "pods must resolve each other before any is ready")

    def gossip_port(self):
        """The Service's port for ListenAddress's (the SRV records')."""
        listen = port_of(conf_one(self.conf, "Node", "ListenAddress"))
        ports = [p for p in self.svc["spec"]["ports"] if p["port"] == listen]
        self.assertEqual(len(ports), 1, "one Service port is ListenAddress's, %d "
                         "(the SRV records carry the Service's port, dialled as is)"
                         % listen)
        return ports[0]

    def test_seed_srv_is_the_services_srv_name(self):
        port = self.gossip_port()
        srv = "_%s._%s.%s" % (port["name"], port.get("protocol", "TCP").lower(),
                              self.svc["metadata"]["name"])
        seeds = conf_values(self.conf, "Cluster", "SeedSRV")
        self.assertTrue(seeds, "the ConfigMap's gossipd.conf has a SeedSRV")
        ns = self.kustomization().get("namespace")
        for seed in seeds:
            # The relative name (the pod's DNS search list adds the
            # namespace), or the full one in the kustomization's namespace.
            fqdn = re.fullmatch(re.escape(srv) + r"\.([a-z0-9-]+)\.svc(\.[a-z0-9.-]+)?",
                                seed)
            self.assertTrue(seed == srv or (fqdn and fqdn.group(1) == ns),
                            "SeedSRV %s is not %s (namespace %s)" % (seed, srv, ns))

    def test_statefulset_is_governed_by_the_service(self):
        self.assertEqual(self.sts["spec"]["serviceName"], self.svc["metadata"]["name"])
        labels = self.sts["spec"]["template"]["metadata"]["labels"]
        for k, v in self.svc["spec"]["selector"].items():
            self.assertEqual(labels.get(k), v, "the Service selects the pods (%s)" % k)

    def test_one_port_from_listen_address_to_srv_record(self):
        listen = port_of(conf_one(self.conf, "Node", "ListenAddress"))
        port = self.gossip_port()
        self.assertEqual(port.get("protocol", "TCP"), "TCP")
        target = port.get("targetPort", port["port"])
        cports = [p for p in self.gossipd["ports"] if target in (p.get("name"),
                                                                 p["containerPort"])]
        self.assertEqual(len(cports), 1, "targetPort %s is a port of gossipd" % target)
        self.assertEqual(cports[0]["containerPort"], listen)
        self.assertEqual(cports[0].get("protocol", "TCP"), "TCP")

    def test_metrics_port(self):
        metrics = conf_values(self.conf, "Node", "MetricsListen")
        cports = {p["name"]: p["containerPort"] for p in self.gossipd["ports"]}
        if not metrics:
            self.assertNotIn("metrics", cports)
            return
        self.assertEqual(cports.get("metrics"), port_of(metrics[0]))
        self.assertFalse(metrics[0].startswith(("127.", "[::1]")),
                         "MetricsListen on loopback cannot be scraped")

    def test_state_volume_holds_key_certificate_and_state(self):
        key = conf_one(self.conf, "Node", "PrivateKeyFile")
        state = os.path.dirname(key)
        claims = [t["metadata"]["name"] for t in self.sts["spec"]["volumeClaimTemplates"]]
        keygen = self.init["keygen"]
        for c in (self.gossipd, keygen):
            self.assertIn(self.mount_at(c, state)["name"], claims,
                          "%s: %s is on a volumeClaimTemplate" % (c["name"], state))
        self.assertEqual(self.env(self.gossipd, "STATE_DIRECTORY"), state,
                         "the edges' records and timestamps beside the key")
        cert = conf_values(self.conf, "Cluster", "Certificate")
        script = " ".join(keygen["command"])
        for path in [key] + cert:
            self.assertEqual(os.path.dirname(path), state)
            self.assertIn(path, script, "keygen makes %s" % path)
        # What keygen links the certificate to, gossipd sees at that path.
        for m in keygen["volumeMounts"]:
            self.assertEqual(self.mount_at(self.gossipd, m["mountPath"])["name"], m["name"])

    def test_socket_is_shared_with_the_trainer(self):
        sock = conf_one(self.conf, "Node", "Socket")
        run_dir = os.path.dirname(sock)
        name = self.mount_at(self.gossipd, run_dir)["name"]
        self.assertIn("emptyDir", self.volumes[name])
        others = [c for n, c in self.containers.items() if n != "gossipd"]
        self.assertTrue(others, "a trainer container")
        for c in others:
            self.assertEqual(self.mount_at(c, run_dir)["name"], name, c["name"])
            self.assertEqual(self.env(c, "GOSSIPD_SOCKET"), sock, c["name"])
        self.assertEqual(self.env(self.gossipd, "RUNTIME_DIRECTORY"), run_dir)

    def test_probes_do_not_kill_a_busy_host(self):
        sock = conf_one(self.conf, "Node", "Socket")
        for kind in ("readinessProbe", "livenessProbe"):
            probe = self.gossipd[kind]
            cmd = probe["exec"]["command"]
            self.assertEqual(cmd[:1], ["gossipctl"], kind)
            if "--socket" in cmd:
                self.assertEqual(cmd[cmd.index("--socket") + 1], sock, kind)
            self.assertGreater(probe.get("timeoutSeconds", 1), gossipctl_timeout(),
                               "%s: longer than gossipctl's own timeout" % kind)
        live = self.gossipd["livenessProbe"]
        self.assertGreaterEqual(live.get("periodSeconds", 10) *
                                live.get("failureThreshold", 3), 120,
                                "a kill only after minutes without an answer")

    def test_non_root_read_only(self):
        self.assertIs(self.pod["securityContext"].get("runAsNonRoot"), True)
        for c in list(self.containers.values()) + list(self.init.values()):
            sc = c.get("securityContext", {})
            self.assertIs(sc.get("readOnlyRootFilesystem"), True, c["name"])
            self.assertIs(sc.get("allowPrivilegeEscalation"), False, c["name"])
            self.assertEqual(sc.get("capabilities", {}).get("drop"), ["ALL"], c["name"])

    def test_nodes_is_the_replicas(self):
        replicas = self.sts["spec"]["replicas"]
        self.assertEqual(int(conf_one(self.conf, "Node", "Nodes")), replicas)
        trainer = " ".join(self.containers["trainer"]["command"])
        self.assertIn("--nodes %d" % replicas, trainer)

    def test_config_map_node_part_parses(self):
        self.assert_node_part_parses(self.conf_text, "configmap.yaml")

    def test_config_map_parses(self):
        self.assert_parses(self.conf_text, "configmap.yaml")


class CloudInit(ConfigCheck):
    """deploy/cloud-init/gossipd.yaml: a VM that installs and starts
    gossipd.service with its configuration, key and certificate."""

    def setUp(self):
        self.text = read(os.path.join(DEPLOY, "cloud-init", "gossipd.yaml"))
        self.doc = yaml.safe_load(self.text)
        self.files = {f["path"]: f for f in self.doc["write_files"]}
        conf_dir = "/etc/" + unit_setting("ConfigurationDirectory")
        self.conf_text = self.files[conf_dir + "/gossipd.conf"]["content"]
        self.conf = conf_items(self.conf_text)

    def test_header(self):
        self.assertEqual(self.text.splitlines()[0], "#cloud-config")

    def test_seed_is_a_name_on_the_listen_port(self):
        listen = port_of(conf_one(self.conf, "Node", "ListenAddress"))
        seeds = conf_values(self.conf, "Cluster", "Seed")
        self.assertTrue(seeds, "a Seed")
        for seed in seeds:
            self.assertEqual(port_of(seed), listen, seed)
            self.assertRegex(seed.rsplit(":", 1)[0], r"^(?![0-9.]+$)[A-Za-z0-9.-]+$",
                             "a DNS name")

    def test_key_and_certificate_written(self):
        user = unit_setting("User")
        key = conf_one(self.conf, "Node", "PrivateKeyFile")
        self.assertEqual(os.path.dirname(key), "/var/lib/" + unit_setting("StateDirectory"))
        f = self.files[key]
        self.assertEqual((f.get("owner"), str(f.get("permissions"))),
                         ("%s:%s" % (user, user), "0600"))
        self.assertIs(f.get("defer"), True, "written once the user exists")
        self.assertIn(user, [u["name"] for u in self.doc["users"] if isinstance(u, dict)])
        for cert in conf_values(self.conf, "Cluster", "Certificate"):
            self.assertIn(cert, self.files)
        sock = conf_one(self.conf, "Node", "Socket")
        self.assertEqual(os.path.dirname(sock), "/run/" + unit_setting("RuntimeDirectory"))

    def test_builds_and_enables_the_service(self):
        deps = read(os.path.join(SOURCE, "tools", "deps.sh"))
        base = re.search(r"GSP_BASE_PACKAGES=\((.*?)\)", deps, re.S).group(1)
        needed = set(re.sub(r"#.*", "", base).split()) - {"dataset-fashion-mnist"}
        self.assertEqual(needed - set(self.doc["packages"]), set())
        cmds = [c if isinstance(c, str) else " ".join(c) for c in self.doc["runcmd"]]
        install = [i for i, c in enumerate(cmds) if "gossipd-install" in c]
        enable = [i for i, c in enumerate(cmds)
                  if re.search(r"systemctl enable .*gossipd\.service", c)]
        self.assertTrue(install and enable and install[0] < enable[0], cmds)
        script = self.files[cmds[install[0]].split()[0]]["content"]
        self.assertIn("meson install", script)

    def test_config_node_part_parses(self):
        self.assert_node_part_parses(self.conf_text, "cloud-init/gossipd.yaml")

    def test_config_parses(self):
        self.assert_parses(self.conf_text, "cloud-init/gossipd.yaml")

if __name__ == "__main__":
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    BUILD, SOURCE = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
    rest = sys.argv[3:]
    DEPLOY = os.path.join(SOURCE, "deploy")
    if rest and not rest[0].startswith("-"):
        DEPLOY = os.path.abspath(rest.pop(0))
    unittest.main(argv=[sys.argv[0]] + rest, verbosity=2)
