/* edges: the set of a daemon's edges over the registered model's node
 * (edge.h): attaching and detaching the model, steps, queries.  Calls
 * edge_core, edge_sched, edge_end, edge, edge_records and edges_pace
 * (the module's order: edge_core.c). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "edge_impl.h"
#include "log.h"

int edge_set_init(edge_set *s, const edge_ops *ops, void *ctx, counters *c)
{
	*s = (edge_set){.ops = ops, .ctx = ctx, .counters = c, .sim_index = -1};
	s->edge = calloc(GSP_MAX_PEERS, sizeof(*s->edge));
	return s->edge ? 0 : -ENOMEM;
}

static void drop_early(edge *e)
{
	free(e->early);
	e->early = NULL;
}

static void drop_kept(edge *e)
{
	for (unsigned i = 0; i < e->n_deferred; i++)
		free(e->deferred[i]);
	e->n_deferred = 0;
	drop_early(e);
	for (int k = 0; k < 2; k++) {
		edge__msg_free(&e->sent[k]);
		edge__msg_free(&e->resume_sent[k]);
	}
	edge__msg_free(&e->ended_msg);
	free(e->resume);
	free(e->saved);
	e->resume = e->saved = NULL;
}

void edge_set_free(edge_set *s)
{
	for (size_t i = 0; i < s->n; i++)
		drop_kept(&s->edge[i]);
	free(s->edge);
	s->edge = NULL;
	s->n = 0;
	(void)edges_set_schedule(s, NULL, 0, 0, 0);
}

/* A disabled engine edge for slot e (its generation starts later). */
static int engine_edge_add(edge_set *s)
{
	static const uint8_t zero[GSP_SEED_BYTES];
	int k = gsp_node_add_edge(s->model.node, 0.5f, GSP_ROLE_LO, zero, sizeof(zero));
	return k < 0 ? k : gsp_node_edge_disable(s->model.node, (size_t)k);
}

edge *edge_add(edge_set *s, const gsp_peer_config *cfg, const char *name, bool lo)
{
	if (s->n == GSP_MAX_PEERS || (s->attached && engine_edge_add(s) != 0))
		return NULL;
	edge *e = &s->edge[s->n];
	/* A new daemon: it cannot say what it applied before. */
	*e = (edge){.set = s, .index = s->n, .cfg = cfg, .name = name, .lo = lo,
		    .no_history = true};
	s->n++;
	return e;
}

bool edge_reusable(const edge *e)
{
	const edge_set *s = e->set;
	gsp_edge_info info;
	if (s->busy || edge__live(e) || e->ending_self || e->ending != TARGET_NONE ||
	    e->next_generation || e->state != EDGE_DOWN || e->resume || e->n_deferred)
		return false;
	/* The ended generation's last update has landed. */
	return !s->attached || gsp_node_edge_info(s->model.node, e->index, &info) != 0 ||
	       info.state != GSP_EDGE_COMPLETED;
}

void edge_reuse(edge *e, const gsp_peer_config *cfg, const char *name, bool lo)
{
	edge_set *s = e->set;
	size_t index = e->index;
	gsp_edge_info info = {0};
	if (s->attached)
		(void)gsp_node_edge_info(s->model.node, index, &info);
	drop_kept(e);
	/* The engine edge stays disabled until the next generation resets
	 * it; its byte counts carry on, so the new peer's totals start
	 * below them (modulo 2^64: totals are done + the engine's). */
	*e = (edge){.set = s, .index = index, .cfg = cfg, .name = name, .lo = lo,
		    .no_history = true, .exact_bytes_done = 0 - info.exact_bytes,
		    .message_bytes_done = 0 - info.tx_bytes, .cache = info};
	s->dirty = true;
}

void edge_unrestore(edge *e)
{
	edge_set *s = e->set;
	if (s->attached)    /* an ended generation's update still to land */
		(void)gsp_node_edge_disable(s->model.node, e->index);
	edge_reuse(e, e->cfg, e->name, e->lo);
}

int edges_attach(edge_set *s, const edge_model *m)
{
	/* Another buffer than the records': their generations end at
	 * their counts (as when their state cannot load), this one starts
	 * afresh. */
	bool ours = edgestate_owned_by(&s->owner, &m->owner);
	bool kept = false;       /* generations of before a restart */
	for (size_t i = 0; i < s->n; i++)
		kept |= s->edge[i].resume != NULL;
	if (!ours && kept)
		gsp_info("the registered buffer is not the one the edges' records "
			 "describe (another trainer or model): their generations end "
			 "at their counts, new ones start");
	s->owner = m->owner;
	s->dirty = true;
	s->model = *m;
	s->attached = true;
	s->detaching = false;
	s->steps = 0;
	for (size_t i = 0; i < s->n; i++) {
		int err = engine_edge_add(s);
		if (err) {
			s->attached = false;
			return err;
		}
		s->edge[i].rounds_completed = 0;
	}
	/* Generations of before a restart continue (edge_restore). */
	for (size_t i = 0; i < s->n; i++)
		if (s->edge[i].resume)
			edge__resume(&s->edge[i], ours);
	return 0;
}

