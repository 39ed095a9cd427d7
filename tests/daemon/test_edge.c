/* Unit tests of the edge state machine (daemon/edge.h), driven by
 * scripted events through tests/daemon/edgepair.h: the MODEL/RESYNC
 * sequence, rounds that conserve the pair's sum, early and deferred
 * rounds, generations, refusals, and ending a session with rounds in
 * flight. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>

#include "edgepair.h"

static gsp_config config(gsp_method method, unsigned rank)
{
	gsp_config c;
	gsp_config_default(&c);
	c.method = method;
	c.rank = rank;
	return c;
}

static void up(edgepair *p)
{
	ep_session_up(p, 5);
	ep_pump(p);
	ck_assert_int_eq(ep_view(p->a.e).state, EDGE_UP);
	ck_assert_int_eq(ep_view(p->b.e).state, EDGE_UP);
	ck_assert(ep_view(p->a.e).live && ep_view(p->b.e).live);
}

/* Both ends step, then every frame is delivered. */
static void round_trip(edgepair *p)
{
	ck_assert_int_ge(ep_step(&p->a), 0);
	ck_assert_int_ge(ep_step(&p->b), 0);
	ep_pump(p);
}

static void apply_both(edgepair *p)
{
	ck_assert_int_ge(gsp_node_apply(p->a.node), 0);
	ck_assert_int_ge(gsp_node_apply(p->b.node), 0);
}

/* A pair of one method over spec, with its session up; *ret_sum: the
 * pair's sum before any round. */
static void pair_up(edgepair *p, gsp_method method, unsigned rank, const char *spec,
		    double *ret_sum)
{
	gsp_config c = config(method, rank);
	ep_init(p, spec, &c);
	up(p);
	if (ret_sum)
		*ret_sum = ep_sum(p);
}

/* Everything completed applied at both ends: the sum is where it was. */
static void assert_conserved(edgepair *p, double sum0)
{
	apply_both(p);
	ck_assert_double_eq_tol(ep_sum(p), sum0, 1e-6 * fabs(sum0) + 1e-3);
}

START_TEST(test_model_resync_up)
{
	edgepair p;
	gsp_config c = config(GSP_METHOD_POWERGOSSIP, 2);
	ep_init(&p, "20x30,7", &c);
	ep_session_up(&p, 5);
	ck_assert_int_eq(ep_view(p.a.e).state, EDGE_WAIT_MODEL);
	ck_assert_uint_eq(p.a.n_out, 1);          /* MODEL */
	ck_assert_int_eq(ep_deliver_one(&p.a), 0);
	ck_assert_int_eq(ep_view(p.b.e).state, EDGE_WAIT_RESYNC);
	ck_assert_int_eq(p.b.accepted, 1);
	ep_pump(&p);
	ck_assert_int_eq(ep_view(p.a.e).state, EDGE_UP);
	ck_assert_int_eq(ep_view(p.b.e).state, EDGE_UP);
	ck_assert_uint_eq(ep_view(p.a.e).generation, ep_view(p.b.e).generation);
	ck_assert_uint_eq(ep_view(p.a.e).generation, 1);
	ck_assert_uint_gt(p.a.max_frame, GSP_PROTO_CONTROL_MAX);
	ck_assert_int_eq(ep_info(&p.a).role, GSP_ROLE_LO);
	ck_assert_int_eq(ep_info(&p.b).role, GSP_ROLE_HI);
	ep_free(&p);
}
END_TEST

/* The pair's sum is what gossip must never move; their distance falls. */
static void conserve(gsp_method method, unsigned rank)
{
	edgepair p;
	gsp_config c = config(method, rank);
	ep_init(&p, "20x30,7", &c);
	up(&p);
	double sum0 = ep_sum(&p), dist0 = ep_distance(&p);
	for (int t = 0; t < 30; t++)
		round_trip(&p);
	apply_both(&p);
	ck_assert_uint_eq(ep_view(p.a.e).rounds_completed, 30);
	ck_assert_uint_eq(ep_view(p.b.e).rounds_completed, 30);
	ck_assert_double_eq_tol(ep_sum(&p), sum0, 1e-6 * fabs(sum0) + 1e-3);
	ck_assert_double_lt(ep_distance(&p), 0.5 * dist0);
	ep_free(&p);
}

START_TEST(test_rounds_conserve_powergossip)
{
	conserve(GSP_METHOD_POWERGOSSIP, 1);
}
END_TEST

START_TEST(test_rounds_conserve_exact)
{
	conserve(GSP_METHOD_EXACT, 1);
}
END_TEST

START_TEST(test_early_round_waits_for_our_projection)
{
	edgepair p;
	double sum0;
	pair_up(&p, GSP_METHOD_POWERGOSSIP, 1, "16x16", &sum0);
	ck_assert_int_ge(ep_step(&p.a), 0);        /* a: round 1 out */
	ck_assert_int_eq(ep_deliver_one(&p.a), 0); /* b has not stepped */
	ck_assert(ep_view(p.b.e).early);
	ck_assert_uint_eq(ep_view(p.b.e).early_round, 1);
	ck_assert_int_ge(ep_step(&p.b), 0);        /* b projects, uses it */
	ck_assert(!ep_view(p.b.e).early);
	ck_assert_int_eq(ep_info(&p.b).state, GSP_EDGE_COMPLETED);
	ep_pump(&p);
	ck_assert_int_eq(ep_info(&p.a).state, GSP_EDGE_COMPLETED);
	assert_conserved(&p, sum0);
	/* A second early round for the same round is malformed. */
	ep_free(&p);
}
END_TEST

START_TEST(test_round_two_ahead_is_malformed)
{
	edgepair p;
	pair_up(&p, GSP_METHOD_EXACT, 1, "8", NULL);
	ck_assert_int_ge(ep_step(&p.a), 0);
	ck_assert_int_eq(ep_deliver_one(&p.a), 0);      /* early round 1 */
	/* a cannot send round 2 before round 1 completes; forge one. */
	gsp_msg_round r = {.degree = 1, .generation = ep_view(p.a.e).generation, .round = 3};
	uint8_t payload[32] = {0}, buf[128];
	size_t n;
	r.payload = payload;
	r.payload_len = sizeof(payload);
	ck_assert_int_eq(gsp_msg_round_encode(&r, buf, sizeof(buf), &n), 0);
	ck_assert_int_eq(edge_frame(p.b.e, buf, n), -EBADMSG);
	ep_free(&p);
}
END_TEST

START_TEST(test_round_while_busy_is_deferred_then_used)
{
	edgepair p;
	double sum0;
	pair_up(&p, GSP_METHOD_EXACT, 1, "40", &sum0);
	ck_assert_int_ge(ep_step(&p.a), 0);
	ck_assert_int_ge(ep_step(&p.b), 0);
	edges_busy_begin(&p.b.set);   /* b's engine off the loop */
	ck_assert_int_eq(ep_deliver_one(&p.a), 0);
	ck_assert_uint_eq(ep_view(p.b.e).n_deferred, 1);
	ck_assert_int_eq(ep_info(&p.b).state, GSP_EDGE_IN_FLIGHT);
	edges_busy_end(&p.b.set);
	edges_after_busy(&p.b.set);
	ck_assert_uint_eq(ep_view(p.b.e).n_deferred, 0);
	ck_assert_int_eq(ep_info(&p.b).state, GSP_EDGE_COMPLETED);
	ep_pump(&p);
	assert_conserved(&p, sum0);
	ep_free(&p);
}
END_TEST

