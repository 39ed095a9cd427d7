/* Exact gossip against a dense double-precision reference of
 * x_i += gamma sum_j w_ij (x_j - x_i), on regular and irregular graphs. */
#include "testutil.h"

static void check_against_reference(gsp_topology topo, unsigned n,
				    const char *edges, double gamma)
{
	gsp_config cfg = config_of(GSP_METHOD_EXACT, 1, gamma);
	cluster c = cluster_new(topo, n, edges, "12x5,3", &cfg, 23);
	size_t f = gsp_layout_floats(c.layout);
	double *x = calloc(n * f, sizeof(double)), *nx = calloc(n * f, sizeof(double));
	ck_assert(x && nx);
	for (unsigned i = 0; i < n; i++)
		for (size_t j = 0; j < f; j++)
			x[i * f + j] = gsp_sim_params(c.sim, i)[j];
	for (unsigned r = 0; r < 30; r++) {
		for (unsigned i = 0; i < n; i++)
			for (size_t j = 0; j < f; j++) {
				double s = 0.0;
				for (unsigned k = 0; k < n; k++)
					if (k != i)
						s += gsp_graph_weight(c.graph, i, k) *
						     (x[k * f + j] - x[i * f + j]);
				nx[i * f + j] = x[i * f + j] + (float)gamma * s;
			}
		memcpy(x, nx, n * f * sizeof(double));
		cluster_rounds(&c, 1);
		double num = 0.0, den = 0.0;
		for (unsigned i = 0; i < n; i++)
			for (size_t j = 0; j < f; j++) {
				double d = gsp_sim_params(c.sim, i)[j] - x[i * f + j];
				num += d * d;
				den += x[i * f + j] * x[i * f + j];
			}
		ck_assert_msg(sqrt(num / den) <= 1e-5, "round %u: rel %g", r,
			      sqrt(num / den));
	}
	free(x);
	free(nx);
	cluster_free(&c);
}

START_TEST(test_reference_ring)
{
	check_against_reference(GSP_TOPO_RING, 8, NULL,
				optimal_gamma(GSP_TOPO_RING, 8));
}
END_TEST

START_TEST(test_reference_irregular)
{
	/* A path with a triangle: Metropolis-Hastings weights differ per edge. */
	check_against_reference(GSP_TOPO_EDGELIST, 5, "0-1,1-2,2-3,3-4,2-4", 1.0);
}
END_TEST

START_TEST(test_consensus_and_bytes)
{
	gsp_config cfg = config_of(GSP_METHOD_EXACT, 1,
				   optimal_gamma(GSP_TOPO_RING, 8));
	cluster c = cluster_new(GSP_TOPO_RING, 8, NULL, "100x100", &cfg, 29);
	double e0 = cluster_stats(&c).error;
	cluster_rounds(&c, 15);
	gsp_sim_stats st = cluster_stats(&c);
	/* docs/ALGORITHM.md section 8: 15 steps and 9.6 Mbit to 1e-4. */
	ck_assert_msg(st.error <= 1e-4 * e0, "error %g of initial", st.error / e0);
	ck_assert_uint_eq(st.bits_worker0, 15u * 2 * 32 * 10000);
	ck_assert(st.mean_drift <= 1e-6);
	cluster_free(&c);
}
END_TEST

/* gsp_graph_finite_schedule's steps, one per round at every node (the
 * engine's float rounds, not a reference): every node holds the network's
 * average after the schedule's K rounds, and not one round sooner. */
static void check_finite_schedule(gsp_topology topo, unsigned n, const char *edges)
{
	gsp_config cfg = config_of(GSP_METHOD_EXACT, 1, 1.0);
	cluster c = cluster_new(topo, n, edges, "40x30,30", &cfg, 37);
	double gammas[64], e0 = cluster_stats(&c).error;
	size_t k;
	ck_assert_int_eq(gsp_graph_finite_schedule(c.graph, gammas, 64, &k, NULL), 0);
	for (size_t t = 0; t < k; t++) {
		if (t + 1 == k)
			ck_assert_msg(cluster_stats(&c).error > 1e-11 * e0,
				      "n %u: at the average a round early", n);
		for (unsigned i = 0; i < n; i++)
			ck_assert_int_eq(gsp_node_set_gamma(gsp_sim_node(c.sim, i),
							    (float)gammas[t]), 0);
		cluster_rounds(&c, 1);
	}
	gsp_sim_stats st = cluster_stats(&c);
	/* error is squared: 1e-13 is a relative spread of 3e-7, float
	 * rounding. */
	ck_assert_msg(st.error <= 1e-13 * e0, "n %u, %zu rounds: error %g of initial",
		      n, k, st.error / e0);
	ck_assert(st.mean_drift <= 1e-6);
	cluster_free(&c);
}

