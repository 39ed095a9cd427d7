/*
 * A pair of daemons' edge sets for tests, with no network: each end has
 * its own engine node over its own parameters and one edge to the other;
 * frames one end sends wait in a queue until the test delivers them, so
 * a test scripts every interleaving (and, later, every fault).  Each end
 * runs the daemon's node core (daemon/core.h) for its writes into the
 * buffer and its records before frames: the ops below are its disk (a
 * list of records versions), its undo section (a copy of the buffer)
 * and a loop whose timers the test fires.  Header-only, static
 * functions.
 */
#ifndef GSP_TEST_EDGEPAIR_H
#define GSP_TEST_EDGEPAIR_H

#include <check.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core.h"
#include "edge.h"
#include "edgestate.h"

#define EP_QUEUE 64
#define EP_FILES 8

typedef struct ep_frame {
	uint8_t *data;
	size_t len;
	unsigned persists;       /* the sender's records version when sent */
} ep_frame;

/* One version of an end's records file, as daemon/mesh.c writes it:
 * edgestate_encode's bytes, with the write count they hold. */
typedef struct ep_file {
	uint8_t *buf;
	size_t len;
	uint64_t writes;
} ep_file;

typedef struct ep_end ep_end;
struct ep_end {
	edge_set set;
	core core;               /* the daemon's node core over set */
	const core_ops *core_ops; /* its ops (NULL: ep_core_ops); kept
				   * across ep_restart */
	bool armed[CORE_TIMERS]; /* its timers (the test fires them: ep_fire) */
	uint64_t due[CORE_TIMERS];  /* when, on its clock */
	uint64_t clock;          /* the core's clock (ms): a timer that fires
				  * moves it to its time */
	bool replied;            /* ep_step: the STEP's reply came */
	bool in_edge;            /* inside an edge call (a frame, a session):
				  * the core must not run (nng's rule) */
	int step_err;
	/* The next send_fails sends fail as the link's do: the session
	 * closes inside the send.  What the close did there: whether the
	 * core's CHANGED timer was armed (the core looks on its next turn)
	 * and whether the records were saved. */
	unsigned send_fails;
	bool in_send;
	bool changed_armed_in_close, saved_in_close;
	edge *e;
	counters counters;
	gsp_peer_config cfg;
	gsp_layout *layout;
	float *params;
	size_t n_floats;
	gsp_node *node;
	bool session;            /* the fake session is up */
	ep_end *other;
	ep_frame out[EP_QUEUE];  /* sent, not yet delivered */
	unsigned n_out;
	int closes, accepted, changes, ended;
	uint16_t degree;         /* what ops->degree says (1: a pair) */
	uint16_t close_reason;
	char error[512];
	uint32_t max_frame;
	/* The records as the core saves them (its save_records op), at the
	 * same points: version `persists` is the newest, the EP_FILES newest are
	 * kept; delivered: the newest version any delivered frame followed. */
	ep_file files[EP_FILES];
	unsigned persists, delivered;
	float *undo;             /* the buffer's undo copy (PROTOCOL.md 5.4) */
	edge_model later;        /* the model the trainer registers (again:
				  * ep_attach, ep_register_again) */
	/* Called by ep_changed after the core heard the change (and saved the
	 * records); NULL: nothing.  Kept across ep_restart. */
	void (*on_changed)(ep_end *x);
	void *hook_ctx;
};

typedef struct edgepair {
	ep_end a, b;             /* a is the lo end */
} edgepair;

static inline void ep_end_session(ep_end *x);

/* What is observable of e now, as a value for assertions. */
static inline edge_view ep_view(const edge *e)
{
	edge_view v;
	edge_view_of(e, &v);
	return v;
}

static inline int ep_send(void *ctx, edge *e, const uint8_t *pt, size_t len)
{
	ep_end *x = ctx;
	ck_assert_msg(!x->in_send, "a send from inside a failing send: re-entered");
	ck_assert(x->session);
	if (x->send_fails) {
		unsigned saved = x->persists;
		x->send_fails--;
		x->in_send = true;
		ep_end_session(x);
		x->in_send = false;
		x->changed_armed_in_close = x->armed[CORE_TIMER_CHANGED];
		x->saved_in_close = x->persists != saved;
		return -EPIPE;
	}
	ck_assert_uint_lt(x->n_out, EP_QUEUE);
	x->out[x->n_out].data = malloc(len);
	memcpy(x->out[x->n_out].data, pt, len);
	x->out[x->n_out].persists = x->persists;
	x->out[x->n_out++].len = len;
	return 0;
}