START_TEST(test_failed_send_at_release_reenters_nothing)
{
	/* The records keep a's ROUND; its send fails as the link's does (the
	 * session closes inside the send): the close re-enters neither the
	 * core nor edges_release (the core looks at the change on its next
	 * turn), and the next session completes the round from a's kept
	 * message. */
	edgepair p;
	double sum0;
	pair_up(&p, GSP_METHOD_EXACT, 1, "40", &sum0);
	p.a.send_fails = 1;
	ck_assert_int_ge(ep_step(&p.a), 0);
	ep_turn(&p.a);
	ck_assert_uint_eq(p.a.send_fails, 0);
	ck_assert(p.a.changed_armed_in_close);
	ck_assert(!p.a.saved_in_close);
	ck_assert(!p.a.session);
	ck_assert_int_eq(ep_view(p.a.e).state, EDGE_DOWN);
	ck_assert_int_ge(ep_step(&p.b), 0);
	ep_session_up(&p, 2);
	ep_pump(&p);
	ck_assert_int_eq(ep_info(&p.a).state, GSP_EDGE_COMPLETED);
	ck_assert_int_eq(ep_info(&p.b).state, GSP_EDGE_COMPLETED);
	assert_conserved(&p, sum0);
	ep_free(&p);
}
END_TEST

START_TEST(test_session_end_while_busy_completes_the_round_first)
{
	/* b had already completed round 1 with a's message; a's engine was
	 * busy when b's message and then the end of the session came: a
	 * still completes the round from it. */
	edgepair p;
	double sum0;
	pair_up(&p, GSP_METHOD_EXACT, 1, "40", &sum0);
	ck_assert_int_ge(ep_step(&p.a), 0);
	ck_assert_int_ge(ep_step(&p.b), 0);
	ck_assert_int_eq(ep_deliver_one(&p.a), 0);  /* b completes */
	edges_busy_begin(&p.a.set);
	ck_assert_int_eq(ep_deliver_one(&p.b), 0);  /* kept at a */
	ep_end_session(&p.a);
	edges_busy_end(&p.a.set);
	edges_after_busy(&p.a.set);
	ck_assert_int_eq(ep_info(&p.a).state, GSP_EDGE_COMPLETED);
	ck_assert(ep_view(p.a.e).live);
	assert_conserved(&p, sum0);
	ep_free(&p);
}
END_TEST

START_TEST(test_reset_continues_the_generation)
{
	/* Round 2 is lost with the session at a; the next session continues
	 * generation 1 (same seed, same factors) and a resends round 2. */
	edgepair p;
	double sum0;
	pair_up(&p, GSP_METHOD_POWERGOSSIP, 2, "10x10,3", &sum0);
	round_trip(&p);
	ck_assert_int_ge(ep_step(&p.a), 0);     /* round 2 in flight at a */
	ep_end_session(&p.a);                   /* ... and lost */
	ck_assert_int_eq(ep_view(p.a.e).state, EDGE_DOWN);
	ck_assert(ep_view(p.a.e).live);
	ck_assert(ep_info(&p.a).active);
	ck_assert_int_gt(p.a.changes, 0);
	ck_assert_int_ge(ep_step(&p.b), 0);     /* b's round 2, while down */
	ep_session_up(&p, 9);
	ep_pump(&p);
	ck_assert_int_eq(ep_view(p.a.e).state, EDGE_UP);
	ck_assert_uint_eq(ep_view(p.a.e).generation, 1);
	ck_assert_uint_eq(ep_view(p.b.e).generation, 1);
	ck_assert_uint_eq(ep_view(p.a.e).continued, 1);
	ck_assert_uint_ge(ep_view(p.a.e).retransmits + ep_view(p.b.e).retransmits, 2);
	ck_assert_int_eq(ep_info(&p.a).state, GSP_EDGE_COMPLETED);
	ck_assert_int_eq(ep_info(&p.b).state, GSP_EDGE_COMPLETED);
	ck_assert_uint_eq(ep_info(&p.a).round, 2);
	assert_conserved(&p, sum0);
	for (int t = 0; t < 5; t++)
		round_trip(&p);
	assert_conserved(&p, sum0);
	ck_assert_uint_eq(ep_view(p.a.e).rounds_completed, 7);
	ep_free(&p);
}
END_TEST

/* After a restart: four more rounds reach round `upto` at a, nothing
 * one-sided was found, the sum is where it was; the pair is freed. */
static void rounds_go_on(edgepair *p, double sum0, uint64_t upto)
{
	for (int t = 0; t < 4; t++)
		round_trip(p);
	ck_assert_uint_ge(ep_view(p->a.e).completed, upto);
	ck_assert_uint_eq(p->a.counters.rounds_unreconciled +
			  p->b.counters.rounds_unreconciled, 0);
	assert_conserved(p, sum0);
	ep_free(p);
}

/* Round 3 completed at b only; then both daemons are killed and restart
 * with their records while the link is down (b after applying it).  Each
 * generation continues from its engine state, as after a reset: a's round
 * 3 completes from b's resent message, nothing is taken back, and the
 * counts never differ (each restart used to end the generation at its
 * own count: 2 at a, 3 at b, which moved the average). */
static void restart_both(gsp_method method)
{
	edgepair p;
	double sum0;
	pair_up(&p, method, 2, "10x10,3", &sum0);
	gsp_config c = config(method, 2);
	round_trip(&p);
	round_trip(&p);
	ck_assert_int_ge(ep_step(&p.a), 0);
	ck_assert_int_ge(ep_step(&p.b), 0);
	ck_assert_int_eq(ep_deliver_one(&p.a), 0);     /* b completes round 3 */
	ep_end_session(&p.a);                           /* a never hears b's */
	ck_assert_int_ge(ep_step(&p.b), 0);             /* b applies it */
	ep_restart(&p.a, &c, true, true);
	ep_restart(&p.b, &c, true, true);
	ep_session_up(&p, 9);
	ep_pump(&p);
	assert_conserved(&p, sum0);
	ck_assert_uint_eq(ep_view(p.a.e).generation, 1);
	ck_assert_uint_eq(ep_view(p.b.e).generation, 1);
	ck_assert_uint_eq(ep_view(p.a.e).continued, 1);
	ck_assert_uint_eq(ep_view(p.b.e).continued, 1);
	ck_assert_uint_eq(p.a.counters.rounds_rolled_back + p.b.counters.rounds_rolled_back, 0);
	rounds_go_on(&p, sum0, 6);
}

