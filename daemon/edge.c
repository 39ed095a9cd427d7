/* gossipd edges on established links: the MODEL check, RESYNC and the
 * start of a generation, ROUND messages into and out of the engine, and
 * heartbeats (PROTOCOL.md sections 4.1, 4.4, 4.6, 4.7). */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon.h"
#include "sim.h"
#include "log.h"

uint16_t gsp_edge_degree(const gsp_daemon *d)
{
	uint16_t n = 0;
	for (size_t i = 0; i < d->n_peers; i++)
		n += !d->peers[i].removed;
	return n ? n : 1;
}

int gsp_edge_message_model(const gsp_daemon *d, uint8_t *buf, size_t cap,
			   size_t *ret_len)
{
	const gsp_model *m = &d->model;
	gsp_msg_model msg = {.version = GSP_PROTO_VERSION};
	if (m->registered) {
		msg.method = (uint8_t)d->cfg.engine.method;
		msg.rank = (uint16_t)d->cfg.engine.rank;
		msg.n_tensors = (uint32_t)gsp_layout_count(m->layout);
		msg.n_floats = gsp_layout_floats(m->layout);
		memcpy(msg.fingerprint, m->fingerprint, sizeof(msg.fingerprint));
		msg.summary = m->summary;
		msg.summary_len = strlen(m->summary);
	}
	return gsp_msg_model_encode(&msg, buf, cap, ret_len);
}

void gsp_edge_session_up(gsp_link *l)
{
	uint8_t buf[512];
	size_t n;
	if (gsp_edge_message_model(l->d, buf, sizeof(buf), &n) == 0)
		gsp_link_send(l, buf, n);
}

void gsp_edge_session_down(gsp_peer *p)
{
	gsp_daemon *d = p->d;
	if (p->edge_up && d->model.busy) {
		/* The ROUNDs that came before the end are still to be used
		 * (gsp_edge_after_busy): the peer may have completed the
		 * round with ours already, so we must complete it too. */
		p->down_deferred = true;
		p->down_generation = p->generation;
	} else {
		if (p->edge_up && d->model.registered)
			gsp_node_edge_disable(d->model.node, p->index);
		for (unsigned i = 0; i < p->n_deferred; i++)
			free(p->deferred[i]);
		p->n_deferred = 0;
	}
	p->edge_up = false;
	p->start_pending = false;
	free(p->early);
	p->early = NULL;
	gsp_model_edges_changed(d);
}

static void send_round(gsp_peer *p)
{
	gsp_daemon *d = p->d;
	const void *msg;
	size_t len;
	uint64_t round;
	if (gsp_node_message(d->model.node, p->index, &msg, &len, &round) != 0)
		return;
	uint8_t *buf = malloc(GSP_MSG_ROUND_HEAD + 1 + len);
	if (!buf)
		return;
	gsp_msg_round r = {.degree = gsp_edge_degree(d), .generation = p->generation,
			   .round = round, .payload = msg, .payload_len = len};
	size_t n;
	if (gsp_msg_round_encode(&r, buf, GSP_MSG_ROUND_HEAD + 1 + len, &n) == 0)
		gsp_link_send(p->link, buf, n);
	free(buf);
}

/* Norm of (peer - mine) relative to mine, for float messages. */
static double relative_diff(const void *mine, const uint8_t *peer, size_t len)
{
	const float *a = mine;
	double num = 0.0, den = 0.0;
	for (size_t i = 0; i + 4 <= len; i += 4) {
		float b;
		memcpy(&b, peer + i, 4);
		double dv = (double)b - a[i / 4];
		num += dv * dv;
		den += (double)a[i / 4] * a[i / 4];
	}
	return den > 0 ? sqrt(num / den) : sqrt(num);
}

