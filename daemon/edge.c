/* edge: one edge's protocol as a state machine (edge.h); the set of
 * them is edges.c. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "edge.h"
#include "log.h"
#include "sim.h"

static int on_round(edge *e, const uint8_t *pt, size_t len);

static void changed(edge_set *s)
{
	s->ops->changed(s->ctx);
}

/* ---- sessions --------------------------------------------------------- */

static int send_model(edge *e)
{
	edge_set *s = e->set;
	const edge_model *m = &s->model;
	gsp_msg_model msg = {.version = GSP_PROTO_VERSION};
	uint8_t buf[512];
	size_t n;
	if (s->attached) {
		msg.method = m->method;
		msg.rank = m->rank;
		msg.n_tensors = (uint32_t)gsp_layout_count(m->layout);
		msg.n_floats = gsp_layout_floats(m->layout);
		memcpy(msg.fingerprint, m->fingerprint, sizeof(msg.fingerprint));
		msg.summary = m->summary;
		msg.summary_len = strlen(m->summary);
	}
	int err = gsp_msg_model_encode(&msg, buf, sizeof(buf), &n);
	return err ? err : s->ops->send(s->ctx, e, buf, n);
}

void edge_session_up(edge *e, const uint8_t seed[GSP_SEED_BYTES])
{
	memcpy(e->seed, seed, GSP_SEED_BYTES);
	e->state = EDGE_WAIT_MODEL;
	if (send_model(e) != 0 && e->state == EDGE_WAIT_MODEL)
		e->set->ops->close(e->set->ctx, e, GSP_BYE_INTERNAL, "cannot send MODEL");
}

void edge_session_down(edge *e)
{
	edge_set *s = e->set;
	if (e->state == EDGE_DOWN)
		return;
	e->state = EDGE_DOWN;
	if (e->up && s->busy) {
		/* The ROUNDs that came before the end are still to be used
		 * (edges_after_busy): the peer may have completed the round
		 * with ours already, so we must complete it too. */
		e->down_deferred = true;
		e->down_generation = e->generation;
	} else {
		if (e->up && s->attached)
			(void)gsp_node_edge_disable(s->model.node, e->index);
		for (unsigned i = 0; i < e->n_deferred; i++)
			free(e->deferred[i]);
		e->n_deferred = 0;
	}
	e->up = false;
	e->start_pending = false;
	e->straggler = e->lagging = false;
	free(e->early);
	e->early = NULL;
	changed(s);
}

/* ---- rounds ----------------------------------------------------------- */

static int send_round(edge *e)
{
	edge_set *s = e->set;
	const void *msg;
	size_t len;
	uint64_t round;
	int err = gsp_node_message(s->model.node, e->index, &msg, &len, &round);
	if (err)
		return err;
	size_t cap = GSP_MSG_ROUND_HEAD + 1 + len, n;
	uint8_t *buf = malloc(cap);
	if (!buf)
		return -ENOMEM;
	e->tx_degree = s->ops->degree(s->ctx);
	gsp_msg_round r = {.degree = e->tx_degree, .generation = e->generation,
			   .round = round, .payload = msg, .payload_len = len};
	err = gsp_msg_round_encode(&r, buf, cap, &n);
	if (!err)
		err = s->ops->send(s->ctx, e, buf, n);
	free(buf);
	return err;
}

/* ||peer - mine||^2 and ||mine||^2, for float messages. */
static void diff_norms(const void *mine, const uint8_t *peer, size_t len,
		       double *ret_num, double *ret_den)
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
	*ret_num = num;
	*ret_den = den;
}

/* Whether a peer's float message stays within MaxRoundChange of ours
 * (in units of our norm, or of sqrt(length) when that is larger, so a
 * model of zeros still takes an honest neighbour's round). */
static bool within_bound(const edge_set *s, double num, double den, size_t len)
{
	if (!(s->max_round_change > 0))
		return true;
	double unit = sqrt(den) > sqrt((double)len / 4) ? sqrt(den) : sqrt((double)len / 4);
	return sqrt(num) <= (double)s->max_round_change * unit;
}

