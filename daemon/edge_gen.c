/* edge_gen: one edge's generations (edge.h, PROTOCOL.md 4.6): what the
 * peer's RESYNC decides, continuing a generation across sessions,
 * settling one that ends (edge_end.c ends it at the round both ends
 * applied, also without the peer's answer once LeaveWait passed:
 * edge_end_alone), and starting the next.  Calls edge_core, edge_sched,
 * edge_resync and edge_end only (the module's order: edge_core.c). */
#include <errno.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bigmem.h"
#include "edge_impl.h"
#include "log.h"
#include "sim.h"

/* An end's final count for generation g, as its RESYNC says it: its
 * record, or none applied when g is its last generation and ended with
 * no record.  False while it is live in g, or when it cannot say. */
static bool final_of(const gsp_msg_resync *m, uint32_t g, uint64_t *ret)
{
	if (g == 0 || ((m->flags & GSP_RESYNC_LIVE) && m->generation == g))
		return false;
	if (m->ended_generation == g) {
		*ret = m->ended_applied;
		return true;
	}
	if (m->generation == g) {
		*ret = 0;
		return true;
	}
	/* Between its record and its current generation: it applied none
	 * of g, or g would be its record (records only move on to a newer
	 * generation with rounds applied). */
	if (g > m->ended_generation && g < m->generation &&
	    !(m->flags & GSP_RESYNC_NO_HISTORY)) {
		*ret = 0;
		return true;
	}
	return false;
}

/* Two ends that both ended a generation at different counts: a round
 * landed at one end only (both ended it without hearing each other, or
 * the peer could not wait).  Counted and logged once per generation. */
static void check_agreement(edge *e, const gsp_msg_resync *m)
{
	gsp_msg_resync mine;
	edge__fill_resync(e, &mine, true);
	uint32_t gens[4] = {mine.ended_generation, m->ended_generation,
			    mine.generation, m->generation};
	for (int k = 0; k < 4; k++) {
		uint64_t ours, theirs;
		uint32_t g = gens[k];
		if (g == e->disagreed || !final_of(&mine, g, &ours) ||
		    !final_of(m, g, &theirs) || ours == theirs)
			continue;
		e->disagreed = g;
		e->set->counters->rounds_unreconciled++;
		gsp_warn("peer %s: generation %u ended at round %llu there and %llu here: "
			 "a round landed at one end only", e->name, g,
			 (unsigned long long)theirs, (unsigned long long)ours);
	}
}

/* ---- starting a generation -------------------------------------------- */

static void start_generation(edge *e)
{
	edge_set *s = e->set;
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
	e->weight = e->next_weight;
	/* Our degree alone until the first round's two messages weigh it. */
	uint16_t degree = s->ops->degree(s->ctx);
	float w = gsp_mixing_edge_weight(e->weight, degree, degree);
	int err = gsp_node_edge_reset(s->model.node, e->index, w, role, seed, sizeof(seed));
	if (err) {
		s->ops->close(s->ctx, e, GSP_BYE_INTERNAL, "cannot start the edge");
		return;
	}
	memcpy(e->gen_seed, e->seed, GSP_SEED_BYTES);
	e->generation = e->next_generation;
	e->gen = GEN_LIVE;
	e->next_generation = 0;
	e->no_history = false;
	e->completed = e->sent_round = 0;
	e->peer_reached = e->peer_averaging = false;
	memset(e->peer_reached_at, 0, sizeof(e->peer_reached_at));
	memset(e->sent_reached_at, 0, sizeof(e->sent_reached_at));
	e->avg_held = false;     /* the engine's reset let it go */
	edge__sched_reset(e);
	e->last_apply_step = s->steps;
	s->dirty = true;
	gsp_info("peer %s: edge generation %u up (%s)", e->name, e->generation,
		 role == GSP_ROLE_LO ? "lo" : "hi");
	edge__changed(e);
}

