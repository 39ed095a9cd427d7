/* gsp_node_edge_exact_rounds: windows of exact rounds at per-round steps
 * inside an edge's generation, on a node of another method (PowerGossip).
 * The finite-time schedule opened on every edge of a PowerGossip cluster
 * reaches the exact average in its K rounds and PowerGossip goes on after
 * it; edges in and out of windows on one node conserve the sum and mix;
 * each round moves both ends by its step; a window opens at a completed
 * round; an edge saved inside its window and loaded elsewhere goes on bit
 * for bit; the refusals change nothing.  The ring's matching schedule
 * (gsp_ring_matching_schedule: half the edges sit each round out, with a
 * one-float message) reaches the exact average with one model per node
 * and round.  Take-backs at a window's edges:
 * test_rollback. */
#include "testutil.h"

#define SPEC "24x16,16x9,7"

static gsp_config pg_config(void)
{
	return config_of(GSP_METHOD_POWERGOSSIP, 2, optimal_gamma(GSP_TOPO_RING, 8));
}

/* Both ends of graph edge e open the window after their current round
 * (the same at both: gsp_sim rounds are whole). */
static void open_window(cluster *c, size_t e, const float *steps, size_t n_steps)
{
	unsigned node[2];
	size_t at[2];
	uint64_t round[2];
	ck_assert_int_eq(gsp_sim_edge(c->sim, e, &node[0], &at[0], &node[1], &at[1]), 0);
	for (int s = 0; s < 2; s++) {
		gsp_edge_info info;
		ck_assert_int_eq(gsp_node_edge_info(gsp_sim_node(c->sim, node[s]), at[s],
						    &info), 0);
		round[s] = info.round;
	}
	ck_assert_uint_eq(round[0], round[1]);
	for (int s = 0; s < 2; s++)
		ck_assert_int_eq(gsp_node_edge_exact_rounds(gsp_sim_node(c->sim, node[s]),
							    at[s], round[s], steps,
							    n_steps), 0);
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

/* PowerGossip's two message sizes (odd and even rounds) on node 0. */
static uint64_t pg_pair_bytes(cluster *c)
{
	gsp_node *n = gsp_sim_node(c->sim, 0);
	return (uint64_t)(gsp_node_message_size(n, 0, 1) + gsp_node_message_size(n, 0, 2));
}

/* The k rounds of a schedule whose windows are open on every edge: the
 * average after them and not a round earlier, the sum kept. */
static void run_schedule(cluster *c, size_t k, double e0, unsigned n)
{
	for (size_t t = 0; t < k; t++) {
		if (t + 1 == k)
			ck_assert_msg(cluster_stats(c).error > 1e-11 * e0,
				      "n %u: at the average a round early", n);
		cluster_rounds(c, 1);
	}
	gsp_sim_stats st = cluster_stats(c);
	ck_assert_msg(st.error <= 1e-13 * e0, "n %u: error %g of the start", n,
		      st.error / e0);
	ck_assert(st.mean_drift <= 1e-6);
}

/* A PowerGossip cluster gossips a while, then every edge opens the
 * finite-time schedule's window: after its K rounds every node holds the
 * average of the models it started the window with, and PowerGossip
 * rounds follow in the same generation. */
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
		open_window(&c, e, steps, k);
	uint64_t tx0 = node_tx(&c, 0);
	run_schedule(&c, k, e0, n);
	/* Whole models: K rounds on each of node 0's edges. */
	ck_assert_uint_eq(node_tx(&c, 0) - tx0,
			  (uint64_t)k * gsp_graph_degree(c.graph, 0) * floats * 4);
	/* PowerGossip again, in the same generation: its messages, the sum
	 * kept, and the models stay at the average. */
	uint64_t tx1 = node_tx(&c, 0);
	cluster_rounds(&c, 2);
	ck_assert_uint_eq(node_tx(&c, 0) - tx1, pg_pair_bytes(&c) * gsp_graph_degree(c.graph, 0));
	ck_assert(pg_pair_bytes(&c) < 2 * floats * 4);
	gsp_sim_stats st = cluster_stats(&c);
	ck_assert(st.mean_drift <= 1e-6);
	ck_assert_msg(st.error <= 1e-12 * e0, "n %u: error %g after", n, st.error / e0);
	/* Its round count went on through the window. */
	gsp_edge_info info;
	ck_assert_int_eq(gsp_node_edge_info(gsp_sim_node(c.sim, 0), 0, &info), 0);
	ck_assert_uint_eq(info.round, 5 + k + 2);
	cluster_free(&c);
}

