/* edge_end: ending an edge's live generation at the round both ends
 * applied (PROTOCOL.md 4.6): at the peer's final count (a round completed
 * here beyond it taken back, one completed but not applied landing at the
 * next STEP), at this end's offer (edge_end_begin), or without the peer's
 * answer once LeaveWait passed (edge__leave_target; edge_gen.c's
 * edge_end_alone settles it).  Calls edge_core, edge_sched and
 * edge_resync only (the module's order: edge_core.c). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "edge_impl.h"
#include "log.h"

/* ---- ending a generation ---------------------------------------------- */

void edge__record_end(edge *e, uint64_t applied)
{
	/* `applied`: the rounds completed here, each landed or landing. */
	edge_set *s = e->set;
	if (applied > 0) {
		e->ended_generation = e->generation;
		e->ended_applied = applied;
		edge__msg_free(&e->ended_msg);
		int k = edge__kept(e, applied);
		if (k >= 0) {
			e->ended_msg = e->sent[k];
			e->sent[k] = (edge_msg){0};
		}
	}
	for (int k = 0; k < 2; k++)
		edge__msg_free(&e->sent[k]);
	if (e->early && e->early_generation == e->generation) {
		free(e->early);
		e->early = NULL;
	}
	if (s->attached)
		(void)gsp_node_edge_disable(s->model.node, e->index);
	switch (e->gen) {
	case GEN_ENDING:
		EDGE_ROW(G9);     /* at the count both ends applied */
		break;
	case GEN_LIVE:
		EDGE_ROW(G10);    /* the model goes (edges_detach) */
		break;
	case GEN_NONE:
	case GEN_RESUMING:
		break;            /* not called: none runs */
	}
	e->gen = GEN_NONE;
	e->ending = TARGET_NONE;
	e->leave_expired = false;
	edge__sched_reset(e);
	/* Only a live generation's rounds mean anything in a RESYNC. */
	e->completed = e->sent_round = applied;
	gsp_info("peer %s: edge generation %u ended at round %llu", e->name,
		 e->generation, (unsigned long long)applied);
	edge_end_why why = e->ending_self;
	e->ending_self = END_NONE;
	s->dirty = true;
	/* Ended at a count the peer asked for in an earlier session, which
	 * it forgot (killed and restarted: the records keep no ENDING), so
	 * it continued the generation in this one: it would wait for our
	 * rounds for the rest of the session, and only a session's first
	 * RESYNCs start a generation.  A new session agrees one. */
	if (why == END_NONE && e->peer_continues && edge__decided(e)) {
		gsp_info("peer %s: generation %u ended here at the count the peer asked for "
			 "before; it continued it: reconnecting", e->name, e->generation);
		why = END_RESTART;
	}
	e->peer_continues = false;
	if (why != END_NONE)
		s->ops->ended(s->ctx, e, why);
	edge__changed(e);
}

/* Ends the live generation at the peer's final count (e->target): a
 * round completed here beyond it is taken back; one completed but not
 * yet applied lands at the next STEP or DRAIN.  False while it waits for
 * the peer's message of the target round (the peer sends it when it sees
 * our RESYNC). */
/* Whether taking back e's last round subtracts it from the parameters
 * (it was applied) rather than dropping an update not yet applied. */
static bool takes_subtraction(const edge *e)
{
	gsp_edge_info info;
	return gsp_node_edge_info(e->set->model.node, e->index, &info) != 0 ||
	       info.state != GSP_EDGE_COMPLETED;
}

bool edge__end_live(edge *e)
{
	edge_set *s = e->set;
	if (e->ending == TARGET_UNKNOWN && e->completed > 0) {
		s->counters->rounds_unreconciled++;
		gsp_warn("peer %s lost its edge state (a restart): the last round of "
			 "generation %u may have landed at one end only", e->name,
			 e->generation);
	}
	if (e->ending == TARGET_UNKNOWN) {
		edge__record_end(e, e->completed);
		return true;
	}
	if (e->completed < e->target)
		return false;
	if (e->completed > e->target && !s->writing && takes_subtraction(e)) {
		/* The trainer may be writing its parameters now: the round is
		 * taken back inside its next request (model_write_begin). */
		s->takeback_waiting = true;
		e->answer_due = true;
		edge__changed(e);     /* a request that waits takes it now */
		return false;
	}
	if (e->completed > e->target)
		edge__take_back(e);
	edge__record_end(e, e->completed);
	return true;
}

