/* Choco-gossip baselines: conservation, convergence with a tuned gamma,
 * message sizes, random-k indices, node-synchronous rounds, and rejection
 * of malformed messages without any change of state. */
#include "testutil.h"

START_TEST(test_topk_converges_and_conserves)
{
	gsp_config cfg = config_of(GSP_METHOD_CHOCO_TOPK, 1, 0.0147);
	cluster c = cluster_new(GSP_TOPO_RING, 8, NULL, "100x100", &cfg, 31);
	double e0 = cluster_stats(&c).error;
	cluster_rounds(&c, 1000);
	gsp_sim_stats st = cluster_stats(&c);
	ck_assert_msg(st.error <= 1e-2 * e0, "error %g of initial", st.error / e0);
	ck_assert_msg(st.mean_drift <= 1e-4, "drift %g", st.mean_drift);
	/* 1% of 10000 entries, 32-bit index + 32-bit value, two neighbours. */
	ck_assert_uint_eq(st.bits_worker0, 1000u * 2 * 100 * 64);
	cluster_free(&c);
}
END_TEST

START_TEST(test_sign_and_randk)
{
	static const gsp_method methods[] = {GSP_METHOD_CHOCO_SIGN,
					     GSP_METHOD_CHOCO_RANDK};
	static const double gammas[] = {0.2, 0.01};
	for (int m = 0; m < 2; m++) {
		gsp_config cfg = config_of(methods[m], 1, gammas[m]);
		cfg.choco_fraction = 0.05f;
		cluster c = cluster_new(GSP_TOPO_RING, 8, NULL, "30x30,13", &cfg, 37);
		double e0 = cluster_stats(&c).error;
		cluster_rounds(&c, 400);
		gsp_sim_stats st = cluster_stats(&c);
		ck_assert_msg(st.error <= 0.1 * e0, "%s: error %g of initial",
			      gsp_method_name(methods[m]), st.error / e0);
		ck_assert_msg(st.mean_drift <= 1e-4, "drift %g", st.mean_drift);
		int64_t want = methods[m] == GSP_METHOD_CHOCO_SIGN
				       ? (4 + (900 + 7) / 8) + (4 + 2)
				       : (45 + 1) * 8;
		ck_assert_int_eq(gsp_node_message_size(gsp_sim_node(c.sim, 0), 0, 1),
				 want);
		cluster_free(&c);
	}
}
END_TEST

START_TEST(test_randk_indices_distinct)
{
	gsp_layout *l;
	ck_assert_int_eq(gsp_layout_parse("50x4", &l), 0);
	static float x[200];
	for (int i = 0; i < 200; i++)
		x[i] = (float)i + 1.0f;
	gsp_config cfg = config_of(GSP_METHOD_CHOCO_RANDK, 1, 0.5);
	cfg.choco_fraction = 0.5f;
	gsp_node *node;
	ck_assert_int_eq(gsp_node_new(l, x, &cfg, &node), 0);
	uint8_t seed[GSP_SEED_BYTES] = {0};
	ck_assert_int_eq(gsp_node_add_edge(node, 0.5f, GSP_ROLE_LO, seed, 32), 0);
	ck_assert_int_eq(gsp_node_project(node), 1);
	const uint8_t *msg;
	size_t len;
	ck_assert_int_eq(gsp_node_message(node, 0, (const void **)&msg, &len, NULL), 0);
	ck_assert_uint_eq(len, 100 * 8);
	bool seen[200] = {false};
	for (int e = 0; e < 100; e++) {
		uint32_t i = msg[8 * e] | msg[8 * e + 1] << 8 |
			     msg[8 * e + 2] << 16 | (uint32_t)msg[8 * e + 3] << 24;
		float v;
		memcpy(&v, msg + 8 * e + 4, 4);
		ck_assert_uint_lt(i, 200);
		ck_assert(!seen[i]);
		seen[i] = true;
		ck_assert(v == x[i]);   /* x - xhat with xhat = 0 */
	}
	gsp_node_free(node);
	gsp_layout_free(l);
}
END_TEST

