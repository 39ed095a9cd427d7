/* PowerGossip with a 16-bit wire (gsp_config.wire float16 / bfloat16):
 * half the message bytes, the network average still conserved to float32
 * rounding (both ends diff the same rounded values), consensus reached
 * down to the 16-bit precision, a float16 overflow refused as non-finite,
 * a peer's 16-bit infinity or NaN refused, the estimate's norms read at
 * the wire precision, and the methods
 * without it refusing the setting. */
#include "internal.h"
#include "testutil.h"

static const gsp_dtype wires[] = {GSP_DTYPE_FLOAT16, GSP_DTYPE_BFLOAT16};

static gsp_config wire_config(gsp_dtype wire, unsigned rank, double gamma)
{
	gsp_config cfg = config_of(GSP_METHOD_POWERGOSSIP, rank, gamma);
	cfg.wire = wire;
	return cfg;
}

START_TEST(test_average_conserved_and_consensus_reached)
{
	double gamma = optimal_gamma(GSP_TOPO_RING, 8);
	const char *spec = test_small() ? "20x20,8x30,9" : "64x64,32x100,33";
	for (unsigned w = 0; w < 2; w++)
		for (unsigned rank = 1; rank <= 2; rank++) {
			gsp_config cfg = wire_config(wires[w], rank, gamma);
			cluster c = cluster_new(GSP_TOPO_RING, 8, NULL, spec, &cfg, 3);
			double e0 = cluster_stats(&c).error, worst = 0.0;
			for (unsigned r = 0; r < 20; r++) {
				cluster_rounds(&c, test_size(50, 20));
				gsp_sim_stats st = cluster_stats(&c);
				ck_assert(st.finite);
				if (st.mean_drift > worst)
					worst = st.mean_drift;
			}
			ck_assert_msg(worst <= 1e-5, "%s rank %u: mean drift %g",
				      gsp_dtype_name(wires[w]), rank, worst);
			double e = cluster_stats(&c).error;
			ck_assert_msg(e <= 1e-2 * e0, "%s rank %u: error %g of initial",
				      gsp_dtype_name(wires[w]), rank, e / e0);
			cluster_free(&c);
		}
}
END_TEST

START_TEST(test_messages_half_the_bytes)
{
	static const char spec[] = "100x100,64x300,3x1x5,64,1";
	gsp_config f32 = config_of(GSP_METHOD_POWERGOSSIP, 2, 1.0);
	cluster a = cluster_new(GSP_TOPO_RING, 4, NULL, spec, &f32, 17);
	for (unsigned w = 0; w < 2; w++) {
		gsp_config cfg = wire_config(wires[w], 2, 1.0);
		cluster b = cluster_new(GSP_TOPO_RING, 4, NULL, spec, &cfg, 17);
		gsp_node *na = gsp_sim_node(a.sim, 0), *nb = gsp_sim_node(b.sim, 0);
		for (uint64_t r = 1; r <= 2; r++)
			ck_assert_int_eq(2 * gsp_node_message_size(nb, 0, r),
					 gsp_node_message_size(na, 0, r));
		cluster_rounds(&b, 5);
		gsp_edge_info info;
		ck_assert_int_eq(gsp_node_edge_info(nb, 0, &info), 0);
		uint64_t want = 0;
		for (uint64_t r = 1; r <= 5; r++)
			want += (uint64_t)gsp_node_message_size(na, 0, r) / 2;
		ck_assert_uint_eq(info.tx_bytes, want);
		ck_assert_uint_eq(info.rx_bytes, want);
		cluster_free(&b);
	}
	cluster_free(&a);
}
END_TEST

/* A pair of nodes whose vector holds `big`: float16 overflows above
 * 65504 (refused, nothing projected), bfloat16 does not. */
START_TEST(test_float16_overflow_refused)
{
	gsp_layout *layout;
	ck_assert_int_eq(gsp_layout_parse("8x8,4", &layout), 0);
	for (unsigned w = 0; w < 2; w++) {
		float params[68];
		for (unsigned i = 0; i < 68; i++)
			params[i] = (float)(i % 5) - 2.0f;
		params[66] = 70000.0f;
		gsp_config cfg = wire_config(wires[w], 1, 0.5);
		gsp_node *node;
		ck_assert_int_eq(gsp_node_new(layout, params, &cfg, &node), 0);
		uint8_t seed[GSP_SEED_BYTES];
		cluster_seed(seed, 1);
		ck_assert_int_eq(gsp_node_add_edge(node, 0.5f, GSP_ROLE_LO, seed,
						   sizeof(seed)), 0);
		gsp_edge_info info;
		if (wires[w] == GSP_DTYPE_FLOAT16) {
			ck_assert_int_eq(gsp_node_project(node), GSP_ENONFINITE);
			ck_assert_int_eq(gsp_node_edge_info(node, 0, &info), 0);
			ck_assert_uint_eq(info.round, 0);
			ck_assert_uint_eq(info.tx_bytes, 0);
			params[66] = 65504.0f;   /* float16's largest */
		}
		ck_assert_int_eq(gsp_node_project(node), 1);
		ck_assert_int_eq(gsp_node_edge_info(node, 0, &info), 0);
		ck_assert_uint_eq(info.round, 1);
		gsp_node_free(node);
	}
	gsp_layout_free(layout);
}
END_TEST

