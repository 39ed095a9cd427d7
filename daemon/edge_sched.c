/* edge_sched: an AVERAGE's finite-time schedule on the edges (edge.h,
 * PROTOCOL.md 4.4 FINITE): the schedule the set offers and its id, the
 * FINITE flag of our ROUNDs, opening the window at both ends after the
 * same round, and letting a node's windows go only once all are open, so
 * that the node starts the schedule from its model after all its ordinary
 * rounds.  Calls edge_core only (the module's order: edge_core.c): a
 * window that cannot open is reported, and edge.c ends the generation. */
#include <errno.h>
#include <sodium.h>
#include <stdlib.h>
#include <string.h>

#include "edge_impl.h"
#include "log.h"

/* A schedule's id: BLAKE2b-256 of its steps as f32 little-endian, first
 * four bytes little-endian; never 0 (0 says "none"). */
static uint32_t schedule_id(const float *steps, size_t n)
{
	crypto_generichash_state st;
	uint8_t h[32];
	crypto_generichash_init(&st, NULL, 0, sizeof(h));
	for (size_t t = 0; t < n; t++) {
		uint32_t v;
		uint8_t le[4];
		memcpy(&v, &steps[t], 4);
		for (int b = 0; b < 4; b++)
			le[b] = (uint8_t)(v >> (8 * b));
		crypto_generichash_update(&st, le, sizeof(le));
	}
	crypto_generichash_final(&st, h, sizeof(h));
	uint32_t id = (uint32_t)h[0] | (uint32_t)h[1] << 8 | (uint32_t)h[2] << 16 |
		      (uint32_t)h[3] << 24;
	return id ? id : 1;
}

static void schedule_clear(edge_set *s)
{
	if (s->sched_steps[1] != s->sched_steps[0])
		free(s->sched_steps[1]);
	free(s->sched_steps[0]);
	s->sched_steps[0] = s->sched_steps[1] = NULL;
	s->sched_n = 0;
	s->sched_id[0] = s->sched_id[1] = 0;
	s->ring_nodes = 0;
}

int edges_set_schedule(edge_set *s, const float *steps, size_t n, unsigned ring_nodes,
		       unsigned ring_index)
{
	schedule_clear(s);
	if (!n)
		return 0;
	if (n > GSP_MAX_STEPS || (ring_nodes && (ring_nodes % 2 || ring_index >= ring_nodes)))
		return -EINVAL;
	for (int c = 0; c < (ring_nodes ? 2 : 1); c++) {
		if (!(s->sched_steps[c] = malloc(n * sizeof(*steps)))) {
			schedule_clear(s);
			return -ENOMEM;
		}
		/* Matching c runs rounds t = c mod 2; the other rounds are 0. */
		for (size_t t = 0; t < n; t++)
			s->sched_steps[c][t] = !ring_nodes || t % 2 == (size_t)c ? steps[t] : 0.0f;
		s->sched_id[c] = schedule_id(s->sched_steps[c], n);
	}
	if (!ring_nodes) {
		s->sched_steps[1] = s->sched_steps[0];
		s->sched_id[1] = s->sched_id[0];
	}
	s->sched_n = n;
	s->ring_nodes = ring_nodes;
	s->ring_index = ring_index;
	return 0;
}

/* The ring matching e is in: edge {i, i + 1 mod n} runs rounds t = i mod
 * 2 (0 for a schedule that is the same on every edge, and on 2 nodes,
 * whose one edge is {0, 1} seen from either end). */
static unsigned matching_of(const edge *e)
{
	const edge_set *s = e->set;
	if (s->ring_nodes <= 2 || e->cfg->index < 0)
		return 0;
	unsigned me = s->ring_index, peer = (unsigned)e->cfg->index;
	unsigned first = (me + 1) % s->ring_nodes == peer ? me : peer;
	return first % 2;
}

uint32_t edge__sched_id(const edge *e)
{
	return e->set->sched_id[matching_of(e)];
}

/* Whether this end offers the schedule in its next ROUND of e. */
uint8_t edge__finite_flag(const edge *e)
{
	const edge_set *s = e->set;
	gsp_edge_info info;
	uint32_t id = edge__sched_id(e);
	bool offer = s->attached && s->averaging && s->measured && !s->reached && id &&
		     e->peer_schedule == id && e->weight <= 0.0f &&
		     e->sched == SCHED_NONE && !e->ending_self &&
		     s->model.method <= GSP_METHOD_EXACT &&
		     /* No window open (one closes once a round past it is
		      * applied; records keep it across a restart). */
		     gsp_node_edge_info(s->model.node, e->index, &info) == 0 &&
		     !info.window_end;
	return offer ? GSP_ROUND_FINITE : 0;
}

