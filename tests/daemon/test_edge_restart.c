/* The edge state machine's tests (edgetest.h): a daemon restarted with or
 * without its records, another buffer, the records' budget. */
#include "edgetest.h"

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
 * keeps it (idle, no model at a) and no ROUND goes either way (a link
 * caps its frames below a model's ROUND until both ends have the model,
 * and a could not apply one); once the model is back, the next session
 * continues it.  in_flight: a is killed with both ends' round 2 in
 * flight, so each keeps a ROUND the other lacks and resends it then
 * (else a completed round 2 first). */
static void restart_before_the_trainer_registers(gsp_method method, const char *spec,
						 bool in_flight)
{
	edgepair p;
	double sum0;
	pair_up(&p, method, 2, spec, &sum0);
	gsp_config c = config(method, 2);
	round_trip(&p);
	ck_assert_int_ge(ep_step(&p.a), 0);
	ck_assert_int_ge(ep_step(&p.b), 0);
	if (!in_flight)
		ck_assert_int_eq(ep_deliver_one(&p.b), 0);     /* a completes round 2 */
	ep_restart(&p.a, &c, true, false);
	ck_assert(!ep_view(p.a.e).live);
	ck_assert_int_eq(ep_view(p.a.e).gen, GEN_RESUMING);  /* G4 */
	ep_session_up(&p, 9);
	ep_pump(&p);
	ck_assert_int_eq(ep_view(p.b.e).state, EDGE_IDLE);
	ck_assert(ep_view(p.b.e).live);                         /* b keeps generation 1 */
	ck_assert_uint_eq(ep_view(p.b.e).generation, 1);
	ck_assert_uint_eq(ep_view(p.a.e).retransmits + ep_view(p.b.e).retransmits, 0);
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
	if (in_flight)
		ck_assert_uint_ge(ep_view(p.a.e).retransmits + ep_view(p.b.e).retransmits, 1);
	assert_conserved(&p, sum0);
	rounds_go_on(&p, sum0, 5);
}

START_TEST(test_restart_before_the_trainer_registers_keeps_the_generation)
{
	restart_before_the_trainer_registers(GSP_METHOD_POWERGOSSIP, "10x10,3", false);
}
END_TEST

/* Exact gossip's ROUND (the whole model) is over the cap until both
 * ends have the model: resent before, the receiving link closed on it at
 * every session (test_cluster's member restarted without a trainer never
 * came back).  ep_deliver_one asserts the cap. */
START_TEST(test_restart_before_the_trainer_registers_gets_no_round)
{
	restart_before_the_trainer_registers(GSP_METHOD_EXACT, "200x30,7", true);
}
END_TEST

TCase *edge_restart_tcase(void)
{
	TCase *tc = tcase_create("restart");
	tcase_add_test(tc, test_records_two_rounds_behind_end_and_count_it);
	tcase_add_test(tc, test_restart_with_the_same_buffer_continues);
	tcase_add_test(tc, test_restart_with_another_buffer_ends_exactly_and_starts_afresh);
	tcase_add_test(tc, test_restart_of_both_ends_continues_powergossip);
	tcase_add_test(tc, test_restart_of_both_ends_continues_exact);
	tcase_add_test(tc, test_records_keep_state_within_the_budget);
	tcase_add_test(tc, test_restart_before_the_trainer_registers_keeps_the_generation);
	tcase_add_test(tc, test_restart_before_the_trainer_registers_gets_no_round);
	return tc;
}
