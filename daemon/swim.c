/*
 * swim: the members, the probe schedule and the timers of the failure
 * detector (swim.h says what it does; swim_gossip.c the status updates).
 */
#include <errno.h>
#include <string.h>

#include "swim_impl.h"

_Static_assert(SWIM_MEMBERS_MAX <= UINT16_MAX + 1, "the probe order holds slots in 16 bits");

void swim_config_default(swim_config *cfg)
{
	*cfg = (swim_config){
		.probe_interval_ms = 150,
		.probe_timeout_ms = 60,
		.indirect_k = 3,
		.suspicion_min_ms = 3500,
		.suspicion_max_ms = 7000,
		.suspicion_k = 3,
		.lhm_max = SWIM_LHM_MAX,
		.retransmit_mult = 3,
		.seed = 0,
	};
}

static bool config_ok(const swim_config *c)
{
	return c->probe_interval_ms > 0 && c->probe_timeout_ms > 0 &&
	       c->probe_timeout_ms < c->probe_interval_ms &&
	       c->probe_interval_ms <= 60000 &&
	       c->indirect_k <= SWIM_INDIRECT_MAX &&
	       c->suspicion_min_ms > 0 && c->suspicion_min_ms <= c->suspicion_max_ms &&
	       c->suspicion_max_ms <= 3600000 &&
	       c->suspicion_k >= 1 && c->suspicion_k <= SWIM_CONFIRM_MAX &&
	       c->lhm_max <= SWIM_LHM_MAX && c->retransmit_mult >= 1 &&
	       c->retransmit_mult <= 64;
}

