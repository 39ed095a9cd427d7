/* The edge state machine's tests (edgetest.h): generations that end (old
 * generations' rounds, DETACH, removal, LeaveWait, both ends ending), the
 * rounds taken back, and what one-sided ends report. */
#include "edgetest.h"

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

TCase *edge_end_tcase(void)
{
	TCase *tc = tcase_create("end");
	tcase_add_test(tc, test_old_generation_round_is_dropped);
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
	return tc;
}
