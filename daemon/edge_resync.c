/* edge_resync: what one edge's RESYNC says (PROTOCOL.md 4.6): the
 * generation tag, where this end stands, and when a RESYNC may go out
 * (edge__decided); what the peer's RESYNC decides is edge_gen.c.  Calls
 * edge_core and edge_sched only (the module's order: edge_core.c). */
#include <sodium.h>
#include <string.h>

#include "edge_impl.h"

/* tag = BLAKE2b-128(key = seed, "gossipd generation tag" || LE32(gen)). */
void edge__gen_tag(const uint8_t seed[GSP_SEED_BYTES], uint32_t gen,
		   uint8_t out[GSP_GEN_TAG_BYTES])
{
	static const char label[] = "gossipd generation tag";
	uint8_t in[sizeof(label) - 1 + 4];
	memcpy(in, label, sizeof(label) - 1);
	for (int b = 0; b < 4; b++)
		in[sizeof(label) - 1 + b] = (uint8_t)(gen >> (8 * b));
	crypto_generichash(out, GSP_GEN_TAG_BYTES, in, sizeof(in), seed, GSP_SEED_BYTES);
}

void edge_generation_tag(const edge *e, uint8_t out[GSP_GEN_TAG_BYTES])
{
	memset(out, 0, GSP_GEN_TAG_BYTES);
	if (e->generation)
		edge__gen_tag(e->gen_seed, e->generation, out);
}

/* Where this end stands, as its RESYNC says it (ENDING only when
 * `ending`: not in a session's first RESYNC, see edge_end_begin). */
void edge__fill_resync(const edge *e, gsp_msg_resync *m, bool ending)
{
	*m = (gsp_msg_resync){.generation = e->generation,
			      .ended_generation = e->ended_generation,
			      .ended_applied = e->ended_applied};
	if (e->generation) {
		m->last_completed = e->completed;
		m->last_sent = e->sent_round;
	}
	edge_generation_tag(e, m->gen_tag);
	/* A generation of before a restart that continues once the model
	 * is attached (edge_restore) is live meanwhile, at the records'
	 * counts: the peer keeps it (no model here: the edge is idle). */
	bool resuming = e->gen == GEN_RESUMING;
	if (resuming) {
		m->ended_generation = e->resume_ended_generation;
		m->ended_applied = e->resume_ended_applied;
	}
	if (edge__live(e) || resuming)
		m->flags |= GSP_RESYNC_LIVE;
	if (edge__live(e) && e->ending_self && ending) {
		m->flags |= GSP_RESYNC_ENDING;
		m->ending_applied = e->end_count;
	}
	if (e->no_history)
		m->flags |= GSP_RESYNC_NO_HISTORY;
	if (e->ending_self || e->set->detaching || e->cfg->members_only)
		m->flags |= GSP_RESYNC_NO_START;
	m->weight = e->cfg->weight;
	m->schedule = edge__sched_id(e);
}

int edge__send_resync(edge *e, bool ending)
{
	gsp_msg_resync m;
	edge__fill_resync(e, &m, ending);
	/* The session's first RESYNC (none goes out before the peer's came,
	 * see edge__decided()) is the one the peer decides on. */
	if (e->state == EDGE_WAIT_RESYNC) {
		e->offered_weight = m.weight;
		e->offered_no_start = m.flags & GSP_RESYNC_NO_START;
	}
	uint8_t buf[96];
	size_t n;
	int err = gsp_msg_resync_encode(&m, buf, sizeof(buf), &n);
	return err ? err : edge__send(e, buf, n);
}

/* Whether this session's RESYNCs have been exchanged: a RESYNC we send
 * after our first one says where we stand after deciding (decide), so
 * none goes out before.  The peer, which has decided already, would
 * read one of before as being about the generation it agreed to (and
 * ends that one, at no rounds). */
bool edge__decided(const edge *e)
{
	return e->state == EDGE_UP || e->state == EDGE_IDLE;
}
