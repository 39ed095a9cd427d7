/* gsp_node_edge_reset_exact: generations of exact rounds on the edges of
 * a node of another method (PowerGossip), with per-round steps.  The
 * finite-time schedule on every edge of a PowerGossip cluster reaches the
 * exact average in its K rounds; edges of both kinds on one node conserve
 * the sum and mix; gsp_node_edge_reset goes back to PowerGossip; the
 * refusals change nothing.  Take-backs of such rounds: test_rollback. */
#include "testutil.h"

#define SPEC "24x16,16x9,7"

static gsp_config pg_config(void)
{
	return config_of(GSP_METHOD_POWERGOSSIP, 2, optimal_gamma(GSP_TOPO_RING, 8));
}

/* Both ends of graph edge e start a new generation: exact with steps
 * (n_steps may be 0) if exact, else the node's method. */
static void reset_edge(cluster *c, size_t e, bool exact, const float *steps,
		       size_t n_steps)
{
	unsigned node[2];
	size_t at[2];
	uint8_t seed[GSP_SEED_BYTES];
	cluster_seed(seed, (uint8_t)(40 + e));
	ck_assert_int_eq(gsp_sim_edge(c->sim, e, &node[0], &at[0], &node[1], &at[1]), 0);
	for (int s = 0; s < 2; s++) {
		gsp_node *n = gsp_sim_node(c->sim, node[s]);
		gsp_edge_info info;
		ck_assert_int_eq(gsp_node_edge_info(n, at[s], &info), 0);
		int r = exact ? gsp_node_edge_reset_exact(n, at[s], info.weight, info.role,
							  seed, sizeof(seed), steps, n_steps)
			      : gsp_node_edge_reset(n, at[s], info.weight, info.role,
						    seed, sizeof(seed));
		ck_assert_int_eq(r, 0);
	}
}

static uint64_t node_tx(cluster *c, unsigned i)
{
	gsp_node *n = gsp_sim_node(c->sim, i);
	uint64_t tx = 0;
	for (size_t e = 0; e < gsp_node_edge_count(n); e++) {
		gsp_edge_info info;
		ck_assert_int_eq(gsp_node_edge_info(n, e, &info), 0);
		tx += info.tx_bytes;
	}
	return tx;
}

/* A PowerGossip cluster trains its edges a while, then every edge starts
 * a generation of the finite-time schedule: after its K rounds every
 * node holds the average of the models it started the schedule with. */
static void check_schedule(gsp_topology topo, unsigned n)
{
	gsp_config cfg = pg_config();
	cluster c = cluster_new(topo, n, NULL, SPEC, &cfg, 53);
	size_t floats = gsp_layout_floats(c.layout);
	cluster_rounds(&c, 5);
	double e0 = cluster_stats(&c).error;
	double steps_d[64];
	float steps[64];
	size_t k;
	ck_assert_int_eq(gsp_graph_finite_schedule(c.graph, steps_d, 64, &k, NULL), 0);
	for (size_t t = 0; t < k; t++)
		steps[t] = (float)steps_d[t];
	for (size_t e = 0; e < gsp_graph_edge_count(c.graph); e++)
		reset_edge(&c, e, true, steps, k);
	uint64_t tx0 = node_tx(&c, 0);
	for (size_t t = 0; t < k; t++) {
		if (t + 1 == k)
			ck_assert_msg(cluster_stats(&c).error > 1e-11 * e0,
				      "n %u: at the average a round early", n);
		cluster_rounds(&c, 1);
	}
	gsp_sim_stats st = cluster_stats(&c);
	ck_assert_msg(st.error <= 1e-13 * e0, "n %u: error %g of the start", n,
		      st.error / e0);
	ck_assert(st.mean_drift <= 1e-6);
	/* Whole models: K rounds on each of node 0's edges. */
	ck_assert_uint_eq(node_tx(&c, 0) - tx0,
			  (uint64_t)k * gsp_graph_degree(c.graph, 0) * floats * 4);
	/* Back to PowerGossip: its messages again, and the sum still kept. */
	for (size_t e = 0; e < gsp_graph_edge_count(c.graph); e++)
		reset_edge(&c, e, false, NULL, 0);
	uint64_t tx1 = node_tx(&c, 0);
	cluster_rounds(&c, 2);
	int64_t pg = gsp_node_message_size(gsp_sim_node(c.sim, 0), 0, 1) +
		     gsp_node_message_size(gsp_sim_node(c.sim, 0), 0, 2);
	ck_assert_uint_eq(node_tx(&c, 0) - tx1,
			  (uint64_t)pg * gsp_graph_degree(c.graph, 0));
	ck_assert((uint64_t)pg < 2 * floats * 4);
	ck_assert(cluster_stats(&c).mean_drift <= 1e-6);
	cluster_free(&c);
}

