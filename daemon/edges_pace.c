/* edges_pace: the edges a request waits for, and stragglers (edge.h,
 * ARCHITECTURE "Stragglers"): rounds in flight, whether a STEP or DRAIN
 * waits for them and how long, the edge that waited too long becoming a
 * straggler that no request waits for, and each edge's staleness.  Calls
 * no other file of the edge module (the module's order: edge_core.c). */
#include "edge_impl.h"
#include "log.h"

static bool in_flight(const edge *e)
{
	gsp_edge_info info;
	return edge__live(e) && gsp_node_edge_info(e->set->model.node, e->index, &info) == 0 &&
	       info.state == GSP_EDGE_IN_FLIGHT;
}

/* In flight on a working session, not ending: worth waiting for. */
static bool awaited(const edge *e)
{
	return e->state == EDGE_UP && !e->ending_self && in_flight(e);
}

size_t edges_in_flight(const edge_set *s)
{
	size_t n = 0;
	for (size_t i = 0; s->attached && i < s->n; i++)
		n += in_flight(&s->edge[i]);
	return n;
}

size_t edges_awaited(const edge_set *s)
{
	size_t n = 0;
	for (size_t i = 0; s->attached && i < s->n; i++)
		n += awaited(&s->edge[i]);
	return n;
}

/* No request waits for e until it keeps pace again (edges_step_begin). */
static void become_straggler(edge *e)
{
	e->straggler = true;
	e->on_time = 0;
}

bool edges_drain_waits(const edge_set *s, bool sync)
{
	for (size_t i = 0; s->attached && i < s->n; i++)
		if (in_flight(&s->edge[i]) && (sync || !s->edge[i].straggler))
			return true;
	return false;
}

void edges_drain_expired(edge_set *s, unsigned waited_ms)
{
	for (size_t i = 0; s->attached && i < s->n; i++) {
		edge *e = &s->edge[i];
		if (!in_flight(e) || e->straggler)
			continue;
		become_straggler(e);
		gsp_info("peer %s: straggler: a DRAIN waited DrainWait (%u ms) for "
			 "its round; it lands at a later request, or DETACH ends "
			 "the generation where both ends are", e->name, waited_ms);
	}
}

bool edges_must_wait(const edge_set *s, bool sync, unsigned max_staleness)
{
	for (size_t i = 0; s->attached && i < s->n; i++) {
		const edge *e = &s->edge[i];
		if (awaited(e) && (sync || (!e->straggler &&
					      edge_staleness(e) >= max_staleness)))
			return true;
	}
	return false;
}

unsigned edges_begin_wait(edge_set *s, unsigned max_staleness, unsigned max_wait)
{
	uint64_t most = 0;
	for (size_t i = 0; s->attached && i < s->n; i++) {
		edge *e = &s->edge[i];
		e->lagging = awaited(e) && !e->straggler &&
			     edge_staleness(e) >= max_staleness;
		if (e->lagging && e->waited_ms > most)
			most = e->waited_ms;
	}
	return most >= max_wait ? 0 : (unsigned)(max_wait - most);
}

void edges_end_wait(edge_set *s, uint64_t elapsed, unsigned max_wait)
{
	for (size_t i = 0; i < s->n; i++) {
		edge *e = &s->edge[i];
		if (!e->lagging)
			continue;
		e->lagging = false;
		e->waited_ms += elapsed;
		if (e->waited_ms < max_wait)
			continue;
		become_straggler(e);
		gsp_info("peer %s: straggler: %llu steps behind, waited for %llu ms; "
			 "STEPs go on without waiting for it", e->name,
			 (unsigned long long)edge_staleness(e),
			 (unsigned long long)e->waited_ms);
	}
}

uint64_t edge_staleness(const edge *e)
{
	/* A generation that starts at this step has not applied yet. */
	if (!edge__live(e) || e->last_apply_step > e->set->steps)
		return 0;
	return e->set->steps - e->last_apply_step;
}

uint32_t edges_max_staleness(const edge_set *s)
{
	uint64_t m = 0;
	for (size_t i = 0; i < s->n; i++)
		if (edge_staleness(&s->edge[i]) > m)
			m = edge_staleness(&s->edge[i]);
	return m > UINT32_MAX ? UINT32_MAX : (uint32_t)m;
}
