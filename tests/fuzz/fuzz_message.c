/* libFuzzer harness: arbitrary bytes offered as a neighbour's message to
 * every method's complete(), which must reject or accept without reading
 * out of bounds, and never leave a non-finite parameter behind. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "gossip.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const gsp_method methods[] = {
		GSP_METHOD_POWERGOSSIP, GSP_METHOD_EXACT, GSP_METHOD_CHOCO_TOPK,
		GSP_METHOD_CHOCO_RANDK, GSP_METHOD_CHOCO_SIGN,
	};
	if (size < 1)
		return 0;
	gsp_layout *l;
	if (gsp_layout_parse("6x5,3x2x2,4", &l))
		abort();
	float x[30 + 12 + 4];
	for (size_t i = 0; i < sizeof(x) / sizeof(*x); i++)
		x[i] = (float)i * 0.25f - 3.0f;
	gsp_config cfg;
	gsp_config_default(&cfg);
	cfg.method = methods[data[0] % 5];
	cfg.rank = 1 + (data[0] / 5) % 3;
	cfg.choco_fraction = 0.3f;
	gsp_node *node;
	if (gsp_node_new(l, x, &cfg, &node))
		abort();
	uint8_t seed[GSP_SEED_BYTES] = {3};
	if (gsp_node_add_edge(node, 0.5f, data[0] & 0x80 ? GSP_ROLE_HI : GSP_ROLE_LO,
			      seed, sizeof(seed)) != 0 ||
	    gsp_node_project(node) != 1)
		abort();
	/* The message, aligned as the API requires. */
	size_t len = size - 1;
	float *msg = malloc(len + 4);
	if (!msg)
		abort();
	memcpy(msg, data + 1, len);
	if (gsp_node_complete(node, 0, 1, msg, len) == 0) {
		if (gsp_node_step(node) < 0)
			; /* a projection may overflow; params stay finite below */
		for (size_t i = 0; i < sizeof(x) / sizeof(*x); i++)
			if (isnan(x[i]))
				abort();
	}
	free(msg);
	gsp_node_free(node);
	gsp_layout_free(l);
	return 0;
}
