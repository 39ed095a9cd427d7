/* Unit tests of the failure detector (daemon/swim.h): the message codec
 * (round trips, every truncation, each malformation refused and the
 * output untouched), the suspicion timeout's log scale, and the detector
 * driven by hand through its ops: a probe answered, unanswered (indirect
 * probes, suspicion, death), relayed (ACK forwarded, NACK at 80 %), a
 * suspicion confirmed by others dying sooner, a refutation of a
 * suspicion of us, the precedence of updates, the local health multiplier
 * (bounded, +1 on a late tick which voids the probe, -1 on an ACK).
 * And the fuzz harness's seed corpus (tests/fuzz/corpus/swim_msg): each
 * seed a valid message, so that the seeds do not rot. */
#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "swim.h"
#include "testutil.h"

/* What the detector under test sent and declared. */
#define LOG_MAX 1024
static struct {
	unsigned n_sent, n_decl;
	uint32_t to[LOG_MAX];
	swim_msg sent[LOG_MAX];
	uint32_t decl_member[LOG_MAX];
	unsigned decl_status[LOG_MAX];
	uint64_t decl_inc[LOG_MAX];
} L;

static void on_send(void *ctx, uint32_t to, const swim_msg *msg)
{
	(void)ctx;
	ck_assert_uint_lt(L.n_sent, LOG_MAX);
	L.to[L.n_sent] = to;
	L.sent[L.n_sent++] = *msg;
}

static void on_declare(void *ctx, uint32_t member, unsigned status, uint64_t inc)
{
	(void)ctx;
	ck_assert_uint_lt(L.n_decl, LOG_MAX);
	L.decl_member[L.n_decl] = member;
	L.decl_status[L.n_decl] = status;
	L.decl_inc[L.n_decl++] = inc;
}

static const swim_ops ops = { .send = on_send, .declare = on_declare };
static swim S;

/* A detector for member 0 with members 1..n. */
static void setup_n(unsigned n, unsigned lhm_max)
{
	swim_config cfg;
	swim_config_default(&cfg);
	cfg.lhm_max = lhm_max;
	cfg.seed = 7;
	memset(&L, 0, sizeof(L));
	ck_assert_int_eq(swim_init(&S, &cfg, &ops, NULL, 0, 5), 0);
	for (uint32_t i = 1; i <= n; i++)
		ck_assert_int_eq(swim_member_add(&S, i, 1), 0);
}

/* The last message sent of type, or NULL. */
static const swim_msg *last_sent(uint8_t type, uint32_t *ret_to)
{
	for (unsigned i = L.n_sent; i-- > 0;)
		if (L.sent[i].type == type) {
			if (ret_to)
				*ret_to = L.to[i];
			return &L.sent[i];
		}
	return NULL;
}

/* A message of type carrying one update: member's status at inc, said by from. */
static swim_msg with_update(uint8_t type, uint32_t seq, uint32_t target,
			    uint32_t member, uint32_t from, uint64_t inc, uint8_t status)
{
	swim_msg m = { .type = type, .seq = seq, .target = target, .n_updates = 1 };
	m.updates[0] = (swim_update){ .member = member, .from = from,
				      .incarnation = inc, .status = status };
	return m;
}

static unsigned count_sent(uint8_t type)
{
	unsigned n = 0;
	for (unsigned i = 0; i < L.n_sent; i++)
		n += L.sent[i].type == type;
	return n;
}

static swim_msg full_msg(void)
{
	swim_msg m = { .type = SWIM_PING_REQ, .seq = 0xA1B2C3D4u, .target = 77,
		       .timeout_ms = 250, .n_updates = SWIM_PIGGYBACK_MAX };
	for (unsigned i = 0; i < SWIM_PIGGYBACK_MAX; i++)
		m.updates[i] = (swim_update){ .member = i, .from = 100 + i,
					      .incarnation = UINT64_MAX - i,
					      .status = (uint8_t)(i % 4) };
	return m;
}