START_TEST(test_schedule_on_powergossip)
{
	check_schedule(GSP_TOPO_RING, 8);
	check_schedule(GSP_TOPO_TORUS, 16);
	check_schedule(GSP_TOPO_EXPONENTIAL, 16);
}
END_TEST

/* A ring's matching schedule on a PowerGossip cluster of n nodes: ring
 * edge {i, i + 1 mod n} runs the rounds t with t = i mod 2 at step w_t /
 * its weight and sits out the others.  After the K rounds every node
 * holds the average; node 0 sent one whole model and one 4-byte message
 * per round. */
static void check_matching(unsigned n)
{
	gsp_config cfg = pg_config();
	cluster c = cluster_new(GSP_TOPO_RING, n, NULL, SPEC, &cfg, 67);
	size_t floats = gsp_layout_floats(c.layout);
	cluster_rounds(&c, 3);
	double e0 = cluster_stats(&c).error;
	double w[64];
	size_t k;
	ck_assert_int_eq(gsp_ring_matching_schedule(n, w, 64, &k), 0);
	ck_assert_uint_eq(k, n / 2);
	for (size_t e = 0; e < gsp_graph_edge_count(c.graph); e++) {
		unsigned a, b;
		size_t at_a, at_b;
		ck_assert_int_eq(gsp_sim_edge(c.sim, e, &a, &at_a, &b, &at_b), 0);
		unsigned color = (a + 1) % n == b ? a % 2 : b % 2;
		gsp_edge_info info;
		ck_assert_int_eq(gsp_node_edge_info(gsp_sim_node(c.sim, a), at_a, &info), 0);
		float steps[64];
		for (size_t t = 0; t < k; t++)
			steps[t] = t % 2 == color ? (float)(w[t] / info.weight) : 0.0f;
		open_window(&c, e, steps, k);
	}
	uint64_t tx0 = node_tx(&c, 0);
	run_schedule(&c, k, e0, n);
	ck_assert_uint_eq(node_tx(&c, 0) - tx0, (uint64_t)k * (floats * 4 + 4));
	cluster_free(&c);
}

START_TEST(test_matching_schedule)
{
	check_matching(4);
	check_matching(6);
	check_matching(8);
	check_matching(16);
}
END_TEST

/* A sat-out round's message is the zero float: anything else is
 * malformed, and changes nothing. */
START_TEST(test_skipped_round_message)
{
	gsp_config cfg = pg_config();
	cluster c = cluster_new(GSP_TOPO_RING, 2, NULL, SPEC, &cfg, 71);
	const float steps[2] = {0.0f, 1.0f};
	cluster_rounds(&c, 2);
	open_window(&c, 0, steps, 2);
	gsp_node *n0 = gsp_sim_node(c.sim, 0);
	ck_assert_int_eq(gsp_node_message_size(n0, 0, 3), 4);
	/* The method's size is the window's maximum's source, not the skip. */
	ck_assert_int_eq(gsp_node_method_message_size(n0, 3),
			 gsp_node_method_message_size(n0, 1));
	ck_assert_int_gt(gsp_node_method_message_size(n0, 3), 4);
	ck_assert_int_eq(gsp_node_step(n0), 1);
	const float bad = 1.0f, zero = 0.0f;
	ck_assert_int_eq(gsp_node_complete(n0, 0, 3, &bad, 4), -EBADMSG);
	gsp_edge_info info;
	ck_assert_int_eq(gsp_node_edge_info(n0, 0, &info), 0);
	ck_assert_int_eq(info.state, GSP_EDGE_IN_FLIGHT);
	ck_assert_int_eq(gsp_node_complete(n0, 0, 3, &zero, 4), 0);
	cluster_free(&c);
}
END_TEST

