/* lifecycle: signals, reload, the stop and the service manager
 * (lifecycle.h). */
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include <systemd/sd-daemon.h>

#include "api.h"
#include "lifecycle.h"
#include "log.h"
#include "metrics_http.h"
#include "notify.h"

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
	if (!seeds_same_config(&d->seeds, &cfg))
		gsp_warn("reload: [Cluster]'s seeds take effect at the next start");
	admission_reload(&d->admission);
	if (d->cluster.on) {
		/* The [Peer] sections beside the computed neighbours. */
		cluster_reload(&d->cluster, &cfg);
		gsp_daemon_config_clear(&cfg);
	} else {
		mesh_reload(&d->mesh, &cfg);    /* takes cfg */
	}
}

/* The service manager's watchdog (WatchdogSec=): WATCHDOG=1 at half the
 * interval from a loop timer, so the pings stop when the loop stalls. */
static void on_watchdog(uv_timer_t *t)
{
	notify_send("WATCHDOG=1");
}

void lifecycle_watchdog_start(gossipd *d)
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
	fetch_close(&d->fetch);
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
	seeds_stop(&d->seeds);
	if (d->cfg.cluster.leave_on_stop)
		cluster_leave(&d->cluster);
	cluster_close(&d->cluster);
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

void lifecycle_ready(gossipd *d)
{
	char msg[GSP_ADDR_MAX + 64];
	snprintf(msg, sizeof(msg), "READY=1\nSTATUS=listening on %s",
		 d->mesh.peers.listen_addr);
	notify_send(msg);
}

static void on_signal(uv_signal_t *s, int signum)
{
	gossipd *d = s->data;
	if (signum == SIGHUP) {
		notify_send("RELOADING=1");
		reload(d);
		lifecycle_ready(d);
	} else
		shutdown_daemon(d);
}


void lifecycle_signals_start(gossipd *d)
{
	uv_signal_init(d->loop, &d->sigterm);
	uv_signal_init(d->loop, &d->sigint);
	uv_signal_init(d->loop, &d->sighup);
	d->sigterm.data = d->sigint.data = d->sighup.data = d;
	uv_signal_start(&d->sigterm, on_signal, SIGTERM);
	uv_signal_start(&d->sigint, on_signal, SIGINT);
	uv_signal_start(&d->sighup, on_signal, SIGHUP);
}