START_TEST(test_codec_round_trip)
{
	uint8_t buf[SWIM_MSG_MAX], again[SWIM_MSG_MAX];
	size_t len, len2;
	swim_msg m = full_msg(), back;
	ck_assert_int_eq(swim_msg_encode(&m, buf, sizeof(buf), &len), 0);
	ck_assert_uint_eq(len, SWIM_MSG_MAX);
	ck_assert_int_eq(swim_msg_decode(buf, len, &back), 0);
	ck_assert_int_eq(swim_msg_encode(&back, again, sizeof(again), &len2), 0);
	ck_assert_uint_eq(len2, len);
	ck_assert_mem_eq(again, buf, len);
	ck_assert_uint_eq(back.updates[3].incarnation, UINT64_MAX - 3);
	ck_assert_uint_eq(back.seq, 0xA1B2C3D4u);
	/* The smallest: a PING without updates. */
	swim_msg ping = { .type = SWIM_PING, .seq = 1, .target = 2 };
	ck_assert_int_eq(swim_msg_encode(&ping, buf, sizeof(buf), &len), 0);
	ck_assert_uint_eq(len, SWIM_MSG_HEAD);
	ck_assert_int_eq(swim_msg_encode(&ping, buf, SWIM_MSG_HEAD - 1, &len), -ENOBUFS);
}
END_TEST

START_TEST(test_codec_refuses)
{
	uint8_t buf[SWIM_MSG_MAX + 1];
	size_t len;
	swim_msg m = full_msg(), out, untouched;
	ck_assert_int_eq(swim_msg_encode(&m, buf, sizeof(buf), &len), 0);
	memset(&out, 0x5A, sizeof(out));
	untouched = out;
	/* Every truncation, and a trailing byte. */
	for (size_t n = 0; n < len; n++)
		ck_assert_int_eq(swim_msg_decode(buf, n, &out), -EINVAL);
	buf[len] = 0;
	ck_assert_int_eq(swim_msg_decode(buf, len + 1, &out), -EINVAL);
	/* Each field out of range: version, type, count, status, timeout,
	 * and an update naming SWIM_ID_NONE. */
	static const struct { size_t off; uint8_t v; } bad[] = {
		{ 0, 0 }, { 0, 2 }, { 1, 0 }, { 1, 5 }, { 14, SWIM_PIGGYBACK_MAX + 1 },
		{ 14, SWIM_PIGGYBACK_MAX - 1 }, { SWIM_MSG_HEAD + 16, 4 },
		{ 10, 0x61 }, { 12, 1 },
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		uint8_t copy[SWIM_MSG_MAX];
		memcpy(copy, buf, len);
		copy[bad[i].off] = bad[i].v;
		if (bad[i].off == 10) {      /* timeout 60001 */
			copy[10] = 0x61; copy[11] = 0xEA; copy[12] = 0; copy[13] = 0;
		}
		ck_assert_msg(swim_msg_decode(copy, len, &out) == -EINVAL, "case %zu", i);
	}
	uint8_t copy[SWIM_MSG_MAX];
	memcpy(copy, buf, len);
	memset(copy + 10, 0, 4);                 /* PING_REQ timeout 0 */
	ck_assert_int_eq(swim_msg_decode(copy, len, &out), -EINVAL);
	memcpy(copy, buf, len);
	copy[1] = SWIM_PING;                     /* a timeout on a PING */
	ck_assert_int_eq(swim_msg_decode(copy, len, &out), -EINVAL);
	memcpy(copy, buf, len);
	memset(copy + SWIM_MSG_HEAD, 0xFF, 4);   /* member SWIM_ID_NONE */
	ck_assert_int_eq(swim_msg_decode(copy, len, &out), -EINVAL);
	memcpy(copy, buf, len);
	memset(copy + SWIM_MSG_HEAD + 4, 0xFF, 4);   /* from SWIM_ID_NONE */
	ck_assert_int_eq(swim_msg_decode(copy, len, &out), -EINVAL);
	ck_assert_mem_eq(&out, &untouched, sizeof(out));
	/* The encoder refuses what the decoder would. */
	m.updates[0].status = 4;
	ck_assert_int_eq(swim_msg_encode(&m, buf, sizeof(buf), &len), -EINVAL);
	m = full_msg();
	m.type = SWIM_ACK;
	ck_assert_int_eq(swim_msg_encode(&m, buf, sizeof(buf), &len), -EINVAL);
}
END_TEST

