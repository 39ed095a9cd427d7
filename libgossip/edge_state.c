/* edge_state: one edge's whole engine state as bytes and back
 * (gsp_node_edge_save, gsp_node_edge_load in gossip.h).
 *
 * Bytes: "GSE1", u8 role, u8 state, u8 active, u8 undoable, f32 weight,
 * f32 applied_coef, u64 round, u64 applied, 32-byte seed, u64 message
 * length, the message, u64 floats of method state, the floats.  An edge
 * with a window of exact rounds open: "GSE2", the same, then u64
 * win_from, u64 n_steps, the steps, u64 floats of the window's update
 * (0 on an exact node, whose update is its method state), the floats.
 * Little-endian; the floats as their IEEE-754 bits. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "bigmem.h"
#include "internal.h"

static const uint8_t magic[4] = {'G', 'S', 'E', '1'};
static const uint8_t magic_window[4] = {'G', 'S', 'E', '2'};
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

/* The floats of a window's own update (xdiff) an edge saves. */
static size_t xdiff_floats(const gsp_node *node, const gsp__edge *e)
{
	return e->n_steps && e->xdiff ? node->layout->floats : 0;
}

/* The method's state block of an edge and the bytes the edge saves to. */
static const float *state_of(const gsp_node *node, size_t edge, size_t *ret_floats,
			     size_t *ret_len, int *ret_err)
{
	*ret_err = -EINVAL;
	if (!node || edge >= node->n_edges)
		return NULL;
	gsp__edge *e = &node->edges[edge];
	*ret_err = -ENOTSUP;
	if (!node->ops->edge_mem)
		return NULL;
	const float *mem = node->ops->edge_mem(node, e, ret_floats);
	*ret_err = mem ? 0 : -ENOMEM;
	*ret_len = HEAD + e->msg_len + 8 + 4 * *ret_floats;
	if (e->n_steps)
		*ret_len += 16 + 4 * e->n_steps + 8 + 4 * xdiff_floats(node, e);
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

static uint8_t *put_floats(uint8_t *p, const float *f, size_t n)
{
	for (size_t i = 0; i < n; i++)
		p = put(p, bits(f[i]), 4);
	return p;
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
	memcpy(p, e->n_steps ? magic_window : magic, 4);
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
	p = put_floats(p, mem, floats);
	if (e->n_steps) {
		p = put(p, e->win_from, 8);
		p = put(p, e->n_steps, 8);
		p = put_floats(p, e->steps, e->n_steps);
		p = put(p, xdiff_floats(node, e), 8);
		p = put_floats(p, e->xdiff, xdiff_floats(node, e));
	}
	*ret_buf = buf;
	*ret_len = len;
	return 0;
}

/* A saved window (after the method state at p, rest bytes left): its
 * round, steps and update, checked and copied (*ret_steps, *ret_xdiff
 * new; NULL with n 0). */
static int load_window(const gsp_node *node, const uint8_t *p, size_t rest,
		       uint64_t *ret_from, size_t *ret_n, float **ret_steps,
		       float **ret_xdiff)
{
	*ret_steps = NULL;
	*ret_xdiff = NULL;
	if (rest < 16)
		return -EBADMSG;
	uint64_t from = get(p, 8), n = get(p + 8, 8);
	if (n == 0 || n > GSP_MAX_STEPS || from > UINT64_MAX - n || rest - 16 < 4 * n + 8)
		return -EBADMSG;
	p += 16;
	rest -= 16;
	uint64_t xf = get(p + 4 * n, 8);
	uint64_t want = node->ops == &gsp__exact_ops ? 0 : node->layout->floats;
	if (xf != want || rest - 4 * n - 8 != 4 * xf)
		return -EBADMSG;
	float *steps = malloc(n * sizeof(float));
	float *xdiff = xf ? gsp_bigmem_malloc(xf * sizeof(float) + 1) : NULL;
	if (!steps || (xf && !xdiff)) {
		free(steps);
		free(xdiff);
		return -ENOMEM;
	}
	for (size_t t = 0; t < n; t++) {
		steps[t] = from_bits(get(p + 4 * t, 4));
		if (!isfinite(steps[t]) || steps[t] < 0.0f) {
			free(steps);
			free(xdiff);
			return -EBADMSG;
		}
	}
	p += 4 * n + 8;
	for (size_t i = 0; i < xf; i++)
		xdiff[i] = from_bits(get(p + 4 * i, 4));
	*ret_from = from;
	*ret_n = n;
	*ret_steps = steps;
	*ret_xdiff = xdiff;
	return 0;
}

int gsp_node_edge_load(gsp_node *node, size_t edge, const uint8_t *buf, size_t len)
{
	if (!node || edge >= node->n_edges || (!buf && len))
		return -EINVAL;
	gsp__edge *e = &node->edges[edge];
	if (!node->ops->edge_mem)
		return -ENOTSUP;
	bool window = len >= 4 && memcmp(buf, magic_window, 4) == 0;
	if (len < HEAD || (!window && memcmp(buf, magic, 4) != 0))
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
	    applied > round || len - HEAD < msg_len || len - HEAD - msg_len < 8 ||
	    get(p + msg_len, 8) != floats ||
	    (len - HEAD - msg_len - 8) / 4 < (uint64_t)floats)
		return -EBADMSG;
	size_t rest = len - HEAD - msg_len - 8 - 4 * (size_t)floats;
	gsp__edge w = {0};
	float *steps = NULL, *xdiff = NULL;
	if (window) {
		int err = load_window(node, p + msg_len + 8 + 4 * floats, rest, &w.win_from,
				      &w.n_steps, &steps, &xdiff);
		if (err)
			return err;
		w.steps = steps;
		w.xdiff = xdiff;
	} else if (rest) {
		return -EBADMSG;
	}
	/* The round's message: of its kind (the window's or the method's),
	 * in buffers that hold it. */
	size_t whole = (size_t)node->layout->floats * 4;
	size_t cap = e->msg_cap < whole && window ? whole : e->msg_cap;
	int err = 0;
	if (msg_len > cap || (round && msg_len != gsp__round_ops(node, &w, round)->msg_size(node, round)))
		err = -EBADMSG;
	else if (gsp__edge_msg_room(e, cap) != 0)
		err = -ENOMEM;
	if (err) {
		free(steps);
		free(xdiff);
		return err;
	}
	free(e->steps);
	free(e->xdiff);
	e->steps = steps;
	e->xdiff = xdiff;
	e->n_steps = w.n_steps;
	e->win_from = w.win_from;
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
