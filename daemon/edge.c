/* edge: one edge's sessions and rounds (edge.h); its generations are
 * edge_gen.c, the set of edges edges.c.  PROTOCOL.md 4.6 is the design:
 * our messages are kept until the peer cannot need them, so a round a
 * session lost is completed from them after the next one.  Calls
 * edge_core, edge_estimate, edge_sched, edge_resync, edge_end and
 * edge_gen only (the module's order: edge_core.c). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bigmem.h"
#include "edge_impl.h"
#include "log.h"

static int on_round(edge *e, const uint8_t *pt, size_t len);

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
	return err ? err : edge__send(e, buf, n);
}

void edge_session_up(edge *e, const uint8_t seed[GSP_SEED_BYTES])
{
	edge_set *s = e->set;
	uint32_t cap;
	memcpy(e->seed, seed, GSP_SEED_BYTES);
	e->session_no++;
	EDGE_ROW(S1);
	e->state = EDGE_WAIT_MODEL;
	/* With a model here, the link takes its ROUNDs from the start: a
	 * peer may send its first ROUNDs before this end has read the
	 * session's RESYNC (a step off the loop defers it). */
	if (s->attached && gsp_proto_peer_max_frame(s->model.max_payload, &cap) == 0)
		s->ops->set_max_frame(s->ctx, e, cap);
	e->peer_continues = false;
	if (send_model(e) != 0 && e->state == EDGE_WAIT_MODEL)
		e->set->ops->close(e->set->ctx, e, GSP_BYE_INTERNAL, "cannot send MODEL");
}

/* The generation stays: a round in flight waits for the next session,
 * which resends what the other end lacks. */
void edge_session_down(edge *e)
{
	if (e->state == EDGE_DOWN)
		return;
	EDGE_ROW(S6);
	e->state = EDGE_DOWN;
	e->peer_attached = false;
	e->peer_continues = false;
	e->next_generation = 0;   /* agreed in this session only */
	e->straggler = e->lagging = false;
	edge__changed(e);
}

/* ---- rounds ----------------------------------------------------------- */

/* Keeps our newly projected message (the two newest stay); it is sent
 * once the records keep it (edge_release). */
static int keep_round(edge *e)
{
	edge_set *s = e->set;
	const void *msg;
	size_t len;
	uint64_t round;
	int err = gsp_node_message(s->model.node, e->index, &msg, &len, &round);
	if (err)
		return err;
	size_t cap = GSP_MSG_ROUND_HEAD + 1 + len, n;
	/* The oldest kept ROUND goes: its memory takes the new one when it is
	 * large enough (a model-sized round's new memory costs a page fault
	 * per page on the path to the send: bigmem.h). */
	edge_msg *old = &e->sent[0];
	bool reuse = old->buf && old->cap >= cap;
	uint8_t *buf = reuse ? old->buf : gsp_bigmem_malloc(cap);
	if (!buf)
		return -ENOMEM;
	uint16_t degree = s->ops->degree(s->ctx);
	gsp_msg_round r = {.flags = (s->averaging ? GSP_ROUND_AVERAGING : 0) |
				    (s->reached ? GSP_ROUND_REACHED : 0) |
				    edge__finite_flag(e),
			   .degree = degree, .generation = e->generation,
			   .round = round, .payload = msg, .payload_len = len};
	if ((err = gsp_msg_round_encode(&r, buf, cap, &n)) != 0) {
		if (!reuse)              /* the encode checks before it writes */
			free(buf);
		return err;
	}
	size_t have = reuse ? old->cap : cap;
	if (!reuse)
		free(old->buf);
	e->sent[0] = e->sent[1];
	e->sent[1] = (edge_msg){.buf = buf, .len = n, .cap = have, .round = round,
				.degree = degree};
	e->sent_round = round;
	e->sent_reached_at[round & 1] = s->averaging && s->reached ? round : 0;
	s->dirty = true;         /* the records keep it (edgestate) */
	/* An end that is ending its generation starts no round. */
	e->unsent = e->state == EDGE_UP && !e->ending_self;
	e->unsent_generation = e->generation;
	e->unsent_round = round;
	return 0;
}