/* The session ends at both ends, as a link close does; frames in flight
 * are lost. */
static inline void ep_close(void *ctx, edge *e, uint16_t reason, const char *text)
{
	ep_end *x = ctx;
	x->closes++;
	x->close_reason = reason;
	ep_end_session(x);
}

static inline void ep_error(void *ctx, edge *e, const char *text)
{
	ep_end *x = ctx;
	snprintf(x->error, sizeof(x->error), "%s", text);
}

static inline void ep_accepted(void *ctx, edge *e)
{
	((ep_end *)ctx)->accepted++;
}

static inline void ep_max_frame(void *ctx, edge *e, uint32_t max_body)
{
	((ep_end *)ctx)->max_frame = max_body;
}

/* One more version of the records file (the core's save_records: what
 * mesh.c writes to the disk). */
static inline void ep_save(ep_end *x)
{
	ck_assert_msg(!x->in_edge, "the records were saved from inside an edge's call: "
		      "the core was re-entered");
	edge_record r;
	edge_record_of(x->e, &r);
	ep_file *f = &x->files[++x->persists % EP_FILES];
	free(f->buf);
	f->buf = NULL;
	ck_assert_int_eq(edgestate_encode(&r, 1, x->set.writes, &x->set.owner, &f->buf, &f->len), 0);
	f->writes = x->set.writes;
	edges_records_saved(&x->set);
}

/* The core's persist: the records, when something changed, no step runs
 * off the loop and no write is under way; then the ROUNDs they keep go
 * out. */
static inline void ep_persist(ep_end *x)
{
	core_persist(&x->core);
}

static inline void ep_changed(void *ctx)
{
	ep_end *x = ctx;
	x->changes++;
	core_edges_changed(&x->core);
	if (x->on_changed)
		x->on_changed(x);
}

static inline uint16_t ep_degree(void *ctx)
{
	return ((ep_end *)ctx)->degree;
}

static inline void ep_ended(void *ctx, edge *e, edge_end_why why)
{
	((ep_end *)ctx)->ended++;
}

static const edge_ops ep_ops = {
	.send = ep_send, .close = ep_close, .error = ep_error,
	.accepted = ep_accepted, .set_max_frame = ep_max_frame,
	.changed = ep_changed, .degree = ep_degree, .ended = ep_ended,
};

/* ---- the core's ops: a loop the test drives -------------------------- */

static inline uint64_t ep_now_ms(void *ctx)
{
	return ((ep_end *)ctx)->clock;
}

static inline void ep_timer_start(void *ctx, core_timer t, uint64_t ms)
{
	ep_end *x = ctx;
	x->armed[t] = true;
	x->due[t] = x->clock + ms;
}

static inline void ep_timer_stop(void *ctx, core_timer t)
{
	((ep_end *)ctx)->armed[t] = false;
}

static inline bool ep_timer_active(void *ctx, core_timer t)
{
	return ((ep_end *)ctx)->armed[t];
}

static inline int ep_engine_step(void *ctx)
{
	return gsp_node_step(((ep_end *)ctx)->node);
}

static inline bool ep_no_offload(void *ctx)
{
	return false;
}

static inline bool ep_offload(void *ctx, bool copy, uint64_t write_seq)
{
	return false;
}

/* The buffer's undo section (PROTOCOL.md 5.4): a copy of the buffer. */
static inline void ep_undo_begin(void *ctx, uint64_t write_seq)
{
	ep_end *x = ctx;
	memcpy(x->undo, x->params, x->n_floats * sizeof(float));
}

static inline void ep_nothing(void *ctx)
{
}

static inline void ep_save_op(void *ctx)
{
	ep_save(ctx);
}

static inline void ep_bytes(void *ctx, uint64_t *ret_sent, uint64_t *ret_received)
{
	*ret_sent = *ret_received = 0;
}

static const core_ops ep_core_ops = {
	.now_ms = ep_now_ms, .timer_start = ep_timer_start, .timer_stop = ep_timer_stop,
	.timer_active = ep_timer_active, .engine_step = ep_engine_step,
	.offloads = ep_no_offload, .offload = ep_offload,
	.undo_begin = ep_undo_begin, .undo_end = ep_nothing, .save_records = ep_save_op,
	.release_model = ep_nothing, .idle = ep_nothing, .bytes = ep_bytes,
};

/* A new core over x's set, as a daemon starts with: MaxStaleness 4,
 * MaxWait, DrainWait 100 ms, DetachWait 1 s. */
