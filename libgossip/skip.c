/* A round an edge sits out inside its window of exact rounds: the
 * window's step for it is 0 (gsp_node_edge_exact_rounds; a matching
 * schedule runs each round on half of a ring's edges).  Its message is
 * one float, 0, its update nothing; it still completes at both ends, so
 * a node's rounds stay in lockstep with all its neighbours'. */
#include <errno.h>
#include <string.h>

#include "internal.h"

static size_t skip_msg_size(const gsp_node *node, uint64_t round)
{
	(void)node;
	(void)round;
	return sizeof(float);
}

static int skip_run(gsp_node *node, gsp__edge **apply, size_t na,
		    gsp__edge **proj, size_t np)
{
	(void)node;
	(void)apply;
	(void)na;
	for (size_t e = 0; e < np; e++)
		memset(proj[e]->next_msg, 0, sizeof(float));
	return 0;
}

static void skip_commit(gsp_node *node, gsp__edge *edge)
{
	(void)node;
	(void)edge;
}

/* Anything but the zero float is a malformed message. */
static int skip_complete(gsp_node *node, gsp__edge *edge, const uint8_t *msg)
{
	(void)node;
	(void)edge;
	static const uint8_t zero[sizeof(float)];
	return memcmp(msg, zero, sizeof(zero)) ? -EBADMSG : 0;
}

static void skip_rollback(gsp_node *node, gsp__edge *edge)
{
	(void)node;
	(void)edge;
}

const gsp__method_ops gsp__skip_ops = {
	.synchronous = false,
	.msg_size = skip_msg_size,
	.run = skip_run,
	.commit = skip_commit,
	.complete = skip_complete,
	.rollback = skip_rollback,
};
