/* Unit tests of the edge state machine (daemon/edge.h), driven by
 * scripted events through tests/daemon/edgepair.h: the MODEL/RESYNC
 * sequence, rounds that conserve the pair's sum, early and deferred
 * rounds, generations, refusals, and ending a session with rounds in
 * flight; test_edge_*.c hold the other cases of the same executable. */
#include "edgetest.h"

START_TEST(test_model_resync_up)
{
	edgepair p;
	gsp_config c = config(GSP_METHOD_POWERGOSSIP, 2);
	ep_init(&p, "200x30,7", &c);   /* its whole model over the control cap */
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
	suite_add_tcase(s, tc);
	suite_add_tcase(s, edge_restart_tcase());
	suite_add_tcase(s, edge_end_tcase());
	suite_add_tcase(s, edge_refuse_tcase());
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