static inline void ep_core_init(ep_end *x)
{
	core_init(&x->core, &x->set, x->core_ops ? x->core_ops : &ep_core_ops, x, 4, 100);
	x->core.drain_wait_ms = 100;
	x->core.detach_wait_ms = 1000;
	memset(x->armed, 0, sizeof(x->armed));
}

/* x's core runs over ops from now on (also after ep_restart). */
static inline void ep_use_ops(ep_end *x, const core_ops *ops)
{
	x->core_ops = ops;
	core_init(&x->core, &x->set, ops, x, x->core.max_staleness, x->core.max_wait_ms);
	x->core.drain_wait_ms = 100;
	x->core.detach_wait_ms = 1000;
}

/* Timer t of x's core fires (it must be armed): the clock moves to its
 * time. */
static inline void ep_fire(ep_end *x, core_timer t)
{
	ck_assert(x->armed[t]);
	x->armed[t] = false;
	if (x->due[t] > x->clock)
		x->clock = x->due[t];
	core_timer_fired(&x->core, t);
}

/* The loop's next turn at x: the core looks at the edges' changes (the
 * records, then the frames they keep).  Never from inside an edge's
 * call. */
static inline void ep_turn(ep_end *x)
{
	for (int n = 0; x->armed[CORE_TIMER_CHANGED]; n++) {
		ck_assert_msg(n < 100, "the core's changes never settle");
		ep_fire(x, CORE_TIMER_CHANGED);
	}
}

static inline void ep_drop_queue(ep_end *x)
{
	for (unsigned i = 0; i < x->n_out; i++)
		free(x->out[i].data);
	x->n_out = 0;
}

static inline void ep_end_session(ep_end *x)
{
	ep_end *y = x->other;
	if (x->session) {
		x->session = false;
		edge_session_down(x->e);
	}
	if (y->session) {
		y->session = false;
		edge_session_down(y->e);
	}
	ep_drop_queue(x);
	ep_drop_queue(y);
}

/* One end: parameters value0 + i * slope, a node with `cfg`, the model
 * attached (fingerprint byte fp). */
static inline void ep_end_init(ep_end *x, const char *spec, const gsp_config *cfg,
			float value0, float slope, uint8_t fp, bool lo)
{
	memset(x, 0, sizeof(*x));
	x->degree = 1;
	ep_core_init(x);
	ck_assert_int_eq(edge_set_init(&x->set, &ep_ops, x, &x->counters), 0);
	x->degree = 1;
	/* A pair: each end has one edge; MaxRoundChange the daemon's
	 * default. */
	edges_configure(&x->set, 1, 1000.0f);
	x->cfg.index = -1;
	x->e = edge_add(&x->set, &x->cfg, lo ? "lo" : "hi", lo);
	ck_assert_ptr_nonnull(x->e);
	ck_assert_int_eq(gsp_layout_parse(spec, &x->layout), 0);
	x->n_floats = gsp_layout_floats(x->layout);
	x->params = malloc(x->n_floats * sizeof(float));
	for (size_t i = 0; i < x->n_floats; i++)
		x->params[i] = value0 + slope * (float)((i * 7919) % 101);
	ck_assert_int_eq(gsp_node_new(x->layout, x->params, cfg, &x->node), 0);
	/* The largest ROUND as the daemon sizes it (model.c): either shape
	 * of message, or the whole model (an AVERAGE's finite rounds). */
	uint64_t max_payload = (uint64_t)x->n_floats * 4;
	for (uint64_t r = 1; r <= 2; r++) {
		int64_t sz = gsp_node_method_message_size(x->node, r);
		if (sz > (int64_t)max_payload)
			max_payload = (uint64_t)sz;
	}
	edge_model m = {.node = x->node, .layout = x->layout, .method = (uint8_t)cfg->method,
			.rank = (uint16_t)cfg->rank, .summary = "test model",
			.max_payload = max_payload};
	memset(m.fingerprint, fp, sizeof(m.fingerprint));
	/* The buffer the records name (edgestate.h v4): a re-register keeps
	 * it unless a test gives later another. */
	m.owner = (edge_owner){.set = true, .dev = 1, .ino = lo ? 1 : 2};
	memset(m.owner.fingerprint, fp, sizeof(m.owner.fingerprint));
	ck_assert_int_eq(edges_attach(&x->set, &m), 0);
	x->later = m;
	x->undo = malloc(x->n_floats * sizeof(float));
	memcpy(x->undo, x->params, x->n_floats * sizeof(float));
	edges_records_changed(&x->set);
	ep_persist(x);
}

/* The trainer registers the same parameters again after its model went
 * (the core detached the edges): a new engine node, the old
 * generation's state gone at this end. */
