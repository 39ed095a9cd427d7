/* The edge state machine's tests (edgetest.h): what is refused (another
 * model, a ROUND before MODEL, past MaxRoundChange, an impossible degree),
 * staleness, and the weights agreed per generation. */
#include "edgetest.h"

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

TCase *edge_refuse_tcase(void)
{
	TCase *tc = tcase_create("refuse");
	tcase_add_test(tc, test_fingerprint_mismatch_closes);
	tcase_add_test(tc, test_round_before_model_is_malformed);
	tcase_add_test(tc, test_no_model_at_one_end_idles);
	tcase_add_test(tc, test_staleness_never_underflows_during_a_step);
	tcase_add_test(tc, test_round_over_max_round_change_refused);
	tcase_add_test(tc, test_round_from_zeros_passes_the_bound);
	tcase_add_test(tc, test_impossible_degree_is_malformed);
	tcase_add_test(tc, test_degree_change_mid_round_keeps_the_weights_equal);
	tcase_add_test(tc, test_weights_are_agreed_per_generation);
	return tc;
}