/* A daemon restarted from records two rounds older than what it had sent
 * (records that lagged its ROUNDs; the daemon saves them first, but a
 * file from elsewhere may): the peer has completed rounds this end cannot
 * complete again.  The generation ends at this end's count, the loss is
 * counted, and the edge carries rounds again (it used to refuse the
 * peer's kept message as malformed at every session). */
START_TEST(test_records_two_rounds_behind_end_and_count_it)
{
	edgepair p;
	double sum0;
	pair_up(&p, GSP_METHOD_POWERGOSSIP, 2, "10x10,3", &sum0);
	gsp_config c = config(GSP_METHOD_POWERGOSSIP, 2);
	round_trip(&p);
	const ep_file *f = &p.a.files[p.a.persists % EP_FILES];
	ep_file old = {.buf = malloc(f->len), .len = f->len, .writes = f->writes};
	memcpy(old.buf, f->buf, f->len);
	round_trip(&p);
	round_trip(&p);
	/* Restarted before its trainer registers: the peer, a live end
	 * that finds the counts do not fit, ends the generation at its own
	 * count (3); then a continues from the file (C 0, S 1). */
	ep_restart_from(&p.a, &c, &old, false, false);
	free(old.buf);
	ep_session_up(&p, 9);
	ep_pump(&p);
	ck_assert(!ep_view(p.b.e).live);
	ep_attach(&p.a);
	ep_end_session(&p.a);
	ep_session_up(&p, 10);
	ep_pump(&p);
	ck_assert_int_eq(p.a.closes + p.b.closes, 0);
	ck_assert_uint_ge(p.a.counters.rounds_unreconciled + p.b.counters.rounds_unreconciled, 1);
	ck_assert(!ep_view(p.a.e).live || ep_view(p.a.e).generation > 1);
	uint64_t before = ep_view(p.a.e).rounds_completed;
	for (int t = 0; t < 4; t++)
		round_trip(&p);
	ck_assert_uint_ge(ep_view(p.a.e).rounds_completed, before + 3);
	ep_free(&p);
}
END_TEST

/* The records name the buffer they describe (its model's fingerprint
 * and the memfd's identity).  a is killed with round 3 completed at b
 * only, and restarts; the trainer that registers then brings the same
 * buffer (the generation continues, as restart_both) or another one with
 * the same layout (another trainer, or the same one with a new buffer):
 * then the records' generation ends at its counts, exactly, and a new
 * one starts (it used to continue the old generation's rounds into the
 * new buffer, and settle a write the records counted in it). */
static void restart_with_buffer(bool same)
{
	edgepair p;
	double sum0;
	pair_up(&p, GSP_METHOD_POWERGOSSIP, 2, "10x10,3", &sum0);
	gsp_config c = config(GSP_METHOD_POWERGOSSIP, 2);
	edge_owner first = {.set = true, .dev = 7, .ino = 1001};
	memset(first.fingerprint, 1, sizeof(first.fingerprint));
	p.a.set.owner = p.a.set.model.owner = first;
	round_trip(&p);
	round_trip(&p);
	ck_assert_int_ge(ep_step(&p.a), 0);
	ck_assert_int_ge(ep_step(&p.b), 0);
	ck_assert_int_eq(ep_deliver_one(&p.a), 0);     /* b completes round 3 */
	ep_end_session(&p.a);
	ck_assert_int_ge(ep_step(&p.b), 0);             /* b applies it */
	ep_restart(&p.a, &c, true, false);
	ck_assert(p.a.set.owner.set);                   /* read from the file */
	p.a.later.owner = first;
	if (!same)
		p.a.later.owner.ino = 1002;
	ep_attach(&p.a);
	ep_session_up(&p, 9);
	ep_pump(&p);
	round_trip(&p);        /* b's next STEP takes back what it must */
	assert_conserved(&p, sum0);
	ck_assert_uint_eq(ep_view(p.a.e).continued, same);
	ck_assert_uint_eq(ep_view(p.b.e).continued, same);
	if (same) {
		ck_assert_uint_eq(ep_view(p.a.e).generation, 1);
	} else {
		/* b took back its round 3; both are in a new generation. */
		ck_assert_uint_eq(p.b.counters.rounds_rolled_back, 1);
		ck_assert_uint_gt(ep_view(p.a.e).generation, 1);
		ck_assert_uint_eq(ep_view(p.a.e).generation, ep_view(p.b.e).generation);
		ck_assert(ep_view(p.a.e).live && ep_view(p.b.e).live);
	}
	/* The records now name the buffer that registered. */
	ck_assert(edgestate_owned_by(&p.a.set.owner, &p.a.later.owner));
	for (int t = 0; t < 4; t++)
		round_trip(&p);
	assert_conserved(&p, sum0);
	ck_assert_uint_eq(p.a.counters.rounds_unreconciled +
			  p.b.counters.rounds_unreconciled, 0);
	ep_free(&p);
}

START_TEST(test_restart_with_the_same_buffer_continues)
{
	restart_with_buffer(true);
}
END_TEST

START_TEST(test_restart_with_another_buffer_ends_exactly_and_starts_afresh)
{
	restart_with_buffer(false);
}
END_TEST

START_TEST(test_restart_of_both_ends_continues_powergossip)
{
	restart_both(GSP_METHOD_POWERGOSSIP);
}
END_TEST

START_TEST(test_restart_of_both_ends_continues_exact)
{
	restart_both(GSP_METHOD_EXACT);
}
END_TEST

/* The records carry a generation's state only within
 * EDGESTATE_STATE_MAX per edge: exact gossip of 1.1 M floats (4.4 MB of
 * engine state, and as much in each ROUND) goes without it, its counts
 * and message kept; PowerGossip of the same layout keeps its factors. */
START_TEST(test_records_keep_state_within_the_budget)
{
	static const gsp_method methods[] = {GSP_METHOD_EXACT, GSP_METHOD_POWERGOSSIP};
	for (int k = 0; k < 2; k++) {
		edgepair p;
		double sum0;
		edge_record r;
		pair_up(&p, methods[k], 2, "1100x1000", &sum0);
		round_trip(&p);
		round_trip(&p);
		edge_record_of(p.a.e, &r);
		ck_assert_uint_ge(r.applied, 1);
		ck_assert_ptr_nonnull(r.msg);
		if (methods[k] == GSP_METHOD_EXACT) {
			ck_assert_ptr_null(r.engine);
			ck_assert_uint_eq(r.engine_len + r.kept_len[0] + r.kept_len[1], 0);
		} else {
			ck_assert_ptr_nonnull(r.engine);
			ck_assert_uint_le(r.engine_len + r.kept_len[0] + r.kept_len[1],
					  EDGESTATE_STATE_MAX);
		}
		ep_free(&p);
	}
}
END_TEST

/* a restarts with its records, and a session comes up before its
 * trainer registers again: its RESYNC says the generation is live, so b
 * keeps it (idle, no model at a); once the model is back, the next
 * session continues it. */