static inline void ep_register_again(ep_end *x, const gsp_config *cfg)
{
	ck_assert(!x->set.attached);
	if (x->session)
		ep_end_session(x);
	gsp_node_free(x->node);
	ck_assert_int_eq(gsp_node_new(x->layout, x->params, cfg, &x->node), 0);
	x->later.node = x->node;
	ck_assert_int_eq(edges_attach(&x->set, &x->later), 0);
	ep_turn(x);
}

/* The trainer detaches and registers the same parameters again: a new
 * engine node, the old generation's state gone at this end. */
static inline void ep_reregister(ep_end *x, const gsp_config *cfg)
{
	edge_model m = x->set.model;
	if (x->session)
		ep_end_session(x);
	edges_detach(&x->set);
	gsp_node_free(x->node);
	ck_assert_int_eq(gsp_node_new(x->layout, x->params, cfg, &x->node), 0);
	m.node = x->node;
	ck_assert_int_eq(edges_attach(&x->set, &m), 0);
}

static inline const uint8_t *ep_copy(const uint8_t *p, uint32_t len)
{
	uint8_t *c = len ? malloc(len) : NULL;
	if (c)
		memcpy(c, p, len);
	return c;
}

/* The daemon at x is killed and restarts: a new edge set and engine node
 * over the same parameters (the trainer's buffer survives).  With a
 * records file f (one of x->files), its edge reads it as the daemon does
 * at start; without (NULL), it starts with no history.  undo: the kill
 * came inside a write that f does not count, and the client put the
 * parameters back from the undo copy (PROTOCOL.md 5.4).  The model is
 * attached again at once (attach, as when the trainer registers at
 * once), or later by ep_attach. */
static inline void ep_restart_from(ep_end *x, const gsp_config *cfg, const ep_file *f,
				   bool undo, bool attach)
{
	if (x->session)
		ep_end_session(x);
	if (undo)
		memcpy(x->params, x->undo, x->n_floats * sizeof(float));
	edge_model m = x->set.model;
	bool lo = ep_view(x->e).lo;
	const char *name = ep_view(x->e).name;
	edge_set_free(&x->set);
	gsp_node_free(x->node);
	ep_core_init(x);
	ck_assert_int_eq(edge_set_init(&x->set, &ep_ops, x, &x->counters), 0);
	edges_configure(&x->set, 1, 1000.0f);
	x->e = edge_add(&x->set, &x->cfg, name, lo);
	ck_assert_int_eq(gsp_node_new(x->layout, x->params, cfg, &x->node), 0);
	m.node = x->node;
	x->later = m;
	if (attach)
		ck_assert_int_eq(edges_attach(&x->set, &m), 0);
	if (f && f->buf) {
		edge_record *r = calloc(EDGESTATE_MAX, sizeof(*r));
		uint64_t writes;
		edge_owner owner;
		ck_assert_int_eq(edgestate_parse(f->buf, f->len, r, &writes, &owner), 1);
		edges_records_found(&x->set, writes, &owner);
		ck_assert_int_eq(edge_restore(x->e, &r[0]), 0);
		free(r);
	}
	ep_turn(x);
}

/* Killed and restarted with its newest records (records), or none; a
 * write under way is undone by the client. */
static inline void ep_restart(ep_end *x, const gsp_config *cfg, bool records,
			      bool attach)
{
	ep_restart_from(x, cfg, records ? &x->files[x->persists % EP_FILES] : NULL,
			x->set.writing, attach);
}

/* The trainer registers again after ep_restart(..., false). */
static inline void ep_attach(ep_end *x)
{
	ck_assert_int_eq(edges_attach(&x->set, &x->later), 0);
	ep_turn(x);
}

static inline void ep_init(edgepair *p, const char *spec, const gsp_config *cfg)
{
	ep_end_init(&p->a, spec, cfg, 1.0f, 0.01f, 1, true);
	ep_end_init(&p->b, spec, cfg, -2.0f, 0.03f, 1, false);
	p->a.other = &p->b;
	p->b.other = &p->a;
}

static inline void ep_end_free(ep_end *x)
{
	ep_drop_queue(x);
	edges_detach(&x->set);
	for (int k = 0; k < EP_FILES; k++)
		free(x->files[k].buf);
	free(x->undo);
	edge_set_free(&x->set);
	gsp_node_free(x->node);
	gsp_layout_free(x->layout);
	free(x->params);
}

static inline void ep_free(edgepair *p)
{
	ep_end_free(&p->a);
	ep_end_free(&p->b);
}

