/* fetch: a neighbour's model into the trainer's buffer (fetch.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sodium.h>

#include "fetch.h"
#include "log.h"

static uint64_t model_bytes_of(const model *m)
{
	return gsp_layout_floats(m->layout) * gsp_dtype_size(m->dtype);
}

static int send_msg(peer *p, const gsp_msg_fetch *m)
{
	size_t cap = 2 + GSP_FETCH_DATA_HEAD + (m->kind == GSP_FETCH_DATA ? m->len : 0) +
		     GSP_FETCH_ASK_BYTES + GSP_FETCH_TEXT_MAX, n;
	uint8_t *buf = malloc(cap);
	if (!buf)
		return -ENOMEM;
	int err = gsp_msg_fetch_encode(m, buf, cap, &n);
	if (!err)
		err = peers_send(p, buf, n);
	free(buf);
	return err;
}

/* ---- serving ------------------------------------------------------------ */

static void serve_end(fetcher *f)
{
	free(f->serve.buf);
	f->serve.buf = NULL;
	f->serve.id = 0;
	uv_timer_stop(&f->serve.idle);
}

static void on_serve_idle(uv_timer_t *t)
{
	fetcher *f = t->data;
	gsp_info("fetch: the snapshot for peer %s was not asked for %d s: dropped",
		 f->mesh->peers.peer[f->serve.peer].name, FETCH_SNAPSHOT_IDLE_MS / 1000);
	serve_end(f);
}

static int refuse(peer *p, uint32_t snapshot, uint16_t reason, const char *text)
{
	gsp_msg_fetch m = {.kind = GSP_FETCH_REFUSE, .snapshot = snapshot, .reason = reason,
			   .text = text, .text_len = strlen(text)};
	return send_msg(p, &m);
}

/* A new snapshot of the buffer for p: 0, or the reason it has none. */
static uint16_t snapshot(fetcher *f, peer *p, const char **why)
{
	model *md = f->model;
	if (f->serve.id && f->serve.peer != p->index) {
		*why = "serving another peer";
		return GSP_FETCH_NO_ROOM;
	}
	if (core_busy(&f->step->core)) {
		*why = "a step is writing the model";
		return GSP_FETCH_NO_ROOM;
	}
	serve_end(f);
	uint64_t total = model_bytes_of(md);
	f->serve.buf = malloc(total ? total : 1);
	if (!f->serve.buf) {
		*why = "out of memory for a snapshot";
		return GSP_FETCH_NO_ROOM;
	}
	memcpy(f->serve.buf, md->params, total);
	crypto_generichash(f->serve.hash, sizeof(f->serve.hash), f->serve.buf, total,
			   NULL, 0);
	if (++f->next_id == 0)
		f->next_id = 1;
	f->serve.id = f->next_id;
	f->serve.peer = p->index;
	f->serve.total = total;
	f->serve.sent = 0;
	gsp_info("fetch: peer %s copies our model (%llu bytes)", p->name,
		 (unsigned long long)total);
	return 0;
}

/* Whether the model is more than a trainer's initialisation: it stepped
 * since it was registered, or is a copy of a peer's. */
static bool started(const fetcher *f)
{
	return f->mesh->edges.steps > 0 || (f->copied && f->copied == f->model->params);
}

static int on_ask(fetcher *f, peer *p, const gsp_msg_fetch *m)
{
	model *md = f->model;
	const char *why = "";
	if (!md->registered || sodium_memcmp(m->fingerprint, md->fingerprint,
					     GSP_FINGERPRINT_BYTES) != 0)
		return refuse(p, m->snapshot, GSP_FETCH_NO_MODEL, "no model with that "
			      "fingerprint here");
	if (m->snapshot == 0 && !started(f))
		return refuse(p, 0, GSP_FETCH_NO_START, "our model has not stepped yet");
	if (m->snapshot == 0) {
		uint16_t no = snapshot(f, p, &why);
		if (no)
			return refuse(p, 0, no, why);
	} else if (m->snapshot != f->serve.id || f->serve.peer != p->index) {
		return refuse(p, m->snapshot, GSP_FETCH_NO_SNAPSHOT, "that snapshot is gone");
	}
	if (m->offset >= f->serve.total)
		return refuse(p, f->serve.id, GSP_FETCH_NO_CHUNK, "offset past the model");
	uint64_t left = f->serve.total - m->offset;
	gsp_msg_fetch d = {.kind = GSP_FETCH_DATA, .snapshot = f->serve.id,
			   .offset = m->offset, .total = f->serve.total,
			   .len = left < m->len ? (uint32_t)left : m->len,
			   .bytes = f->serve.buf + m->offset};
	memcpy(d.hash, f->serve.hash, sizeof(d.hash));
	int err = send_msg(p, &d);
	f->serve.sent += d.len;
	if (f->serve.sent >= f->serve.total) {
		f->counters->fetches_served++;
		serve_end(f);
	} else {
		uv_timer_start(&f->serve.idle, on_serve_idle, FETCH_SNAPSHOT_IDLE_MS, 0);
	}
	return err;
}