/* The estimate's norms read both messages at the wire precision: on a
 * pair whose models differ by a known vector, ||peer - mine|| is the
 * rounded difference, not 16-bit bytes taken as floats. */
START_TEST(test_diff_norms_read_16_bit_values)
{
	gsp_layout *layout;
	ck_assert_int_eq(gsp_layout_parse("6", &layout), 0);
	for (unsigned w = 0; w < 2; w++) {
		float x[2][6] = {{1, 2, 3, 4, 5, 6}, {1, 2, 3, 4, 5, 10}};
		gsp_config cfg = wire_config(wires[w], 1, 0.5);
		gsp_node *node[2];
		uint8_t seed[GSP_SEED_BYTES];
		cluster_seed(seed, 4);
		for (unsigned i = 0; i < 2; i++) {
			ck_assert_int_eq(gsp_node_new(layout, x[i], &cfg, &node[i]), 0);
			ck_assert_int_eq(gsp_node_add_edge(node[i], 0.5f, i ? GSP_ROLE_HI
								  : GSP_ROLE_LO,
							   seed, sizeof(seed)), 0);
			ck_assert_int_eq(gsp_node_project(node[i]), 1);
		}
		const void *peer;
		size_t len, n;
		double num, den;
		ck_assert_int_eq(gsp_node_message(node[1], 0, &peer, &len, NULL), 0);
		ck_assert_uint_eq(len, 12);
		ck_assert_int_eq(gsp_node_message_diff_norms(node[0], 0, peer, len,
							     &num, &den, &n), 0);
		ck_assert_uint_eq(n, 6);
		ck_assert_double_eq(num, 16.0);
		ck_assert_double_eq(den, 91.0);
		ck_assert_int_eq(gsp_node_message_diff_norms(node[0], 0, peer, len - 2,
							     &num, &den, &n), GSP_ESHAPE);
		/* A peer's 16-bit infinity or NaN is refused as non-finite,
		 * and the round stays in flight for the honest message. */
		_Alignas(4) uint16_t bad[6];   /* gsp_node_complete takes 4-aligned */
		memcpy(bad, peer, sizeof(bad));
		bad[2] = wires[w] == GSP_DTYPE_FLOAT16 ? 0x7c00 : 0xff80;
		ck_assert_int_eq(gsp_node_complete(node[0], 0, 1, bad, sizeof(bad)),
				 GSP_ENONFINITE);
		bad[2] = wires[w] == GSP_DTYPE_FLOAT16 ? 0x7e00 : 0x7fc0;
		ck_assert_int_eq(gsp_node_complete(node[0], 0, 1, bad, sizeof(bad)),
				 GSP_ENONFINITE);
		ck_assert_int_eq(gsp_node_complete(node[0], 0, 1, peer, len), 0);
		for (unsigned i = 0; i < 2; i++)
			gsp_node_free(node[i]);
	}
	gsp_layout_free(layout);
}
END_TEST

START_TEST(test_other_methods_refuse_16_bit)
{
	gsp_layout *layout;
	ck_assert_int_eq(gsp_layout_parse("8x8", &layout), 0);
	float params[64] = {0};
	gsp_node *node;
	static const gsp_method others[] = {GSP_METHOD_EXACT, GSP_METHOD_CHOCO_SIGN};
	for (unsigned m = 0; m < 2; m++) {
		gsp_config cfg = config_of(others[m], 1, 0.5);
		cfg.wire = GSP_DTYPE_FLOAT16;
		ck_assert_int_eq(gsp_node_new(layout, params, &cfg, &node), -EINVAL);
	}
	gsp_config cfg = wire_config((gsp_dtype)3, 1, 0.5);
	ck_assert_int_eq(gsp_node_new(layout, params, &cfg, &node), -EINVAL);
	gsp_layout_free(layout);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("wire16");
	TCase *tc = tcase_create("core");
	tcase_set_timeout(tc, 300);
	tcase_add_test(tc, test_average_conserved_and_consensus_reached);
	tcase_add_test(tc, test_messages_half_the_bytes);
	tcase_add_test(tc, test_float16_overflow_refused);
	tcase_add_test(tc, test_diff_norms_read_16_bit_values);
	tcase_add_test(tc, test_other_methods_refuse_16_bit);
	suite_add_tcase(s, tc);
	return run_suite(s);
}