START_TEST(test_schedule_on_powergossip)
{
	check_schedule(GSP_TOPO_RING, 8);
	check_schedule(GSP_TOPO_TORUS, 16);
	check_schedule(GSP_TOPO_EXPONENTIAL, 16);
}
END_TEST

/* Half the ring's edges exact (no steps: the node's gamma), half
 * PowerGossip: the nodes with one of each run both kinds in one step;
 * the sum is kept and the models come together. */
START_TEST(test_mixed_kinds)
{
	gsp_config cfg = pg_config();
	cluster c = cluster_new(GSP_TOPO_RING, 8, NULL, SPEC, &cfg, 59);
	double e0 = cluster_stats(&c).error;
	for (size_t e = 0; e < gsp_graph_edge_count(c.graph); e += 2)
		reset_edge(&c, e, true, NULL, 0);
	cluster_rounds(&c, 30);
	gsp_sim_stats st = cluster_stats(&c);
	ck_assert(st.finite);
	ck_assert(st.mean_drift <= 1e-6);
	ck_assert_msg(st.error < 0.1 * e0, "error %g of the start", st.error / e0);
	cluster_free(&c);
}
END_TEST

/* Exact rounds at steps on a two-node PowerGossip pair against the
 * formula: round t moves each end by steps[t-1] * w * (other - own). */
START_TEST(test_steps_per_round)
{
	gsp_config cfg = pg_config();
	cluster c = cluster_new(GSP_TOPO_RING, 2, NULL, SPEC, &cfg, 61);
	const float steps[3] = {0.25f, 1.5f, 0.0f};
	reset_edge(&c, 0, true, steps, 3);
	float *x0 = gsp_sim_params(c.sim, 0), *x1 = gsp_sim_params(c.sim, 1);
	for (int t = 0; t < 4; t++) {
		/* After the steps: the node's gamma. */
		float g = t < 3 ? steps[t] : cfg.gamma;
		double c_w = g * 0.5;   /* w = 1/2 on the 2-node ring */
		double d0 = (double)x1[0] - x0[0], a = x0[0], b = x1[0];
		cluster_rounds(&c, 1);
		ck_assert_double_eq_tol(x0[0], a + c_w * d0, 1e-5 * (1 + fabs(a)));
		ck_assert_double_eq_tol(x1[0], b - c_w * d0, 1e-5 * (1 + fabs(b)));
	}
	cluster_free(&c);
}
END_TEST

