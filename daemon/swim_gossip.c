/*
 * swim_gossip: the status updates of swim (swim.h).  What is heard is
 * taken when newer by proto/member.h's order (higher incarnation, then
 * left > dead > suspect > alive); an equal suspicion from another member
 * confirms it (Lifeguard's independent confirmations); a suspicion or
 * death of this node is refuted with a higher incarnation.  Each taken
 * update is piggybacked on the next messages, the least sent first, until
 * it has gone out swim__sends() times.  And the local health multiplier.
 */
#include <math.h>

#include "swim_impl.h"

int swim__find(const swim *s, uint32_t id)
{
	if (id == SWIM_ID_NONE)
		return -1;      /* the mark of a free slot, never a member */
	for (unsigned i = 0; i < s->hi; i++)
		if (s->members[i].id == id)
			return (int)i;
	return -1;
}

void swim__lhm_add(swim *s, int delta)
{
	int v = (int)s->lhm + delta;
	if (v < 0)
		v = 0;
	if (v > (int)s->cfg.lhm_max)
		v = (int)s->cfg.lhm_max;
	s->lhm = (unsigned)v;
}

unsigned swim__sends(const swim *s)
{
	unsigned bits = 0;
	for (unsigned n = s->n_members + 1; n; n >>= 1)
		bits++;
	return s->cfg.retransmit_mult * bits;
}

uint64_t swim_suspicion_timeout(const swim_config *cfg, unsigned confirmations)
{
	if (confirmations >= cfg->suspicion_k)
		return cfg->suspicion_min_ms;
	double frac = log((double)confirmations + 1) / log((double)cfg->suspicion_k + 1);
	double span = (double)(cfg->suspicion_max_ms - cfg->suspicion_min_ms);
	return cfg->suspicion_max_ms - (uint64_t)(span * frac);
}

uint64_t swim__suspect_deadline(const swim *s, const swim_member *m)
{
	unsigned c = m->n_suspectors ? m->n_suspectors - 1 : 0;
	return m->suspect_ms + swim_suspicion_timeout(&s->cfg, c) * (s->lhm + 1);
}

static void declare(swim *s, const swim_member *m)
{
	s->ops->declare(s->ctx, m->id, m->status, m->incarnation);
}

/* Told we are suspected or dead (or alive in a life after this one). */
static swim_applied about_self(swim *s, const swim_update *u)
{
	bool accused = u->status == GSP_MEMBER_SUSPECT || u->status == GSP_MEMBER_DEAD;
	if (accused && u->incarnation < s->incarnation) {
		/* An accusation of a life we have left (the accuser missed our
		 * refutation, or holds us from before a partition): our ALIVE
		 * goes out again, on the ACK too, so that it learns. */
		s->self_sends_left = swim__sends(s);
		return SWIM_APPLIED_TAKEN;
	}
	if (u->incarnation < s->incarnation || u->status == GSP_MEMBER_LEFT ||
	    (!accused && u->incarnation == s->incarnation))
		return SWIM_APPLIED_NONE;
	if (u->incarnation == UINT64_MAX)
		return SWIM_APPLIED_NONE;  /* not refutable; the records decide */
	s->incarnation = u->incarnation + 1;
	s->self_sends_left = swim__sends(s);
	if (accused) {
		s->stats.refutations++;
		swim__lhm_add(s, 1);
	}
	s->ops->declare(s->ctx, s->self, GSP_MEMBER_ALIVE, s->incarnation);
	return accused ? SWIM_APPLIED_REFUTED : SWIM_APPLIED_TAKEN;
}

static bool suspected_by(const swim_member *m, uint32_t who)
{
	for (unsigned i = 0; i < m->n_suspectors; i++)
		if (m->suspectors[i] == who)
			return true;
	return false;
}