/* Completes the in-flight round with the peer's message. */
static int complete(gsp_peer *p, uint64_t round, uint16_t degree,
		    const uint8_t *payload, size_t len)
{
	gsp_daemon *d = p->d;
	gsp_node *node = d->model.node;
	const void *mine;
	size_t mlen;
	float w = p->cfg.weight;
	if (w <= 0.0f) {
		uint16_t deg = gsp_edge_degree(d);
		w = 1.0f / (1.0f + (float)(deg > degree ? deg : degree));
	}
	if (gsp_node_edge_set_weight(node, p->index, w) != 0)
		return -EINVAL;
	if (gsp_node_message(node, p->index, &mine, &mlen, NULL) == 0 && mlen == len &&
	    d->cfg.engine.method <= GSP_METHOD_EXACT)
		p->diff_norm = relative_diff(mine, payload, len);
	/* The engine wants 4-byte alignment; payloads sit at offset 16 of a
	 * decrypted buffer, but copy when they do not. */
	int err;
	if (((uintptr_t)payload & 3) == 0) {
		err = gsp_node_complete(node, p->index, round, payload, len);
	} else {
		void *copy = malloc(len ? len : 1);
		if (!copy)
			return -ENOMEM;
		memcpy(copy, payload, len);
		err = gsp_node_complete(node, p->index, round, copy, len);
		free(copy);
	}
	if (!err) {
		p->rounds_completed++;
		p->rounds_total++;
	}
	return err;
}

/* After a step: send what was projected, then use an early message. */
void gsp_edge_send_rounds(gsp_daemon *d)
{
	for (size_t i = 0; i < d->n_peers; i++) {
		gsp_peer *p = &d->peers[i];
		gsp_edge_info info;
		if (!p->edge_up || !p->link ||
		    gsp_node_edge_info(d->model.node, p->index, &info) != 0)
			continue;
		/* Projected and not yet sent (it may even be completed
		 * already, by a message that was waiting for us). */
		if (info.tx_msgs > p->tx_rounds) {
			p->tx_rounds = info.tx_msgs;
			send_round(p);
		}
		if (info.state != GSP_EDGE_IN_FLIGHT)
			continue;
		if (p->early && p->early_round == info.round) {
			int err = complete(p, p->early_round, p->early_degree,
					   p->early, p->early_len);
			free(p->early);
			p->early = NULL;
			if (err) {
				gsp_link_close(p->link, GSP_BYE_MALFORMED,
					       gsp_strerror(err));
				continue;
			}
		}
	}
}

/* The peer's MODEL is accepted (the edge starts, or idles because one
 * end has no model): the session works, so the dial backoff starts over
 * and the last error is forgotten. */
static void model_accepted(gsp_peer *p)
{
	p->backoff_ms = GSP_BACKOFF_MIN_MS;
	p->last_error[0] = '\0';
}

/* The 8 hex digits after `key` (", layout ") in a summary, or "". */
static void summary_digest(const char *s, size_t len, const char *key,
			   char out[9])
{
	size_t k = strlen(key);
	out[0] = '\0';
	for (size_t i = 0; i + k + 8 <= len; i++)
		if (!memcmp(s + i, key, k)) {
			memcpy(out, s + i + k, 8);
			out[8] = '\0';
			return;
		}
}

/* Which part of two models differs, from their summaries' digests. */
static const char *mismatch_kind(const char *ours, const char *theirs,
				 size_t theirs_len)
{
	char l1[9], l2[9], s1[9], s2[9];
	summary_digest(ours, strlen(ours), ", layout ", l1);
	summary_digest(theirs, theirs_len, ", layout ", l2);
	summary_digest(ours, strlen(ours), ", settings ", s1);
	summary_digest(theirs, theirs_len, ", settings ", s2);
	if (!l1[0] || !l2[0] || !s1[0] || !s2[0])
		return "models differ";
	bool layout = strcmp(l1, l2) != 0, settings = strcmp(s1, s2) != 0;
	if (layout && settings)
		return "layouts and settings differ";
	if (layout)
		return "layouts differ";
	return settings ? "settings differ" : "models differ";
}