/* The degree our message for `round` carried. */
static uint16_t sent_degree(const edge *e, uint64_t round)
{
	int k = edge__kept(e, round);
	return k >= 0 ? e->sent[k].degree : e->set->ops->degree(e->set->ctx);
}

/* Completes the in-flight round with the peer's message. */
static int complete(edge *e, uint64_t round, uint16_t degree, uint8_t flags,
		    const uint8_t *payload, size_t len)
{
	edge_set *s = e->set;
	gsp_node *node = s->model.node;
	/* Both ends weigh round t by the degrees its two messages carried,
	 * so a degree that changes meanwhile (a reload) changes it at
	 * neither; a configured Weight holds for the whole generation. */
	float w = gsp_mixing_edge_weight(e->weight, sent_degree(e, round), degree);
	if (gsp_node_edge_set_weight(node, e->index, w) != 0)
		return -EINVAL;
	if (edge__measure_round(e, round, payload, len) != 0)
		return -EACCES;
	/* The engine wants 4-byte alignment; payloads sit at offset 16 of a
	 * decrypted buffer, but copy when they do not. */
	int err;
	if (((uintptr_t)payload & 3) == 0) {
		err = gsp_node_complete(node, e->index, round, payload, len);
	} else {
		void *copy = gsp_bigmem_malloc(len ? len : 1);
		if (!copy)
			return -ENOMEM;
		memcpy(copy, payload, len);
		err = gsp_node_complete(node, e->index, round, copy, len);
		free(copy);
	}
	if (err)
		return err;
	e->completed = round;
	e->rounds_completed++;
	e->rounds_total++;
	if (edge__finite_check(e, round, flags) != 0)
		(void)edge_end_begin(e, END_RESTART);
	if (e->ending != TARGET_NONE)
		edge__settle(e);
	edge__changed(e);
	return 0;
}

/* Not when the generation ends before `round`, nor while we end it and
 * the peer has not said where (nothing more is completed meanwhile). */
static bool may_complete(const edge *e, uint64_t round)
{
	if (e->ending == TARGET_KNOWN)
		return round <= e->target;
	return !e->ending_self;
}

void edge_step_done(edge *e)
{
	edge_set *s = e->set;
	gsp_edge_info info;
	if (!edge__live(e) || gsp_node_edge_info(s->model.node, e->index, &info) != 0)
		return;
	/* Projected and not yet kept (it may even be completed already, by
	 * a message that was waiting for us). */
	if (info.round > e->sent_round && keep_round(e) != 0) {
		if (e->state != EDGE_DOWN)
			s->ops->close(s->ctx, e, GSP_BYE_INTERNAL, "cannot send a ROUND");
		return;
	}
	if (info.state != GSP_EDGE_IN_FLIGHT || !e->early ||
	    e->early_generation != e->generation || e->early_round != info.round ||
	    !may_complete(e, info.round))
		return;
	uint8_t *early = e->early;
	e->early = NULL;
	int err = complete(e, e->early_round, e->early_degree, e->early_flags, early,
			   e->early_len);
	free(early);
	if (err) {
		s->counters->rx_malformed++;
		s->ops->close(s->ctx, e, GSP_BYE_MALFORMED, gsp_strerror(err));
	}
}

void edge_release(edge *e)
{
	if (!e->unsent)
		return;
	e->unsent = false;
	/* The message kept for it: a completion since may have ended the
	 * generation (its message of the count it ended at is ended_msg). */
	const edge_msg *m = NULL;
	int k = e->generation == e->unsent_generation ? edge__kept(e, e->unsent_round) : -1;
	if (k >= 0)
		m = &e->sent[k];
	else if (e->ended_generation == e->unsent_generation && e->ended_msg.buf &&
		 e->ended_msg.round == e->unsent_round)
		m = &e->ended_msg;
	if (m && edge__send_round(e, m) < 0 && e->state != EDGE_DOWN)
		e->set->ops->close(e->set->ctx, e, GSP_BYE_INTERNAL, "cannot send a ROUND");
}