/* Half the ring's edges in a long window at the node's gamma, half
 * PowerGossip: the nodes with one of each run both kinds in one step; the
 * sum is kept and the models come together. */
START_TEST(test_mixed_kinds)
{
	gsp_config cfg = pg_config();
	cluster c = cluster_new(GSP_TOPO_RING, 8, NULL, SPEC, &cfg, 59);
	double e0 = cluster_stats(&c).error;
	float steps[40];
	for (size_t t = 0; t < 40; t++)
		steps[t] = cfg.gamma;
	for (size_t e = 0; e < gsp_graph_edge_count(c.graph); e += 2)
		open_window(&c, e, steps, 40);
	cluster_rounds(&c, 30);
	gsp_sim_stats st = cluster_stats(&c);
	ck_assert(st.finite);
	ck_assert(st.mean_drift <= 1e-6);
	ck_assert_msg(st.error < 0.1 * e0, "error %g of the start", st.error / e0);
	cluster_free(&c);
}
END_TEST

/* A two-node PowerGossip pair, two PowerGossip rounds, then a window of
 * three: each window round moves both ends by steps[t] * w * (other -
 * own); the round after it is PowerGossip's again. */
START_TEST(test_steps_per_round)
{
	gsp_config cfg = pg_config();
	cluster c = cluster_new(GSP_TOPO_RING, 2, NULL, SPEC, &cfg, 61);
	const float steps[3] = {0.25f, 1.5f, 0.0f};   /* the last sat out */
	cluster_rounds(&c, 2);
	open_window(&c, 0, steps, 3);
	float *x0 = gsp_sim_params(c.sim, 0), *x1 = gsp_sim_params(c.sim, 1);
	gsp_node *n0 = gsp_sim_node(c.sim, 0);
	for (int t = 0; t < 3; t++) {
		double c_w = steps[t] * 0.5;   /* w = 1/2 on the 2-node ring */
		double d0 = (double)x1[0] - x0[0], a = x0[0], b = x1[0];
		ck_assert_int_eq(gsp_node_message_size(n0, 0, 3 + t),
				 steps[t] ? (int64_t)gsp_layout_floats(c.layout) * 4 : 4);
		cluster_rounds(&c, 1);
		ck_assert_double_eq_tol(x0[0], a + c_w * d0, 1e-5 * (1 + fabs(a)));
		ck_assert_double_eq_tol(x1[0], b - c_w * d0, 1e-5 * (1 + fabs(b)));
	}
	int64_t pg6 = gsp_node_message_size(n0, 0, 6);
	ck_assert(pg6 > 0 && pg6 < (int64_t)gsp_layout_floats(c.layout) * 4);
	uint64_t tx = node_tx(&c, 0);
	cluster_rounds(&c, 1);
	ck_assert_uint_eq(node_tx(&c, 0) - tx, (uint64_t)pg6);
	cluster_free(&c);
}
END_TEST

/* Each node of a pair completes its round with the other's message. */
static void exchange(gsp_node *n[2])
{
	for (int i = 0; i < 2; i++) {
		const void *msg;
		size_t len;
		uint64_t round;
		ck_assert_int_eq(gsp_node_message(n[1 - i], 0, &msg, &len, &round), 0);
		ck_assert_int_eq(gsp_node_complete(n[i], 0, round, msg, len), 0);
	}
}

/* The daemon's case: the window opens once round r has completed, before
 * it is applied.  Round r lands as PowerGossip's, round r + 1 goes out as
 * a whole model, and the pair's sum stays. */
