/* gossipd's registered model: REGISTER (map the trainer's memfd, build
 * the engine node with one edge slot per configured peer), DETACH, and
 * the STEP and AVERAGE requests that drive the engine on the shared
 * buffer.  The buffer is touched only while a request is being served. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "daemon.h"
#include "log.h"

static void model_free(gsp_model *m)
{
	gsp_node_free(m->node);
	gsp_layout_free(m->layout);
	if (m->params)
		munmap(m->params, m->map_bytes);
	if (m->fd >= 0)
		close(m->fd);
	m->node = NULL;
	m->layout = NULL;
	m->params = NULL;
	m->fd = -1;
	m->registered = false;
	m->owner = NULL;
	m->waiting = NULL;
	m->averaging = false;
}

/* Layout from a decoded REGISTER; wire tensors become gsp_tensors. */
static int layout_of(const gsp_api_register *reg, gsp_layout **ret,
		     gsp_wire_tensor **ret_wire)
{
	gsp_tensor *t = calloc(reg->n_tensors, sizeof(*t));
	gsp_wire_tensor *w = calloc(reg->n_tensors, sizeof(*w));
	if (!t || !w) {
		free(t);
		free(w);
		return -ENOMEM;
	}
	gsp_api_tensor_iter it;
	gsp_api_tensor_iter_init(&it, reg);
	for (uint32_t i = 0; i < reg->n_tensors && gsp_api_tensor_next(&it, &w[i]) == 1; i++) {
		memcpy(t[i].name, w[i].name, w[i].name_len);
		t[i].ndim = w[i].ndim;
		for (unsigned k = 0; k < w[i].ndim; k++)
			t[i].shape[k] = w[i].dims[k];
	}
	int err = gsp_layout_new(t, reg->n_tensors, ret);
	free(t);
	if (err)
		free(w);
	else
		*ret_wire = w;
	return err;
}

static int describe(gsp_daemon *d, const gsp_wire_tensor *wire, uint32_t n)
{
	gsp_model *m = &d->model;
	const gsp_config *c = &d->cfg.engine;
	gsp_model_desc desc = {
		.method = (uint8_t)c->method, .rank = (uint16_t)c->rank,
		.warm_start = c->warm_start, .gamma = c->gamma,
		.choco_fraction = c->choco_fraction, .tensors = wire,
		.n_tensors = n,
	};
	int err = gsp_model_fingerprint(&desc, m->fingerprint);
	if (!err)
		err = gsp_model_summary(&desc, m->summary, sizeof(m->summary));
	return err < 0 ? err : 0;   /* the summary returns its length */
}