START_TEST(test_finite_schedule_rounds)
{
	check_finite_schedule(GSP_TOPO_RING, 8, NULL);
	check_finite_schedule(GSP_TOPO_RING, 17, NULL);
	check_finite_schedule(GSP_TOPO_TORUS, 16, NULL);
	check_finite_schedule(GSP_TOPO_EXPONENTIAL, 16, NULL);
	check_finite_schedule(GSP_TOPO_EDGELIST, 5, "0-1,1-2,2-3,3-4,2-4");
}
END_TEST

START_TEST(test_set_gamma_invalid)
{
	gsp_config cfg = config_of(GSP_METHOD_EXACT, 1, 0.5);
	cluster c = cluster_new(GSP_TOPO_RING, 2, NULL, "3", &cfg, 3);
	gsp_node *node = gsp_sim_node(c.sim, 0);
	ck_assert_int_eq(gsp_node_set_gamma(node, -1.0f), -EINVAL);
	ck_assert_int_eq(gsp_node_set_gamma(node, NAN), -EINVAL);
	ck_assert_int_eq(gsp_node_set_gamma(node, INFINITY), -EINVAL);
	ck_assert_int_eq(gsp_node_set_gamma(NULL, 1.0f), -EINVAL);
	ck_assert_int_eq(gsp_node_set_gamma(node, 0.0f), 0);
	cluster_free(&c);
}
END_TEST

/* Non-finite values are refused: parameters when projecting (nothing is
 * committed), and a neighbour message when completing. */
START_TEST(test_nonfinite_refused)
{
	gsp_layout *layout;
	ck_assert_int_eq(gsp_layout_parse("12x5,3", &layout), 0);
	float params[63];
	for (size_t i = 0; i < 63; i++)
		params[i] = (float)i - 30.0f;
	gsp_config cfg = config_of(GSP_METHOD_EXACT, 1, 0.5);
	gsp_node *node;
	ck_assert_int_eq(gsp_node_new(layout, params, &cfg, &node), 0);
	uint8_t seed[GSP_SEED_BYTES] = {3};
	ck_assert_int_eq(gsp_node_add_edge(node, 0.5f, GSP_ROLE_LO, seed,
					   sizeof(seed)), 0);
	gsp_edge_info info;
	for (size_t bad = 0; bad < 63; bad += 31) {
		params[bad] = bad ? INFINITY : NAN;
		ck_assert_int_eq(gsp_node_project(node), GSP_ENONFINITE);
		ck_assert_int_eq(gsp_node_edge_info(node, 0, &info), 0);
		ck_assert_uint_eq(info.round, 0);
		params[bad] = 1.0f;
	}
	ck_assert_int_eq(gsp_node_project(node), 1);
	float peer[63];
	for (size_t i = 0; i < 63; i++)
		peer[i] = params[i] + 1.0f;
	peer[62] = NAN;
	ck_assert_int_eq(gsp_node_complete(node, 0, 1, peer, sizeof(peer)),
			 GSP_ENONFINITE);
	peer[62] = -INFINITY;
	ck_assert_int_eq(gsp_node_complete(node, 0, 1, peer, sizeof(peer)),
			 GSP_ENONFINITE);
	peer[62] = 0.0f;
	ck_assert_int_eq(gsp_node_complete(node, 0, 1, peer, sizeof(peer)), 0);
	gsp_node_free(node);
	gsp_layout_free(layout);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("exact");
	TCase *tc = tcase_create("exact");
	tcase_add_test(tc, test_reference_ring);
	tcase_add_test(tc, test_reference_irregular);
	tcase_add_test(tc, test_consensus_and_bytes);
	tcase_add_test(tc, test_nonfinite_refused);
	tcase_add_test(tc, test_finite_schedule_rounds);
	tcase_add_test(tc, test_set_gamma_invalid);
	suite_add_tcase(s, tc);
	return run_suite(s);
}