/* ---- asking ------------------------------------------------------------- */

static void ask_next_peer(fetcher *f);

static void ask_end(fetcher *f)
{
	uv_timer_stop(&f->timer);
	uv_timer_stop(&f->retry);
	free(f->staging);
	f->staging = NULL;
	f->state = FETCH_IDLE;
	f->client = NULL;
}

static void finish(fetcher *f, int err, const char *text)
{
	fetch_result r = {.err = err, .bytes = err ? 0 : f->total,
			  .took_ms = (uint32_t)(uv_now(f->loop) - f->started_ms)};
	snprintf(r.text, sizeof(r.text), "%s", text);
	if (!err && f->state == FETCH_WRITTEN)
		snprintf(r.peer, sizeof(r.peer), "%s", f->mesh->peers.peer[f->from].name);
	else
		r.bytes = 0;
	void *client = f->client;
	fetch_cb cb = f->cb;
	bool written = f->state == FETCH_WRITTEN;
	ask_end(f);
	if (err) {
		f->counters->fetches_failed++;
		gsp_warn("fetch: %s", text);
	} else if (written) {
		f->counters->fetches_done++;
	}
	if (client && cb)
		cb(client, &r);
}

static bool model_same(const fetcher *f)
{
	return f->model->registered && f->model->params == f->params;
}

/* The slot of a peer whose edge is up (so whose model has our
 * fingerprint) not yet tried, or -1; *ret_up: how many are up,
 * *ret_unstarted: how many of those said NO_START. */
static long pick_peer(fetcher *f, unsigned *ret_up, unsigned *ret_unstarted)
{
	peers *ps = &f->mesh->peers;
	long best = -1;
	*ret_up = *ret_unstarted = 0;
	for (size_t i = 0; i < ps->n && i < GSP_MAX_PEERS; i++) {
		edge_view v;
		if (!ps->peer[i].session)
			continue;
		edge_view_of(edges_at(&f->mesh->edges, i), &v);
		if (v.state != EDGE_UP)
			continue;
		(*ret_up)++;
		*ret_unstarted += f->tried[i] == TRIED_UNSTARTED;
		if (!f->tried[i] && best < 0)
			best = (long)i;
	}
	return best;
}

static void on_retry(uv_timer_t *t);

static void ask(fetcher *f, uint64_t offset, uint32_t len)
{
	gsp_msg_fetch m = {.kind = GSP_FETCH_ASK, .snapshot = f->snapshot,
			   .offset = offset, .len = len};
	memcpy(m.fingerprint, f->model->fingerprint, sizeof(m.fingerprint));
	if (send_msg(&f->mesh->peers.peer[f->from], &m) != 0) {
		f->tried[f->from] = TRIED;   /* the next peer, on the loop's next turn */
		f->state = FETCH_WAITING;
		uv_timer_start(&f->retry, on_retry, 0, 0);
		return;
	}
	f->asked = offset + len;
}

static void ask_window(fetcher *f)
{
	while (f->state == FETCH_ASKING && f->snapshot && f->asked < f->total &&
	       f->asked - f->received < (uint64_t)FETCH_WINDOW * f->chunk) {
		uint64_t left = f->total - f->asked;
		ask(f, f->asked, left < f->chunk ? (uint32_t)left : f->chunk);
	}
}

static void on_retry(uv_timer_t *t)
{
	ask_next_peer(t->data);
}

