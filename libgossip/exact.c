/* Exact gossip, the uncompressed baseline: the message is the whole model
 * (float32, layout order) and the pending update of an edge is the
 * difference hi - lo of the two models it exchanged. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* Floats per chunk: every edge's update and copy is done on one chunk
 * while it is in cache. */
#define EXACT_CHUNK 8192

static size_t exact_msg_size(const gsp_node *node, uint64_t round)
{
	return (size_t)node->layout->floats * 4;
}

static int exact_edge_init(gsp_node *node, gsp__edge *edge)
{
	edge->priv = malloc(node->layout->floats * sizeof(float) + 1);
	return edge->priv ? 0 : -ENOMEM;
}

static void exact_edge_free(gsp__edge *edge)
{
	free(edge->priv);
	edge->priv = NULL;
}

static int exact_run(gsp_node *node, gsp__edge **apply, size_t na,
		     gsp__edge **proj, size_t np)
{
	size_t n = node->layout->floats;
	float *x = node->params;
	for (size_t c0 = 0; c0 < n; c0 += EXACT_CHUNK) {
		size_t len = n - c0 < EXACT_CHUNK ? n - c0 : EXACT_CHUNK;
		for (size_t e = 0; e < na; e++) {
			const float *d = gsp__exact_diff(node, apply[e]) + c0;
			float c = gsp__edge_coef(node, apply[e]);
			for (size_t i = 0; i < len; i++)
				x[c0 + i] += c * d[i];
		}
		/* Every message is this chunk: checked once. */
		if (np && !gsp__all_finite(x + c0, len))
			return GSP_ENONFINITE;
		for (size_t e = 0; e < np; e++)
			memcpy((float *)proj[e]->next_msg + c0, x + c0,
			       len * sizeof(float));
	}
	return 0;
}

static void exact_commit(gsp_node *node, gsp__edge *edge)
{
}

static int exact_complete(gsp_node *node, gsp__edge *edge, const uint8_t *msg)
{
	const float *mine = (const float *)edge->msg, *peer = (const float *)msg;
	size_t n = node->layout->floats;
	/* Catches a NaN or infinity in msg too (mine is finite). */
	if (!gsp__edge_diff(mine, peer, edge->role, NULL, n))
		return GSP_ENONFINITE;
	gsp__edge_diff(mine, peer, edge->role, gsp__exact_diff(node, edge), n);
	return 0;
}

static void exact_rollback(gsp_node *node, gsp__edge *edge)
{
	const float *d = gsp__exact_diff(node, edge);
	float c = -edge->applied_coef;
	for (size_t i = 0; i < node->layout->floats; i++)
		node->params[i] += c * d[i];
}

static float *exact_edge_mem(const gsp_node *node, gsp__edge *edge, size_t *ret_floats)
{
	*ret_floats = node->layout->floats;
	return edge->priv;
}

const gsp__method_ops gsp__exact_ops = {
	.synchronous = false,
	.edge_init = exact_edge_init,
	.edge_free = exact_edge_free,
	.msg_size = exact_msg_size,
	.run = exact_run,
	.commit = exact_commit,
	.complete = exact_complete,
	.rollback = exact_rollback,
	.edge_mem = exact_edge_mem,
};
