/* gossipd: options, configuration and keys, the modules set up on the
 * libuv loop in their order, the metrics listener (MetricsListen:
 * started with the daemon, stopped when it starts stopping; a reload
 * leaves it as it is), and the loop run.  Signals, reload, the stop and
 * the service manager's protocol are lifecycle.c's. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <sodium.h>

#include "api.h"
#include "daemon.h"
#include "key.h"
#include "lifecycle.h"
#include "log.h"
#include "metrics_http.h"
#include "notify.h"
#include "status.h"

static void usage(FILE *f)
{
	fprintf(f,
"usage: gossipd [--config FILE] [--check-config] [--version] [--help]\n"
"Runs a gossip node (PowerGossip, exact gossip or Choco, as the config\n"
"says): talks to the peers of FILE over TCP and serves\n"
"local trainers on a Unix socket.  Without --config it runs a single node\n"
"with no peers, its key in $STATE_DIRECTORY (or ./private.key) and its\n"
"socket in $RUNTIME_DIRECTORY or $XDG_RUNTIME_DIR (or ./gossipd.sock).\n"
"  --config FILE     the INI configuration (see gossipd.conf(5))\n"
"  --check-config    parse the configuration, print the public key, exit\n"
"  --version         print the version\n"
"  --help            this text\n");
}

/* Reads a base64 private key file, or creates one (mode 0600). */
static int load_key(const char *path, uint8_t priv[static GSP_KEY_BYTES])
{
	char text[128];
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0 && errno == ENOENT) {
		gsp_keypair kp;
		char b64[GSP_KEY_BASE64_LEN + 1];
		gsp_keypair_generate(&kp);
		gsp_key_to_base64(kp.priv, b64);
		fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
		if (fd < 0 || write(fd, b64, GSP_KEY_BASE64_LEN) != GSP_KEY_BASE64_LEN ||
		    write(fd, "\n", 1) != 1) {
			int e = errno;
			if (fd >= 0)
				close(fd);
			sodium_memzero(&kp, sizeof(kp));
			sodium_memzero(b64, sizeof(b64));
			gsp_err("cannot create the key file %s: %s", path, strerror(e));
			return -e;
		}
		close(fd);
		memcpy(priv, kp.priv, GSP_KEY_BYTES);
		sodium_memzero(&kp, sizeof(kp));
		sodium_memzero(b64, sizeof(b64));
		gsp_info("generated a new private key in %s", path);
		return 0;
	}
	if (fd < 0) {
		gsp_err("cannot open the key file %s: %s", path, strerror(errno));
		return -errno;
	}
	struct stat st;
	if (fstat(fd, &st) == 0 && (st.st_mode & 077))
		gsp_warn("the key file %s is readable by others (mode %03o): "
			 "chmod 600 it", path, (unsigned)(st.st_mode & 0777));
	ssize_t n = read(fd, text, sizeof(text) - 1);
	close(fd);
	if (n < 0)
		return -errno;
	text[n] = '\0';
	if (n > 0 && text[n - 1] == '\n')
		text[n - 1] = '\0';
	int err = gsp_key_from_base64(text, priv);
	sodium_memzero(text, sizeof(text));
	if (err)
		gsp_err("%s does not hold a base64 private key", path);
	return err;
}

/* systemd's StateDirectory= and RuntimeDirectory= (colon-separated when
 * there are several: gossipd uses the first), then the fallbacks. */
static const char *first_dir(const char *var, char *buf, size_t len)
{
	const char *v = getenv(var);
	if (!v || !*v)
		return NULL;
	snprintf(buf, len, "%.*s", (int)strcspn(v, ":"), v);
	return buf;
}

static void default_paths(gsp_daemon_config *cfg)
{
	char sbuf[GSP_PATH_MAX], rbuf[GSP_PATH_MAX];
	const char *state = first_dir("STATE_DIRECTORY", sbuf, sizeof(sbuf));
	const char *run = first_dir("RUNTIME_DIRECTORY", rbuf, sizeof(rbuf));
	if (!run)
		run = first_dir("XDG_RUNTIME_DIR", rbuf, sizeof(rbuf));
	if (!cfg->have_private_key && !cfg->private_key_file[0])
		snprintf(cfg->private_key_file, sizeof(cfg->private_key_file),
			 "%s/private.key", state ? state : ".");
	if (!strcmp(cfg->socket_path, "gossipd.sock"))
		snprintf(cfg->socket_path, sizeof(cfg->socket_path),
			 "%s/gossipd.sock", run ? run : ".");
}