START_TEST(test_codec_corpus)
{
	const char *root = getenv("GSP_SOURCE_ROOT");
	ck_assert_msg(root != NULL, "GSP_SOURCE_ROOT is not set (meson test sets it)");
	char dir[4096], path[4352];
	snprintf(dir, sizeof(dir), "%s/tests/fuzz/corpus/swim_msg", root);
	DIR *d = opendir(dir);
	ck_assert_msg(d != NULL, "%s: %s", dir, strerror(errno));
	unsigned seeds = 0;
	for (struct dirent *e; (e = readdir(d));) {
		if (e->d_name[0] == '.')
			continue;
		uint8_t buf[SWIM_MSG_MAX + 1], again[SWIM_MSG_MAX];
		snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
		FILE *f = fopen(path, "rb");
		ck_assert_ptr_nonnull(f);
		size_t len = fread(buf, 1, sizeof(buf), f), len2;
		fclose(f);
		swim_msg m;
		ck_assert_msg(swim_msg_decode(buf, len, &m) == 0, "%s does not decode", path);
		ck_assert_int_eq(swim_msg_encode(&m, again, sizeof(again), &len2), 0);
		ck_assert_uint_eq(len2, len);
		ck_assert_mem_eq(again, buf, len);
		seeds++;
	}
	closedir(d);
	ck_assert_uint_ge(seeds, 4);
}
END_TEST

START_TEST(test_suspicion_timeout_scale)
{
	swim_config c;
	swim_config_default(&c);
	ck_assert_uint_eq(swim_suspicion_timeout(&c, 0), c.suspicion_max_ms);
	ck_assert_uint_eq(swim_suspicion_timeout(&c, c.suspicion_k), c.suspicion_min_ms);
	ck_assert_uint_eq(swim_suspicion_timeout(&c, c.suspicion_k + 5), c.suspicion_min_ms);
	/* log(2)/log(4) = 1/2 of the way with k = 3 and one confirmation. */
	ck_assert_uint_eq(c.suspicion_k, 3);
	ck_assert_uint_eq(swim_suspicion_timeout(&c, 1),
			  c.suspicion_max_ms - (c.suspicion_max_ms - c.suspicion_min_ms) / 2);
	ck_assert_uint_gt(swim_suspicion_timeout(&c, 1), swim_suspicion_timeout(&c, 2));
	ck_assert_uint_gt(swim_suspicion_timeout(&c, 2), c.suspicion_min_ms);
}
END_TEST

START_TEST(test_init_refuses)
{
	swim_config c;
	swim_config_default(&c);
	ck_assert_int_eq(swim_init(&S, &c, &ops, NULL, SWIM_ID_NONE, 0), -EINVAL);
	c.probe_timeout_ms = c.probe_interval_ms;
	ck_assert_int_eq(swim_init(&S, &c, &ops, NULL, 0, 0), -EINVAL);
	swim_config_default(&c);
	c.suspicion_min_ms = c.suspicion_max_ms + 1;
	ck_assert_int_eq(swim_init(&S, &c, &ops, NULL, 0, 0), -EINVAL);
	swim_config_default(&c);
	c.lhm_max = SWIM_LHM_MAX + 1;
	ck_assert_int_eq(swim_init(&S, &c, &ops, NULL, 0, 0), -EINVAL);
	setup_n(2, SWIM_LHM_MAX);
	ck_assert_int_eq(swim_member_add(&S, 1, 1), -EEXIST);
	ck_assert_int_eq(swim_member_add(&S, 0, 1), -EINVAL);
	ck_assert_int_eq(swim_member_remove(&S, 9), -ENOENT);
	ck_assert_int_eq(swim_member_remove(&S, 2), 0);
	ck_assert_ptr_null(swim_member_get(&S, 2));
}
END_TEST

