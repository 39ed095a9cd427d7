/* edges_api: what the layers above the edge module (and tests) see of the
 * edge set and tell it (edge.h): an edge by index and its view, and the
 * set's events they report.  Calls edges only (the module's order:
 * edge_core.c). */
#include "edge_impl.h"

edge *edges_at(edge_set *s, size_t i)
{
	return &s->edge[i];
}

const edge *edges_at_const(const edge_set *s, size_t i)
{
	return &s->edge[i];
}

size_t edge_index(const edge *e)
{
	return e->index;
}

void edge_view_of(const edge *e, edge_view *ret)
{
	*ret = (edge_view){
		.index = e->index, .name = e->name, .lo = e->lo, .state = e->state,
		.peer_attached = e->peer_attached, .session_no = e->session_no,
		.generation = e->generation, .gen = e->gen, .live = edge__live(e),
		.completed = e->completed,
		.sent_round = e->sent_round, .weight = e->weight,
		.ending = e->ending, .target = e->target, .ending_self = e->ending_self,
		.end_count = e->end_count, .start_pending = e->next_generation != 0,
		.next_generation = e->next_generation,
		.ended_generation = e->ended_generation, .ended_applied = e->ended_applied,
		.early = e->early != NULL, .early_round = e->early_round,
		.n_deferred = e->n_deferred, .avg_held = e->avg_held,
		.straggler = e->straggler, .lagging = e->lagging, .diff_norm = e->diff_norm,
		.rounds_completed = e->rounds_completed, .rounds_total = e->rounds_total,
		.exact_bytes_done = e->exact_bytes_done,
		.message_bytes_done = e->message_bytes_done, .resyncs = e->resyncs,
		.retransmits = e->retransmits, .rollbacks = e->rollbacks,
		.continued = e->continued, .cache = e->cache,
	};
}

void edges_configure(edge_set *s, unsigned max_degree, float max_round_change)
{
	s->max_degree = max_degree;
	s->max_round_change = max_round_change;
}

void edges_sim_seed(edge_set *s, bool set, uint64_t seed, int index)
{
	s->sim_seed_set = set;
	s->sim_seed = seed;
	s->sim_index = index;
}

void edges_model_max_payload(edge_set *s, uint64_t max_payload)
{
	s->model.max_payload = max_payload;
}

void edges_busy_begin(edge_set *s)
{
	s->busy = true;
}

void edges_busy_end(edge_set *s)
{
	s->busy = false;
}

uint64_t edges_write_begin(edge_set *s)
{
	s->writing = true;
	return s->writes + 1;
}

void edges_write_takeback(edge_set *s)
{
	if (s->takeback_waiting) {
		s->takeback_waiting = false;
		edges_finish(s);
	}
}

void edges_write_end(edge_set *s, uint64_t seq)
{
	s->writing = false;
	s->writes = seq;
	s->dirty = true;
}

void edges_average_state(edge_set *s, bool averaging, bool reached, bool measured)
{
	s->averaging = averaging;
	s->reached = reached;
	s->measured = measured;
}

void edges_records_changed(edge_set *s)
{
	s->dirty = true;
}

void edges_records_saved(edge_set *s)
{
	s->dirty = false;
}

void edges_records_found(edge_set *s, uint64_t writes, const edge_owner *owner)
{
	s->writes = writes;
	s->owner = *owner;
}