static void on_time_limit(uv_timer_t *t)
{
	fetcher *f = t->data;
	unsigned up, unstarted;
	(void)pick_peer(f, &up, &unstarted);
	char text[160];
	snprintf(text, sizeof(text), "no copy of a neighbour's model within the time limit "
		 "(%u edge(s) up with this model; %llu of %llu bytes received)", up,
		 (unsigned long long)f->received, (unsigned long long)f->total);
	finish(f, -ETIMEDOUT, text);
}

/* Starts over with the next peer that may serve us; none now: tried
 * again shortly, until the time limit. */
static void ask_next_peer(fetcher *f)
{
	if (!model_same(f)) {
		finish(f, -ECANCELED, "the model changed during the copy");
		return;
	}
	unsigned up, unstarted;
	long i = pick_peer(f, &up, &unstarted);
	if (i < 0 && up && unstarted == up) {
		gsp_info("fetch: no neighbour has stepped yet (%u up): the model stays "
			 "the trainer's own", up);
		finish(f, 0, "");
		return;
	}
	if (i < 0 && up)          /* every one tried: again, after a pause */
		memset(f->tried, 0, sizeof(f->tried));
	free(f->staging);
	f->staging = NULL;
	f->snapshot = 0;
	f->received = f->asked = 0;
	if (i < 0) {
		f->state = FETCH_WAITING;
		uv_timer_start(&f->retry, on_retry, FETCH_RETRY_MS, 0);
		return;
	}
	f->from = (size_t)i;
	f->state = FETCH_ASKING;
	ask(f, 0, f->chunk);       /* the first: it tells the size */
}

/* All received and verified: into the buffer, once no step writes it. */
static void on_write(uv_timer_t *t)
{
	fetcher *f = t->data;
	if (!model_same(f)) {
		finish(f, -ECANCELED, "the model changed during the copy");
		return;
	}
	if (core_busy(&f->step->core)) {
		uv_timer_start(&f->retry, on_write, 1, 0);
		return;
	}
	memcpy(f->model->params, f->staging, f->total);
	f->copied = f->model->params;
	f->state = FETCH_WRITTEN;
	gsp_info("fetch: copied the model of peer %s (%llu bytes) into the buffer",
		 f->mesh->peers.peer[f->from].name, (unsigned long long)f->total);
	finish(f, 0, "");
}

static int on_data(fetcher *f, peer *p, const gsp_msg_fetch *m)
{
	if (f->state != FETCH_ASKING || p->index != f->from)
		return 0;                          /* of a request that ended */
	if (f->snapshot == 0) {
		if (m->total != f->total || m->offset != 0) {
			gsp_warn("fetch: peer %s offers %llu bytes, not our model's %llu",
				 p->name, (unsigned long long)m->total,
				 (unsigned long long)f->total);
			f->tried[p->index] = TRIED;
			ask_next_peer(f);
			return 0;
		}
		f->staging = malloc(f->total ? f->total : 1);
		if (!f->staging) {
			finish(f, -ENOMEM, "out of memory for the copy");
			return 0;
		}
		f->snapshot = m->snapshot;
		memcpy(f->hash, m->hash, sizeof(f->hash));
	} else if (m->snapshot != f->snapshot || m->offset != f->received ||
		   sodium_memcmp(m->hash, f->hash, sizeof(f->hash)) != 0) {
		return -EBADMSG;                   /* not the chunk asked next */
	}
	memcpy(f->staging + m->offset, m->bytes, m->len);
	f->received += m->len;
	if (f->asked < f->received)
		f->asked = f->received;
	if (f->received < f->total) {
		ask_window(f);
		return 0;
	}
	uint8_t h[GSP_FETCH_HASH_BYTES];
	crypto_generichash(h, sizeof(h), f->staging, f->total, NULL, 0);
	if (sodium_memcmp(h, f->hash, sizeof(h)) != 0) {
		gsp_warn("fetch: the copy from peer %s does not match its hash", p->name);
		f->tried[p->index] = TRIED;
		ask_next_peer(f);
		return 0;
	}
	f->state = FETCH_WAITING;
	uv_timer_start(&f->retry, on_write, 0, 0);
	return 0;
}