/* The first tick probes someone; its ACK ends the probe. */
START_TEST(test_probe_answered)
{
	uint32_t to;
	setup_n(3, SWIM_LHM_MAX);
	S.lhm = 2;
	swim_tick(&S, 1000);
	const swim_msg *ping = last_sent(SWIM_PING, &to);
	ck_assert_ptr_nonnull(ping);
	ck_assert_uint_eq(ping->target, to);
	swim_msg ack = { .type = SWIM_ACK, .seq = ping->seq, .target = to };
	swim_receive(&S, to, &ack, 1010);
	ck_assert_uint_eq(S.lhm, 1);             /* -1 on a probe answered */
	swim_tick(&S, 1000 + 3 * S.cfg.probe_interval_ms);
	ck_assert_uint_eq(count_sent(SWIM_PING_REQ), 0);
	ck_assert_uint_eq(L.n_decl, 0);
}
END_TEST

/* Unanswered: PING_REQ to the others at the timeout, suspicion at the
 * period's end, death after suspicion_max without confirmations. */
START_TEST(test_probe_unanswered_suspects_then_dead)
{
	uint32_t to;
	/* Without the LHM: the unanswered relays of later probes would
	 * stretch the timeouts (test_late_tick has the LHM). */
	setup_n(4, 0);
	swim_tick(&S, 0);
	const swim_msg *ping = last_sent(SWIM_PING, &to);
	uint32_t target = ping->target;
	uint64_t t = S.cfg.probe_timeout_ms;
	swim_tick(&S, t);
	ck_assert_uint_eq(count_sent(SWIM_PING_REQ), 3);
	for (unsigned i = 0; i < L.n_sent; i++)
		if (L.sent[i].type == SWIM_PING_REQ) {
			ck_assert_uint_ne(L.to[i], target);
			ck_assert_uint_eq(L.sent[i].target, target);
			ck_assert_uint_eq(L.sent[i].timeout_ms, S.cfg.probe_timeout_ms);
			/* Each relay answers NACK: our local health is fine. */
			swim_msg nack = { .type = SWIM_NACK, .seq = L.sent[i].seq,
					  .target = target };
			swim_receive(&S, L.to[i], &nack, t + 10);
		}
	ck_assert_uint_eq(swim_next_deadline(&S), S.cfg.probe_interval_ms);
	swim_tick(&S, S.cfg.probe_interval_ms);
	ck_assert_uint_eq(S.lhm, 0);
	ck_assert_uint_eq(L.n_decl, 1);
	ck_assert_uint_eq(L.decl_member[0], target);
	ck_assert_uint_eq(L.decl_status[0], GSP_MEMBER_SUSPECT);
	/* The suspect is told at once (a PING carrying the suspicion). */
	bool told = false;
	for (unsigned i = 0; i < L.n_sent; i++)
		told |= L.to[i] == target && L.sent[i].n_updates > 0 &&
			L.sent[i].updates[0].member == target &&
			L.sent[i].updates[0].status == GSP_MEMBER_SUSPECT;
	ck_assert(told);
	uint64_t dies = S.cfg.probe_interval_ms + S.cfg.suspicion_max_ms;
	for (uint64_t now = S.cfg.probe_interval_ms; now < dies; now += 50) {
		swim_tick(&S, now);
		/* The others answer, so no other suspicion. */
		const swim_msg *p = last_sent(SWIM_PING, &to);
		if (to != target) {
			swim_msg a = { .type = SWIM_ACK, .seq = p->seq, .target = to };
			swim_receive(&S, to, &a, now);
		}
	}
	ck_assert_uint_eq(swim_member_get(&S, target)->status, GSP_MEMBER_SUSPECT);
	swim_tick(&S, dies);
	ck_assert_uint_eq(swim_member_get(&S, target)->status, GSP_MEMBER_DEAD);
	ck_assert_uint_eq(L.decl_status[L.n_decl - 1], GSP_MEMBER_DEAD);
	ck_assert_uint_eq(L.decl_member[L.n_decl - 1], target);
}
END_TEST

