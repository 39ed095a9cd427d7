/* gossipd: options, configuration and keys, the libuv loop, signals
 * (SIGTERM/SIGINT: the edges' records saved, or the model detached,
 * then GOODBYE to peers and exit 0; SIGHUP: re-read peers), the
 * metrics listener (MetricsListen: started with the daemon, stopped when
 * it starts stopping; a reload leaves it as it is),
 * and the service manager's protocol (notify.h, never blocking): READY=1,
 * RELOADING=1, STOPPING=1 and WATCHDOG=1 from a loop timer. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <sodium.h>
#include <systemd/sd-daemon.h>

#include "api.h"
#include "daemon.h"
#include "key.h"
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
	rc = mesh_init(&d->mesh, d->loop, d->key, &d->counters, &d->cfg, msg,
		       sizeof(msg));
	if (rc) {
		fprintf(stderr, "gossipd: %s\n", msg);
		return rc;
	}
	model_init(&d->model, &d->mesh, &d->cfg);
	state_files(d);
	return 0;
}

/* SIGHUP: the log level and the peers (added, removed, new endpoints
 * and weights) from the file again; the rest needs a restart. */
static void reload(gossipd *d)
{
	gsp_daemon_config cfg;
	char err[512];
	gsp_daemon_config_default(&cfg);
	if (!d->cfg.path[0] || gsp_daemon_config_load(d->cfg.path, &cfg, err, sizeof(err))) {
		gsp_err("reload: %s", d->cfg.path[0] ? err : "no configuration file");
		gsp_daemon_config_clear(&cfg);
		return;
	}
	gsp_log_set_level(cfg.log_level);
	gsp_info("reload: configuration re-read from %s", d->cfg.path);
	if (strcmp(cfg.metrics_listen, d->cfg.metrics_listen))
		gsp_warn("reload: MetricsListen takes effect at the next start");
	mesh_reload(&d->mesh, &cfg);    /* takes cfg */
}

/* The service manager's watchdog (WatchdogSec=): WATCHDOG=1 at half the
 * interval from a loop timer, so the pings stop when the loop stalls. */
static void on_watchdog(uv_timer_t *t)
{
	notify_send("WATCHDOG=1");
}

static void watchdog_start(gossipd *d)
{
	static uv_timer_t timer;
	uint64_t usec = 0;
	if (sd_watchdog_enabled(0, &usec) <= 0 || usec == 0)
		return;
	uint64_t ms = usec / 2000 ? usec / 2000 : 1;
	uv_timer_init(d->loop, &timer);
	uv_timer_start(&timer, on_watchdog, ms, ms);
	/* Pings go on while the daemon stops, without keeping it alive. */
	uv_unref((uv_handle_t *)&timer);
	gsp_info("watchdog: WATCHDOG=1 every %llu ms", (unsigned long long)ms);
}

static void on_force_exit(uv_timer_t *t)
{
	uv_stop(t->loop);
}

/* The model is gone (its edges ended with their peers): GOODBYE to the
 * peers, and out. */
static void finish_shutdown(void *ctx)
{
	gossipd *d = ctx;
	gsp_info("stopping: saying GOODBYE to peers");
	peers_stop(&d->mesh.peers);
	step_close(&d->step);
	/* Peers normally close within a round trip; never wait past 1.5 s. */
	static uv_timer_t force;
	uv_timer_init(d->loop, &force);
	uv_timer_start(&force, on_force_exit, 1500, 0);
	uv_unref((uv_handle_t *)&force);
}

/* A stop that keeps the model's generations (a restart continues them,
 * PROTOCOL.md 4.6): once no step runs and no write into the buffer is
 * under way, the records are written a last time, and the peers get
 * GOODBYE, which ends no generation. */
static void on_park_timer(uv_timer_t *t)
{
	gossipd *d = t->data;
	if (core_busy(&d->step.core) || d->mesh.edges.writing)
		return;
	uv_timer_stop(t);
	uv_close((uv_handle_t *)t, NULL);
	edges_records_changed(&d->mesh.edges);
	core_persist(&d->step.core);
	mesh_records_stop(&d->mesh);
	gsp_info("stopping: the edges' records are saved; their generations "
		 "continue when gossipd starts again and the trainer registers");
	finish_shutdown(d);
}