/* A generation agreed on starts once the old one ended and its update
 * landed. */
static void gen_on_start(edge *e)
{
	edge_set *s = e->set;
	gsp_edge_info info;
	switch (e->gen) {
	case GEN_NONE:
		if (!e->next_generation || !s->attached || e->state != EDGE_UP)
			return;
		/* An update of the old generation lands first (next STEP). */
		if (gsp_node_edge_info(s->model.node, e->index, &info) != 0 ||
		    info.state == GSP_EDGE_COMPLETED)
			return;
		EDGE_ROW(G3);
		start_generation(e);
		return;
	case GEN_RESUMING:       /* no model: not here */
	case GEN_LIVE:
	case GEN_ENDING:
		return;           /* after it ended */
	}
}

void edge__settle(edge *e)
{
	edge_set *s = e->set;
	if (s->busy)
		return;
	/* Our first RESYNC of the session said where the live generation
	 * stands, and the peer decides on it: it ends here only after we
	 * decided on the peer's (decide), so that both ends decide on the
	 * same two RESYNCs (ended in between, we would start a generation
	 * the peer, continuing this one, never starts). */
	if (edge__live(e) && e->state == EDGE_WAIT_RESYNC)
		return;
	if (edge__live(e) && e->leave_expired && !e->n_deferred && e->input == INPUT_LIVE)
		edge__leave_target(e);
	if (edge__live(e) && e->ending != TARGET_NONE && !edge__end_live(e))
		return;
	gen_on_start(e);
	/* An end that waited for a write answers the peer's ENDING now, as
	 * edge__on_resync does at once otherwise: after the next generation
	 * started, which the answer then names. */
	if (e->answer_due && (!edge__live(e) || e->ending == TARGET_NONE) &&
	    e->state != EDGE_WAIT_RESYNC) {
		e->answer_due = false;
		if (edge__decided(e))
			(void)edge__send_resync(e, true);
	}
}

/* ---- RESYNC ----------------------------------------------------------- */

/* The peer holds our live generation. */
static bool same_live(const edge *e, const gsp_msg_resync *m)
{
	uint8_t tag[GSP_GEN_TAG_BYTES];
	if (!edge__live(e) || !(m->flags & GSP_RESYNC_LIVE) || m->generation != e->generation)
		return false;
	edge__gen_tag(e->gen_seed, e->generation, tag);
	return sodium_memcmp(tag, m->gen_tag, sizeof(tag)) == 0;
}

/* Two honest ends of one generation: the gap is at most a round. */
static bool consistent(const edge *e, const gsp_msg_resync *m)
{
	uint64_t S = e->sent_round, S2 = m->last_sent;
	return e->completed <= S2 && m->last_completed <= S &&
	       (S > S2 ? S - S2 : S2 - S) <= 1;
}

/* The peer's RESYNC set where our live generation ends (e->ending):
 * it ends, at the next settle that can. */
static void gen_on_peer_end(edge *e)
{
	switch (e->gen) {
	case GEN_LIVE:
	case GEN_ENDING:         /* ending by this end, the peer's count unknown */
		EDGE_ROW(G8);
		e->gen = GEN_ENDING;
		return;
	case GEN_NONE:
	case GEN_RESUMING:
		return;           /* not called: none runs */
	}
}

/* Where our live generation ends, once the peer is no longer simply
 * live in it.  The peer ending it (edge_end_begin): at the smaller of
 * the two applied counts.  The peer out of it: at its final count,
 * which its record says, or none when it names the generation nowhere,
 * unless it lost its records. */