/* Two twin nodes with two edges each: one sees malformed messages first. */
START_TEST(test_malformed_and_synchronous)
{
	gsp_layout *l;
	ck_assert_int_eq(gsp_layout_parse("10x10", &l), 0);
	static float xa[100], xb[100];
	for (int i = 0; i < 100; i++)
		xa[i] = xb[i] = (float)(i % 17) - 8.0f;
	gsp_config cfg = config_of(GSP_METHOD_CHOCO_TOPK, 1, 0.5);
	cfg.choco_fraction = 0.1f;
	gsp_node *a, *b;
	ck_assert_int_eq(gsp_node_new(l, xa, &cfg, &a), 0);
	ck_assert_int_eq(gsp_node_new(l, xb, &cfg, &b), 0);
	uint8_t seed[GSP_SEED_BYTES] = {0};
	for (int e = 0; e < 2; e++) {
		ck_assert_int_eq(gsp_node_add_edge(a, 0.25f, GSP_ROLE_LO, seed, 32), e);
		ck_assert_int_eq(gsp_node_add_edge(b, 0.25f, GSP_ROLE_LO, seed, 32), e);
	}
	ck_assert_int_eq(gsp_node_project(a), 2);
	ck_assert_int_eq(gsp_node_project(b), 2);
	uint8_t good[80];
	for (int e = 0; e < 10; e++) {
		uint32_t idx = (uint32_t)(e * 9);
		float v = 0.5f * (float)e;
		memcpy(good + 8 * e, &idx, 4);
		memcpy(good + 8 * e + 4, &v, 4);
	}
	uint8_t bad[80];
	memcpy(bad, good, 80);
	uint32_t out_of_range = 100;
	memcpy(bad + 8 * 3, &out_of_range, 4);
	ck_assert_int_eq(gsp_node_complete(a, 0, 1, bad, 80), GSP_ESHAPE);
	memcpy(bad, good, 80);
	float nan = NAN;
	memcpy(bad + 8 * 9 + 4, &nan, 4);
	ck_assert_int_eq(gsp_node_complete(a, 0, 1, bad, 80), GSP_ENONFINITE);
	ck_assert_int_eq(gsp_node_complete(a, 0, 1, good, 79), GSP_ESHAPE);
	/* One edge completed: a synchronous method neither applies nor
	 * projects until every edge has. */
	ck_assert_int_eq(gsp_node_complete(a, 0, 1, good, 80), 0);
	ck_assert_int_eq(gsp_node_complete(b, 0, 1, good, 80), 0);
	ck_assert_int_eq(gsp_node_step(a), 0);
	ck_assert(memcmp(xa, xb, sizeof(xa)) == 0);
	ck_assert_int_eq(gsp_node_complete(a, 1, 1, good, 80), 0);
	ck_assert_int_eq(gsp_node_complete(b, 1, 1, good, 80), 0);
	ck_assert_int_eq(gsp_node_step(a), 2);
	ck_assert_int_eq(gsp_node_step(b), 2);
	/* The rejected messages left no trace. */
	ck_assert(memcmp(xa, xb, sizeof(xa)) == 0);
	const void *ma, *mb;
	size_t la, lb;
	ck_assert_int_eq(gsp_node_message(a, 0, &ma, &la, NULL), 0);
	ck_assert_int_eq(gsp_node_message(b, 0, &mb, &lb, NULL), 0);
	ck_assert(la == lb && memcmp(ma, mb, la) == 0);
	gsp_node_free(a);
	gsp_node_free(b);
	gsp_layout_free(l);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("choco");
	TCase *tc = tcase_create("choco");
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_topk_converges_and_conserves);
	tcase_add_test(tc, test_sign_and_randk);
	tcase_add_test(tc, test_randk_indices_distinct);
	tcase_add_test(tc, test_malformed_and_synchronous);
	suite_add_tcase(s, tc);
	return run_suite(s);
}