/* Accused at an incarnation it has left: no new incarnation, but its
 * ALIVE at the current one rides on its next message (the ACK), so an
 * accuser that missed the refutation learns it. */
START_TEST(test_stale_accusation_answered)
{
	setup_n(2, 0);
	swim_tick(&S, 0);
	/* Spend the start's announcements. */
	for (unsigned i = 0; i < 40; i++) {
		swim_msg ping = { .type = SWIM_PING, .seq = 100 + i, .target = 0 };
		swim_receive(&S, 1, &ping, 1);
	}
	ck_assert_uint_eq(S.self_sends_left, 0);
	swim_msg accuse = with_update(SWIM_PING, 7, 0, 0, 1, 3, GSP_MEMBER_SUSPECT);
	swim_receive(&S, 1, &accuse, 2);
	ck_assert_uint_eq(S.incarnation, 5);
	ck_assert_uint_eq(S.stats.refutations, 0);
	uint32_t to;
	const swim_msg *ack = last_sent(SWIM_ACK, &to);
	ck_assert_ptr_nonnull(ack);
	ck_assert_uint_eq(to, 1);
	bool alive = false;
	for (unsigned i = 0; i < ack->n_updates; i++)
		alive |= ack->updates[i].member == 0 && ack->updates[i].incarnation == 5 &&
			 ack->updates[i].status == GSP_MEMBER_ALIVE;
	ck_assert(alive);
}
END_TEST

/* A dead member heard from directly again (revive): suspected, probed
 * and told so; its ALIVE at a higher incarnation declares it alive; not
 * answering, it dies again after the suspicion timeout. */
START_TEST(test_revive)
{
	setup_n(3, 0);
	ck_assert_int_eq(swim_member_set_status(&S, 2, GSP_MEMBER_DEAD, 1), 0);
	ck_assert_int_eq(swim_member_revive(&S, 9), -ENOENT);
	ck_assert_int_eq(swim_member_revive(&S, 1), -EALREADY);
	swim_tick(&S, 0);
	ck_assert_int_eq(swim_member_revive(&S, 2), 0);
	ck_assert_uint_eq(swim_member_get(&S, 2)->status, GSP_MEMBER_SUSPECT);
	ck_assert_uint_eq(L.n_decl, 0);
	/* Probed again within a round of the order, and told it is suspect. */
	bool told = false;
	uint64_t now = 0;
	for (; now < 10 * S.cfg.probe_interval_ms && !told; now += 10) {
		swim_tick(&S, now);
		for (unsigned i = 0; i < L.n_sent; i++)
			told |= L.to[i] == 2 && L.sent[i].type == SWIM_PING && L.sent[i].n_updates &&
				L.sent[i].updates[0].member == 2 &&
				L.sent[i].updates[0].status == GSP_MEMBER_SUSPECT;
	}
	ck_assert(told);
	/* It refutes. */
	swim_msg alive = with_update(SWIM_ACK, 0, 2, 2, 2, 2, GSP_MEMBER_ALIVE);
	swim_receive(&S, 2, &alive, now);
	ck_assert_uint_eq(swim_member_get(&S, 2)->status, GSP_MEMBER_ALIVE);
	ck_assert_uint_eq(swim_member_get(&S, 2)->incarnation, 2);
	ck_assert_uint_eq(L.decl_member[L.n_decl - 1], 2);
	ck_assert_uint_eq(L.decl_status[L.n_decl - 1], GSP_MEMBER_ALIVE);
	/* Dead again, revived, silent: dead once more after the timeout. */
	ck_assert_int_eq(swim_member_set_status(&S, 2, GSP_MEMBER_DEAD, 2), 0);
	ck_assert_int_eq(swim_member_revive(&S, 2), 0);
	unsigned decl = L.n_decl;
	for (uint64_t t = now; t <= now + S.cfg.suspicion_max_ms + S.cfg.probe_interval_ms;
	     t += 50) {
		swim_tick(&S, t);
		uint32_t to = 2;
		const swim_msg *p = last_sent(SWIM_PING, &to);
		if (p && to != 2) {
			swim_msg a = { .type = SWIM_ACK, .seq = p->seq, .target = to };
			swim_receive(&S, to, &a, t);
		}
	}
	ck_assert_uint_eq(swim_member_get(&S, 2)->status, GSP_MEMBER_DEAD);
	ck_assert_uint_gt(L.n_decl, decl);
	ck_assert_uint_eq(L.decl_status[L.n_decl - 1], GSP_MEMBER_DEAD);
}
END_TEST