START_TEST(test_restart_before_the_trainer_registers_keeps_the_generation)
{
	edgepair p;
	double sum0;
	pair_up(&p, GSP_METHOD_POWERGOSSIP, 2, "10x10,3", &sum0);
	gsp_config c = config(GSP_METHOD_POWERGOSSIP, 2);
	round_trip(&p);
	ck_assert_int_ge(ep_step(&p.a), 0);
	ck_assert_int_ge(ep_step(&p.b), 0);
	ck_assert_int_eq(ep_deliver_one(&p.b), 0);     /* a completes round 2 */
	ep_restart(&p.a, &c, true, false);
	ck_assert(!ep_view(p.a.e).live);
	ck_assert_int_eq(ep_view(p.a.e).gen, GEN_RESUMING);  /* G4 */
	ep_session_up(&p, 9);
	ep_pump(&p);
	ck_assert_int_eq(ep_view(p.b.e).state, EDGE_IDLE);
	ck_assert(ep_view(p.b.e).live);                         /* b keeps generation 1 */
	ck_assert_uint_eq(ep_view(p.b.e).generation, 1);
	/* The trainer registers: the sessions start over (model changed). */
	ep_attach(&p.a);
	ck_assert(ep_view(p.a.e).live);
	ck_assert_int_eq(ep_view(p.a.e).gen, GEN_LIVE);      /* G5 */
	ep_end_session(&p.a);
	ep_session_up(&p, 10);
	ep_pump(&p);
	ck_assert_int_eq(ep_view(p.a.e).state, EDGE_UP);
	ck_assert_uint_eq(ep_view(p.a.e).generation, 1);
	ck_assert_uint_eq(ep_view(p.b.e).generation, 1);
	ck_assert_uint_ge(ep_view(p.b.e).continued, 2);
	assert_conserved(&p, sum0);
	rounds_go_on(&p, sum0, 5);
}
END_TEST

START_TEST(test_old_generation_round_is_dropped)
{
	edgepair p;
	pair_up(&p, GSP_METHOD_EXACT, 1, "12", NULL);
	ck_assert_int_ge(ep_step(&p.a), 0);
	ep_frame stale = p.a.out[0];
	p.a.out[0].data = NULL;
	p.a.n_out = 0;
	ck_assert_uint_eq(ep_view(p.b.e).generation, 1);
	/* b's generation moves on: a's trainer registers again, and the
	 * next session starts generation 2. */
	gsp_config c = config(GSP_METHOD_EXACT, 1);
	ep_reregister(&p.a, &c);
	ep_session_up(&p, 9);
	ep_pump(&p);
	ck_assert(ep_view(p.b.e).live);
	ck_assert_uint_eq(ep_view(p.b.e).generation, 2);
	/* Generation 1 against it: of no use, and harmless. */
	ck_assert_int_eq(edge_frame(p.b.e, stale.data, stale.len), 0);
	ck_assert(!ep_view(p.b.e).early);
	ck_assert_int_eq(ep_info(&p.b).state, GSP_EDGE_IDLE);
	free(stale.data);
	ep_free(&p);
}
END_TEST

/* Rounds 1..2 at both ends; round 3 completes at b only (a's message
 * reached b, b's was lost with the session) and b applies it. */
static void one_sided_round(edgepair *p)
{
	round_trip(p);
	round_trip(p);
	ck_assert_int_ge(ep_step(&p->a), 0);
	ck_assert_int_ge(ep_step(&p->b), 0);
	ck_assert_int_eq(ep_deliver_one(&p->a), 0);    /* b completes 3 */
	ep_end_session(&p->a);                         /* b's round 3 lost */
	ck_assert_int_ge(ep_step(&p->b), 0);           /* b applies 3 */
	ck_assert_uint_eq(ep_info(&p->b).round, 4);
}

/* A pair of `method` over spec, up, with one_sided_round done; the
 * pair's sum before any round. */
static double one_sided_pair(edgepair *p, const gsp_config *c, const char *spec)
{
	ep_init(p, spec, c);
	up(p);
	double sum0 = ep_sum(p);
	one_sided_round(p);
	return sum0;
}

/* x's end must take back a round it applied: that waits for x's trainer
 * to be inside a request (the buffer is its own meanwhile), then goes. */
static void takeback_waits_for_a_write(edgepair *p, ep_end *x)
{
	ck_assert(ep_view(x->e).live);
	ck_assert(x->set.takeback_waiting);
	ck_assert_uint_eq(ep_view(x->e).rollbacks, 0);
	double before = ep_sum(p);
	ep_pump(p);
	ck_assert(ep_view(x->e).live && x->set.takeback_waiting);
	ck_assert(ep_sum(p) == before);            /* nothing written */
	ep_write_begin(x);
	ck_assert(!x->set.takeback_waiting);
	ep_write_end(x);
	ep_pump(p);
}

START_TEST(test_detach_takes_the_peers_round_back)
{
	/* a's trainer detaches and registers again before round 3 reaches
	 * it: a's end ends generation 1 at round 2, so b subtracts round 3. */
	edgepair p;
	gsp_config c = config(GSP_METHOD_POWERGOSSIP, 1);
	double sum0 = one_sided_pair(&p, &c, "12x9,4");
	ep_reregister(&p.a, &c);
	ck_assert_uint_eq(ep_view(p.a.e).ended_generation, 1);
	ck_assert_uint_eq(ep_view(p.a.e).ended_applied, 2);
	ep_session_up(&p, 21);
	ep_pump(&p);
	takeback_waits_for_a_write(&p, &p.b);
	ck_assert_uint_eq(ep_view(p.b.e).rollbacks, 1);
	ck_assert_uint_eq(p.b.counters.rounds_rolled_back, 1);
	ck_assert_uint_eq(ep_view(p.b.e).ended_applied, 2);
	ck_assert_uint_eq(ep_view(p.a.e).generation, 2);
	ck_assert_uint_eq(ep_view(p.b.e).generation, 2);
	ck_assert_msg(ep_view(p.a.e).live && ep_view(p.b.e).live, "live a %d b %d",
		      ep_view(p.a.e).live, ep_view(p.b.e).live);
	assert_conserved(&p, sum0);
	for (int t = 0; t < 4; t++)
		round_trip(&p);
	assert_conserved(&p, sum0);
	ep_free(&p);
}
END_TEST

START_TEST(test_behind_end_completes_from_the_ended_message)
{
	/* b applied round 3, a never got b's message for it; b's trainer
	 * detaches while the link is down (DetachWait passes), so b's end
	 * ends generation 1 at 3 on its own.  a completes round 3 from b's
	 * kept message, and generation 2 starts after a's next STEP. */
	edgepair p;
	gsp_config c = config(GSP_METHOD_EXACT, 1);
	double sum0 = one_sided_pair(&p, &c, "24");
	ep_reregister(&p.b, &c);
	ck_assert_uint_eq(ep_view(p.b.e).ended_applied, 3);
	ep_session_up(&p, 22);
	ep_pump(&p);
	ck_assert(!ep_view(p.a.e).live);
	ck_assert_uint_eq(ep_view(p.a.e).ended_applied, 3);
	ck_assert_int_eq(ep_info(&p.a).state, GSP_EDGE_COMPLETED);   /* lands next */
	ck_assert_int_ge(ep_step(&p.a), 0);
	ck_assert_uint_eq(ep_view(p.a.e).generation, 2);
	ck_assert(ep_view(p.a.e).live);
	ep_pump(&p);
	ck_assert_int_ge(ep_step(&p.b), 0);
	ep_pump(&p);
	assert_conserved(&p, sum0);
	ck_assert_uint_eq(p.a.counters.rounds_unreconciled + p.b.counters.rounds_unreconciled, 0);
	ep_free(&p);
}
END_TEST