/* Completes the in-flight round with the peer's message. */
static int complete(edge *e, uint64_t round, uint16_t degree,
		    const uint8_t *payload, size_t len)
{
	edge_set *s = e->set;
	gsp_node *node = s->model.node;
	const void *mine;
	size_t mlen;
	/* Both ends weigh round t by the degrees its two messages carried,
	 * so a degree that changes meanwhile (a reload) changes it at
	 * neither; a configured Weight holds for the whole generation. */
	float w = e->weight;
	if (w <= 0.0f) {
		uint16_t deg = e->tx_degree ? e->tx_degree : s->ops->degree(s->ctx);
		w = 1.0f / (1.0f + (float)(deg > degree ? deg : degree));
	}
	if (gsp_node_edge_set_weight(node, e->index, w) != 0)
		return -EINVAL;
	if (gsp_node_message(node, e->index, &mine, &mlen, NULL) == 0 && mlen == len &&
	    s->model.method <= GSP_METHOD_EXACT) {
		double num, den;
		diff_norms(mine, payload, len, &num, &den);
		if (!within_bound(s, num, den, len)) {
			s->counters->rounds_refused++;
			gsp_err("peer %s: round %llu refused: it differs from ours by "
				"%.3g times our norm (MaxRoundChange %g)", e->name,
				(unsigned long long)round, sqrt(num / (den > 0 ? den : 1)),
				(double)s->max_round_change);
			s->ops->error(s->ctx, e, "a ROUND over MaxRoundChange was refused");
			return -EACCES;
		}
		e->diff_norm = den > 0 ? sqrt(num / den) : sqrt(num);
	}
	/* The engine wants 4-byte alignment; payloads sit at offset 16 of a
	 * decrypted buffer, but copy when they do not. */
	int err;
	if (((uintptr_t)payload & 3) == 0) {
		err = gsp_node_complete(node, e->index, round, payload, len);
	} else {
		void *copy = malloc(len ? len : 1);
		if (!copy)
			return -ENOMEM;
		memcpy(copy, payload, len);
		err = gsp_node_complete(node, e->index, round, copy, len);
		free(copy);
	}
	if (!err) {
		e->rounds_completed++;
		e->rounds_total++;
	}
	return err;
}

void edge_step_done(edge *e)
{
	edge_set *s = e->set;
	gsp_edge_info info;
	if (!e->up || e->state != EDGE_UP ||
	    gsp_node_edge_info(s->model.node, e->index, &info) != 0)
		return;
	/* Projected and not yet sent (it may even be completed already, by
	 * a message that was waiting for us). */
	if (info.tx_msgs > e->tx_rounds) {
		e->tx_rounds = info.tx_msgs;
		int err = send_round(e);
		if (err) {
			if (e->state != EDGE_DOWN)
				s->ops->close(s->ctx, e, GSP_BYE_INTERNAL,
					      "cannot send a ROUND");
			return;
		}
	}
	if (info.state != GSP_EDGE_IN_FLIGHT || !e->early || e->early_round != info.round)
		return;
	int err = complete(e, e->early_round, e->early_degree, e->early, e->early_len);
	free(e->early);
	e->early = NULL;
	if (err) {
		s->counters->rx_malformed++;
		s->ops->close(s->ctx, e, GSP_BYE_MALFORMED, gsp_strerror(err));
	}
}

/* ---- MODEL and RESYNC ------------------------------------------------- */