/* Confirmed by suspicion_k others, a suspicion dies after suspicion_min;
 * an ALIVE at the same incarnation does not clear it, a higher one does. */
START_TEST(test_confirmations_and_precedence)
{
	setup_n(6, 0);
	swim_tick(&S, 0);
	swim_msg m = with_update(SWIM_ACK, 999, 2, 5, 1, 1, GSP_MEMBER_SUSPECT);
	swim_receive(&S, 1, &m, 100);
	ck_assert_uint_eq(swim_member_get(&S, 5)->status, GSP_MEMBER_SUSPECT);
	m.updates[0].status = GSP_MEMBER_ALIVE;
	swim_receive(&S, 2, &m, 110);
	ck_assert_uint_eq(swim_member_get(&S, 5)->status, GSP_MEMBER_SUSPECT);
	m.updates[0].status = GSP_MEMBER_SUSPECT;
	m.updates[0].from = 2;
	swim_receive(&S, 2, &m, 115);
	swim_receive(&S, 3, &m, 116);            /* member 2 counted once */
	ck_assert_uint_eq(swim_member_get(&S, 5)->n_suspectors, 2);
	for (uint32_t from = 3; from <= 4; from++) {
		m.updates[0].from = from;
		swim_receive(&S, from, &m, 120);
	}
	ck_assert_uint_eq(swim_member_get(&S, 5)->n_suspectors, 4);
	swim_tick(&S, 100 + S.cfg.suspicion_min_ms - 1);
	ck_assert_uint_eq(swim_member_get(&S, 5)->status, GSP_MEMBER_SUSPECT);
	swim_tick(&S, 100 + S.cfg.suspicion_min_ms);
	ck_assert_uint_eq(swim_member_get(&S, 5)->status, GSP_MEMBER_DEAD);
	/* A newer incarnation revives it. */
	m = with_update(SWIM_ACK, 999, 2, 5, 5, 2, GSP_MEMBER_ALIVE);
	swim_receive(&S, 5, &m, 200 + S.cfg.suspicion_min_ms);
	ck_assert_uint_eq(swim_member_get(&S, 5)->status, GSP_MEMBER_ALIVE);
	ck_assert_uint_eq(L.decl_status[L.n_decl - 1], GSP_MEMBER_ALIVE);
	ck_assert_uint_eq(L.decl_inc[L.n_decl - 1], 2);
}
END_TEST