/* a asks to end the generation (DETACH or removal) while round 2 is
 * completed at both ends but applied at b only: both end it at the
 * smaller count; b takes its round 2 back. */
static void end_together(edge_end_why why)
{
	edgepair p;
	double sum0;
	pair_up(&p, GSP_METHOD_POWERGOSSIP, 2, "9x7,3", &sum0);
	round_trip(&p);
	ck_assert_int_ge(ep_step(&p.a), 0);
	ck_assert_int_ge(ep_step(&p.b), 0);
	ep_pump(&p);                               /* round 2 completed at both */
	ck_assert_int_ge(ep_step(&p.b), 0);         /* b applies it, projects 3 */
	ck_assert_int_eq(ep_view(p.a.e).gen, GEN_LIVE);
	ck_assert(!edge_end_begin(p.a.e, why));
	ck_assert(ep_view(p.a.e).live && ep_view(p.a.e).ending_self == why);
	ck_assert_int_eq(ep_view(p.a.e).gen, GEN_ENDING);   /* G7 */
	ck_assert_int_eq(ep_view(p.b.e).gen, GEN_LIVE);
	ep_pump(&p);                                /* RESYNCs cross */
	takeback_waits_for_a_write(&p, &p.b);
	ck_assert(!ep_view(p.a.e).live && !ep_view(p.b.e).live);
	ck_assert_int_eq(ep_view(p.a.e).gen, GEN_NONE);     /* G9 */
	ck_assert_int_eq(ep_view(p.b.e).gen, GEN_NONE);
	/* a's pending round 2 is dropped; b takes its applied one back. */
	ck_assert_uint_eq(ep_view(p.a.e).ended_applied, 1);
	ck_assert_uint_eq(ep_view(p.b.e).ended_applied, 1);
	ck_assert_uint_eq(ep_view(p.b.e).rollbacks, 1);
	ck_assert_int_eq(p.a.ended, 1);
	ck_assert_int_eq(p.b.ended, 0);
	if (why == END_DETACH) {
		gsp_config c = config(GSP_METHOD_POWERGOSSIP, 2);
		ep_reregister(&p.a, &c);
	}
	assert_conserved(&p, sum0);
	ck_assert_uint_eq(p.a.counters.rounds_unreconciled + p.b.counters.rounds_unreconciled, 0);
	ep_free(&p);
}

START_TEST(test_detach_ends_the_generation_with_the_peer)
{
	end_together(END_DETACH);
}
END_TEST

START_TEST(test_removal_ends_the_generation_with_the_peer)
{
	end_together(END_REMOVED);
}
END_TEST

/* A neighbour that leaves during this end's AVERAGE (its own reached and
 * it DETACHed) ends the generation here before this end held the edge:
 * its last measurement, however large, stays in the estimate this end
 * reports but not in the one that decides whether it says REACHED on the
 * edges that go on (else their rounds never end: faults-average-reached
 * once ran 66477 rounds to its 20 s limit on an 8-ring). */
START_TEST(test_an_ended_edge_does_not_keep_the_average_going)
{
	edgepair p;
	pair_up(&p, GSP_METHOD_POWERGOSSIP, 2, "9x7,3", NULL);
	round_trip(&p);
	ck_assert_uint_ge(ep_view(p.a.e).rounds_completed, 1);
	double last = ep_view(p.a.e).diff_norm;
	ck_assert(last > 1e-3);
	ck_assert_double_eq(edges_estimate_going(&p.a.set), last);
	ck_assert(!edge_end_begin(p.b.e, END_DETACH));
	ep_pump(&p);
	ck_assert(!ep_view(p.a.e).live && !ep_view(p.b.e).live);
	ck_assert_double_eq(edges_estimate(&p.a.set), last);
	ck_assert(isnan(edges_estimate_going(&p.a.set)));
	ep_free(&p);
}
END_TEST

/* ---- LeaveWait: a removed peer that does not answer ------------------- */

/* Rounds 1 and 2 completed at both ends; b applied both (its STEP after
 * the exchange), a applied round 1 only. */
static void leave_pair(edgepair *p, double *ret_sum)
{
	pair_up(p, GSP_METHOD_EXACT, 1, "20", ret_sum);
	round_trip(p);
	round_trip(p);
	ck_assert_int_ge(ep_step(&p->b), 0);        /* b applies 2 */
	ck_assert_uint_eq(ep_view(p->a.e).completed, 2);
	ck_assert_int_eq(ep_info(&p->a).state, GSP_EDGE_COMPLETED);   /* not applied */
}

/* b is added back to a's configuration: its next session reconciles the
 * generation a ended alone, and the sum is where it was. */
static void added_back(edgepair *p, double sum0)
{
	ep_session_up(p, 31);
	ep_pump(p);
	if (p->b.set.takeback_waiting)
		takeback_waits_for_a_write(p, &p->b);
	ck_assert_uint_eq(ep_view(p->b.e).ended_applied, 1);
	ck_assert_uint_eq(ep_view(p->b.e).rollbacks, 1);    /* its round 2 */
	assert_conserved(p, sum0);
	ck_assert_uint_eq(p->a.counters.rounds_unreconciled + p->b.counters.rounds_unreconciled, 0);
}

START_TEST(test_leave_wait_ends_alone_at_the_offer)
{
	/* a's reload removes b while the link is down; b never answers.
	 * After LeaveWait a ends alone at its offer (round 1, what it had
	 * applied), dropping its round 2 not yet applied. */
	edgepair p;
	double sum0;
	leave_pair(&p, &sum0);
	ep_end_session(&p.a);
	ck_assert(!edge_end_begin(p.a.e, END_REMOVED));
	ck_assert_uint_eq(ep_view(p.a.e).end_count, 1);
	ck_assert(edge_end_alone(p.a.e));
	ck_assert(!ep_view(p.a.e).live);
	ck_assert_int_eq(p.a.ended, 1);
	ck_assert_uint_eq(ep_view(p.a.e).ended_applied, 1);
	ck_assert_int_ne(ep_info(&p.a).state, GSP_EDGE_COMPLETED);   /* dropped */
	added_back(&p, sum0);
	ep_free(&p);
}
END_TEST