/* The replay timestamps and the edges' records go to $STATE_DIRECTORY,
 * or beside the key file, named after it (daemons whose keys share a
 * directory keep apart); with neither (an inline key, no state
 * directory) they stay in memory. */
static void state_files(gossipd *d)
{
	char buf[GSP_PATH_MAX], path[GSP_PATH_MAX + 32];
	const char *state = first_dir("STATE_DIRECTORY", buf, sizeof(buf));
	const char *sep = "/";
	if (!state && !d->cfg.have_private_key) {
		state = d->cfg.private_key_file;
		sep = ".";
	}
	if (!state) {
		gsp_info("no state directory: handshake timestamps and edge records "
			 "kept in memory only");
		return;
	}
	snprintf(path, sizeof(path), "%s%sreplay-timestamps", state, sep);
	int err = peers_set_replay_file(&d->mesh.peers, path);
	if (err)
		gsp_warn("%s: %s: handshake timestamps kept in memory only", path,
			 gsp_strerror(err));
	snprintf(path, sizeof(path), "%s%sedges", state, sep);
	if ((err = mesh_set_state_file(&d->mesh, path)) != 0)
		gsp_warn("%s: %s: edge records kept in memory only (a restart may land "
			 "a round at one end only)", path, gsp_strerror(err));
}

/* AverageSchedule = finite: the finite-time schedule of the configured
 * graph (Topology, Nodes), which every node of it computes alike; =
 * matching: the ring's matching schedule (its pairwise weights). */
static int finite_schedule(gsp_daemon_config *cfg)
{
	gsp_graph *g;
	double *d = malloc(GSP_MAX_STEPS * sizeof(*d));
	size_t k = 0;
	int rc = d ? 0 : -ENOMEM;
	if (!rc && cfg->avg_matching) {
		rc = gsp_ring_matching_schedule(cfg->nodes, d, GSP_MAX_STEPS, &k);
	} else if (!rc && !(rc = gsp_graph_new(cfg->topology, cfg->nodes, &g))) {
		rc = gsp_graph_finite_schedule(g, d, GSP_MAX_STEPS, &k, NULL);
		gsp_graph_free(g);
	}
	if (!rc && !(cfg->avg_steps = malloc((k ? k : 1) * sizeof(float))))
		rc = -ENOMEM;
	if (rc) {
		fprintf(stderr, "gossipd: %s: AverageSchedule = %s: no schedule for a "
			"%s graph of %u nodes (%s)\n", cfg->path,
			cfg->avg_matching ? "matching" : "finite",
			gsp_topology_name(cfg->topology), cfg->nodes, gsp_strerror(rc));
		free(d);
		return -EINVAL;
	}
	for (size_t t = 0; t < k; t++)
		cfg->avg_steps[t] = (float)d[t];
	cfg->avg_n_steps = k;
	free(d);
	return 0;
}

static int setup(gossipd *d, const char *config_path)
{
	char err[512], msg[512];
	gsp_daemon_config_default(&d->cfg);
	if (config_path &&
	    gsp_daemon_config_load(config_path, &d->cfg, err, sizeof(err)) != 0) {
		fprintf(stderr, "gossipd: %s\n", err);
		return -EINVAL;
	}
	gsp_log_init(d->cfg.log_level);
	default_paths(&d->cfg);
	uint8_t priv[GSP_KEY_BYTES];
	if (d->cfg.have_private_key)
		memcpy(priv, d->cfg.private_key, GSP_KEY_BYTES);
	else if (load_key(d->cfg.private_key_file, priv) != 0)
		return -EINVAL;
	sodium_memzero(d->cfg.private_key, sizeof(d->cfg.private_key));
	/* The one copy of the static key: locked, guarded, read-only; links
	 * and handshakes point at it. */
	d->key = sodium_malloc(sizeof(*d->key));
	int rc = d->key ? gsp_keypair_from_private(priv, d->key) : -ENOMEM;
	sodium_memzero(priv, sizeof(priv));
	if (rc)
		return rc;
	sodium_mprotect_readonly(d->key);
	gsp_key_to_base64(d->key->pub, d->key_b64);
	if (d->cfg.gamma_auto) {
		gsp_graph *g;
		double gamma;
		if (gsp_graph_new(d->cfg.topology, d->cfg.nodes, &g) != 0 ||
		    gsp_graph_optimal_gamma(g, &gamma) != 0) {
			fprintf(stderr, "gossipd: %s: Gamma = auto: cannot build a %s "
				"graph of %u nodes\n", d->cfg.path,
				gsp_topology_name(d->cfg.topology), d->cfg.nodes);
			return -EINVAL;
		}
		gsp_graph_free(g);
		d->cfg.engine.gamma = (float)gamma;
	}
	if (d->cfg.avg_finite && (rc = finite_schedule(&d->cfg)) != 0)
		return rc;
	rc = admission_init(&d->admission, &d->cfg, d->key->pub, &d->counters,
			    (uint64_t)time(NULL), msg, sizeof(msg));
	if (rc) {
		fprintf(stderr, "gossipd: %s: [Cluster] %s\n", d->cfg.path, msg);
		return rc;
	}
	rc = mesh_init(&d->mesh, d->loop, d->key, &d->counters, &d->cfg, msg,
		       sizeof(msg));
	if (rc) {
		fprintf(stderr, "gossipd: %s\n", msg);
		return rc;
	}
	peers_set_admission(&d->mesh.peers, &d->admission);
	model_init(&d->model, &d->mesh, &d->cfg);
	state_files(d);
	return 0;
}