int gsp_model_register(gsp_daemon *d, gsp_api_client *c, const uint8_t *body,
		       size_t len, int fd, char *err_text, size_t err_len)
{
	gsp_model *m = &d->model;
	gsp_api_register reg;
	gsp_wire_tensor *wire = NULL;
	struct stat st;
	int err = gsp_api_register_decode(body, len, &reg);
	if (err) {
		snprintf(err_text, err_len, "malformed REGISTER");
		return err;
	}
	if (m->registered && m->owner == c) {
		snprintf(err_text, err_len, "this connection already registered "
			 "a model; DETACH it first");
		return -EBUSY;
	}
	if (m->registered) {
		snprintf(err_text, err_len, "a model is already registered, held "
			 "by trainer '%s'; one model per daemon: that trainer must "
			 "detach or exit first",
			 m->trainer);
		return -EBUSY;
	}
	if (fd < 0) {
		snprintf(err_text, err_len, "REGISTER needs the buffer's fd "
			 "(SCM_RIGHTS)");
		return -EBADF;
	}
	m->fd = fd;
	err = layout_of(&reg, &m->layout, &wire);
	if (err) {
		snprintf(err_text, err_len, "bad tensor list: %s", gsp_strerror(err));
		goto fail;
	}
	uint64_t need = gsp_layout_floats(m->layout) * 4;
	if (fstat(fd, &st) != 0 || (uint64_t)st.st_size < reg.buffer_bytes ||
	    reg.buffer_bytes < need) {
		snprintf(err_text, err_len, "buffer of %lld bytes is too small for "
			 "%llu floats", (long long)st.st_size,
			 (unsigned long long)need / 4);
		err = -EINVAL;
		goto fail;
	}
	m->map_bytes = need;
	m->params = mmap(NULL, need, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (m->params == MAP_FAILED) {
		m->params = NULL;
		err = -errno;
		snprintf(err_text, err_len, "cannot map the buffer: %s", strerror(-err));
		goto fail;
	}
	err = gsp_node_new(m->layout, m->params, &d->cfg.engine, &m->node);
	for (size_t i = 0; !err && i < d->n_peers; i++)
		err = gsp_model_add_edge(d);
	if (!err)
		err = describe(d, wire, reg.n_tensors);
	if (err) {
		snprintf(err_text, err_len, "cannot set up the engine: %s",
			 gsp_strerror(err));
		goto fail;
	}
	m->max_payload = 0;
	for (uint64_t r = 1; d->n_peers && r <= 2; r++) {
		int64_t sz = gsp_node_message_size(m->node, 0, r);
		if (sz > (int64_t)m->max_payload)
			m->max_payload = (uint64_t)sz;
	}
	uint32_t cap;
	if (gsp_proto_peer_max_frame(m->max_payload, &cap) != 0) {
		snprintf(err_text, err_len, "messages of %llu bytes exceed the "
			 "frame limit", (unsigned long long)m->max_payload);
		err = -EMSGSIZE;
		goto fail;
	}
	free(wire);
	m->registered = true;
	m->owner = c;
	snprintf(m->trainer, sizeof(m->trainer), "%s", gsp_api_client_name(c));
	m->steps = 0;
	m->bytes_base_tx = m->bytes_base_rx = 0;
	for (size_t i = 0; i < d->n_peers; i++) {
		m->bytes_base_tx += d->peers[i].tx_bytes;
		m->bytes_base_rx += d->peers[i].rx_bytes;
		d->peers[i].edge_up = false;
		d->peers[i].rounds_completed = 0;
	}
	gsp_info("model registered by trainer '%s': %s",
		 gsp_api_client_name(c), m->summary);
	gsp_links_reconnect_all(d, GSP_BYE_MODEL_CHANGED, "model registered");
	return 0;
fail:
	free(wire);
	model_free(m);
	return err;
}

int gsp_model_add_edge(gsp_daemon *d)
{
	static const uint8_t zero[GSP_SEED_BYTES];
	int e = gsp_node_add_edge(d->model.node, 0.5f, GSP_ROLE_LO, zero, sizeof(zero));
	return e < 0 ? e : gsp_node_edge_disable(d->model.node, (size_t)e);
}

void gsp_model_detach(gsp_daemon *d)
{
	if (!d->model.registered)
		return;
	if (d->model.busy) {
		/* The engine is in use on a worker thread: after it. */
		d->model.detach_pending = true;
		return;
	}
	gsp_edge_cache(d);   /* the engine's last counts */
	for (size_t i = 0; i < d->n_peers; i++) {
		gsp_peer *p = &d->peers[i];
		p->edge_up = false;
		free(p->early);
		p->early = NULL;
		/* The engine's counts go with it; keep their totals. */
		p->exact_bytes_done += p->cache.exact_bytes;
		p->message_bytes_done += p->cache.tx_bytes;
		memset(&p->cache, 0, sizeof(p->cache));
	}
	model_free(&d->model);
	gsp_info("model detached");
	gsp_links_reconnect_all(d, GSP_BYE_MODEL_CHANGED, "model detached");
}

/* Edges whose round is still out on the network. */
static size_t in_flight(const gsp_daemon *d)
{
	size_t n = 0;
	for (size_t i = 0; i < d->n_peers; i++) {
		gsp_edge_info info;
		if (d->peers[i].edge_up &&
		    gsp_node_edge_info(d->model.node, i, &info) == 0 &&
		    info.state == GSP_EDGE_IN_FLIGHT)
			n++;
	}
	return n;
}

/* Whether a STEP must wait: with SYNC for any round in flight, otherwise
 * only for an edge in flight that has not applied for MaxStaleness steps
 * (staleness stays bounded; the trainer is blocked only then). */
static bool must_wait(const gsp_daemon *d, bool sync)
{
	for (size_t i = 0; i < d->n_peers; i++) {
		const gsp_peer *p = &d->peers[i];
		gsp_edge_info info;
		if (!p->edge_up || gsp_node_edge_info(d->model.node, i, &info) != 0 ||
		    info.state != GSP_EDGE_IN_FLIGHT)
			continue;
		if (sync || d->model.steps - p->last_apply_step >= d->cfg.max_staleness)
			return true;
	}
	return false;
}

double gsp_model_estimate(const gsp_daemon *d)
{
	double est = NAN;
	for (size_t i = 0; i < d->n_peers; i++) {
		const gsp_peer *p = &d->peers[i];
		/* The last measurement stands after a neighbour leaves. */
		if (p->rounds_completed && !(p->diff_norm <= est))
			est = p->diff_norm;
	}
	return est;
}

/* Counts of a step about to run: edges it applies and skips. */
static void step_begin(gsp_daemon *d, uint32_t *applied, uint32_t *skipped)
{
	gsp_model *m = &d->model;
	*applied = *skipped = 0;
	for (size_t i = 0; i < d->n_peers; i++) {
		gsp_edge_info info;
		gsp_node_edge_info(m->node, i, &info);
		if (!d->peers[i].edge_up || info.state == GSP_EDGE_IN_FLIGHT)
			(*skipped)++;
		else if (info.state == GSP_EDGE_COMPLETED) {
			(*applied)++;
			d->peers[i].last_apply_step = m->steps + 1;
		}
	}
}

/* After gsp_node_step returned r: count, send, and fill the reply. */

/* The figures of a STEP reply that describe the model, not the step:
 * staleness, bytes since REGISTER and the consensus estimate. */
static void step_totals(const gsp_daemon *d, gsp_api_step_ok *ret)
{
	const gsp_model *m = &d->model;
	ret->step = m->steps;
	ret->max_staleness = 0;
	ret->bytes_sent = ret->bytes_received = 0;
	for (size_t i = 0; i < d->n_peers; i++) {
		const gsp_peer *p = &d->peers[i];
		uint64_t stale = p->edge_up ? m->steps - p->last_apply_step : 0;
		if (stale > ret->max_staleness)
			ret->max_staleness = (uint32_t)stale;
		ret->bytes_sent += p->tx_bytes;
		ret->bytes_received += p->rx_bytes;
	}
	ret->bytes_sent -= m->bytes_base_tx;
	ret->bytes_received -= m->bytes_base_rx;
	ret->consensus_estimate = gsp_model_estimate(d);
}

static int step_end(gsp_daemon *d, int r, uint32_t applied, uint32_t skipped,
		    gsp_api_step_ok *ret)
{
	gsp_model *m = &d->model;
	if (r < 0)
		return r;
	m->steps++;
	gsp_edge_finish(d);
	gsp_edge_send_rounds(d);
	if (!ret)
		return 0;
	memset(ret, 0, sizeof(*ret));
	ret->step = m->steps;
	ret->edges_applied = applied;
	ret->edges_projected = (uint32_t)r;
	ret->edges_skipped = skipped;
	step_totals(d, ret);
	return 0;
}

/* One engine step on the loop: apply completed edges, project idle ones,
 * send. */
static int run_step(gsp_daemon *d, gsp_api_step_ok *ret)
{
	uint32_t applied, skipped;
	step_begin(d, &applied, &skipped);
	return step_end(d, gsp_node_step(d->model.node), applied, skipped, ret);
}

static void send_step_ok(gsp_api_client *c, int err, const gsp_api_step_ok *ok)
{
	uint8_t buf[128];
	size_t n;
	if (err) {
		gsp_api_reply_error(c, err, err == GSP_ENONFINITE
				    ? "the parameters hold a NaN or infinity: "
				      "nothing was sent"
				    : gsp_strerror(err));
		return;
	}
	if (gsp_api_step_ok_encode(ok, buf, sizeof(buf), &n) == 0)
		gsp_api_reply(c, buf, n);
}

/* A large model's step runs on libuv's thread pool, so links keep being
 * served meanwhile; everything that would touch the engine waits for it
 * (m->busy: see gsp_model_busy). */
typedef struct step_work {
	uv_work_t req;
	gsp_daemon *d;
	uint32_t applied, skipped;
	unsigned delay_ms;
	int result;
} step_work;

/* Test hook: GSP_TEST_STEP_DELAY_MS makes every offloaded step take at
 * least that long, so tests can land peer messages inside the window. */
static unsigned test_step_delay_ms(void)
{
	const char *v = getenv("GSP_TEST_STEP_DELAY_MS");
	return v ? (unsigned)strtoul(v, NULL, 10) : 0;
}

static void step_work_run(uv_work_t *req)
{
	step_work *w = req->data;
	w->result = gsp_node_step(w->d->model.node);
	if (w->delay_ms)
		usleep(w->delay_ms * 1000u);
}

static void average_finish(gsp_daemon *d);

static void step_work_done(uv_work_t *req, int status)
{
	step_work *w = req->data;
	gsp_daemon *d = w->d;
	gsp_model *m = &d->model;
	gsp_api_step_ok ok;
	m->busy = false;
	/* Ended sessions first, then send this step's messages, then the
	 * neighbours' messages that came meanwhile. */
	gsp_edge_after_busy(d, false);
	int err = step_end(d, status < 0 ? status : w->result, w->applied,
			   w->skipped, &ok);
	gsp_edge_after_busy(d, true);
	gsp_edge_finish(d);
	free(w);
	if (m->averaging) {
		/* An AVERAGE round: the reply comes when averaging ends. */
		if (err)
			average_finish(d);
	} else {
		gsp_api_client *c = m->waiting;
		m->waiting = NULL;
		m->wait_step = false;
		if (c)
			send_step_ok(c, err, &ok);
	}
	if (m->detach_pending) {
		m->detach_pending = false;
		gsp_model_detach(d);
		return;
	}
	gsp_model_edges_changed(d);
}

static size_t offload_floats(void)
{
	const char *v = getenv("GSP_OFFLOAD_FLOATS");
	return v ? (size_t)strtoull(v, NULL, 10) : (size_t)1 << 20;
}

/* Starts a large model's step on the thread pool; false if it runs on the
 * loop instead (a small model, or no memory). */
static bool step_offload(gsp_daemon *d)
{
	gsp_model *m = &d->model;
	if (gsp_layout_floats(m->layout) < offload_floats())
		return false;
	step_work *w = calloc(1, sizeof(*w));
	if (!w)
		return false;
	w->req.data = w;
	w->d = d;
	w->delay_ms = test_step_delay_ms();
	step_begin(d, &w->applied, &w->skipped);
	m->busy = true;
	if (uv_queue_work(d->loop, &w->req, step_work_run, step_work_done) == 0)
		return true;
	m->busy = false;
	free(w);
	return false;
}

static void reply_step(gsp_daemon *d, gsp_api_client *c)
{
	gsp_model *m = &d->model;
	m->waiting = c;
	m->wait_step = false;
	if (step_offload(d))
		return;
	m->waiting = NULL;
	gsp_api_step_ok ok;
	send_step_ok(c, run_step(d, &ok), &ok);
}

/* DRAIN: answer rounds neighbours already sent, wait for every round in
 * flight, apply; start nothing new.  Replies once settled. */
static void drain_advance(gsp_daemon *d)
{
	gsp_model *m = &d->model;
	int r = 0;
	/* Applying only once everything is in keeps the order of the sums
	 * the same as a synchronous run's; a neighbour's early round is the
	 * exception, since answering it needs the edge applied first. */
	for (size_t i = 0; r >= 0 && i < d->n_peers; i++) {
		gsp_peer *p = &d->peers[i];
		gsp_edge_info info;
		if (!p->edge_up || !p->early ||
		    gsp_node_edge_info(m->node, i, &info) != 0 ||
		    info.state == GSP_EDGE_IN_FLIGHT || p->early_round != info.round + 1)
			continue;
		if (info.state == GSP_EDGE_COMPLETED)
			r = gsp_node_apply(m->node);
		if (r >= 0)
			r = gsp_node_project_edge(m->node, i);
	}
	if (r >= 0)
		gsp_edge_send_rounds(d);
	if (r >= 0 && in_flight(d))
		return;
	if (r >= 0)
		r = gsp_node_apply(m->node);
	gsp_api_client *c = m->waiting;
	m->waiting = NULL;
	m->wait_drain = false;
	gsp_edge_finish(d);
	if (r < 0) {
		gsp_api_reply_error(c, r, gsp_strerror(r));
		return;
	}
	gsp_api_step_ok ok = {0};
	step_totals(d, &ok);
	uint8_t buf[128];
	size_t n;
	if (gsp_api_step_ok_encode(&ok, buf, sizeof(buf), &n) == 0)
		gsp_api_reply(c, buf, n);
}

int gsp_model_step(gsp_daemon *d, gsp_api_client *c, uint32_t flags)
{
	gsp_model *m = &d->model;
	if (m->waiting || m->busy)
		return -EBUSY;
	if (flags & GSP_STEP_DRAIN) {
		m->waiting = c;
		m->wait_drain = true;
		drain_advance(d);
		return 0;
	}
	m->wait_sync = flags & GSP_STEP_SYNC;
	if (must_wait(d, m->wait_sync)) {
		m->waiting = c;
		m->wait_step = true;
		return 0;
	}
	reply_step(d, c);
	return 0;
}

static void average_finish(gsp_daemon *d)
{
	gsp_model *m = &d->model;
	gsp_api_client *c = m->waiting;
	uv_timer_stop(&m->avg_timer);
	m->averaging = false;
	m->waiting = NULL;
	int r = gsp_node_apply(m->node);
	gsp_edge_finish(d);
	gsp_api_average_ok ok = {.rounds = m->avg_rounds,
				 .estimate = gsp_model_estimate(d)};
	ok.reached = ok.estimate <= m->avg_target;
	uint8_t buf[64];
	size_t n;
	if (r < 0)
		gsp_api_reply_error(c, r, gsp_strerror(r));
	else if (gsp_api_average_ok_encode(&ok, buf, sizeof(buf), &n) == 0)
		gsp_api_reply(c, buf, n);
}

static void average_advance(gsp_daemon *d)
{
	gsp_model *m = &d->model;
	if (in_flight(d))
		return;
	double est = gsp_model_estimate(d);
	size_t up = 0;
	for (size_t i = 0; i < d->n_peers; i++)
		up += d->peers[i].edge_up;
	bool done = (m->avg_rounds > 0 && est <= m->avg_target) ||
		    (m->avg_max_rounds && m->avg_rounds >= m->avg_max_rounds) ||
		    (m->avg_deadline_ms && gsp_now_ms(d) >= m->avg_deadline_ms) ||
		    (up == 0 && (m->avg_rounds > 0 || !m->avg_deadline_ms));
	if (done) {
		average_finish(d);
		return;
	}
	if (up == 0)
		return;
	m->avg_rounds++;
	if (step_offload(d))
		return;
	if (run_step(d, NULL) != 0)
		average_finish(d);
}

static void on_average_timer(uv_timer_t *t)
{
	gsp_daemon *d = t->data;
	/* A round on the thread pool finishes first; its end checks the
	 * deadline again. */
	if (d->model.averaging && !d->model.busy)
		average_finish(d);
}

int gsp_model_average(gsp_daemon *d, gsp_api_client *c, const gsp_api_average *req)
{
	gsp_model *m = &d->model;
	if (m->waiting || m->busy)
		return -EBUSY;
	m->waiting = c;
	m->averaging = true;
	m->avg_target = req->target;
	m->avg_rounds = 0;
	m->avg_max_rounds = req->max_rounds;
	m->avg_deadline_ms = req->time_limit_ms ? gsp_now_ms(d) + req->time_limit_ms : 0;
	m->avg_timer.data = d;
	if (req->time_limit_ms)
		uv_timer_start(&m->avg_timer, on_average_timer, req->time_limit_ms, 0);
	average_advance(d);
	return 0;
}

void gsp_model_edges_changed(gsp_daemon *d)
{
	gsp_model *m = &d->model;
	if (!m->registered || !m->waiting || m->busy)
		return;
	if (m->averaging) {
		average_advance(d);
	} else if (m->wait_drain) {
		drain_advance(d);
	} else if (m->wait_step && !must_wait(d, m->wait_sync)) {
		gsp_api_client *c = m->waiting;
		m->waiting = NULL;
		m->wait_step = false;
		reply_step(d, c);
	}
}