/* The peer's message for a round we have not projected yet. */
static int keep_early(edge *e, const gsp_msg_round *msg)
{
	/* One of an older generation can complete nothing any more. */
	if (e->early && e->early_generation < msg->generation) {
		free(e->early);
		e->early = NULL;
	}
	if (e->early)
		return e->early_generation == msg->generation &&
		       e->early_round == msg->round ? 0 : -EBADMSG;
	e->early = gsp_bigmem_malloc(msg->payload_len ? msg->payload_len : 1);
	if (!e->early)
		return -ENOMEM;
	memcpy(e->early, msg->payload, msg->payload_len);
	e->early_len = msg->payload_len;
	e->early_round = msg->round;
	e->early_generation = msg->generation;
	e->early_degree = msg->degree;
	e->early_flags = msg->flags;
	edge__changed(e);
	return 0;
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
	/* The agreed next generation's first round: kept until it starts
	 * here, also while the old one still waits to end (a take-back that
	 * waits for a write); dropped, it would never come again in this
	 * session. */
	if (e->next_generation && msg.generation == e->next_generation)
		return msg.round == 1 ? keep_early(e, &msg) : -EBADMSG;
	/* A round of a generation that has ended here, or a resent one we
	 * have: of no use.  Dropping a message never costs exactness. */
	if (!edge__live(e) || msg.generation != e->generation || msg.round <= e->completed)
		return 0;
	e->peer_averaging = msg.flags & GSP_ROUND_AVERAGING;
	e->peer_reached = msg.flags & GSP_ROUND_REACHED;
	e->peer_reached_at[msg.round & 1] =
		e->peer_averaging && e->peer_reached ? msg.round : 0;
	if (!may_complete(e, msg.round))
		return 0;
	if (msg.round != e->completed + 1)
		return -EBADMSG;
	if (e->sent_round == msg.round)
		return complete(e, msg.round, msg.degree, msg.flags, msg.payload,
				msg.payload_len);
	/* The peer stepped before us: keep its round until we project. */
	return keep_early(e, &msg);
}

/* ---- MODEL ------------------------------------------------------------ */

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
	if (GSP_PROTO_MINOR(msg.version) < GSP_PROTO_VERSION_MINOR) {
		char text[128];
		snprintf(text, sizeof(text), "peer speaks protocol %u.%u; edges need %u.%u "
			 "(RESYNC with ended generations and weights)", GSP_PROTO_MAJOR(msg.version),
			 GSP_PROTO_MINOR(msg.version), GSP_PROTO_VERSION_MAJOR,
			 GSP_PROTO_VERSION_MINOR);
		EDGE_ROW(S3);
		s->counters->version_mismatch++;
		gsp_err("peer %s: refused: %s", e->name, text);
		s->ops->error(s->ctx, e, text);
		s->ops->close(s->ctx, e, GSP_BYE_VERSION, text);
		return 0;
	}
	e->peer_attached = msg.n_tensors != 0;
	if (s->attached && e->peer_attached &&
	    memcmp(msg.fingerprint, s->model.fingerprint, GSP_FINGERPRINT_BYTES) != 0) {
		/* GOODBYE takes the first 256 bytes. */
		char text[2 * GSP_MODEL_SUMMARY_MAX + 64];
		snprintf(text, sizeof(text), "model mismatch (%s): ours %s; theirs %.*s",
			 mismatch_kind(s->model.summary, msg.summary, msg.summary_len),
			 s->model.summary, (int)msg.summary_len, msg.summary);
		EDGE_ROW(S3);
		s->counters->fingerprint_mismatch++;
		gsp_err("peer %s: refused: %s", e->name, text);
		s->ops->error(s->ctx, e, text);
		s->ops->close(s->ctx, e, GSP_BYE_FINGERPRINT, text);
		return 0;
	}
	EDGE_ROW(S2);
	e->state = EDGE_WAIT_RESYNC;
	if ((err = edge__send_resync(e, false)) != 0) {
		if (e->state != EDGE_DOWN)
			s->ops->close(s->ctx, e, GSP_BYE_INTERNAL, "cannot send RESYNC");
		return 0;
	}
	if (e->state == EDGE_DOWN)
		return 0;        /* the session is gone */
	s->ops->accepted(s->ctx, e);
	return 0;
}

/* ---- frames ----------------------------------------------------------- */