static int on_model(gsp_link *l, const uint8_t *pt, size_t len)
{
	gsp_daemon *d = l->d;
	gsp_peer *p = l->peer;
	gsp_msg_model msg;
	int err = gsp_msg_model_decode(pt, len, &msg);
	if (err)
		return err;
	if (l->state != GSP_LINK_MODEL)
		return -EBADMSG;
	if (!d->model.registered || msg.n_tensors == 0) {
		l->state = GSP_LINK_IDLE;
		model_accepted(p);
		gsp_debug("peer %s: no model at %s end yet", p->name,
			  d->model.registered ? "its" : "our");
		return 0;
	}
	if (memcmp(msg.fingerprint, d->model.fingerprint, GSP_FINGERPRINT_BYTES) != 0) {
		char text[GSP_PEER_ERROR_MAX];   /* GOODBYE takes its first 256 bytes */
		snprintf(text, sizeof(text), "model mismatch (%s): ours %s; theirs %.*s",
			 mismatch_kind(d->model.summary, msg.summary, msg.summary_len),
			 d->model.summary, (int)msg.summary_len, msg.summary);
		d->counters.fingerprint_mismatch++;
		gsp_err("peer %s: refused: %s", p->name, text);
		gsp_peer_error(p, "%s", text);
		gsp_link_close(l, GSP_BYE_FINGERPRINT, text);
		return 0;
	}
	gsp_msg_resync rs = {.generation = 0};
	uint8_t buf[64];
	size_t n;
	if (gsp_msg_resync_encode(&rs, buf, sizeof(buf), &n) != 0)
		return -EINVAL;
	gsp_link_send(l, buf, n);
	l->state = GSP_LINK_RESYNC;
	model_accepted(p);
	return 0;
}

/* Starts generation `gen` on the engine edge with this session's seed.
 * An update completed in the old generation must land first, so while
 * one is pending the start waits for the next STEP (gsp_edge_finish). */
static int start_generation(gsp_peer *p)
{
	gsp_daemon *d = p->d;
	gsp_link *l = p->link;
	gsp_edge_info info;
	if (d->model.busy || p->down_deferred) {
		p->start_pending = true;
		return 0;
	}
	gsp_node_edge_info(d->model.node, p->index, &info);
	if (info.state == GSP_EDGE_COMPLETED) {
		p->start_pending = true;
		return 0;
	}
	gsp_role role = memcmp(d->key.pub, p->cfg.public_key, 32) < 0 ? GSP_ROLE_LO
								      : GSP_ROLE_HI;
	uint8_t seed[GSP_SEED_BYTES];
	memcpy(seed, l->sess.edge_seed, sizeof(seed));
	if (d->cfg.sim_seed_set) {
		/* Replay gossip-sim: its seed and its lo/hi by index. */
		uint8_t key[GSP_SEED_BYTES] = {0};
		unsigned me = (unsigned)d->cfg.index, them = (unsigned)p->cfg.index;
		for (int b = 0; b < 8; b++)
			key[b] = (uint8_t)(d->cfg.sim_seed >> (8 * b));
		gsp_sim_edge_seed(key, me < them ? me : them, me < them ? them : me, seed);
		role = me < them ? GSP_ROLE_LO : GSP_ROLE_HI;
	}
	float w = p->cfg.weight > 0 ? p->cfg.weight : 1.0f / (1.0f + gsp_edge_degree(d));
	int err = gsp_node_edge_reset(d->model.node, p->index, w, role, seed,
				      sizeof(seed));
	if (err)
		return err;
	p->start_pending = false;
	p->edge_up = true;
	p->last_apply_step = d->model.steps;
	gsp_node_edge_info(d->model.node, p->index, &info);
	p->tx_rounds = info.tx_msgs;
	gsp_info("peer %s: edge generation %u up (%s)", p->name, p->generation,
		 role == GSP_ROLE_LO ? "lo" : "hi");
	gsp_model_edges_changed(d);
	return 0;
}

static int on_round(gsp_link *l, const uint8_t *pt, size_t len);

/* A session ended while the engine was busy: the ROUNDs of its
 * generation that arrived before the end complete the round in flight,
 * as they would have if they had been read at once; then the edge is
 * disabled (a completed update still lands at the next STEP).  ROUNDs of
 * a newer session stay for the replay. */