/* splitmix64 (Steele, Lea and Flood, 2014). */
static uint64_t rnd(swim *s)
{
	uint64_t z = (s->rng += 0x9e3779b97f4a7c15ULL);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

static unsigned below(swim *s, unsigned n)
{
	return (unsigned)(rnd(s) % n);
}

int swim_init(swim *s, const swim_config *cfg, const swim_ops *ops,
	      void *ctx, uint32_t self, uint64_t incarnation)
{
	if (!config_ok(cfg) || !ops || !ops->send || !ops->declare ||
	    self == SWIM_ID_NONE)
		return -EINVAL;
	memset(s, 0, sizeof(*s));
	s->cfg = *cfg;
	s->ops = ops;
	s->ctx = ctx;
	s->self = self;
	s->incarnation = incarnation;
	s->rng = cfg->seed;
	s->probe = SWIM_PROBE_IDLE;
	for (unsigned i = 0; i < SWIM_MEMBERS_MAX; i++)
		s->members[i].id = SWIM_ID_NONE;
	for (unsigned i = 0; i < SWIM_RELAYS_MAX; i++)
		s->relays[i].requester = SWIM_ID_NONE;
	/* Our incarnation may be news (a restart): say it a few times. */
	s->self_sends_left = cfg->retransmit_mult * 4;
	return 0;
}

int swim_member_add(swim *s, uint32_t id, uint64_t incarnation)
{
	if (id == SWIM_ID_NONE || id == s->self)
		return -EINVAL;
	if (swim__find(s, id) >= 0)
		return -EEXIST;
	int slot = -1;
	for (unsigned i = 0; i <= s->hi && i < SWIM_MEMBERS_MAX && slot < 0; i++)
		if (s->members[i].id == SWIM_ID_NONE)
			slot = (int)i;
	if (slot < 0)
		return -ENOSPC;
	swim_member *m = &s->members[slot];
	*m = (swim_member){ .id = id, .status = GSP_MEMBER_ALIVE,
			    .incarnation = incarnation, .said_by = SWIM_ID_NONE };
	if ((unsigned)slot >= s->hi)
		s->hi = (unsigned)slot + 1;
	s->n_members++;
	/* At a random place in the probe order (SWIM 4.3). */
	unsigned at = below(s, s->n_order + 1);
	memmove(&s->order[at + 1], &s->order[at], (s->n_order - at) * sizeof(s->order[0]));
	s->order[at] = (uint16_t)slot;
	s->n_order++;
	if (at < s->next)
		s->next++;
	return 0;
}

int swim_member_remove(swim *s, uint32_t id)
{
	int slot = swim__find(s, id);
	if (slot < 0)
		return -ENOENT;
	for (unsigned i = 0; i < s->n_order; i++) {
		if (s->order[i] != slot)
			continue;
		memmove(&s->order[i], &s->order[i + 1], (s->n_order - i - 1) * sizeof(s->order[0]));
		s->n_order--;
		if (i < s->next)
			s->next--;
		break;
	}
	s->members[slot].id = SWIM_ID_NONE;
	s->n_members--;
	while (s->hi && s->members[s->hi - 1].id == SWIM_ID_NONE)
		s->hi--;
	if (s->probe_target == id && (s->probe == SWIM_PROBE_DIRECT ||
				      s->probe == SWIM_PROBE_INDIRECT))
		s->probe = SWIM_PROBE_DONE;
	for (unsigned i = 0; i < SWIM_RELAYS_MAX; i++)
		if (s->relays[i].target == id || s->relays[i].requester == id)
			s->relays[i].requester = SWIM_ID_NONE;
	return 0;
}

int swim_member_set_status(swim *s, uint32_t id, unsigned status, uint64_t incarnation)
{
	int slot = swim__find(s, id);
	if (slot < 0)
		return -ENOENT;
	if (status > GSP_MEMBER_LEFT)
		return -EINVAL;
	swim_member *m = &s->members[slot];
	if (incarnation < m->incarnation ||
	    (incarnation == m->incarnation && status <= m->status))
		return 0;
	m->incarnation = incarnation;
	m->status = (uint8_t)status;
	m->said_by = SWIM_ID_NONE;
	m->sends_left = 0;
	m->n_suspectors = 0;
	m->suspect_ms = s->now_ms;
	return 0;
}

int swim_member_revive(swim *s, uint32_t id)
{
	int slot = swim__find(s, id);
	if (slot < 0)
		return -ENOENT;
	swim_member *m = &s->members[slot];
	if (m->status != GSP_MEMBER_DEAD)
		return -EALREADY;
	m->status = GSP_MEMBER_SUSPECT;
	m->said_by = s->self;
	m->sends_left = swim__sends(s);
	m->suspect_ms = s->now_ms;
	m->n_suspectors = 1;
	m->suspectors[0] = s->self;
	return 0;
}

const swim_member *swim_member_get(const swim *s, uint32_t id)
{
	int slot = swim__find(s, id);
	return slot < 0 ? NULL : &s->members[slot];
}

static uint64_t scaled(const swim *s, uint32_t ms)
{
	return (uint64_t)ms * (s->lhm + 1);
}

static void send_msg(swim *s, uint32_t to, swim_msg *msg)
{
	swim__piggyback(s, to, msg);
	s->ops->send(s->ctx, to, msg);
}

static bool probeable(const swim_member *m)
{
	return m->id != SWIM_ID_NONE &&
	       (m->status == GSP_MEMBER_ALIVE || m->status == GSP_MEMBER_SUSPECT);
}

/* The next member in the shuffled round robin, or NULL. */
static swim_member *next_target(swim *s)
{
	for (unsigned tries = 0; tries <= s->n_order; tries++) {
		if (s->next >= s->n_order) {
			for (unsigned i = s->n_order; i > 1; i--) {
				unsigned j = below(s, i);
				uint16_t t = s->order[i - 1];
				s->order[i - 1] = s->order[j];
				s->order[j] = t;
			}
			s->next = 0;
			if (!s->n_order)
				return NULL;
		}
		swim_member *m = &s->members[s->order[s->next++]];
		if (probeable(m))
			return m;
	}
	return NULL;
}

static void period_start(swim *s, uint64_t now)
{
	s->period_end_ms = now + scaled(s, s->cfg.probe_interval_ms);
	swim_member *m = next_target(s);
	if (!m) {
		s->probe = SWIM_PROBE_IDLE;
		return;
	}
	s->probe = SWIM_PROBE_DIRECT;
	s->probe_target = m->id;
	s->probe_seq = ++s->seq;
	s->probe_start_ms = now;
	s->probe_timeout_at = now + scaled(s, s->cfg.probe_timeout_ms);
	s->nacks_due = s->nacks = 0;
	s->stats.probes++;
	swim_msg msg = { .type = SWIM_PING, .seq = s->probe_seq, .target = m->id };
	send_msg(s, m->id, &msg);
}

/* The direct probe timed out: ask indirect_k alive members. */
static void probe_indirect(swim *s)
{
	uint16_t pick[SWIM_MEMBERS_MAX];
	unsigned n = 0;
	for (unsigned i = 0; i < s->hi; i++)
		if (s->members[i].id != SWIM_ID_NONE && s->members[i].id != s->probe_target &&
		    s->members[i].status == GSP_MEMBER_ALIVE)
			pick[n++] = (uint16_t)i;
	s->probe = SWIM_PROBE_INDIRECT;
	uint64_t t = scaled(s, s->cfg.probe_timeout_ms);
	swim_msg msg = { .type = SWIM_PING_REQ, .seq = s->probe_seq,
			 .target = s->probe_target,
			 .timeout_ms = (uint32_t)(t < SWIM_REQ_TIMEOUT_MAX ? t : SWIM_REQ_TIMEOUT_MAX) };
	for (unsigned k = 0; k < s->cfg.indirect_k && k < n; k++) {
		unsigned j = k + below(s, n - k);
		uint16_t c = pick[j];
		pick[j] = pick[k];
		pick[k] = c;
		send_msg(s, s->members[c].id, &msg);
		s->nacks_due++;
		s->stats.indirect++;
	}
}

/* News to spread at once (a refutation, a death): a PING to `also`
 * (unless SWIM_ID_NONE) and to up to indirect_k random alive members
 * (drawn with replacement), whose ACKs answer nothing; the news, sent
 * least so far, rides on them first. */
static void push(swim *s, uint32_t also)
{
	if (also != SWIM_ID_NONE && also != s->self && swim__find(s, also) >= 0) {
		swim_msg msg = { .type = SWIM_PING, .seq = ++s->seq, .target = also };
		send_msg(s, also, &msg);
	}
	for (unsigned k = 0; k < s->cfg.indirect_k && s->n_members; k++) {
		const swim_member *m = &s->members[s->order[below(s, s->n_order)]];
		if (m->status != GSP_MEMBER_ALIVE || m->id == also)
			continue;
		swim_msg msg = { .type = SWIM_PING, .seq = ++s->seq, .target = m->id };
		send_msg(s, m->id, &msg);
	}
}

/* The period ends: a probe not answered suspects its member. */
static void period_end(swim *s, uint64_t now)
{
	if (s->probe != SWIM_PROBE_DIRECT && s->probe != SWIM_PROBE_INDIRECT)
		return;
	s->stats.probes_failed++;
	swim__lhm_add(s, s->nacks_due ? (int)(s->nacks_due - s->nacks) : 1);
	int slot = swim__find(s, s->probe_target);
	if (slot < 0)
		return;
	swim_member *m = &s->members[slot];
	swim_update u = { .member = m->id, .from = s->self,
			  .incarnation = m->incarnation, .status = GSP_MEMBER_SUSPECT };
	swim__apply(s, &u, now);
	/* Tell it at once, so that it can refute (the buddy system). */
	if (m->status == GSP_MEMBER_SUSPECT) {
		swim_msg msg = { .type = SWIM_PING, .seq = ++s->seq, .target = m->id };
		send_msg(s, m->id, &msg);
	}
}

static uint64_t deadline(const swim *s)
{
	if (!s->started)
		return 0;
	uint64_t d = s->period_end_ms;
	if (s->probe == SWIM_PROBE_DIRECT && s->probe_timeout_at < d)
		d = s->probe_timeout_at;
	for (unsigned i = 0; i < SWIM_RELAYS_MAX; i++)
		if (s->relays[i].requester != SWIM_ID_NONE && s->relays[i].nack_ms < d)
			d = s->relays[i].nack_ms;
	for (unsigned i = 0; i < s->hi; i++) {
		const swim_member *m = &s->members[i];
		if (m->id != SWIM_ID_NONE && m->status == GSP_MEMBER_SUSPECT) {
			uint64_t t = swim__suspect_deadline(s, m);
			if (t < d)
				d = t;
		}
	}
	return d;
}

uint64_t swim_next_deadline(swim *s)
{
	s->due_ms = deadline(s);
	return s->due_ms;
}

void swim_tick(swim *s, uint64_t now)
{
	if (!s->started) {
		s->started = true;
		s->now_ms = now;
		s->due_ms = now;
		period_start(s, now);
		s->due_ms = deadline(s);
		return;
	}
	if (now < s->now_ms)
		now = s->now_ms;
	s->now_ms = now;
	/* Starved: what timed out meanwhile may be answered unread. */
	if (s->cfg.lhm_max && now > s->due_ms + s->cfg.probe_interval_ms) {
		s->stats.late_ticks++;
		swim__lhm_add(s, 1);
		if (s->probe == SWIM_PROBE_DIRECT || s->probe == SWIM_PROBE_INDIRECT) {
			s->probe = SWIM_PROBE_DONE;
			s->stats.voided++;
		}
	}
	if (s->probe == SWIM_PROBE_DIRECT && now >= s->probe_timeout_at)
		probe_indirect(s);
	if (now >= s->period_end_ms) {
		period_end(s, now);
		period_start(s, now);
	}
	for (unsigned i = 0; i < SWIM_RELAYS_MAX; i++) {
		swim_relay *r = &s->relays[i];
		if (r->requester == SWIM_ID_NONE || now < r->nack_ms)
			continue;
		swim_msg msg = { .type = SWIM_NACK, .seq = r->req_seq, .target = r->target };
		uint32_t to = r->requester;
		r->requester = SWIM_ID_NONE;
		send_msg(s, to, &msg);
	}
	for (unsigned i = 0; i < s->hi; i++) {
		swim_member *m = &s->members[i];
		if (m->id != SWIM_ID_NONE && m->status == GSP_MEMBER_SUSPECT &&
		    now >= swim__suspect_deadline(s, m)) {
			swim__dead(s, m);
			push(s, SWIM_ID_NONE);
		}
	}
	s->due_ms = deadline(s);
}

/* Asked by `from` to probe msg->target for it. */
static void relay(swim *s, uint32_t from, const swim_msg *msg, uint64_t now)
{
	int slot = swim__find(s, msg->target);
	if (slot < 0 || msg->target == from) {
		s->stats.dropped++;
		return;
	}
	swim_relay *r = NULL;
	for (unsigned i = 0; i < SWIM_RELAYS_MAX && !r; i++)
		if (s->relays[i].requester == SWIM_ID_NONE)
			r = &s->relays[i];
	if (!r) {
		s->stats.dropped++;
		return;
	}
	*r = (swim_relay){ .requester = from, .req_seq = msg->seq,
			   .target = msg->target, .seq = ++s->seq,
			   .nack_ms = now + (uint64_t)msg->timeout_ms * 8 / 10 };
	swim_msg ping = { .type = SWIM_PING, .seq = r->seq, .target = r->target };
	send_msg(s, r->target, &ping);
}

static void acked(swim *s, uint32_t from, const swim_msg *msg)
{
	if ((s->probe == SWIM_PROBE_DIRECT || s->probe == SWIM_PROBE_INDIRECT) &&
	    msg->seq == s->probe_seq && msg->target == s->probe_target) {
		s->probe = SWIM_PROBE_DONE;
		swim__lhm_add(s, -1);
		return;
	}
	for (unsigned i = 0; i < SWIM_RELAYS_MAX; i++) {
		swim_relay *r = &s->relays[i];
		if (r->requester == SWIM_ID_NONE || r->seq != msg->seq ||
		    r->target != from || msg->target != from)
			continue;
		swim_msg ack = { .type = SWIM_ACK, .seq = r->req_seq, .target = r->target };
		uint32_t to = r->requester;
		r->requester = SWIM_ID_NONE;
		send_msg(s, to, &ack);
		return;
	}
}

void swim_receive(swim *s, uint32_t from, const swim_msg *msg, uint64_t now)
{
	if (now < s->now_ms)
		now = s->now_ms;
	s->now_ms = now;
	/* Only members speak: a stranger (removed, or not added yet) is not
	 * answered, relayed for or believed. */
	if (from == s->self || swim__find(s, from) < 0) {
		s->stats.dropped++;
		return;
	}
	/* Our refutation goes to the accuser too (unless our ACK answers
	 * it); news is passed on at once, once. */
	uint32_t accuser = SWIM_ID_NONE;
	bool news = false;
	for (unsigned i = 0; i < msg->n_updates && i < SWIM_PIGGYBACK_MAX; i++) {
		swim_applied a = swim__apply(s, &msg->updates[i], now);
		if (a == SWIM_APPLIED_REFUTED)
			accuser = msg->updates[i].from;
		news |= a == SWIM_APPLIED_REFUTED || a == SWIM_APPLIED_NEWS;
	}
	if (news)
		push(s, accuser == from && msg->type == SWIM_PING ? SWIM_ID_NONE : accuser);
	switch (msg->type) {
	case SWIM_PING: {
		if (msg->target != s->self) {
			s->stats.dropped++;
			break;
		}
		swim_msg ack = { .type = SWIM_ACK, .seq = msg->seq, .target = s->self };
		send_msg(s, from, &ack);
		break;
	}
	case SWIM_ACK:
		acked(s, from, msg);
		break;
	case SWIM_PING_REQ:
		relay(s, from, msg, now);
		break;
	case SWIM_NACK:
		if (s->probe == SWIM_PROBE_INDIRECT && msg->seq == s->probe_seq &&
		    msg->target == s->probe_target && s->nacks < s->nacks_due)
			s->nacks++;
		break;
	default:
		s->stats.dropped++;
		break;
	}
	/* A late tick is judged against this even if the caller does not
	 * ask again (a relay's NACK may now be due first). */
	s->due_ms = deadline(s);
}