START_TEST(test_leave_wait_keeps_the_count_the_peer_was_told)
{
	/* a's ENDING (offering round 1) reaches b, whose take-back of round
	 * 2 and answer wait for its trainer's next request; LeaveWait passes
	 * first.  a must end at the count b was told, not at what it
	 * completed (its round 2 would then land at a while b takes it
	 * back). */
	edgepair p;
	double sum0;
	leave_pair(&p, &sum0);
	ck_assert(!edge_end_begin(p.a.e, END_REMOVED));
	ep_pump(&p);
	ck_assert(p.b.set.takeback_waiting);        /* no answer yet */
	ck_assert(ep_view(p.a.e).live);
	ck_assert(edge_end_alone(p.a.e));
	ck_assert_uint_eq(ep_view(p.a.e).ended_applied, 1);
	ck_assert_int_eq(p.a.ended, 1);
	ep_end_session(&p.a);                       /* the leaving peer goes */
	takeback_waits_for_a_write(&p, &p.b);
	ck_assert_uint_eq(ep_view(p.b.e).rollbacks, 1);
	assert_conserved(&p, sum0);
	ep_free(&p);
}
END_TEST

START_TEST(test_leave_wait_takeback_waits_for_a_write)
{
	/* a's STEP applied its round 2 after the removal began (the offer
	 * stays round 1): ending alone subtracts it, inside a write. */
	edgepair p;
	double sum0;
	leave_pair(&p, &sum0);
	ep_end_session(&p.a);
	ck_assert(!edge_end_begin(p.a.e, END_REMOVED));
	ck_assert_int_ge(ep_step(&p.a), 0);         /* a applies 2 */
	ck_assert(!edge_end_alone(p.a.e));
	ck_assert(ep_view(p.a.e).live && p.a.set.takeback_waiting);
	ck_assert_int_eq(p.a.ended, 0);
	ep_write_begin(&p.a);
	ep_write_end(&p.a);
	ck_assert(!ep_view(p.a.e).live);
	ck_assert_int_eq(p.a.ended, 1);
	ck_assert_uint_eq(ep_view(p.a.e).ended_applied, 1);
	ck_assert_uint_eq(ep_view(p.a.e).rollbacks, 1);
	added_back(&p, sum0);
	ep_free(&p);
}
END_TEST

START_TEST(test_leave_wait_reads_the_answer_that_came_while_busy)
{
	/* Both ends remove each other: b offers round 2, a offers 1.  a's
	 * ENDING reaches b during a step off the loop (b keeps it), and b's
	 * LeaveWait passes before b has read it: b must still end at the
	 * smaller offer, as it would have had it read the answer at once.
	 * Anything that settles the edge before the kept frames are read
	 * (here edges_finish) must not decide the count. */
	edgepair p;
	double sum0;
	leave_pair(&p, &sum0);
	ck_assert(!edge_end_begin(p.b.e, END_REMOVED));
	ck_assert(!edge_end_begin(p.a.e, END_REMOVED));
	ck_assert_uint_eq(ep_view(p.b.e).end_count, 2);
	ck_assert_uint_eq(ep_view(p.a.e).end_count, 1);
	edges_busy_begin(&p.b.set);
	while (p.a.n_out)
		ck_assert_int_eq(ep_deliver_one(&p.a), 0);
	ck_assert_uint_gt(ep_view(p.b.e).n_deferred, 0);
	ck_assert(!edge_end_alone(p.b.e));
	edges_busy_end(&p.b.set);
	edges_finish(&p.b.set);
	ck_assert(ep_view(p.b.e).live);
	edges_after_busy(&p.b.set);
	takeback_waits_for_a_write(&p, &p.b);      /* b's round 2 */
	ck_assert(!ep_view(p.b.e).live);
	ck_assert_uint_eq(ep_view(p.b.e).ended_applied, 1);
	ep_pump(&p);
	ck_assert(!ep_view(p.a.e).live);
	ck_assert_uint_eq(ep_view(p.a.e).ended_applied, 1);
	assert_conserved(&p, sum0);
	ep_free(&p);
}
END_TEST

START_TEST(test_leave_wait_is_nothing_for_an_edge_not_ending)
{
	edgepair p;
	double sum0;
	pair_up(&p, GSP_METHOD_EXACT, 1, "20", &sum0);
	round_trip(&p);
	ck_assert(!edge_end_alone(p.a.e));
	ck_assert(ep_view(p.a.e).live);
	ck_assert_int_eq(p.a.ended, 0);
	ep_free(&p);
}
END_TEST

START_TEST(test_both_ends_ending_meet_at_the_smaller_count)
{
	/* Both ends end at once (both removed each other): their ENDING
	 * RESYNCs cross, and both end at the smaller count. */
	edgepair p;
	double sum0;
	pair_up(&p, GSP_METHOD_EXACT, 1, "20", &sum0);
	round_trip(&p);
	ck_assert_int_ge(ep_step(&p.a), 0);
	ck_assert_int_ge(ep_step(&p.b), 0);
	ck_assert_int_eq(ep_deliver_one(&p.a), 0);    /* b completes 2, a not */
	ck_assert(!edge_end_begin(p.a.e, END_REMOVED));
	ck_assert(!edge_end_begin(p.b.e, END_REMOVED));
	ep_pump(&p);
	ck_assert(!ep_view(p.a.e).live && !ep_view(p.b.e).live);
	ck_assert_uint_eq(ep_view(p.a.e).ended_applied, 1);
	ck_assert_uint_eq(ep_view(p.b.e).ended_applied, 1);
	assert_conserved(&p, sum0);
	ep_free(&p);
}
END_TEST

/* b applies round 2 and ends the generation (removal); a had completed
 * round 2 and not applied it, so the end counts it at both ends.  a's
 * trainer then DETACHes without a STEP or DRAIN: the update lands inside
 * the DETACH's write.  (It used to be dropped with the model, counted
 * one-sided, and the average moved.) */
START_TEST(test_detach_lands_what_the_end_counts)
{
	edgepair p;
	double sum0;
	gsp_config c = config(GSP_METHOD_EXACT, 1);
	pair_up(&p, GSP_METHOD_EXACT, 1, "20", &sum0);
	round_trip(&p);
	ck_assert_int_ge(ep_step(&p.a), 0);
	ck_assert_int_ge(ep_step(&p.b), 0);
	ep_pump(&p);                                  /* both complete 2 */
	ck_assert_int_ge(ep_step(&p.b), 0);           /* b applies 2 */
	ck_assert(!edge_end_begin(p.b.e, END_REMOVED));
	ep_pump(&p);
	ck_assert(!ep_view(p.a.e).live && !ep_view(p.b.e).live);
	ck_assert_uint_eq(ep_view(p.a.e).ended_applied, 2);
	ck_assert_uint_eq(ep_view(p.b.e).ended_applied, 2);
	ck_assert_int_eq(ep_info(&p.a).state, GSP_EDGE_COMPLETED);   /* to land */
	ep_write_begin(&p.a);                         /* the DETACH's write */
	ep_reregister(&p.a, &c);
	ep_write_end(&p.a);
	ck_assert_uint_eq(p.a.counters.rounds_unreconciled, 0);
	assert_conserved(&p, sum0);
	ep_free(&p);
}
END_TEST