START_TEST(test_opens_at_a_completed_round)
{
	gsp_config cfg = pg_config();
	cluster c = cluster_new(GSP_TOPO_RING, 2, NULL, SPEC, &cfg, 71);
	gsp_node *n[2] = {gsp_sim_node(c.sim, 0), gsp_sim_node(c.sim, 1)};
	float *x[2] = {gsp_sim_params(c.sim, 0), gsp_sim_params(c.sim, 1)};
	size_t floats = gsp_layout_floats(c.layout);
	double sum0 = 0;
	for (int i = 0; i < 2; i++)
		for (size_t j = 0; j < floats; j++)
			sum0 += x[i][j];
	cluster_rounds(&c, 3);
	for (int i = 0; i < 2; i++)
		ck_assert_int_eq(gsp_node_project(n[i]), 1);
	exchange(n);
	const float steps[1] = {1.0f};
	for (int i = 0; i < 2; i++) {
		gsp_edge_info info;
		ck_assert_int_eq(gsp_node_edge_info(n[i], 0, &info), 0);
		ck_assert(info.state == GSP_EDGE_COMPLETED && info.round == 4);
		ck_assert_int_eq(gsp_node_edge_exact_rounds(n[i], 0, 4, steps, 1), 0);
	}
	/* One exact round at step 1 with w = 1/2: the 2-node average. */
	cluster_rounds(&c, 1);
	double sum = 0, gap = 0;
	for (size_t j = 0; j < floats; j++) {
		sum += x[0][j] + x[1][j];
		gap = fmax(gap, fabs((double)x[0][j] - x[1][j]));
	}
	ck_assert_msg(gap <= 1e-5, "gap %g", gap);
	ck_assert_double_eq_tol(sum, sum0, 1e-4 * (1 + fabs(sum0)));
	cluster_free(&c);
}
END_TEST

static gsp_edge_info info_of(gsp_node *n)
{
	gsp_edge_info info;
	ck_assert_int_eq(gsp_node_edge_info(n, 0, &info), 0);
	return info;
}

/* A 2-node PowerGossip pair and a copy of it made at a point inside a
 * window from each end's saved edge (a daemon restarted from its
 * records): the copy's rounds, through the window's end and back to
 * PowerGossip, are the original's bit for bit. */
typedef struct restored {
	gsp_layout *layout;
	float *x[2];
	gsp_node *n[2];
} restored;

static restored restore_pair(cluster *c)
{
	restored r;
	gsp_config cfg = pg_config();
	size_t floats = gsp_layout_floats(c->layout);
	ck_assert_int_eq(gsp_layout_parse(SPEC, &r.layout), 0);
	for (int i = 0; i < 2; i++) {
		gsp_node *from = gsp_sim_node(c->sim, (unsigned)i);
		r.x[i] = malloc(floats * sizeof(float));
		ck_assert_ptr_nonnull(r.x[i]);
		memcpy(r.x[i], gsp_sim_params(c->sim, (unsigned)i), floats * sizeof(float));
		ck_assert_int_eq(gsp_node_new(r.layout, r.x[i], &cfg, &r.n[i]), 0);
		uint8_t seed[GSP_SEED_BYTES] = {0}, *buf;
		size_t len;
		gsp_edge_info info = info_of(from);
		ck_assert_int_eq(gsp_node_add_edge(r.n[i], info.weight, info.role, seed,
						   sizeof(seed)), 0);
		ck_assert_int_eq(gsp_node_edge_save(from, 0, &buf, &len), 0);
		ck_assert(memcmp(buf, "GSE2", 4) == 0);
		/* Malformed: cut short, or a window of no steps. */
		ck_assert_int_eq(gsp_node_edge_load(r.n[i], 0, buf, len - 1), -EBADMSG);
		ck_assert_int_eq(gsp_node_edge_load(r.n[i], 0, buf, len + 0), 0);
		ck_assert_uint_eq(info_of(r.n[i]).window_end, info.window_end);
		free(buf);
	}
	return r;
}