static int on_refuse(fetcher *f, peer *p, const gsp_msg_fetch *m)
{
	if (f->state != FETCH_ASKING || p->index != f->from)
		return 0;
	gsp_info("fetch: peer %s refused: %.*s", p->name, (int)m->text_len, m->text);
	if (m->reason == GSP_FETCH_NO_ROOM) {       /* the same peer, shortly */
		f->state = FETCH_WAITING;
		free(f->staging);
		f->staging = NULL;
		uv_timer_start(&f->retry, on_retry, FETCH_RETRY_MS, 0);
		return 0;
	}
	if (m->reason == GSP_FETCH_NO_START)
		f->tried[p->index] = TRIED_UNSTARTED;
	else if (m->reason != GSP_FETCH_NO_SNAPSHOT)
		f->tried[p->index] = TRIED;
	ask_next_peer(f);
	return 0;
}

int fetch_start(fetcher *f, void *client, uint32_t time_limit_ms, fetch_cb done)
{
	model *md = f->model;
	if (f->state != FETCH_IDLE)
		return -EBUSY;
	if (!md->registered)
		return -ENOENT;
	if (md->mode == MODEL_GROUP)
		return -EOPNOTSUPP;
	uint32_t cap;
	if (gsp_proto_peer_max_frame(md->max_payload, &cap) != 0)
		return -EMSGSIZE;
	/* A DATA frame within the cap our link has for this model. */
	uint32_t room = cap - GSP_AEAD_TAG_BYTES - 2 - GSP_FETCH_DATA_HEAD - 64;
	f->chunk = room < FETCH_CHUNK_DEFAULT ? room : FETCH_CHUNK_DEFAULT;
	f->client = client;
	f->cb = done;
	f->params = md->params;
	f->total = model_bytes_of(md);
	f->started_ms = uv_now(f->loop);
	memset(f->tried, 0, sizeof(f->tried));
	uv_timer_start(&f->timer, on_time_limit, time_limit_ms, 0);
	f->state = FETCH_WAITING;
	uv_timer_start(&f->retry, on_retry, 0, 0);   /* not from inside this call */
	return 0;
}

void fetch_forget(fetcher *f, void *client)
{
	if (f->state != FETCH_IDLE && f->client == client)
		ask_end(f);
}

int fetch_frame(fetcher *f, peer *p, const uint8_t *pt, size_t len)
{
	gsp_msg_fetch m;
	int err = gsp_msg_fetch_decode(pt, len, &m);
	if (err)
		return err;
	switch (m.kind) {
	case GSP_FETCH_ASK:
		return on_ask(f, p, &m);
	case GSP_FETCH_DATA:
		return on_data(f, p, &m);
	default:
		return on_refuse(f, p, &m);
	}
}

void fetch_session_down(fetcher *f, peer *p)
{
	if (f->serve.id && f->serve.peer == p->index)
		serve_end(f);
	if (f->state == FETCH_ASKING && f->from == p->index) {
		f->tried[p->index] = TRIED;
		f->state = FETCH_WAITING;
		uv_timer_start(&f->retry, on_retry, 0, 0);
	}
}

/* ---- the mesh's hooks, set up and down -------------------------------------- */

static int mesh_frame(void *ctx, peer *p, const uint8_t *pt, size_t len)
{
	return fetch_frame(ctx, p, pt, len);
}

static void mesh_session_down(void *ctx, peer *p)
{
	fetch_session_down(ctx, p);
}

static const mesh_cluster_ops fetch_mesh_ops = {
	.frame = mesh_frame,
	.session_down = mesh_session_down,
};

void fetch_init(fetcher *f, uv_loop_t *loop, mesh *ms, model *m, stepper *st,
		counters *c)
{
	*f = (fetcher){.loop = loop, .mesh = ms, .model = m, .step = st, .counters = c};
	uv_timer_init(loop, &f->timer);
	uv_timer_init(loop, &f->retry);
	uv_timer_init(loop, &f->serve.idle);
	f->timer.data = f->retry.data = f->serve.idle.data = f;
	mesh_set_fetch(ms, &fetch_mesh_ops, f);
}

void fetch_close(fetcher *f)
{
	ask_end(f);
	serve_end(f);
	mesh_set_fetch(f->mesh, NULL, NULL);
	uv_close((uv_handle_t *)&f->timer, NULL);
	uv_close((uv_handle_t *)&f->retry, NULL);
	uv_close((uv_handle_t *)&f->serve.idle, NULL);
}
