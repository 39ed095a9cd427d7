/*
 * Unit tests for the mixing rule (libgossip/mixing.c): the
 * Metropolis-Hastings weight of two degrees, an edge's weight for a round
 * (the same bits as the daemon's float formula of before, and the same at
 * both ends whichever end asks), the Weight two ends agree on, and the
 * graph weights of topology.c following the same rule.
 */
#include <check.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "gossip.h"

static uint32_t bits(float f)
{
	uint32_t u;
	memcpy(&u, &f, sizeof(u));
	return u;
}

START_TEST(test_weight_is_one_over_one_plus_the_larger_degree)
{
	ck_assert_double_eq(gsp_mixing_weight(0, 0), 1.0);
	ck_assert_double_eq(gsp_mixing_weight(2, 2), 1.0 / 3);
	ck_assert_double_eq(gsp_mixing_weight(2, 5), 1.0 / 6);
	ck_assert_double_eq(gsp_mixing_weight(5, 2), 1.0 / 6);
	ck_assert_double_eq(gsp_mixing_weight(65535, 1), 1.0 / 65536);
}
END_TEST

/* The daemon weighed rounds by 1.0f / (1.0f + max degree) in float; the
 * float of the rule's double is the same bits for every 16-bit degree (a
 * ROUND's degree field). */
START_TEST(test_edge_weight_same_bits_as_the_float_formula)
{
	for (unsigned d = 0; d <= UINT16_MAX; d++) {
		float old = 1.0f / (1.0f + (float)d);
		ck_assert_uint_eq(bits(gsp_mixing_edge_weight(0.0f, d, d)), bits(old));
		ck_assert_uint_eq(bits(gsp_mixing_edge_weight(0.0f, d, d / 2)), bits(old));
		ck_assert_uint_eq(bits(gsp_mixing_edge_weight(0.0f, d / 3, d)), bits(old));
	}
}
END_TEST

START_TEST(test_configured_weight_holds_whatever_the_degrees)
{
	ck_assert_uint_eq(bits(gsp_mixing_edge_weight(0.25f, 1, 7)), bits(0.25f));
	ck_assert_uint_eq(bits(gsp_mixing_edge_weight(1.0f, 0, 0)), bits(1.0f));
	ck_assert_uint_eq(bits(gsp_mixing_edge_weight(0.0f, 1, 3)), bits(0.25f));
}
END_TEST

static const float offers[] = {0.0f, 1e-6f, 0.1f, 0.25f, 0.2500001f, 0.5f, 0.75f, 1.0f};
#define N_OFFERS (sizeof(offers) / sizeof(offers[0]))

/* What each end of a ROUND computes: its own Weight offer and degree
 * first.  The two ends' weights of the round must be the same bits. */
START_TEST(test_round_weight_is_the_same_at_both_ends)
{
	for (size_t a = 0; a < N_OFFERS; a++)
		for (size_t b = 0; b < N_OFFERS; b++)
			for (unsigned da = 1; da < 40; da += 3)
				for (unsigned db = 1; db < 40; db += 5) {
					float wa = gsp_mixing_agree_weight(offers[a], offers[b]);
					float wb = gsp_mixing_agree_weight(offers[b], offers[a]);
					ck_assert_uint_eq(bits(gsp_mixing_edge_weight(wa, da, db)),
							  bits(gsp_mixing_edge_weight(wb, db, da)));
				}
}
END_TEST

/* The same offer stands; else the smaller one offered (0: none). */
START_TEST(test_agreed_weight_is_the_smaller_offer)
{
	for (size_t a = 0; a < N_OFFERS; a++)
		for (size_t b = 0; b < N_OFFERS; b++) {
			float x = offers[a], y = offers[b];
			float want = x == 0.0f ? y : y == 0.0f ? x : x < y ? x : y;
			ck_assert_uint_eq(bits(gsp_mixing_agree_weight(x, y)), bits(want));
		}
}
END_TEST

/* topology.c's weights are the rule's: an irregular graph's edges by
 * their degrees, each node's self weight what its edges leave. */
START_TEST(test_graph_weights_follow_the_rule)
{
	gsp_graph *g = NULL;
	ck_assert_int_eq(gsp_graph_parse_edges("0-1,0-2,0-3,1-2,3-4", 5, &g), 0);
	for (unsigned i = 0; i < 5; i++) {
		double off = 0;
		for (unsigned j = 0; j < 5; j++) {
			if (i == j || gsp_graph_weight(g, i, j) == 0)
				continue;
			double w = gsp_mixing_weight(gsp_graph_degree(g, i), gsp_graph_degree(g, j));
			ck_assert_double_eq(gsp_graph_weight(g, i, j), w);
			off += w;
		}
		ck_assert_double_eq_tol(gsp_graph_weight(g, i, i), 1.0 - off, 1e-15);
	}
	ck_assert_double_eq(gsp_graph_weight(g, 0, 1), 1.0 / 4);
	ck_assert_double_eq(gsp_graph_weight(g, 3, 4), 1.0 / 3);
	gsp_graph_free(g);
}
END_TEST

static Suite *mixing_suite(void)
{
	Suite *s = suite_create("mixing");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, test_weight_is_one_over_one_plus_the_larger_degree);
	tcase_add_test(tc, test_edge_weight_same_bits_as_the_float_formula);
	tcase_add_test(tc, test_configured_weight_holds_whatever_the_degrees);
	tcase_add_test(tc, test_round_weight_is_the_same_at_both_ends);
	tcase_add_test(tc, test_agreed_weight_is_the_smaller_offer);
	tcase_add_test(tc, test_graph_weights_follow_the_rule);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(mixing_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