static void finish_ended_session(gsp_peer *p)
{
	gsp_daemon *d = p->d;
	unsigned kept = 0;
	for (unsigned k = 0; k < p->n_deferred; k++) {
		gsp_msg_round msg;
		gsp_edge_info info;
		if (gsp_msg_round_decode(p->deferred[k], p->deferred_len[k], &msg) != 0 ||
		    msg.generation != p->down_generation) {
			p->deferred[kept] = p->deferred[k];
			p->deferred_len[kept++] = p->deferred_len[k];
			continue;
		}
		if (gsp_node_edge_info(d->model.node, p->index, &info) == 0 &&
		    info.state == GSP_EDGE_IN_FLIGHT && msg.round == info.round &&
		    complete(p, msg.round, msg.degree, msg.payload,
			     msg.payload_len) != 0)
			d->counters.rx_malformed++;
		free(p->deferred[k]);
	}
	p->n_deferred = kept;
	p->down_deferred = false;
	gsp_node_edge_disable(d->model.node, p->index);
}

void gsp_edge_after_busy(gsp_daemon *d, bool replay)
{
	for (size_t i = 0; i < d->n_peers; i++) {
		gsp_peer *p = &d->peers[i];
		if (p->down_deferred)
			finish_ended_session(p);
		for (unsigned k = 0; replay && k < p->n_deferred; k++) {
			int err = p->link ? on_round(p->link, p->deferred[k],
						     p->deferred_len[k]) : 0;
			free(p->deferred[k]);
			p->deferred[k] = NULL;
			if (err && p->link) {
				d->counters.rx_malformed++;
				gsp_link_close(p->link, GSP_BYE_MALFORMED, gsp_strerror(err));
			}
		}
		if (replay)
			p->n_deferred = 0;
	}
}

void gsp_edge_cache(gsp_daemon *d)
{
	for (size_t i = 0; i < d->n_peers; i++)
		if (!d->model.registered ||
		    gsp_node_edge_info(d->model.node, i, &d->peers[i].cache) != 0)
			memset(&d->peers[i].cache, 0, sizeof(d->peers[i].cache));
}

void gsp_edge_finish(gsp_daemon *d)
{
	for (size_t i = 0; i < d->n_peers; i++) {
		gsp_peer *p = &d->peers[i];
		if (p->start_pending && p->link && start_generation(p) != 0)
			gsp_link_close(p->link, GSP_BYE_INTERNAL, "cannot start the edge");
	}
}

/* RESYNC: this version keeps no edge state across sessions, so every
 * session starts generation max(ours, theirs) + 1 with its own seed
 * (PROTOCOL.md 4.6, rule 2). */
static int on_resync(gsp_link *l, const uint8_t *pt, size_t len)
{
	gsp_daemon *d = l->d;
	gsp_peer *p = l->peer;
	gsp_msg_resync msg;
	int err = gsp_msg_resync_decode(pt, len, &msg);
	if (err)
		return err;
	if (l->state != GSP_LINK_RESYNC)
		return -EBADMSG;
	uint32_t gen = msg.generation + 1;
	p->generation = gen ? gen : 1;
	p->resyncs++;
	uint32_t cap;
	if (gsp_proto_peer_max_frame(d->model.max_payload, &cap) == 0)
		l->max_frame = cap;
	l->state = GSP_LINK_UP;
	return start_generation(p);
}

static int on_round(gsp_link *l, const uint8_t *pt, size_t len)
{
	gsp_daemon *d = l->d;
	gsp_peer *p = l->peer;
	gsp_msg_round msg;
	int err = gsp_msg_round_decode(pt, len, &msg);
	if (err)
		return err;
	if (d->model.busy) {
		/* The engine is busy off the loop: keep it for afterwards.  A
		 * peer is at most two rounds ahead of a step in progress. */
		if (p->n_deferred == 2 || !(p->deferred[p->n_deferred] = malloc(len)))
			return -EBADMSG;
		memcpy(p->deferred[p->n_deferred], pt, len);
		p->deferred_len[p->n_deferred++] = len;
		return 0;
	}
	if (l->state != GSP_LINK_UP || (!p->edge_up && !p->start_pending) ||
	    msg.generation != p->generation)
		return -EBADMSG;
	gsp_edge_info info;
	gsp_node_edge_info(d->model.node, p->index, &info);
	if (p->start_pending) {
		/* The generation starts at our next STEP: round 1 waits. */
		info.state = GSP_EDGE_IDLE;
		info.round = 0;
	}
	if (info.state == GSP_EDGE_IN_FLIGHT && msg.round == info.round) {
		err = complete(p, msg.round, msg.degree, msg.payload, msg.payload_len);
		if (err)
			return err;
		gsp_model_edges_changed(d);
		return 0;
	}
	/* The peer stepped before us: keep its next round until we project. */
	bool next = msg.round == info.round + 1 && info.state != GSP_EDGE_IN_FLIGHT;
	if (!next || p->early)
		return -EBADMSG;
	p->early = malloc(msg.payload_len);
	if (!p->early)
		return -ENOMEM;
	memcpy(p->early, msg.payload, msg.payload_len);
	p->early_len = msg.payload_len;
	p->early_round = msg.round;
	p->early_degree = msg.degree;
	gsp_model_edges_changed(d);
	return 0;
}