static void land_ended(edge_set *s)
{
	for (size_t i = 0; i < s->n; i++) {
		gsp_edge_info info;
		if (edge__live(&s->edge[i]) && gsp_node_edge_info(s->model.node, i, &info) == 0 &&
		    info.state == GSP_EDGE_COMPLETED &&
		    gsp_node_edge_rollback(s->model.node, i, info.round - 1) < 0)
			return;   /* nothing lands then: as without a write */
	}
	if (gsp_node_apply(s->model.node) < 0)
		gsp_warn("DETACH: the last update of an ended generation could not land");
}

void edges_detach(edge_set *s)
{
	if (!s->attached)
		return;
	/* The client unmaps the buffer at DETACH.  Inside its write (a
	 * DETACH's), the last update of a generation that ended at a count
	 * including it (the peer ended it after we completed that round)
	 * lands first.  A live edge ends below at what it applied (its
	 * RESYNC offered no more), so its update completed and not applied
	 * is dropped before that apply; the peer takes back what it applied
	 * beyond our count (PROTOCOL.md 4.6).  Without a write under way
	 * nothing lands. */
	if (s->writing)
		land_ended(s);
	edges_cache(s);   /* the engine's last counts */
	s->takeback_waiting = false;   /* each live edge ends below */
	for (size_t i = 0; i < s->n; i++) {
		edge *e = &s->edge[i];
		/* A round the peer ended before goes first. */
		if (edge__live(e) && e->ending == TARGET_KNOWN && edge__applied(e) > e->target)
			edge__take_back(e);
		if (edge__live(e))
			edge__record_end(e, edge__applied(e));
		else if (e->ended_generation == e->generation && e->ended_applied &&
			 e->cache.state == GSP_EDGE_COMPLETED)
			edge__drop_landing(e);
		e->next_generation = 0;
		e->ending = TARGET_NONE;
		drop_early(e);
		/* The engine's counts go with it; keep their totals. */
		e->exact_bytes_done += e->cache.exact_bytes;
		e->message_bytes_done += e->cache.tx_bytes;
		memset(&e->cache, 0, sizeof(e->cache));
	}
	s->attached = false;
	s->detaching = false;
	memset(&s->model, 0, sizeof(s->model));
}

size_t edges_end_begin(edge_set *s)
{
	s->detaching = true;
	for (size_t i = 0; i < s->n; i++)
		(void)edge_end_begin(&s->edge[i], END_DETACH);
	return edges_ending(s);
}

size_t edges_ending(const edge_set *s)
{
	size_t n = 0;
	for (size_t i = 0; i < s->n; i++)
		n += edge__live(&s->edge[i]) && s->edge[i].ending_self;
	return n;
}

void edges_step_done(edge_set *s)
{
	s->steps++;
	edges_finish(s);
	for (size_t i = 0; i < s->n; i++)
		edge_step_done(&s->edge[i]);
	edges_cache(s);   /* STATUS's counts, also while the next step runs */
}

bool edges_resumable(const edge_set *s)
{
	for (size_t i = 0; i < s->n; i++)
		if (edge__live(&s->edge[i]) && !edge_state_fits(&s->edge[i]))
			return false;
	return true;
}

void edges_release(edge_set *s)
{
	/* Sending calls nothing back into the edges: a send that fails
	 * closes the session (edge_session_down), and the node core looks
	 * at the change on its next loop turn (core_edges_changed), so
	 * edges_release, called from the core's timers only, is never
	 * re-entered. */
	for (size_t i = 0; i < s->n; i++)
		edge_release(&s->edge[i]);
}

void edges_step_begin(edge_set *s, unsigned max_staleness, uint32_t *ret_applied,
		      uint32_t *ret_skipped)
{
	uint32_t applied = 0, skipped = 0;
	for (size_t i = 0; i < s->n; i++) {
		edge *e = &s->edge[i];
		gsp_edge_info info;
		if (gsp_node_edge_info(s->model.node, i, &info) != 0)
			continue;
		if (!edge__live(e) || info.state == GSP_EDGE_IN_FLIGHT)
			skipped++;
		else if (info.state == GSP_EDGE_COMPLETED) {
			applied++;
			e->on_time = edge_staleness(e) < max_staleness ? e->on_time + 1 : 0;
			/* It keeps pace again: wait for it from now on. */
			if (e->on_time >= EDGE_PACE_ROUNDS)
				e->waited_ms = 0;
			if (e->straggler && e->on_time >= EDGE_PACE_ROUNDS) {
				e->straggler = false;
				gsp_info("peer %s: keeps pace again", e->name);
			}
			e->last_apply_step = s->steps + 1;
			s->dirty = true;
		}
	}
	*ret_applied = applied;
	*ret_skipped = skipped;
}