swim_applied swim__apply(swim *s, const swim_update *u, uint64_t now_ms)
{
	if (u->member == s->self)
		return about_self(s, u);
	int i = swim__find(s, u->member);
	if (i < 0) {
		s->stats.unknown_updates++;
		return SWIM_APPLIED_NONE;
	}
	swim_member *m = &s->members[i];
	bool newer = u->incarnation > m->incarnation ||
		     (u->incarnation == m->incarnation && u->status > m->status);
	if (!newer) {
		/* The same suspicion from another member confirms it, and
		 * is spread again so that others count it too. */
		if (u->incarnation == m->incarnation && u->status == GSP_MEMBER_SUSPECT &&
		    m->status == GSP_MEMBER_SUSPECT && !suspected_by(m, u->from) &&
		    m->n_suspectors < s->cfg.suspicion_k + 1) {
			m->suspectors[m->n_suspectors++] = u->from;
			m->said_by = u->from;
			m->sends_left = swim__sends(s);
			return SWIM_APPLIED_TAKEN;
		}
		return SWIM_APPLIED_NONE;
	}
	bool news = u->status == GSP_MEMBER_DEAD ||
		    (u->status == GSP_MEMBER_ALIVE && (m->status == GSP_MEMBER_SUSPECT ||
						       m->status == GSP_MEMBER_DEAD));
	m->incarnation = u->incarnation;
	m->status = u->status;
	m->said_by = u->from;
	m->sends_left = swim__sends(s);
	m->n_suspectors = 0;
	if (m->status == GSP_MEMBER_SUSPECT) {
		s->stats.suspicions++;
		m->suspect_ms = now_ms;
		m->suspectors[m->n_suspectors++] = u->from;
	} else if (m->status == GSP_MEMBER_DEAD) {
		s->stats.deaths++;
	}
	declare(s, m);
	return news ? SWIM_APPLIED_NEWS : SWIM_APPLIED_TAKEN;
}

void swim__dead(swim *s, swim_member *m)
{
	m->status = GSP_MEMBER_DEAD;
	m->said_by = s->self;
	m->sends_left = swim__sends(s);
	m->n_suspectors = 0;
	s->stats.deaths++;
	declare(s, m);
}

static void put(swim_msg *msg, const swim *s, const swim_member *m)
{
	swim_update *u = &msg->updates[msg->n_updates++];
	u->member = m->id;
	u->from = m->said_by == SWIM_ID_NONE ? s->self : m->said_by;
	u->incarnation = m->incarnation;
	u->status = m->status;
}

void swim__piggyback(swim *s, uint32_t to, swim_msg *msg)
{
	bool taken[SWIM_MEMBERS_MAX] = {false};
	msg->n_updates = 0;
	int t = swim__find(s, to);
	if (t >= 0 && (s->members[t].status == GSP_MEMBER_SUSPECT ||
		       s->members[t].status == GSP_MEMBER_DEAD)) {
		put(msg, s, &s->members[t]);
		if (s->members[t].sends_left)
			s->members[t].sends_left--;
		taken[t] = true;
	}
	if (s->self_sends_left && msg->n_updates < SWIM_PIGGYBACK_MAX) {
		swim_update *u = &msg->updates[msg->n_updates++];
		*u = (swim_update){ .member = s->self, .from = s->self,
				    .incarnation = s->incarnation,
				    .status = GSP_MEMBER_ALIVE };
		s->self_sends_left--;
	}
	while (msg->n_updates < SWIM_PIGGYBACK_MAX) {
		int best = -1;
		for (unsigned i = 0; i < s->hi; i++) {
			const swim_member *m = &s->members[i];
			if (m->id == SWIM_ID_NONE || taken[i] || !m->sends_left)
				continue;
			if (best < 0 || m->sends_left > s->members[best].sends_left)
				best = (int)i;
		}
		if (best < 0)
			break;
		put(msg, s, &s->members[best]);
		s->members[best].sends_left--;
		taken[best] = true;
	}
}