/* One whole round of a pair of nodes, as gsp_sim_round does it. */
static void pair_round(gsp_node *n[2])
{
	for (int i = 0; i < 2; i++)
		ck_assert_int_ge(gsp_node_step(n[i]), 0);
	exchange(n);
	for (int i = 0; i < 2; i++)
		ck_assert_int_ge(gsp_node_apply(n[i]), 0);
}

START_TEST(test_window_saved_and_loaded)
{
	gsp_config cfg = pg_config();
	cluster c = cluster_new(GSP_TOPO_RING, 2, NULL, SPEC, &cfg, 73);
	const float steps[3] = {0.5f, 1.0f, 0.25f};
	size_t floats = gsp_layout_floats(c.layout);
	cluster_rounds(&c, 2);
	open_window(&c, 0, steps, 3);
	cluster_rounds(&c, 1);
	restored r = restore_pair(&c);
	gsp_node *orig[2] = {gsp_sim_node(c.sim, 0), gsp_sim_node(c.sim, 1)};
	for (int t = 0; t < 5; t++) {
		pair_round(orig);
		pair_round(r.n);
		for (int i = 0; i < 2; i++)
			ck_assert_msg(memcmp(r.x[i], gsp_sim_params(c.sim, (unsigned)i),
					     floats * sizeof(float)) == 0,
				      "round %d after the load: node %d differs", 4 + t, i);
	}
	ck_assert_uint_eq(info_of(r.n[0]).window_end, 0);
	/* Garbage in the window's part is refused and changes nothing. */
	uint8_t *buf;
	size_t len;
	cluster_free(&c);
	c = cluster_new(GSP_TOPO_RING, 2, NULL, SPEC, &cfg, 73);
	cluster_rounds(&c, 2);
	open_window(&c, 0, steps, 3);
	gsp_node *n0 = gsp_sim_node(c.sim, 0);
	ck_assert_int_eq(gsp_node_edge_save(n0, 0, &buf, &len), 0);
	size_t at = len - 8 - 4 * floats - 12 - 16;   /* win_from, n_steps */
	uint8_t keep = buf[at + 8];
	buf[at + 8] = 0;                                /* n_steps 0 */
	ck_assert_int_eq(gsp_node_edge_load(r.n[0], 0, buf, len), -EBADMSG);
	buf[at + 8] = keep;
	uint8_t nan_bits[4] = {0x00, 0x00, 0xc0, 0x7f};
	memcpy(buf + at + 16, nan_bits, 4);             /* a NaN step */
	ck_assert_int_eq(gsp_node_edge_load(r.n[0], 0, buf, len), -EBADMSG);
	ck_assert_uint_eq(info_of(r.n[0]).window_end, 0);
	free(buf);
	for (int i = 0; i < 2; i++) {
		gsp_node_free(r.n[i]);
		free(r.x[i]);
	}
	gsp_layout_free(r.layout);
	cluster_free(&c);
}
END_TEST