START_TEST(test_one_sided_ends_are_reported)
{
	/* Both ends end on their own while the link is down (DetachWait
	 * passed at both): b applied round 3, a did not.  Nothing can take
	 * it back, but the next session finds it and counts it. */
	edgepair p;
	gsp_config c = config(GSP_METHOD_EXACT, 1);
	(void)one_sided_pair(&p, &c, "24");
	ep_reregister(&p.a, &c);
	ep_reregister(&p.b, &c);
	ep_session_up(&p, 23);
	ep_pump(&p);
	ck_assert_uint_eq(p.a.counters.rounds_unreconciled, 1);
	ck_assert_uint_eq(p.b.counters.rounds_unreconciled, 1);
	ep_free(&p);
}
END_TEST

START_TEST(test_fingerprint_mismatch_closes)
{
	edgepair p;
	gsp_config c = config(GSP_METHOD_POWERGOSSIP, 1);
	ep_end_init(&p.a, "10x10", &c, 0, 1, 1, true);
	ep_end_init(&p.b, "10x10", &c, 0, 1, 2, false);   /* other fingerprint */
	p.a.other = &p.b;
	p.b.other = &p.a;
	ep_session_up(&p, 1);
	ck_assert_int_eq(ep_deliver_one(&p.a), 0);
	ck_assert_int_eq(p.b.closes, 1);
	ck_assert_int_eq(p.b.close_reason, GSP_BYE_FINGERPRINT);
	ck_assert_ptr_nonnull(strstr(p.b.error, "model mismatch"));
	ck_assert_uint_eq(p.b.counters.fingerprint_mismatch, 1);
	ck_assert_int_eq(ep_view(p.b.e).state, EDGE_DOWN);
	ck_assert_int_eq(p.b.accepted, 0);
	ep_free(&p);
}
END_TEST

START_TEST(test_round_before_model_is_malformed)
{
	edgepair p;
	gsp_config c = config(GSP_METHOD_EXACT, 1);
	ep_init(&p, "12", &c);
	ep_session_up(&p, 1);
	gsp_msg_round r = {.degree = 1, .generation = 1, .round = 1};
	uint8_t payload[48] = {0}, buf[128];
	size_t n;
	r.payload = payload;
	r.payload_len = sizeof(payload);
	ck_assert_int_eq(gsp_msg_round_encode(&r, buf, sizeof(buf), &n), 0);
	ck_assert_int_eq(edge_frame(p.b.e, buf, n), -EBADMSG);
	ck_assert_int_eq(edge_frame(p.b.e, (const uint8_t *)"\x03", 1) < 0, 1);
	ep_free(&p);
}
END_TEST

START_TEST(test_no_model_at_one_end_idles)
{
	edgepair p;
	gsp_config c = config(GSP_METHOD_EXACT, 1);
	ep_init(&p, "12", &c);
	edges_detach(&p.b.set);
	ep_session_up(&p, 1);
	ep_pump(&p);
	ck_assert_int_eq(ep_view(p.a.e).state, EDGE_IDLE);
	ck_assert_int_eq(ep_view(p.b.e).state, EDGE_IDLE);
	ck_assert_int_eq(p.a.accepted + p.b.accepted, 2);
	ck_assert_int_eq(p.a.closes + p.b.closes, 0);
	/* Re-attach so ep_free detaches a live model. */
	edge_model m = p.a.set.model;
	m.node = p.b.node;
	ck_assert_int_eq(edges_attach(&p.b.set, &m), 0);
	ep_free(&p);
}
END_TEST

START_TEST(test_staleness_never_underflows_during_a_step)
{
	edgepair p;
	pair_up(&p, GSP_METHOD_EXACT, 1, "12", NULL);
	round_trip(&p);
	uint32_t applied, skipped;
	edges_step_begin(&p.a.set, 4, &applied, &skipped);   /* a step starts */
	ck_assert_uint_eq(applied, 1);
	ck_assert_uint_eq(edge_staleness(p.a.e), 0);
	ck_assert_uint_eq(edges_max_staleness(&p.a.set), 0);
	ep_free(&p);
}
END_TEST

/* A forged ROUND for a's round in flight, every float `value`, with the
 * given degree. */
static int forged_round(edgepair *p, float value, uint16_t degree)
{
	gsp_edge_info info = ep_info(&p->a);
	const void *mine;
	size_t len;
	ck_assert_int_eq(gsp_node_message(p->a.node, 0, &mine, &len, NULL), 0);
	uint8_t *payload = malloc(len), *buf = malloc(len + 64);
	for (size_t i = 0; i < len; i += 4)
		memcpy(payload + i, &value, 4);
	gsp_msg_round r = {.degree = degree, .generation = ep_view(p->a.e).generation,
			   .round = info.round, .payload = payload, .payload_len = len};
	size_t n;
	ck_assert_int_eq(gsp_msg_round_encode(&r, buf, len + 64, &n), 0);
	int err = edge_frame(p->a.e, buf, n);
	free(payload);
	free(buf);
	return err;
}

START_TEST(test_round_over_max_round_change_refused)
{
	edgepair p;
	pair_up(&p, GSP_METHOD_EXACT, 1, "64", NULL);
	ck_assert_int_ge(ep_step(&p.a), 0);
	double sum_a = 0;
	for (size_t i = 0; i < p.a.n_floats; i++)
		sum_a += p.a.params[i];
	ck_assert_int_eq(forged_round(&p, 3e37f, 1), -EACCES);
	ck_assert_uint_eq(p.a.counters.rounds_refused, 1);
	ck_assert_int_eq(ep_info(&p.a).state, GSP_EDGE_IN_FLIGHT);   /* nothing taken */
	ck_assert_ptr_nonnull(strstr(p.a.error, "MaxRoundChange"));
	/* Large but plausible values pass: 100 times our norm. */
	ck_assert_int_eq(forged_round(&p, 100.0f * (float)(fabs(sum_a) / p.a.n_floats + 1), 1), 0);
	ck_assert_int_eq(ep_info(&p.a).state, GSP_EDGE_COMPLETED);
	ep_free(&p);
}
END_TEST

START_TEST(test_round_from_zeros_passes_the_bound)
{
	/* Our model all zeros: the bound's unit is sqrt(length), so an
	 * honest neighbour's N(0,1)-sized round is taken. */
	edgepair p;
	gsp_config c = config(GSP_METHOD_EXACT, 1);
	ep_init(&p, "64", &c);
	memset(p.a.params, 0, p.a.n_floats * sizeof(float));
	up(&p);
	round_trip(&p);
	ck_assert_uint_eq(p.a.counters.rounds_refused, 0);
	ck_assert_uint_eq(ep_view(p.a.e).rounds_completed, 1);
	ep_free(&p);
}
END_TEST

START_TEST(test_impossible_degree_is_malformed)
{
	edgepair p;
	pair_up(&p, GSP_METHOD_EXACT, 1, "16", NULL);
	ck_assert_int_ge(ep_step(&p.a), 0);
	ck_assert_int_eq(forged_round(&p, 1.0f, 2), -EBADMSG);   /* a pair: 1 at most */
	ck_assert_int_eq(ep_info(&p.a).state, GSP_EDGE_IN_FLIGHT);
	ck_assert_int_eq(forged_round(&p, 1.0f, 1), 0);
	ep_free(&p);
}
END_TEST

