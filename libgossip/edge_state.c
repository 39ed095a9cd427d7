/* edge_state: one edge's whole engine state as bytes and back
 * (gsp_node_edge_save, gsp_node_edge_load in gossip.h).
 *
 * Bytes: "GSE1", u8 role, u8 state, u8 active, u8 undoable, f32 weight,
 * f32 applied_coef, u64 round, u64 applied, 32-byte seed, u64 message
 * length, the message, u64 floats of method state, the floats.
 * Little-endian; the floats as their IEEE-754 bits. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

static const uint8_t magic[4] = {'G', 'S', 'E', '1'};
#define HEAD (4 + 4 + 4 + 4 + 8 + 8 + GSP_SEED_BYTES + 8)

static uint8_t *put(uint8_t *p, uint64_t v, int n)
{
	for (int i = 0; i < n; i++)
		p[i] = (uint8_t)(v >> (8 * i));
	return p + n;
}

static uint64_t get(const uint8_t *p, int n)
{
	uint64_t v = 0;
	for (int i = n - 1; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}

static uint32_t bits(float f)
{
	uint32_t u;
	memcpy(&u, &f, 4);
	return u;
}

static float from_bits(uint64_t u)
{
	uint32_t v = (uint32_t)u;
	float f;
	memcpy(&f, &v, 4);
	return f;
}

/* The method's state block of an edge and the bytes the edge saves to. */
static const float *state_of(const gsp_node *node, size_t edge, size_t *ret_floats,
			     size_t *ret_len, int *ret_err)
{
	*ret_err = -EINVAL;
	if (!node || edge >= node->n_edges)
		return NULL;
	gsp__edge *e = &node->edges[edge];
	/* An edge with a window of exact rounds open (a schedule) is not
	 * saved. */
	*ret_err = -ENOTSUP;
	if (!node->ops->edge_mem || e->n_steps)
		return NULL;
	const float *mem = node->ops->edge_mem(node, e, ret_floats);
	*ret_err = mem ? 0 : -ENOMEM;
	*ret_len = HEAD + e->msg_len + 8 + 4 * *ret_floats;
	return mem;
}

int gsp_node_edge_state_size(const gsp_node *node, size_t edge, size_t *ret_len)
{
	size_t floats, len;
	int err;
	if (!ret_len)
		return -EINVAL;
	if (state_of(node, edge, &floats, &len, &err))
		*ret_len = len;
	return err;
}

int gsp_node_edge_save(const gsp_node *node, size_t edge, uint8_t **ret_buf,
		       size_t *ret_len)
{
	size_t floats, len;
	int err;
	if (!ret_buf || !ret_len)
		return -EINVAL;
	const float *mem = state_of(node, edge, &floats, &len, &err);
	if (!mem)
		return err;
	gsp__edge *e = &node->edges[edge];
	uint8_t *buf = malloc(len), *p = buf;
	if (!buf)
		return -ENOMEM;
	memcpy(p, magic, 4);
	p += 4;
	*p++ = (uint8_t)e->role;
	*p++ = (uint8_t)e->state;
	*p++ = e->active;
	*p++ = e->undoable;
	p = put(p, bits(e->weight), 4);
	p = put(p, bits(e->applied_coef), 4);
	p = put(p, e->round, 8);
	p = put(p, e->applied, 8);
	memcpy(p, e->seed, GSP_SEED_BYTES);
	p = put(p + GSP_SEED_BYTES, e->msg_len, 8);
	memcpy(p, e->msg, e->msg_len);
	p = put(p + e->msg_len, floats, 8);
	for (size_t i = 0; i < floats; i++)
		p = put(p, bits(mem[i]), 4);
	*ret_buf = buf;
	*ret_len = len;
	return 0;
}

int gsp_node_edge_load(gsp_node *node, size_t edge, const uint8_t *buf, size_t len)
{
	if (!node || edge >= node->n_edges || (!buf && len))
		return -EINVAL;
	gsp__edge *e = &node->edges[edge];
	if (!node->ops->edge_mem || e->n_steps)
		return -ENOTSUP;
	if (len < HEAD || memcmp(buf, magic, 4) != 0)
		return -EBADMSG;
	const uint8_t *p = buf + 4;
	uint8_t role = p[0], state = p[1], active = p[2], undoable = p[3];
	float weight = from_bits(get(p + 4, 4));
	float coef = from_bits(get(p + 8, 4));
	uint64_t round = get(p + 12, 8), applied = get(p + 20, 8);
	const uint8_t *seed = p + 28;
	uint64_t msg_len = get(p + 28 + GSP_SEED_BYTES, 8);
	p = buf + HEAD;
	size_t floats;
	float *mem = node->ops->edge_mem(node, e, &floats);
	if (!mem)
		return -ENOMEM;
	/* The same method and layout: the same sizes. */
	if ((role != GSP_ROLE_LO && role != GSP_ROLE_HI) || state > GSP_EDGE_COMPLETED ||
	    active > 1 || undoable > 1 || !(weight > 0.0f && weight <= 1.0f) ||
	    applied > round || msg_len > e->msg_cap ||
	    (round && msg_len != node->ops->msg_size(node, round)) ||
	    len - HEAD < msg_len + 8 || get(p + msg_len, 8) != floats ||
	    len - HEAD - msg_len - 8 != 4 * (uint64_t)floats)
		return -EBADMSG;
	e->role = (gsp_role)role;
	e->state = (gsp_edge_state)state;
	e->active = active;
	e->undoable = undoable;
	e->weight = weight;
	e->applied_coef = coef;
	e->round = round;
	e->applied = applied;
	memcpy(e->seed, seed, GSP_SEED_BYTES);
	memcpy(e->msg, p, msg_len);
	e->msg_len = msg_len;
	p += msg_len + 8;
	for (size_t i = 0; i < floats; i++)
		mem[i] = from_bits(get(p + 4 * i, 4));
	return 0;
}