/* Keeps a RESYNC or ROUND that came while the engine is busy.  More than
 * an honest peer sends in one step closes the session: what it sends
 * again after the next RESYNC makes up for what is dropped. */
static int defer(edge *e, const uint8_t *pt, size_t len)
{
	edge_set *s = e->set;
	if (e->n_deferred == EDGE_DEFERRED_MAX) {
		s->ops->close(s->ctx, e, GSP_BYE_INTERNAL, "too many frames during a step");
		return 0;
	}
	uint8_t *copy = gsp_bigmem_malloc(len);
	if (!copy)
		return -ENOMEM;
	memcpy(copy, pt, len);
	e->deferred[e->n_deferred] = copy;
	e->deferred_len[e->n_deferred] = len;
	e->deferred_session[e->n_deferred++] = e->session_no;
	return 0;
}

static int dispatch(edge *e, uint8_t type, const uint8_t *pt, size_t len)
{
	/* An ended session's MODEL says nothing any more. */
	if (edge__quiet(e) && type == GSP_MSG_MODEL)
		return 0;
	/* MODEL first and only then; rounds follow the RESYNC (an ended
	 * session's frames excepted). */
	if (!edge__quiet(e) && (e->state == EDGE_WAIT_MODEL) != (type == GSP_MSG_MODEL))
		return -EBADMSG;
	if (!edge__quiet(e) && type == GSP_MSG_ROUND && e->state == EDGE_WAIT_RESYNC)
		return -EBADMSG;
	switch (type) {
	case GSP_MSG_MODEL:
		return on_model(e, pt, len);
	case GSP_MSG_RESYNC:
		return edge__on_resync(e, pt, len);
	case GSP_MSG_ROUND:
		return on_round(e, pt, len);
	default:
		return -EBADMSG;
	}
}

int edge_frame(edge *e, const uint8_t *pt, size_t len)
{
	uint8_t type;
	int err = gsp_msg_type(pt, len, &type);
	if (err)
		return err;
	if (e->state == EDGE_DOWN ||
	    (type != GSP_MSG_MODEL && type != GSP_MSG_RESYNC && type != GSP_MSG_ROUND))
		return -EBADMSG;
	/* While a step runs, a new session's MODEL waits too: answered now,
	 * our first RESYNC would tell where we stood before the old
	 * session's deferred frames (an ENDING, say) were used, and the
	 * peer would decide on it (PROTOCOL.md 4.6). */
	if (e->set->busy)
		return defer(e, pt, len);
	return dispatch(e, type, pt, len);
}

void edge_finish(edge *e)
{
	edge__settle(e);
}

void edge_after_busy(edge *e)
{
	edge_set *s = e->set;
	/* A frame may end the session or queue more: take the list first. */
	uint8_t *kept[EDGE_DEFERRED_MAX];
	size_t kept_len[EDGE_DEFERRED_MAX];
	uint64_t kept_session[EDGE_DEFERRED_MAX];
	unsigned n = e->n_deferred;
	memcpy(kept, e->deferred, sizeof(kept));
	memcpy(kept_len, e->deferred_len, sizeof(kept_len));
	memcpy(kept_session, e->deferred_session, sizeof(kept_session));
	e->n_deferred = 0;
	for (unsigned k = 0; k < n; k++) {
		/* An ended session's frames still count (a ROUND completes,
		 * a RESYNC tells how the peer ended a generation), but
		 * nothing is answered. */
		e->input = kept_session[k] != e->session_no || e->state == EDGE_DOWN
				   ? INPUT_KEPT_ENDED : INPUT_KEPT;
		uint8_t type = 0;
		int err = gsp_msg_type(kept[k], kept_len[k], &type);
		if (!err)
			err = dispatch(e, type, kept[k], kept_len[k]);
		bool was_quiet = edge__quiet(e);
		e->input = INPUT_KEPT;
		free(kept[k]);
		if (err && !was_quiet && e->state != EDGE_DOWN) {
			s->counters->rx_malformed++;
			s->ops->close(s->ctx, e, GSP_BYE_MALFORMED, gsp_strerror(err));
		} else if (err) {
			s->counters->rx_malformed++;
		}
	}
	e->input = INPUT_LIVE;
	edge__settle(e);
}