static void learn_end(edge *e, const gsp_msg_resync *m)
{
	/* The peer ends the generation we agreed to start but have not
	 * yet: it never starts here (none of its rounds completed). */
	if (!edge__live(e) && e->next_generation && m->generation == e->next_generation &&
	    (m->flags & GSP_RESYNC_ENDING)) {
		e->next_generation = 0;
		if (e->early && e->early_generation == m->generation) {
			free(e->early);
			e->early = NULL;
		}
	}
	if (m->flags & GSP_RESYNC_ENDING)
		e->peer_continues = false;
	if (!edge__live(e) || e->ending != TARGET_NONE)
		return;
	if (same_live(e, m)) {
		if (!(m->flags & GSP_RESYNC_ENDING))
			return;   /* continues, or answers our ENDING later */
		/* The peer ends it: at the smaller of what it offers (what
		 * it applied) and what we completed (a completed round lands
		 * at our next STEP or DRAIN); the end ahead takes its last
		 * round back.  Our answer tells the peer, which still can.
		 * Both ending: the smaller of the two offers. */
		uint64_t ours = e->ending_self ? e->end_count : e->completed;
		e->ending = TARGET_KNOWN;
		e->target = ours < m->ending_applied ? ours : m->ending_applied;
		/* Ending it too: from now on we offer that count.  The peer
		 * may forget its ENDING (a restart keeps none) and continue
		 * the generation in a later session, where we resend and
		 * offer again: our old offer would end it there above the
		 * count we end at here. */
		if (e->ending_self)
			e->end_count = e->target;
	} else if (m->ended_generation == e->generation) {
		e->ending = TARGET_KNOWN;
		e->target = m->ended_applied;
	} else if (m->flags & GSP_RESYNC_NO_HISTORY) {
		e->ending = TARGET_UNKNOWN;
	} else {
		e->ending = TARGET_KNOWN;
		e->target = 0;
	}
	/* Two rounds or more past ours: the peer completed a round whose
	 * message from us we never projected, so our state is older than
	 * what we sent (records that lag).  Nothing can complete those
	 * rounds here: end where we are, and count it, rather than refuse
	 * the peer's message at every session. */
	if (e->ending == TARGET_KNOWN && e->target > e->completed + 1)
		e->ending = TARGET_UNKNOWN;
	gen_on_peer_end(e);
	gsp_debug("peer %s: generation %u ends at round %llu", e->name, e->generation,
		  (unsigned long long)e->target);
}


/* Our kept messages the peer lacks, oldest first. */
static void resend(edge *e, uint64_t peer_completed)
{
	/* Only while both ends have the model (edge__send_round): else in
	 * the session after the model is back (an attach starts the
	 * sessions over). */
	/* Ending it: nothing past the count we end at, or the one the peer
	 * told (a restart may have made it forget, see learn_end). */
	uint64_t last = edge__below_told_end(e, e->ending_self ? e->end_count : UINT64_MAX);
	for (int k = 0; k < 2; k++)
		if (e->sent[k].buf && e->sent[k].round > peer_completed &&
		    e->sent[k].round <= last && edge__send_round(e, &e->sent[k]) > 0)
			e->retransmits++;
}

static uint32_t max_u32(uint32_t a, uint32_t b)
{
	return a > b ? a : b;
}

/* A new generation's weight from the two ends' offers (0: none): the
 * smaller Weight configured, or none; the same at both ends, so a Weight
 * configured at one end only, or changed at one end first, never mixes
 * the two ends by different weights. */
static float agree_weight(edge *e, float theirs)
{
	float ours = e->offered_weight;
	float w = gsp_mixing_agree_weight(ours, theirs);
	if (ours == theirs)
		return w;
	gsp_warn("peer %s: Weight differs (ours %g, theirs %g): the next generation "
		 "uses %g at both ends", e->name, (double)ours, (double)theirs, (double)w);
	return w;
}

/* The session's first RESYNCs agree on a new generation: it starts once
 * none runs here (gen_on_start). */