/* GOODBYE reasons as PROTOCOL.md 4.4 names them, for logs. */
static const char *bye_name(uint16_t reason)
{
	static const char *const names[] = {
		[GSP_BYE_UNSPECIFIED] = "unspecified",
		[GSP_BYE_SHUTDOWN] = "shutdown",
		[GSP_BYE_RESTART] = "restart",
		[GSP_BYE_VERSION] = "version",
		[GSP_BYE_FINGERPRINT] = "fingerprint",
		[GSP_BYE_MALFORMED] = "malformed",
		[GSP_BYE_NOT_ALLOWED] = "not allowed",
		[GSP_BYE_REPLACED] = "replaced",
		[GSP_BYE_TIMEOUT] = "timeout",
		[GSP_BYE_MODEL_CHANGED] = "model changed",
		[GSP_BYE_INTERNAL] = "internal",
	};
	return reason < sizeof(names) / sizeof(*names) ? names[reason] : "unknown";
}

int gsp_edge_on_frame(gsp_link *l, const uint8_t *pt, size_t len)
{
	uint8_t type;
	int err = gsp_msg_type(pt, len, &type);
	if (err)
		return err;
	if (l->state == GSP_LINK_MODEL && type != GSP_MSG_MODEL &&
	    type != GSP_MSG_GOODBYE)
		return -EBADMSG;
	switch (type) {
	case GSP_MSG_MODEL:
		return on_model(l, pt, len);
	case GSP_MSG_RESYNC:
		return on_resync(l, pt, len);
	case GSP_MSG_ROUND:
		return on_round(l, pt, len);
	case GSP_MSG_PING: {
		gsp_msg_ping ping;
		uint8_t buf[32];
		size_t n;
		if ((err = gsp_msg_ping_decode(pt, len, &ping)) != 0)
			return err;
		if (gsp_msg_pong_encode(&ping, buf, sizeof(buf), &n) == 0)
			gsp_link_send(l, buf, n);
		return 0;
	}
	case GSP_MSG_PONG: {
		gsp_msg_ping pong;
		if ((err = gsp_msg_pong_decode(pt, len, &pong)) != 0)
			return err;
		if (pong.nonce == l->ping_nonce)
			l->peer->rtt_ns = uv_hrtime() - pong.time_ns;
		return 0;
	}
	case GSP_MSG_GOODBYE: {
		gsp_msg_goodbye bye;
		if ((err = gsp_msg_goodbye_decode(pt, len, &bye)) != 0)
			return err;
		gsp_info("peer %s: GOODBYE %s (reason %u): %.*s", l->peer->name,
			 bye_name(bye.reason), bye.reason, (int)bye.text_len, bye.text);
		/* Why the edge went down, unless it comes straight back (a
		 * model change, a newer session) or we saw it ourselves (its
		 * MODEL came first: the mismatch is already recorded). */
		if (bye.reason != GSP_BYE_MODEL_CHANGED && bye.reason != GSP_BYE_REPLACED &&
		    bye.reason != GSP_BYE_FINGERPRINT && l->peer->link == l)
			gsp_peer_error(l->peer, "the peer said GOODBYE %s: %.*s",
				       bye_name(bye.reason), (int)bye.text_len, bye.text);
		gsp_link_close(l, GSP_BYE_UNSPECIFIED, "");
		return 0;
	}
	default:
		return -EBADMSG;
	}
}
