/* libFuzzer harness for an edge's saved engine state
 * (gsp_node_edge_load, libgossip/edge_state.c): arbitrary bytes are loaded
 * into an edge of a PowerGossip or an exact node, with or without a
 * window of exact rounds open.  They are refused (-EBADMSG, -ENOMEM) with
 * nothing changed, or accepted; then saving the edge gives back exactly
 * the same bytes (the encoding is canonical), and a step runs without
 * reading out of bounds.  data[0] picks the node (bit 0), the window (bit
 * 1) and whether its first round is one the edge sits out (bit 2: a step
 * of 0); the rest is the blob. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "gossip.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	gsp_layout *l;
	if (gsp_layout_parse("6x5,4", &l))
		abort();
	float x[34];
	for (size_t i = 0; i < sizeof(x) / sizeof(*x); i++)
		x[i] = (float)i * 0.25f - 3.0f;
	gsp_config cfg;
	gsp_config_default(&cfg);
	cfg.method = data[0] & 1 ? GSP_METHOD_EXACT : GSP_METHOD_POWERGOSSIP;
	cfg.rank = 2;
	gsp_node *node;
	uint8_t seed[GSP_SEED_BYTES] = {5};
	if (gsp_node_new(l, x, &cfg, &node) ||
	    gsp_node_add_edge(node, 0.5f, GSP_ROLE_LO, seed, sizeof(seed)) != 0)
		abort();
	static const float steps[2][2] = {{0.75f, 1.5f}, {0.0f, 1.5f}};
	if ((data[0] & 2) &&
	    gsp_node_edge_exact_rounds(node, 0, 0, steps[(data[0] >> 2) & 1], 2) != 0)
		abort();
	uint8_t *before, *after;
	size_t before_len, after_len;
	if (gsp_node_edge_save(node, 0, &before, &before_len))
		abort();
	int r = gsp_node_edge_load(node, 0, data + 1, size - 1);
	if (gsp_node_edge_save(node, 0, &after, &after_len))
		abort();
	if (r == 0) {
		if (after_len != size - 1 || memcmp(after, data + 1, after_len))
			abort();
		(void)gsp_node_step(node);
	} else if (r == -EBADMSG || r == -ENOMEM) {
		if (after_len != before_len || memcmp(after, before, after_len))
			abort();
	} else {
		abort();
	}
	free(before);
	free(after);
	gsp_node_free(node);
	gsp_layout_free(l);
	return 0;
}