/* The 8 hex digits after `key` (", layout ") in a summary, or "". */
static void summary_digest(const char *str, size_t len, const char *key, char out[9])
{
	size_t k = strlen(key);
	out[0] = '\0';
	for (size_t i = 0; i + k + 8 <= len; i++)
		if (!memcmp(str + i, key, k)) {
			memcpy(out, str + i + k, 8);
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

static int on_model(edge *e, const uint8_t *pt, size_t len)
{
	edge_set *s = e->set;
	gsp_msg_model msg;
	int err = gsp_msg_model_decode(pt, len, &msg);
	if (err)
		return err;
	if (e->state != EDGE_WAIT_MODEL)
		return -EBADMSG;
	if (!s->attached || msg.n_tensors == 0) {
		e->state = EDGE_IDLE;
		s->ops->accepted(s->ctx, e);
		gsp_debug("peer %s: no model at %s end yet", e->name,
			  s->attached ? "its" : "our");
		return 0;
	}
	if (memcmp(msg.fingerprint, s->model.fingerprint, GSP_FINGERPRINT_BYTES) != 0) {
		/* GOODBYE takes the first 256 bytes. */
		char text[2 * GSP_MODEL_SUMMARY_MAX + 64];
		snprintf(text, sizeof(text), "model mismatch (%s): ours %s; theirs %.*s",
			 mismatch_kind(s->model.summary, msg.summary, msg.summary_len),
			 s->model.summary, (int)msg.summary_len, msg.summary);
		s->counters->fingerprint_mismatch++;
		gsp_err("peer %s: refused: %s", e->name, text);
		s->ops->error(s->ctx, e, text);
		s->ops->close(s->ctx, e, GSP_BYE_FINGERPRINT, text);
		return 0;
	}
	/* Our last generation: both ends start the one after the larger, so
	 * a new session's ROUNDs are never taken for an old one's. */
	gsp_msg_resync rs = {.generation = e->generation};
	uint8_t buf[64];
	size_t n;
	if ((err = gsp_msg_resync_encode(&rs, buf, sizeof(buf), &n)) != 0)
		return err;
	e->state = EDGE_WAIT_RESYNC;
	if (s->ops->send(s->ctx, e, buf, n) != 0)
		return 0;        /* the session is gone */
	s->ops->accepted(s->ctx, e);
	return 0;
}

/* Starts generation e->generation on the engine edge with the session's
 * seed.  An update completed in the old generation must land first, so
 * while one is pending the start waits for the next STEP
 * (edges_finish). */
static int start_generation(edge *e)
{
	edge_set *s = e->set;
	gsp_edge_info info;
	if (s->busy || e->down_deferred) {
		e->start_pending = true;
		return 0;
	}
	if (gsp_node_edge_info(s->model.node, e->index, &info) != 0)
		return -EINVAL;
	if (info.state == GSP_EDGE_COMPLETED) {
		e->start_pending = true;
		return 0;
	}
	gsp_role role = e->lo ? GSP_ROLE_LO : GSP_ROLE_HI;
	uint8_t seed[GSP_SEED_BYTES];
	memcpy(seed, e->seed, sizeof(seed));
	if (s->sim_seed_set) {
		/* Replay gossip-sim: its seed and its lo/hi by index. */
		uint8_t key[GSP_SEED_BYTES] = {0};
		unsigned me = (unsigned)s->sim_index, them = (unsigned)e->cfg->index;
		for (int b = 0; b < 8; b++)
			key[b] = (uint8_t)(s->sim_seed >> (8 * b));
		gsp_sim_edge_seed(key, me < them ? me : them, me < them ? them : me, seed);
		role = me < them ? GSP_ROLE_LO : GSP_ROLE_HI;
	}
	e->weight = e->cfg->weight;
	e->tx_degree = 0;
	float w = e->weight > 0 ? e->weight : 1.0f / (1.0f + s->ops->degree(s->ctx));
	int err = gsp_node_edge_reset(s->model.node, e->index, w, role, seed,
				      sizeof(seed));
	if (err)
		return err;
	e->start_pending = false;
	e->up = true;
	e->last_apply_step = s->steps;
	(void)gsp_node_edge_info(s->model.node, e->index, &info);
	e->tx_rounds = info.tx_msgs;
	gsp_info("peer %s: edge generation %u up (%s)", e->name, e->generation,
		 role == GSP_ROLE_LO ? "lo" : "hi");
	changed(s);
	return 0;
}

/* RESYNC: this version keeps no edge state across sessions, so every
 * session starts generation max(ours, theirs) + 1 with its own seed
 * (PROTOCOL.md 4.6, rule 2); each end's RESYNC carries its last one. */
static int on_resync(edge *e, const uint8_t *pt, size_t len)
{
	edge_set *s = e->set;
	gsp_msg_resync msg;
	int err = gsp_msg_resync_decode(pt, len, &msg);
	if (err)
		return err;
	if (e->state != EDGE_WAIT_RESYNC)
		return -EBADMSG;
	uint32_t gen = (msg.generation > e->generation ? msg.generation : e->generation) + 1;
	e->generation = gen ? gen : 1;
	e->resyncs++;
	uint32_t cap;
	if (gsp_proto_peer_max_frame(s->model.max_payload, &cap) == 0)
		s->ops->set_max_frame(s->ctx, e, cap);
	e->state = EDGE_UP;
	return start_generation(e);
}

/* A session ended while the engine was busy: the ROUNDs of its
 * generation that arrived before the end complete the round in flight,
 * as they would have if they had been read at once; then the edge is
 * disabled (a completed update still lands at the next STEP).  ROUNDs of
 * a newer session stay for the replay. */
static void finish_ended_session(edge *e)
{
	edge_set *s = e->set;
	unsigned kept = 0;
	for (unsigned k = 0; k < e->n_deferred; k++) {
		gsp_msg_round msg;
		gsp_edge_info info;
		if (gsp_msg_round_decode(e->deferred[k], e->deferred_len[k], &msg) != 0 ||
		    msg.generation != e->down_generation) {
			e->deferred[kept] = e->deferred[k];
			e->deferred_len[kept++] = e->deferred_len[k];
			continue;
		}
		if (gsp_node_edge_info(s->model.node, e->index, &info) == 0 &&
		    info.state == GSP_EDGE_IN_FLIGHT && msg.round == info.round &&
		    complete(e, msg.round, msg.degree, msg.payload, msg.payload_len) != 0)
			s->counters->rx_malformed++;
		free(e->deferred[k]);
	}
	e->n_deferred = kept;
	e->down_deferred = false;
	(void)gsp_node_edge_disable(s->model.node, e->index);
}

static int on_round(edge *e, const uint8_t *pt, size_t len)
{
	edge_set *s = e->set;
	gsp_msg_round msg;
	int err = gsp_msg_round_decode(pt, len, &msg);
	if (err)
		return err;
	/* The sender's degree sets the weight: it must be one the graph
	 * allows. */
	if (msg.degree == 0 || (s->max_degree && msg.degree > s->max_degree))
		return -EBADMSG;
	if (s->busy) {
		/* The engine is busy off the loop: keep it for afterwards.  A
		 * peer is at most two rounds ahead of a step in progress. */
		if (e->n_deferred == 2 || !(e->deferred[e->n_deferred] = malloc(len)))
			return -EBADMSG;
		memcpy(e->deferred[e->n_deferred], pt, len);
		e->deferred_len[e->n_deferred++] = len;
		return 0;
	}
	if (e->state != EDGE_UP || (!e->up && !e->start_pending) ||
	    msg.generation != e->generation)
		return -EBADMSG;
	gsp_edge_info info;
	if (gsp_node_edge_info(s->model.node, e->index, &info) != 0)
		return -EINVAL;
	if (e->start_pending) {
		/* The generation starts at our next STEP: round 1 waits. */
		info.state = GSP_EDGE_IDLE;
		info.round = 0;
	}
	if (info.state == GSP_EDGE_IN_FLIGHT && msg.round == info.round) {
		err = complete(e, msg.round, msg.degree, msg.payload, msg.payload_len);
		if (err)
			return err;
		changed(s);
		return 0;
	}
	/* The peer stepped before us: keep its next round until we project. */
	bool next = msg.round == info.round + 1 && info.state != GSP_EDGE_IN_FLIGHT;
	if (!next || e->early)
		return -EBADMSG;
	e->early = malloc(msg.payload_len ? msg.payload_len : 1);
	if (!e->early)
		return -ENOMEM;
	memcpy(e->early, msg.payload, msg.payload_len);
	e->early_len = msg.payload_len;
	e->early_round = msg.round;
	e->early_degree = msg.degree;
	changed(s);
	return 0;
}

int edge_frame(edge *e, const uint8_t *pt, size_t len)
{
	uint8_t type;
	int err = gsp_msg_type(pt, len, &type);
	if (err)
		return err;
	if (e->state == EDGE_DOWN || (e->state == EDGE_WAIT_MODEL && type != GSP_MSG_MODEL))
		return -EBADMSG;
	switch (type) {
	case GSP_MSG_MODEL:
		return on_model(e, pt, len);
	case GSP_MSG_RESYNC:
		return on_resync(e, pt, len);
	case GSP_MSG_ROUND:
		return on_round(e, pt, len);
	default:
		return -EBADMSG;
	}
}


void edge_finish(edge *e)
{
	edge_set *s = e->set;
	if (e->start_pending && e->state == EDGE_UP && start_generation(e) != 0)
		s->ops->close(s->ctx, e, GSP_BYE_INTERNAL, "cannot start the edge");
}

void edge_after_busy(edge *e, bool replay)
{
	edge_set *s = e->set;
	if (e->down_deferred)
		finish_ended_session(e);
	if (!replay)
		return;
	/* A replayed frame may end the session (which frees what is kept):
	 * take the list first. */
	uint8_t *kept[2];
	size_t kept_len[2];
	unsigned n = e->n_deferred;
	memcpy(kept, e->deferred, sizeof(kept));
	memcpy(kept_len, e->deferred_len, sizeof(kept_len));
	e->n_deferred = 0;
	for (unsigned k = 0; k < n; k++) {
		int err = e->state != EDGE_DOWN ? on_round(e, kept[k], kept_len[k]) : 0;
		free(kept[k]);
		if (err && e->state != EDGE_DOWN) {
			s->counters->rx_malformed++;
			s->ops->close(s->ctx, e, GSP_BYE_MALFORMED, gsp_strerror(err));
		}
	}
}