void edge__take_back(edge *e)
{
	edge_set *s = e->set;
	int r = gsp_node_edge_rollback(s->model.node, e->index, e->target);
	if (r < 0) {
		s->counters->rounds_unreconciled++;
		gsp_err("peer %s: generation %u ended at round %llu there, %llu here, "
			"and cannot be taken back (%s)", e->name, e->generation,
			(unsigned long long)e->target, (unsigned long long)e->completed,
			gsp_strerror(r));
		return;
	}
	s->counters->rounds_rolled_back++;
	e->rollbacks++;
	gsp_info("peer %s: round %llu taken back (%s): the peer ended generation %u "
		 "before it", e->name, (unsigned long long)e->completed,
		 r ? "subtracted" : "dropped", e->generation);
	e->completed = e->target;
}

void edge__drop_landing(edge *e)
{
	edge_set *s = e->set;
	e->ended_applied--;
	edge__msg_free(&e->ended_msg);   /* of a round that no longer counts */
	if (!e->ended_applied)
		e->ended_generation = 0;
	s->counters->rounds_unreconciled++;
	gsp_warn("peer %s: the last round of generation %u had not landed when the "
		 "model went: it landed at the peer only", e->name, e->generation);
}

/* LeaveWait passed (edge_end_alone): the count to end at without the
 * peer's answer.  Decided only here, on the loop and not while busy, so
 * that an answer which came meanwhile still decides it: frames kept
 * during a step off the loop are read first (edges_after_busy, also
 * those of a session that has ended since). */
void edge__leave_target(edge *e)
{
	if (e->ending == TARGET_NONE) {
		/* The peer never said where it stands: our offer; a round
		 * completed since is taken back (end_live). */
		e->ending = TARGET_KNOWN;
		e->target = e->end_count;
	} else if (e->ending == TARGET_KNOWN && e->completed < e->target) {
		/* Its message of the round it ends at never came: that round
		 * lands at the peer only. */
		e->set->counters->rounds_unreconciled++;
		gsp_warn("peer %s: generation %u ends at round %llu here and %llu there: "
			 "the peer's message of its last round never came", e->name,
			 e->generation, (unsigned long long)e->completed,
			 (unsigned long long)e->target);
		e->target = e->completed;
	}
}

/* count, or the end the peer's ENDING told if that is lower. */
uint64_t edge__below_told_end(const edge *e, uint64_t count)
{
	return e->ending == TARGET_KNOWN && e->target < count ? e->target : count;
}

/* ---- ending by this end ---------------------------------------------- */

static void begin_ending(edge *e, edge_end_why why)
{
	e->ending_self = why;
	/* Nothing more is sent or completed on it; a round completed but
	 * not applied yet is not offered (at DETACH it could not land), and
	 * is taken back, whether a STEP applied it meanwhile or not, unless
	 * the peer's count turns out to include it.  If the peer's ENDING
	 * came first and we have not ended yet (a take-back waits for a
	 * write), we offer no more than the count it told, as
	 * learn_end would have had we been ending already.  The peer may
	 * have forgotten that ENDING (a restart keeps none) and applied a
	 * round past it since; our answer takes that round back, a higher
	 * offer would make it keep it. */
	e->end_count = edge__below_told_end(e, edge__applied(e));
	gsp_debug("peer %s: ending generation %u at round %llu at most", e->name,
		  e->generation, (unsigned long long)e->end_count);
	/* Our RESYNC of this session went out already (after the peer's
	 * MODEL): another says we end, after our message of that round, so
	 * that a peer which lacked it (lost with a session) completes it
	 * before it hears the count, and we need take nothing back.  A
	 * session's first RESYNC never says ENDING: it continues the
	 * generation first (decide), which then says it; before the peer's
	 * first RESYNC came, nothing more goes out (decided). */
	if (edge__decided(e)) {
		int k = edge__kept(e, e->end_count);
		if (k >= 0)
			(void)edge__send_round(e, &e->sent[k]);
		(void)edge__send_resync(e, true);
	}
}

bool edge_end_begin(edge *e, edge_end_why why)
{
	e->next_generation = 0;   /* none starts after it */
	switch (e->gen) {
	case GEN_NONE:
	case GEN_RESUMING:
		return true;      /* none runs here */
	case GEN_LIVE:
	case GEN_ENDING:
		/* Not while the engine is busy; once. */
		if (e->set->busy || e->ending_self)
			return false;
		EDGE_ROW(G7);
		e->gen = GEN_ENDING;
		begin_ending(e, why);
		return false;
	}
	return false;
}