/* Our flags in our ROUND of `round` (kept: also after a restart). */
static uint8_t sent_flags(const edge *e, uint64_t round)
{
	int k = edge__kept(e, round);
	return k >= 0 && e->sent[k].len > 1 ? e->sent[k].buf[1] : 0;
}

/* The schedule's window on e after round `round`.  A matching schedule's
 * steps are pairwise weights: the engine's step is that over the edge's
 * weight (the same at both ends), and 0 in the rounds e sits out. */
static int window_open(edge *e, uint64_t round)
{
	edge_set *s = e->set;
	const float *steps = s->sched_steps[matching_of(e)];
	float scaled[GSP_MAX_STEPS];
	if (s->ring_nodes) {
		gsp_edge_info info;
		int err = gsp_node_edge_info(s->model.node, e->index, &info);
		if (err)
			return err;
		for (size_t t = 0; t < s->sched_n; t++)
			scaled[t] = steps[t] / info.weight;
		steps = scaled;
	}
	return gsp_node_edge_exact_rounds(s->model.node, e->index, round, steps, s->sched_n);
}

int edge__finite_check(edge *e, uint64_t round, uint8_t peer_flags)
{
	edge_set *s = e->set;
	if (!(peer_flags & GSP_ROUND_FINITE) || !(sent_flags(e, round) & GSP_ROUND_FINITE))
		return 0;
	/* Both ends said FINITE in round `round`: both open the window after
	 * it, and an AVERAGE holds the edge until the node's other windows are
	 * open.  (One that ended meanwhile, at its time limit, holds nothing:
	 * the window's rounds go on in the STEPs that follow.) */
	int err = window_open(e, round);
	if (!err && s->averaging)
		err = gsp_node_edge_hold(s->model.node, e->index, true);
	if (err) {
		/* The peer opens it: the caller ends the generation with it (at
		 * the count both applied, no window round among them), then a
		 * new one starts. */
		gsp_err("peer %s: cannot open the schedule's window after round %llu "
			"(%s): the generation ends", e->name, (unsigned long long)round,
			gsp_strerror(err));
		return err;
	}
	e->sched = s->averaging ? SCHED_WAIT : SCHED_RUN;
	gsp_debug("peer %s: schedule window after round %llu, %zu rounds", e->name,
		  (unsigned long long)round, s->sched_n);
	edge__changed(e);
	return 0;
}

void edge__sched_reset(edge *e)
{
	e->sched = SCHED_NONE;
}

/* The edges an AVERAGE still runs rounds on (not held as over). */
static bool averages_on(const edge *e)
{
	return edge__avg_runs(e) && !e->avg_held;
}

size_t edges_sched_release(edge_set *s, bool force)
{
	size_t waiting = 0;
	for (size_t i = 0; i < s->n; i++) {
		const edge *e = &s->edge[i];
		if (!averages_on(e))
			continue;
		waiting += e->sched == SCHED_WAIT;
		if (force)
			continue;
		/* One that may still agree: the node waits for it, unless its
		 * peer's AVERAGE has reached its target (that peer says REACHED,
		 * not FINITE, so the edge's rounds end the ordinary way). */
		if (e->sched == SCHED_NONE && edge__finite_flag(e) &&
		    !(e->peer_averaging && e->peer_reached))
			return 0;
	}
	for (size_t i = 0; waiting && i < s->n; i++) {
		edge *e = &s->edge[i];
		if (e->sched != SCHED_WAIT)
			continue;
		(void)gsp_node_edge_hold(s->model.node, e->index, false);
		e->sched = SCHED_RUN;
	}
	return waiting;
}

bool edges_sched_waiting(const edge_set *s)
{
	for (size_t i = 0; i < s->n; i++)
		if (s->edge[i].sched == SCHED_WAIT && averages_on(&s->edge[i]))
			return true;
	return false;
}

void edges_sched_end(edge_set *s)
{
	for (size_t i = 0; i < s->n; i++) {
		edge *e = &s->edge[i];
		if (e->sched == SCHED_WAIT && s->attached)
			(void)gsp_node_edge_hold(s->model.node, e->index, false);
		e->sched = SCHED_NONE;
	}
}
