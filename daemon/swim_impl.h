/*
 * swim_impl.h: what swim's files share.  Bottom to top: swim_msg.c (the
 * codec), swim_gossip.c (the status updates: heard, suspected, dead,
 * refuted, piggybacked; the local health), swim.c (members, probes,
 * timers); each calls only those before it.
 */
#ifndef GOSSIPD_SWIM_IMPL_H
#define GOSSIPD_SWIM_IMPL_H

#include "swim.h"

/* The slot of member id, or -1 (also for SWIM_ID_NONE). */
int swim__find(const swim *s, uint32_t id);
/* LHM += delta, within [0, lhm_max]. */
void swim__lhm_add(swim *s, int delta);
/* How many times a new update is sent: mult x log2(members + 1), at least 1. */
unsigned swim__sends(const swim *s);
/* When the suspicion of m becomes a death, at the current LHM. */
uint64_t swim__suspect_deadline(const swim *s, const swim_member *m);
typedef enum swim_applied {
	SWIM_APPLIED_NONE = 0,     /* old news, or about an unknown member */
	SWIM_APPLIED_TAKEN,        /* taken: a new status or a confirmation */
	SWIM_APPLIED_NEWS,         /* taken, and urgent: a member's death, or
				    * its refutation of a suspicion or death */
	SWIM_APPLIED_REFUTED,      /* an accusation of us, refuted */
} swim_applied;
/* Take update u (heard from another member, or our own, from = self). */
swim_applied swim__apply(swim *s, const swim_update *u, uint64_t now_ms);
/* m's suspicion timed out: it is dead. */
void swim__dead(swim *s, swim_member *m);
/* Fill msg's updates for a message to `to`: first what we hold against
 * `to` itself (Lifeguard's buddy system), then the least sent. */
void swim__piggyback(swim *s, uint32_t to, swim_msg *msg);

#endif
