/*
 * Mixing weights: the one place of the Metropolis-Hastings rule.
 *
 * Owns the formula w_ij = 1 / (1 + max(deg_i, deg_j)) (the self weight is
 * what the node's off-diagonal weights leave: w_ii = 1 - sum_j w_ij), the
 * weight one edge uses in a round (a configured Weight, else the formula
 * of the two degrees its round's messages carried), and the Weight two
 * ends agree on from their offers.  topology.c weighs a whole graph with
 * it; the daemon's edges weigh each round and each new generation with
 * it.  Every function is symmetric in its two ends, so both ends of an
 * edge, each passing its own value first, get the same bits.  No state.
 */
#include "gossip.h"

double gsp_mixing_weight(unsigned deg_i, unsigned deg_j)
{
	unsigned d = deg_i > deg_j ? deg_i : deg_j;

	return 1.0 / (1.0 + d);
}

float gsp_mixing_edge_weight(float configured, unsigned deg_i, unsigned deg_j)
{
	/* The float of the double: the same bits as 1.0f / (1.0f + d) for
	 * every degree (double rounding of a quotient is exact at 53 >=
	 * 2 * 24 + 2 bits; tests/engine/test_mixing.c checks all 16-bit
	 * degrees). */
	return configured > 0.0f ? configured : (float)gsp_mixing_weight(deg_i, deg_j);
}

float gsp_mixing_agree_weight(float ours, float theirs)
{
	if (ours == theirs)
		return ours;
	return ours > 0.0f && (theirs == 0.0f || ours < theirs) ? ours : theirs;
}