/* A session comes up at both ends with one shared seed. */
static inline void ep_session_up(edgepair *p, uint8_t seed_byte)
{
	uint8_t seed[GSP_SEED_BYTES];
	memset(seed, seed_byte, sizeof(seed));
	p->a.session = p->b.session = true;
	/* A link's cap until both ends' models match (link_core.c). */
	p->a.max_frame = p->b.max_frame = GSP_PROTO_CONTROL_MAX;
	p->a.in_edge = p->b.in_edge = true;
	edge_session_up(p->a.e, seed);
	edge_session_up(p->b.e, seed);
	p->a.in_edge = p->b.in_edge = false;
	ep_turn(&p->a);
	ep_turn(&p->b);
}

/* Delivers x's oldest queued frame to the other end; returns what
 * edge_frame returned (a malformed frame closes the session, as the link
 * does), or 1 when the queue was empty. */
static inline int ep_deliver_one(ep_end *x)
{
	if (x->n_out == 0)
		return 1;
	ep_frame f = x->out[0];
	memmove(x->out, x->out + 1, (x->n_out - 1) * sizeof(*x->out));
	x->n_out--;
	if (f.persists > x->delivered)
		x->delivered = f.persists;
	/* The receiving link would close on it (and again on every session
	 * it resends it in): no end may send past the other's cap. */
	ck_assert_msg(f.len + GSP_AEAD_TAG_BYTES <= x->other->max_frame,
		      "frame type %u of %zu bytes over the receiver's cap %u",
		      f.data[0], f.len, x->other->max_frame);
	x->other->in_edge = true;
	int err = edge_frame(x->other->e, f.data, f.len);
	x->other->in_edge = false;
	ep_turn(x->other);
	if (err < 0 && getenv("EP_DEBUG"))
		fprintf(stderr, "refused frame type %u (%zu bytes) in state %d: %d\n",
			f.data[0], f.len, ep_view(x->other->e).state, err);
	free(f.data);
	if (err < 0)
		ep_close(x->other, x->other->e, GSP_BYE_MALFORMED, "malformed");
	return err;
}

/* Delivers everything queued, both ways, until both queues are empty. */
static inline void ep_pump(edgepair *p)
{
	for (;;) {
		ep_turn(&p->a);
		ep_turn(&p->b);
		if (!p->a.n_out && !p->b.n_out)
			break;
		if (p->a.n_out)
			ck_assert_int_eq(ep_deliver_one(&p->a), 0);
		if (p->b.n_out)
			ck_assert_int_eq(ep_deliver_one(&p->b), 0);
	}
}

/* A write into the buffer, the core's: rounds that wait to be taken
 * back by subtraction are, first. */
static inline void ep_write_begin(ep_end *x)
{
	core_write_begin(&x->core, false);
}

static inline void ep_write_end(ep_end *x)
{
	core_write_end(&x->core);
}

static inline void ep_on_step(void *client, const step_result *r)
{
	ep_end *x = client;
	x->replied = true;
	x->step_err = r->err;
}

/* A STEP, the core's, on the loop: the loop runs (x's timers fire) until
 * its reply; 0 or the error it replied. */
static inline int ep_step(ep_end *x)
{
	static const core_timer order[] = {CORE_TIMER_CHANGED, CORE_TIMER_TAKEBACK,
					   CORE_TIMER_WAIT, CORE_TIMER_REPLY};
	x->replied = false;
	int err = core_step(&x->core, x, 0, ep_on_step);
	if (err)
		return err;
	for (int n = 0; !x->replied && n < 100; n++)
		for (unsigned k = 0; k < sizeof(order) / sizeof(order[0]); k++)
			if (x->armed[order[k]]) {
				ep_fire(x, order[k]);
				break;
			}
	ck_assert_msg(x->replied, "a STEP got no reply");
	return x->step_err;
}

static inline gsp_edge_info ep_info(const ep_end *x)
{
	gsp_edge_info info;
	ck_assert_int_eq(gsp_node_edge_info(x->node, 0, &info), 0);
	return info;
}

/* Sum over both ends' parameters (double). */
static inline double ep_sum(const edgepair *p)
{
	double s = 0;
	for (size_t i = 0; i < p->a.n_floats; i++)
		s += (double)p->a.params[i] + p->b.params[i];
	return s;
}

/* Norm of a - b. */
static inline double ep_distance(const edgepair *p)
{
	double s = 0;
	for (size_t i = 0; i < p->a.n_floats; i++) {
		double d = (double)p->a.params[i] - p->b.params[i];
		s += d * d;
	}
	return sqrt(s);
}

#endif