START_TEST(test_degree_change_mid_round_keeps_the_weights_equal)
{
	/* a's degree grows (a reload adds peers) after its ROUND for round 1
	 * went out: both ends must still weigh round 1 alike. */
	edgepair p;
	double sum0;
	pair_up(&p, GSP_METHOD_EXACT, 1, "32", &sum0);
	edges_configure(&p.a.set, 8, p.a.set.max_round_change);
	edges_configure(&p.b.set, 8, p.b.set.max_round_change);
	ck_assert_int_ge(ep_step(&p.a), 0);
	ck_assert_int_ge(ep_step(&p.b), 0);
	p.a.degree = 3;
	ep_pump(&p);
	assert_conserved(&p, sum0);
	/* The next round carries the new degree at a: both use 3. */
	round_trip(&p);
	assert_conserved(&p, sum0);
	ck_assert_float_eq_tol(ep_info(&p.a).weight, 0.25f, 1e-6f);
	ck_assert_float_eq_tol(ep_info(&p.b).weight, 0.25f, 1e-6f);
	ep_free(&p);
}
END_TEST

/* The live generation's weight, as the engine mixes with it. */
static float weight_of(const ep_end *x)
{
	return ep_info(x).weight;
}

START_TEST(test_weights_are_agreed_per_generation)
{
	/* a configures Weight 0.3 for the edge, b none (Metropolis-Hastings
	 * would give 1/2): both ends mix generation 1 by 0.3.  Then a reload
	 * at b alone sets 0.1: the live generation keeps 0.3 at both ends
	 * through a reconnect, and the next one (a's trainer registers
	 * again) starts with 0.1 at both.  The pair's sum holds throughout. */
	edgepair p;
	gsp_config c = config(GSP_METHOD_EXACT, 1);
	ep_init(&p, "32", &c);
	p.a.cfg.weight = 0.3f;
	up(&p);
	double sum0 = ep_sum(&p);
	ck_assert_float_eq(weight_of(&p.a), 0.3f);
	ck_assert_float_eq(weight_of(&p.b), 0.3f);
	round_trip(&p);
	round_trip(&p);
	assert_conserved(&p, sum0);
	p.b.cfg.weight = 0.1f;
	ep_end_session(&p.a);
	ep_session_up(&p, 23);
	ep_pump(&p);
	ck_assert_uint_eq(ep_view(p.a.e).generation, 1);
	ck_assert_uint_eq(ep_view(p.b.e).generation, 1);
	round_trip(&p);
	ck_assert_float_eq(weight_of(&p.a), 0.3f);
	ck_assert_float_eq(weight_of(&p.b), 0.3f);
	assert_conserved(&p, sum0);
	ep_reregister(&p.a, &c);
	ep_session_up(&p, 24);
	ep_pump(&p);
	for (int t = 0; t < 3; t++)
		round_trip(&p);
	ck_assert_uint_eq(ep_view(p.a.e).generation, 2);
	ck_assert_uint_eq(ep_view(p.b.e).generation, 2);
	ck_assert(ep_view(p.a.e).live && ep_view(p.b.e).live);
	ck_assert_float_eq(weight_of(&p.a), 0.1f);
	ck_assert_float_eq(weight_of(&p.b), 0.1f);
	assert_conserved(&p, sum0);
	ck_assert_uint_eq(p.a.counters.rounds_unreconciled + p.b.counters.rounds_unreconciled, 0);
	ep_free(&p);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("daemon-edge");
	TCase *tc = tcase_create("edge");
	tcase_add_test(tc, test_model_resync_up);
	tcase_add_test(tc, test_rounds_conserve_powergossip);
	tcase_add_test(tc, test_rounds_conserve_exact);
	tcase_add_test(tc, test_early_round_waits_for_our_projection);
	tcase_add_test(tc, test_round_two_ahead_is_malformed);
	tcase_add_test(tc, test_round_while_busy_is_deferred_then_used);
	tcase_add_test(tc, test_failed_send_at_release_reenters_nothing);
	tcase_add_test(tc, test_session_end_while_busy_completes_the_round_first);
	tcase_add_test(tc, test_reset_continues_the_generation);
	tcase_add_test(tc, test_old_generation_round_is_dropped);
	tcase_add_test(tc, test_records_two_rounds_behind_end_and_count_it);
	tcase_add_test(tc, test_restart_of_both_ends_continues_powergossip);
	tcase_add_test(tc, test_restart_with_the_same_buffer_continues);
	tcase_add_test(tc, test_restart_with_another_buffer_ends_exactly_and_starts_afresh);
	tcase_add_test(tc, test_restart_of_both_ends_continues_exact);
	tcase_add_test(tc, test_records_keep_state_within_the_budget);
	tcase_add_test(tc, test_restart_before_the_trainer_registers_keeps_the_generation);
	tcase_add_test(tc, test_detach_takes_the_peers_round_back);
	tcase_add_test(tc, test_behind_end_completes_from_the_ended_message);
	tcase_add_test(tc, test_detach_ends_the_generation_with_the_peer);
	tcase_add_test(tc, test_removal_ends_the_generation_with_the_peer);
	tcase_add_test(tc, test_an_ended_edge_does_not_keep_the_average_going);
	tcase_add_test(tc, test_leave_wait_ends_alone_at_the_offer);
	tcase_add_test(tc, test_leave_wait_keeps_the_count_the_peer_was_told);
	tcase_add_test(tc, test_leave_wait_takeback_waits_for_a_write);
	tcase_add_test(tc, test_leave_wait_reads_the_answer_that_came_while_busy);
	tcase_add_test(tc, test_leave_wait_is_nothing_for_an_edge_not_ending);
	tcase_add_test(tc, test_both_ends_ending_meet_at_the_smaller_count);
	tcase_add_test(tc, test_detach_lands_what_the_end_counts);
	tcase_add_test(tc, test_one_sided_ends_are_reported);
	tcase_add_test(tc, test_fingerprint_mismatch_closes);
	tcase_add_test(tc, test_round_before_model_is_malformed);
	tcase_add_test(tc, test_no_model_at_one_end_idles);
	tcase_add_test(tc, test_staleness_never_underflows_during_a_step);
	tcase_add_test(tc, test_round_over_max_round_change_refused);
	tcase_add_test(tc, test_round_from_zeros_passes_the_bound);
	tcase_add_test(tc, test_impossible_degree_is_malformed);
	tcase_add_test(tc, test_degree_change_mid_round_keeps_the_weights_equal);
	tcase_add_test(tc, test_weights_are_agreed_per_generation);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	/* PROTOCOL.md 4.9's rows these tests took (in one process only:
	 * CK_FORK=no), for tests/daemon/test_edge_rows.py. */
	const char *rows = getenv("GOSSIPD_EDGE_ROWS");
	FILE *f = rows ? fopen(rows, "w") : NULL;
	for (size_t r = 0; f && r < edge_rows(); r++)
		fprintf(f, "%s %llu\n", edge_row_id(r), (unsigned long long)edge_rows_hit(r));
	if (f && fclose(f) != 0)
		failed++;
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