static void gen_on_agree(edge *e, const gsp_msg_resync *m)
{
	switch (e->gen) {
	case GEN_NONE:
		EDGE_ROW(G1);
		break;
	case GEN_ENDING:         /* not continued: it ends first */
		EDGE_ROW(G2);
		break;
	case GEN_LIVE:           /* not continued: ending (learn_end) */
	case GEN_RESUMING:       /* both have the model: resumed (edges_attach) */
		break;
	}
	uint32_t g = max_u32(max_u32(e->generation, m->generation),
			     max_u32(e->ended_generation, m->ended_generation)) + 1;
	e->next_generation = g ? g : 1;
	e->next_weight = agree_weight(e, m->weight);
}

/* The session's first RESYNC: continue, or agree on a new generation. */
static void decide(edge *e, const gsp_msg_resync *m)
{
	edge_set *s = e->set;
	e->resyncs++;
	e->peer_schedule = m->schedule;
	bool cont = same_live(e, m) && consistent(e, m) && !(m->flags & GSP_RESYNC_ENDING);
	e->peer_continues = cont;
	if (cont) {
		e->continued++;
		resend(e, m->last_completed);
		gsp_info("peer %s: edge generation %u continues at round %llu", e->name,
			 e->generation, (unsigned long long)e->completed);
		/* Ending it: the peer has what it lacked of ours first, then
		 * hears where we end. */
		if (e->ending_self)
			(void)edge__send_resync(e, true);
	} else if (same_live(e, m) && !consistent(e, m)) {
		e->ending = TARGET_UNKNOWN;   /* not two honest ends of one generation */
		gen_on_peer_end(e);
	}
	bool both = s->attached && e->peer_attached;
	/* Neither first RESYNC said NO_START: both ends decide on the same
	 * two RESYNCs.  (An end that began ending or detaching after its
	 * own went out starts nothing here either; the peer then starts a
	 * generation alone, which ends at no rounds at the next session.) */
	bool startable = !e->offered_no_start && !(m->flags & GSP_RESYNC_NO_START) &&
			 !e->ending_self && !s->detaching;
	if (!cont && both && startable)
		gen_on_agree(e, m);
	if (both)
		EDGE_ROW(S4);
	else
		EDGE_ROW(S5);
	e->state = both ? EDGE_UP : EDGE_IDLE;
}

int edge__on_resync(edge *e, const uint8_t *pt, size_t len)
{
	gsp_msg_resync m;
	int err = gsp_msg_resync_decode(pt, len, &m);
	if (err)
		return err;
	bool current = !edge__quiet(e);
	if (current && e->state == EDGE_DOWN)
		return -EBADMSG;
	bool was_live = (edge__live(e) && e->generation == m.generation) ||
			(e->next_generation && e->next_generation == m.generation);
	learn_end(e, &m);
	bool first = current && e->state == EDGE_WAIT_RESYNC;
	if (first)
		decide(e, &m);
	/* A peer still in a generation that ended here completes its last
	 * round from our kept message. */
	if (current && (m.flags & GSP_RESYNC_LIVE) && m.generation == e->ended_generation &&
	    m.last_completed < e->ended_applied && e->ended_msg.buf &&
	    edge__send_round(e, &e->ended_msg) > 0)
		e->retransmits++;
	edge__settle(e);
	check_agreement(e, &m);
	/* The peer ends the generation: it waits to hear where we ended. */
	if (current && was_live && (!edge__live(e) || e->generation != m.generation) &&
	    (m.flags & GSP_RESYNC_ENDING) && e->state != EDGE_DOWN)
		(void)edge__send_resync(e, true);
	return 0;
}

/* ---- a peer that does not answer (LeaveWait) -------------------------- */

bool edge_end_alone(edge *e)
{
	if (!edge__live(e))
		return true;
	if (!e->ending_self)
		return false;
	if (!e->leave_expired)
		gsp_warn("peer %s: no answer within LeaveWait: generation %u ends here "
			 "without it, at round %llu at most", e->name, e->generation,
			 (unsigned long long)e->end_count);
	e->leave_expired = true;
	edge__settle(e);   /* busy: after the step (edges_finish) */
	return !edge__live(e);
}