START_TEST(test_refused)
{
	gsp_config cfg = pg_config();
	cluster c = cluster_new(GSP_TOPO_RING, 2, NULL, SPEC, &cfg, 67);
	gsp_node *node = gsp_sim_node(c.sim, 0);
	uint8_t seed[GSP_SEED_BYTES], *buf;
	size_t len;
	cluster_seed(seed, 3);
	float bad[2] = {0.5f, NAN}, neg[1] = {-0.1f}, ok[1] = {0.5f};
	cluster_rounds(&c, 1);
	ck_assert_int_eq(gsp_node_edge_state_size(node, 0, &len), 0);
	gsp_edge_info before, after;
	ck_assert_int_eq(gsp_node_edge_info(node, 0, &before), 0);
	ck_assert_int_eq(gsp_node_edge_reset_exact(node, 0, 0.5f, GSP_ROLE_LO, seed, sizeof(seed), bad, 2), -EINVAL);
	ck_assert_int_eq(gsp_node_edge_reset_exact(node, 0, 0.5f, GSP_ROLE_LO, seed, sizeof(seed), neg, 1), -EINVAL);
	ck_assert_int_eq(gsp_node_edge_reset_exact(node, 0, 0.5f, GSP_ROLE_LO, seed, sizeof(seed), NULL, 1), -EINVAL);
	ck_assert_int_eq(gsp_node_edge_reset_exact(node, 0, 0.5f, GSP_ROLE_LO, seed, sizeof(seed), ok, GSP_MAX_STEPS + 1), -EINVAL);
	ck_assert_int_eq(gsp_node_edge_reset_exact(node, 0, 1.5f, GSP_ROLE_LO, seed, sizeof(seed), ok, 1), -EINVAL);
	ck_assert_int_eq(gsp_node_edge_reset_exact(node, 9, 0.5f, GSP_ROLE_LO, seed, sizeof(seed), ok, 1), -EINVAL);
	ck_assert_int_eq(gsp_node_edge_reset_exact(NULL, 0, 0.5f, GSP_ROLE_LO, seed, sizeof(seed), ok, 1), -EINVAL);
	/* A completed round not yet applied: apply it first. */
	ck_assert_int_eq(gsp_node_step(node), 1);
	ck_assert_int_eq(gsp_node_step(gsp_sim_node(c.sim, 1)), 1);
	const void *msg;
	uint64_t round;
	ck_assert_int_eq(gsp_node_message(gsp_sim_node(c.sim, 1), 0, &msg, &len, &round), 0);
	ck_assert_int_eq(gsp_node_complete(node, 0, round, msg, len), 0);
	ck_assert_int_eq(gsp_node_edge_info(node, 0, &before), 0);
	ck_assert_int_eq(gsp_node_edge_reset_exact(node, 0, 0.5f, GSP_ROLE_LO, seed, sizeof(seed), ok, 1), -EBUSY);
	ck_assert_int_eq(gsp_node_edge_info(node, 0, &after), 0);
	ck_assert(memcmp(&before, &after, sizeof(before)) == 0);
	ck_assert_int_eq(gsp_node_apply(node), 1);
	/* Such a generation is not saved, and nothing is loaded into it; its
	 * edge has no PowerGossip factors. */
	ck_assert_int_eq(gsp_node_edge_reset_exact(node, 0, 0.5f, GSP_ROLE_LO, seed, sizeof(seed), ok, 1), 0);
	ck_assert_int_eq(gsp_node_edge_state_size(node, 0, &len), -ENOTSUP);
	ck_assert_int_eq(gsp_node_edge_save(node, 0, &buf, &len), -ENOTSUP);
	ck_assert_int_eq(gsp_node_edge_load(node, 0, (const uint8_t *)"GSE1", 4), -ENOTSUP);
	ck_assert_int_eq(gsp_node_edge_factors(node, 0, 0, NULL, NULL, NULL), -EINVAL);
	cluster_free(&c);

	/* Choco's rounds need every edge of its own kind. */
	gsp_config choco = config_of(GSP_METHOD_CHOCO_SIGN, 1, 0.1);
	c = cluster_new(GSP_TOPO_RING, 2, NULL, SPEC, &choco, 67);
	ck_assert_int_eq(gsp_node_edge_reset_exact(gsp_sim_node(c.sim, 0), 0, 0.5f, GSP_ROLE_LO,
						   seed, sizeof(seed), ok, 1), -ENOTSUP);
	cluster_free(&c);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("exact_kind");
	TCase *tc = tcase_create("exact_kind");
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_schedule_on_powergossip);
	tcase_add_test(tc, test_mixed_kinds);
	tcase_add_test(tc, test_steps_per_round);
	tcase_add_test(tc, test_refused);
	suite_add_tcase(s, tc);
	return run_suite(s);
}