/* Told we are suspected: a higher incarnation, declared and spread. */
START_TEST(test_refutation)
{
	uint32_t to;
	setup_n(3, SWIM_LHM_MAX);
	swim_tick(&S, 0);
	L.n_sent = 0;
	swim_msg m = with_update(SWIM_PING, 42, 0, 0, 2, 5, GSP_MEMBER_SUSPECT);
	swim_receive(&S, 2, &m, 10);
	ck_assert_uint_eq(S.incarnation, 6);
	ck_assert_uint_eq(S.stats.refutations, 1);
	ck_assert_uint_eq(S.lhm, 1);             /* +1 on a refutation about us */
	ck_assert_uint_eq(L.decl_member[L.n_decl - 1], 0);
	ck_assert_uint_eq(L.decl_inc[L.n_decl - 1], 6);
	const swim_msg *ack = last_sent(SWIM_ACK, &to);
	ck_assert_ptr_nonnull(ack);
	ck_assert_uint_eq(to, 2);
	ck_assert_uint_eq(ack->seq, 42);
	ck_assert_uint_ge(ack->n_updates, 1);
	ck_assert_uint_eq(ack->updates[0].member, 0);
	ck_assert_uint_eq(ack->updates[0].incarnation, 6);
	ck_assert_uint_eq(ack->updates[0].status, GSP_MEMBER_ALIVE);
	/* An old accusation (below our incarnation) changes nothing. */
	swim_receive(&S, 2, &m, 20);
	ck_assert_uint_eq(S.incarnation, 6);
	/* A death heard from member 2 in an ACK, said by member 3: the
	 * refutation is pushed to member 3 at once, and to others. */
	L.n_sent = 0;
	swim_msg d = with_update(SWIM_ACK, 999, 2, 0, 3, 6, GSP_MEMBER_DEAD);
	swim_receive(&S, 2, &d, 30);
	ck_assert_uint_eq(S.incarnation, 7);
	const swim_msg *push = last_sent(SWIM_PING, &to);
	ck_assert_ptr_nonnull(push);
	bool to_accuser = false;
	for (unsigned i = 0; i < L.n_sent; i++)
		to_accuser |= L.to[i] == 3 && L.sent[i].type == SWIM_PING &&
			      L.sent[i].target == 3 && L.sent[i].n_updates >= 1 &&
			      L.sent[i].updates[0].member == 0 &&
			      L.sent[i].updates[0].incarnation == 7;
	ck_assert(to_accuser);
}
END_TEST

/* A PING_REQ: we PING the target and forward its ACK, or NACK at 80 %. */
START_TEST(test_relay)
{
	uint32_t to;
	setup_n(3, SWIM_LHM_MAX);
	swim_tick(&S, 0);
	swim_msg req = { .type = SWIM_PING_REQ, .seq = 77, .target = 3, .timeout_ms = 100 };
	swim_receive(&S, 1, &req, 10);
	const swim_msg *ping = last_sent(SWIM_PING, &to);
	ck_assert_uint_eq(to, 3);
	swim_msg ack = { .type = SWIM_ACK, .seq = ping->seq, .target = 3 };
	swim_receive(&S, 3, &ack, 20);
	const swim_msg *fwd = last_sent(SWIM_ACK, &to);
	ck_assert_uint_eq(to, 1);
	ck_assert_uint_eq(fwd->seq, 77);
	ck_assert_uint_eq(fwd->target, 3);
	/* Unanswered this time. */
	req.seq = 78;
	swim_receive(&S, 1, &req, 30);
	swim_tick(&S, 109);
	ck_assert_ptr_null(last_sent(SWIM_NACK, NULL));
	swim_tick(&S, 110);
	const swim_msg *nack = last_sent(SWIM_NACK, &to);
	ck_assert_ptr_nonnull(nack);
	ck_assert_uint_eq(to, 1);
	ck_assert_uint_eq(nack->seq, 78);
}
END_TEST

/* Only members speak: a stranger's PING is not answered, its PING_REQ
 * not relayed, its updates not believed; nor is a PING_REQ for a
 * stranger or for SWIM_ID_NONE relayed. */
START_TEST(test_strangers)
{
	setup_n(3, SWIM_LHM_MAX);
	/* A free slot below used ones: its id is SWIM_ID_NONE, no member. */
	ck_assert_int_eq(swim_member_remove(&S, 1), 0);
	swim_tick(&S, 0);
	L.n_sent = 0;
	swim_msg ping = with_update(SWIM_PING, 5, 0, 2, 9, 1, GSP_MEMBER_DEAD);
	swim_receive(&S, 9, &ping, 10);
	swim_msg req = { .type = SWIM_PING_REQ, .seq = 6, .target = 2, .timeout_ms = 50 };
	swim_receive(&S, 9, &req, 10);
	swim_receive(&S, SWIM_ID_NONE, &req, 10);
	ck_assert_uint_eq(L.n_sent, 0);
	ck_assert_uint_eq(swim_member_get(&S, 2)->status, GSP_MEMBER_ALIVE);
	req.target = 9;
	swim_receive(&S, 3, &req, 10);
	req.target = SWIM_ID_NONE;
	swim_receive(&S, 3, &req, 10);
	ck_assert_uint_eq(L.n_sent, 0);
	ck_assert_uint_eq(S.stats.dropped, 5);
}
END_TEST