static void park(gossipd *d)
{
	/* The trainer's connection closes without a DETACH, its EOF at
	 * exit: its client steps on offline and registers again at the next
	 * start, as after a kill. */
	peers_stop_begin(&d->mesh.peers);
	if (core_busy(&d->step.core))
		gsp_info("stopping: waiting for the step under way to end");
	api_stop_keeping_model(d);
	core_halt(&d->step.core);
	uv_timer_init(d->loop, &d->park_timer);
	d->park_timer.data = d;
	uv_timer_start(&d->park_timer, on_park_timer, 0, 5);
}

static void shutdown_daemon(gossipd *d)
{
	if (d->stopping)
		return;
	d->stopping = true;
	notify_send("STOPPING=1");
	metrics_http_stop(d->metrics);
	d->metrics = NULL;
	uv_signal_stop(&d->sigterm);
	uv_signal_stop(&d->sigint);
	uv_signal_stop(&d->sighup);
	uv_close((uv_handle_t *)&d->sigterm, NULL);
	uv_close((uv_handle_t *)&d->sigint, NULL);
	uv_close((uv_handle_t *)&d->sighup, NULL);
	/* With a model whose generations the records can keep whole, they
	 * stay for the next start (a restart loses neither a round nor the
	 * warm start).  Otherwise the trainers go first: their model
	 * detaches, each edge ending its generation with its peer (at most
	 * DetachWait), so a restart loses no round; then the peers get
	 * GOODBYE. */
	if (d->model.registered && !d->step.core.detaching && !d->step.core.detach_pending &&
	    mesh_resumable(&d->mesh)) {
		park(d);
		return;
	}
	peers_stop_begin(&d->mesh.peers);
	api_stop(d);
	core_detach(&d->step.core, d, finish_shutdown);
}

static void ready(gossipd *d)
{
	char msg[GSP_ADDR_MAX + 64];
	snprintf(msg, sizeof(msg), "READY=1\nSTATUS=listening on %s",
		 d->mesh.peers.listen_addr);
	notify_send(msg);
}

/* The metrics listener's document: the STATUS one. */
static char *metrics_doc(void *ctx)
{
	return status_json(ctx);
}

static void on_signal(uv_signal_t *s, int signum)
{
	gossipd *d = s->data;
	if (signum == SIGHUP) {
		notify_send("RELOADING=1");
		reload(d);
		ready(d);
	} else
		shutdown_daemon(d);
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
	uv_signal_init(d.loop, &d.sigterm);
	uv_signal_init(d.loop, &d.sigint);
	uv_signal_init(d.loop, &d.sighup);
	d.sigterm.data = d.sigint.data = d.sighup.data = &d;
	uv_signal_start(&d.sigterm, on_signal, SIGTERM);
	uv_signal_start(&d.sigint, on_signal, SIGINT);
	uv_signal_start(&d.sighup, on_signal, SIGHUP);
	if (peers_start(&d.mesh.peers, d.cfg.listen) != 0 || api_start(&d) != 0)
		return 1;
	if (d.cfg.metrics_listen[0] &&
	    metrics_http_start(d.loop, d.cfg.metrics_listen, &d.counters,
			       metrics_doc, &d, &d.metrics, d.metrics_addr,
			       sizeof(d.metrics_addr)) != 0)
		return 1;
	gsp_info("listening on %s, socket %s, public key %s, %zu peer(s), %s "
		 "rank %u gamma %.4g, kernel %s", d.mesh.peers.listen_addr,
		 d.cfg.socket_path, d.key_b64, d.mesh.peers.n,
		 gsp_method_name(d.cfg.engine.method), d.cfg.engine.rank,
		 d.cfg.engine.gamma, gsp_kernel_name());
	ready(&d);
	watchdog_start(&d);
	status_rates_start(&d);
	uv_run(d.loop, UV_RUN_DEFAULT);
	gsp_info("stopped");
	mesh_free(&d.mesh);
	free(d.api);
	gsp_daemon_config_clear(&d.cfg);
	return 0;
}