START_TEST(test_refused)
{
	gsp_config cfg = pg_config();
	cluster c = cluster_new(GSP_TOPO_RING, 2, NULL, SPEC, &cfg, 67);
	gsp_node *node = gsp_sim_node(c.sim, 0);
	uint8_t *buf;
	size_t len;
	float bad[2] = {0.5f, NAN}, neg[1] = {-0.1f}, ok[1] = {0.5f};
	cluster_rounds(&c, 1);
	gsp_edge_info before, after;
	ck_assert_int_eq(gsp_node_edge_info(node, 0, &before), 0);
	ck_assert_int_eq(gsp_node_edge_exact_rounds(node, 0, 1, bad, 2), -EINVAL);
	ck_assert_int_eq(gsp_node_edge_exact_rounds(node, 0, 1, neg, 1), -EINVAL);
	ck_assert_int_eq(gsp_node_edge_exact_rounds(node, 0, 1, NULL, 1), -EINVAL);
	ck_assert_int_eq(gsp_node_edge_exact_rounds(node, 0, 1, ok, GSP_MAX_STEPS + 1), -EINVAL);
	ck_assert_int_eq(gsp_node_edge_exact_rounds(node, 0, UINT64_MAX, ok, 1), -EINVAL);
	ck_assert_int_eq(gsp_node_edge_exact_rounds(node, 9, 1, ok, 1), -EINVAL);
	ck_assert_int_eq(gsp_node_edge_exact_rounds(NULL, 0, 1, ok, 1), -EINVAL);
	/* Round 1 is projected: a window after round 0 is too late. */
	ck_assert_int_eq(gsp_node_edge_exact_rounds(node, 0, 0, ok, 1), -ERANGE);
	/* No steps: nothing opens, and the edge is still saved. */
	ck_assert_int_eq(gsp_node_edge_exact_rounds(node, 0, 1, ok, 0), 0);
	ck_assert_int_eq(gsp_node_edge_state_size(node, 0, &len), 0);
	ck_assert_int_eq(gsp_node_edge_info(node, 0, &after), 0);
	ck_assert(memcmp(&before, &after, sizeof(before)) == 0);
	/* Open: not twice; saved with the window (a whole model more), and
	 * PowerGossip's factors are still there. */
	size_t closed_len = len;
	ck_assert_int_eq(gsp_node_edge_exact_rounds(node, 0, 2, ok, 1), 0);
	ck_assert_int_eq(gsp_node_edge_exact_rounds(node, 0, 5, ok, 1), -EBUSY);
	ck_assert_int_eq(gsp_node_edge_state_size(node, 0, &len), 0);
	ck_assert_uint_eq(len, closed_len + 16 + 4 + 8 + 4 * gsp_layout_floats(c.layout));
	ck_assert_int_eq(gsp_node_edge_factors(node, 0, 0, NULL, NULL, NULL), 0);
	ck_assert_int_eq(gsp_node_edge_exact_rounds(gsp_sim_node(c.sim, 1), 0, 2, ok, 1), 0);
	/* Rounds 2 (PowerGossip) and 3 (the window) applied: still open, since
	 * round 3 could be taken back; once round 4 is applied it closes and
	 * the edge saves as before. */
	cluster_rounds(&c, 2);
	ck_assert_uint_eq(info_of(node).window_end, 3);
	cluster_rounds(&c, 1);
	ck_assert_uint_eq(info_of(node).window_end, 0);
	ck_assert_int_eq(gsp_node_edge_save(node, 0, &buf, &len), 0);
	ck_assert(memcmp(buf, "GSE1", 4) == 0);
	free(buf);
	ck_assert_int_eq(gsp_node_edge_exact_rounds(node, 0, 4, ok, 1), 0);
	cluster_free(&c);

	/* Choco's rounds need every edge of its own kind. */
	gsp_config choco = config_of(GSP_METHOD_CHOCO_SIGN, 1, 0.1);
	c = cluster_new(GSP_TOPO_RING, 2, NULL, SPEC, &choco, 67);
	ck_assert_int_eq(gsp_node_edge_exact_rounds(gsp_sim_node(c.sim, 0), 0, 0, ok, 1),
			 -ENOTSUP);
	cluster_free(&c);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("exact_rounds");
	TCase *tc = tcase_create("exact_rounds");
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_schedule_on_powergossip);
	tcase_add_test(tc, test_matching_schedule);
	tcase_add_test(tc, test_skipped_round_message);
	tcase_add_test(tc, test_mixed_kinds);
	tcase_add_test(tc, test_steps_per_round);
	tcase_add_test(tc, test_opens_at_a_completed_round);
	tcase_add_test(tc, test_window_saved_and_loaded);
	tcase_add_test(tc, test_refused);
	suite_add_tcase(s, tc);
	return run_suite(s);
}