/* A tick later than its deadline by more than the interval: LHM + 1 and
 * the probe under way voided (no suspicion); scaled timers; bounded. */
START_TEST(test_late_tick)
{
	setup_n(3, 2);
	swim_tick(&S, 0);
	uint64_t due = swim_next_deadline(&S);
	swim_tick(&S, due + S.cfg.probe_interval_ms + 1);
	ck_assert_uint_eq(S.lhm, 1);
	ck_assert_uint_eq(S.stats.voided, 1);
	ck_assert_uint_eq(L.n_decl, 0);
	/* The new period is twice as long. */
	uint64_t start = S.probe_start_ms;
	ck_assert_uint_eq(S.period_end_ms - start, 2 * S.cfg.probe_interval_ms);
	ck_assert_uint_eq(S.probe_timeout_at - start, 2 * S.cfg.probe_timeout_ms);
	for (unsigned i = 0; i < 5; i++) {
		due = swim_next_deadline(&S);
		swim_tick(&S, due + S.cfg.probe_interval_ms + 1);
	}
	ck_assert_uint_eq(S.lhm, 2);             /* lhm_max */
	ck_assert_uint_eq(L.n_decl, 0);
	/* Without Lifeguard (lhm_max 0) a late tick counts for nothing:
	 * the probe that timed out meanwhile suspects its member. */
	setup_n(3, 0);
	swim_tick(&S, 0);
	due = swim_next_deadline(&S);
	swim_tick(&S, due + 10 * S.cfg.probe_interval_ms);
	ck_assert_uint_eq(S.lhm, 0);
	ck_assert_uint_eq(L.n_decl, 1);
	ck_assert_uint_eq(L.decl_status[0], GSP_MEMBER_SUSPECT);
}
END_TEST

/* A probe that fails with no one to ask counts against us. */
START_TEST(test_missed_without_relays)
{
	setup_n(1, SWIM_LHM_MAX);
	swim_tick(&S, 0);
	swim_tick(&S, S.cfg.probe_timeout_ms);
	ck_assert_uint_eq(count_sent(SWIM_PING_REQ), 0);
	swim_tick(&S, S.cfg.probe_interval_ms);
	ck_assert_uint_eq(S.lhm, 1);
	ck_assert_uint_eq(swim_member_get(&S, 1)->status, GSP_MEMBER_SUSPECT);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("daemon-swim");
	TCase *codec = tcase_create("codec");
	tcase_add_test(codec, test_codec_round_trip);
	tcase_add_test(codec, test_codec_refuses);
	tcase_add_test(codec, test_codec_corpus);
	suite_add_tcase(s, codec);
	TCase *det = tcase_create("detector");
	tcase_add_test(det, test_suspicion_timeout_scale);
	tcase_add_test(det, test_init_refuses);
	tcase_add_test(det, test_probe_answered);
	tcase_add_test(det, test_probe_unanswered_suspects_then_dead);
	tcase_add_test(det, test_confirmations_and_precedence);
	tcase_add_test(det, test_refutation);
	tcase_add_test(det, test_relay);
	tcase_add_test(det, test_strangers);
	tcase_add_test(det, test_late_tick);
	tcase_add_test(det, test_missed_without_relays);
	tcase_add_test(det, test_revive);
	tcase_add_test(det, test_stale_accusation_answered);
	suite_add_tcase(s, det);
	return run_suite(s);
}
