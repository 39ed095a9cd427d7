/*
 * edge internals shared by edge.c (sessions, MODEL, ROUND) and
 * edge_gen.c (generations: RESYNC, continuing, ending, starting).  Not
 * used outside the edge module.
 */
#ifndef GOSSIPD_EDGE_IMPL_H
#define GOSSIPD_EDGE_IMPL_H

#include "edge.h"

/* Frames go out unless the edge is "quiet": it is using frames of a
 * session that has ended (kept while the engine was busy), whose answers
 * would land on the wrong session. */
int edge__send(edge *e, const uint8_t *pt, size_t len);
bool edge__quiet(void);
void edge__changed(edge *e);

/* RESYNC of e's session (0, or the session is closed). */
int edge__send_resync(edge *e, bool ending);
int edge__on_resync(edge *e, const uint8_t *pt, size_t len);
/* Ends the live generation if it is ending and can, then starts an
 * agreed new one if it can (not while busy). */
void edge__settle(edge *e);
/* The live generation ends here with `applied` rounds completed, each
 * applied or to be at the next apply (the engine edge is disabled; our
 * message of that round is kept). */
void edge__record_end(edge *e, uint64_t applied);
/* Takes back the rounds completed after the peer's final count
 * (e->target): dropped if not yet applied, else subtracted. */
void edge__take_back(edge *e);
/* The model goes before the last round of the ended generation landed
 * here: the record says one round less, and it is reported. */
void edge__drop_landing(edge *e);
/* Ends the live generation at the peer's final count (e->target), taking
 * back what must be (edge_end.c); false while it waits (for the peer's
 * message of the target round, or for a write to subtract in). */
bool edge__end_live(edge *e);
/* LeaveWait passed: the count to end at without the peer's answer. */
void edge__leave_target(edge *e);
/* No later than the end the peer's ENDING told, if it told one. */
uint64_t edge__below_told_end(const edge *e, uint64_t count);
/* This session's RESYNCs have been exchanged (edge_gen.c). */
bool edge__decided(const edge *e);

/* The generation edge_restore kept continues on the attached model's
 * engine edge (or, if its state does not fit, stays ended). */
void edge__resume(edge *e, bool ours);

void edge__msg_free(edge_msg *m);
/* Which of e->sent holds our message of `round`, or -1. */
int edge__kept(const edge *e, uint64_t round);
/* Rounds applied on a live edge: those completed, less one waiting for
 * the next apply. */
uint64_t edge__applied(const edge *e);

/* An AVERAGE may run rounds on e: its generation is live here, its
 * session works, and this end is not ending it. */
static inline bool edge__avg_runs(const edge *e)
{
	return e->live && e->state == EDGE_UP && !e->ending_self;
}

/* The finite-time schedule (edge_sched.c): FINITE or 0 for our next
 * ROUND; after round `round` completed with the peer's flags, the
 * window opens if both said FINITE; a new or ended generation has none. */
uint8_t edge__finite_flag(const edge *e);
void edge__finite_check(edge *e, uint64_t round, uint8_t peer_flags);
void edge__sched_reset(edge *e);

#endif