/* The seeds' addresses: shown by STATUS, and dialed by a member
 * (cluster.h). */
static void on_seeds(void *ctx, const seed_addr *list, size_t n)
{
	gossipd *d = ctx;
	cluster_seeds(&d->cluster, list, n);
}

static const seeds_ops seeds_cb = {.changed = on_seeds};

/* The metrics listener's document: the STATUS one. */
static char *metrics_doc(void *ctx)
{
	return status_json(ctx);
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{"config", required_argument, 0, 'c'},
		{"check-config", no_argument, 0, 'C'},
		{"version", no_argument, 0, 'V'},
		{"help", no_argument, 0, 'h'},
		{0, 0, 0, 0},
	};
	const char *config = NULL;
	bool check = false;
	int c;
	while ((c = getopt_long(argc, argv, "c:h", opts, NULL)) != -1) {
		switch (c) {
		case 'c':
			config = optarg;
			break;
		case 'C':
			check = true;
			break;
		case 'V':
#ifdef GSP_TEST_HOOKS
			printf("gossipd %s (test hooks)\n", GSP_VERSION);
#else
			printf("gossipd %s\n", GSP_VERSION);
#endif
			return 0;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "gossipd: unexpected argument '%s'\n", argv[optind]);
		usage(stderr);
		return 2;
	}
	if (sodium_init() < 0)
		return 1;
	/* No core dumps or ptrace by other users of the static key. */
	prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
	static gossipd d;
	d.loop = uv_default_loop();
	if (setup(&d, config) != 0)
		return 1;
	if (check) {
		printf("%s\n", d.key_b64);
		return 0;
	}
	signal(SIGPIPE, SIG_IGN);
	step_init(&d.step, d.loop, &d.model, d.cfg.max_staleness, d.cfg.max_wait_ms);
	d.step.core.detach_wait_ms = d.cfg.detach_wait_ms;
	d.step.core.drain_wait_ms = d.cfg.drain_wait_ms;
	fetch_init(&d.fetch, d.loop, &d.mesh, &d.model, &d.step, &d.counters);
	lifecycle_signals_start(&d);
	if (peers_start(&d.mesh.peers, d.cfg.listen) != 0 || api_start(&d) != 0)
		return 1;
	char err[256] = "";
	if (cluster_init(&d.cluster, d.loop, &d.mesh, d.key, &d.admission, &d.cfg,
			 d.mesh.peers.listen_addr, err, sizeof(err)) != 0) {
		gsp_err("[Cluster]: %s", err);
		return 1;
	}
	if (d.cfg.metrics_listen[0] &&
	    metrics_http_start(d.loop, d.cfg.metrics_listen, &d.counters,
			       metrics_doc, &d, &d.metrics, d.metrics_addr,
			       sizeof(d.metrics_addr)) != 0)
		return 1;
	if (d.cfg.n_seeds &&
	    seeds_start(&d.seeds, d.loop, &d.cfg, &d.counters, &seeds_cb, &d) != 0)
		return 1;
	gsp_info("listening on %s, socket %s, public key %s, %zu peer(s), %s "
		 "rank %u gamma %.4g, kernel %s", d.mesh.peers.listen_addr,
		 d.cfg.socket_path, d.key_b64, d.mesh.peers.n,
		 gsp_method_name(d.cfg.engine.method), d.cfg.engine.rank,
		 d.cfg.engine.gamma, gsp_kernel_name());
	lifecycle_ready(&d);
	lifecycle_watchdog_start(&d);
	status_rates_start(&d);
	uv_run(d.loop, UV_RUN_DEFAULT);
	gsp_info("stopped");
	mesh_free(&d.mesh);
	cluster_free(&d.cluster);
	admission_free(&d.admission);
	free(d.api);
	gsp_daemon_config_clear(&d.cfg);
	return 0;
}