void edges_finish(edge_set *s)
{
	for (size_t i = 0; i < s->n; i++)
		edge_finish(&s->edge[i]);
}

void edges_after_busy(edge_set *s)
{
	for (size_t i = 0; i < s->n; i++)
		edge_after_busy(&s->edge[i]);
}

/* ---- queries ---------------------------------------------------------- */

void edges_drain_begin(edge_set *s)
{
	for (size_t i = 0; i < s->n; i++)
		s->edge[i].drain_answered = false;
}

int edges_answer_early(edge_set *s)
{
	int r = 0;
	for (size_t i = 0; r >= 0 && i < s->n; i++) {
		edge *e = &s->edge[i];
		gsp_edge_info info;
		if (!edge__live(e) || !e->early || e->drain_answered ||
		    e->early_generation != e->generation ||
		    gsp_node_edge_info(s->model.node, i, &info) != 0 ||
		    info.state == GSP_EDGE_IN_FLIGHT || e->early_round != info.round + 1)
			continue;
		if (info.state == GSP_EDGE_COMPLETED)
			r = gsp_node_apply(s->model.node);
		if (r >= 0)
			r = gsp_node_project_edge(s->model.node, i);
		e->drain_answered = true;
	}
	if (r >= 0)
		for (size_t i = 0; i < s->n; i++)
			edge_step_done(&s->edge[i]);
	edges_cache(s);
	return r < 0 ? r : 0;
}

bool edges_will_write(const edge_set *s)
{
	if (s->takeback_waiting)
		return true;
	for (size_t i = 0; i < s->n; i++) {
		gsp_edge_info info;
		if (gsp_node_edge_info(s->model.node, i, &info) == 0 &&
		    info.state == GSP_EDGE_COMPLETED)
			return true;
	}
	return false;
}

bool edges_start_waits_landing(const edge_set *s)
{
	for (size_t i = 0; s->attached && i < s->n; i++) {
		const edge *e = &s->edge[i];
		gsp_edge_info info;
		if (e->gen == GEN_NONE && e->next_generation && e->state == EDGE_UP &&
		    gsp_node_edge_info(s->model.node, e->index, &info) == 0 &&
		    info.state == GSP_EDGE_COMPLETED)
			return true;
	}
	return false;
}

size_t edges_up(const edge_set *s)
{
	size_t n = 0;
	for (size_t i = 0; i < s->n; i++)
		n += edge__live(&s->edge[i]) && s->edge[i].state == EDGE_UP;
	return n;
}

size_t edges_live_down(const edge_set *s)
{
	size_t n = 0;
	for (size_t i = 0; i < s->n; i++)
		n += edge__live(&s->edge[i]) && !s->edge[i].ending_self && s->edge[i].state != EDGE_UP;
	return n;
}

/* Both ends' ROUNDs of e's last completed round said REACHED. */
static bool avg_over(const edge *e)
{
	uint64_t r = e->completed;
	return r && e->peer_reached_at[r & 1] == r && e->sent_reached_at[r & 1] == r;
}

void edges_avg_begin(edge_set *s)
{
	for (size_t i = 0; i < s->n; i++) {
		memset(s->edge[i].peer_reached_at, 0, sizeof(s->edge[i].peer_reached_at));
		memset(s->edge[i].sent_reached_at, 0, sizeof(s->edge[i].sent_reached_at));
	}
}

size_t edges_avg_settled_ended(const edge_set *s)
{
	size_t n = 0;
	for (size_t i = 0; i < s->n; i++)
		n += s->edge[i].gen == GEN_NONE && avg_over(&s->edge[i]);
	return n;
}

size_t edges_avg_settle(edge_set *s)
{
	size_t going = 0;
	for (size_t i = 0; i < s->n; i++) {
		edge *e = &s->edge[i];
		if (!edge__avg_runs(e))
			continue;
		bool over = avg_over(e);
		/* Held, this end projects no more rounds on it: its peer, which
		 * decided the same, waits for none.  (Choco cannot hold an
		 * edge: its rounds need every edge.) */
		if (over && !e->avg_held &&
		    gsp_node_edge_hold(s->model.node, e->index, true) == 0)
			e->avg_held = true;
		going += !over;
	}
	return going;
}

void edges_avg_release(edge_set *s)
{
	for (size_t i = 0; i < s->n; i++) {
		edge *e = &s->edge[i];
		if (e->avg_held && s->attached)
			(void)gsp_node_edge_hold(s->model.node, e->index, false);
		e->avg_held = false;
	}
	edges_sched_end(s);
}

void edges_cache(edge_set *s)
{
	if (s->busy)
		return;   /* the engine is in use off the loop */
	for (size_t i = 0; i < s->n; i++)
		if (!s->attached ||
		    gsp_node_edge_info(s->model.node, i, &s->edge[i].cache) != 0)
			memset(&s->edge[i].cache, 0, sizeof(s->edge[i].cache));
}
