/* Choco-gossip (Koloskova et al. 2019), the compressed-gossip baseline:
 * node state xhat (public copy) and s (weighted sum of the neighbours'
 * public copies); each round sends q = C(x - xhat) to every neighbour and
 * moves x by gamma (s - xhat).  C is top-k, random-k or sign, per tensor.
 *
 * Message (little-endian, tensors in layout order):
 *   top-k, random-k: k_t entries of (u32 index, f32 value);
 *                    k_t = max(1, ceil(fraction * numel_t)).
 *   sign:            f32 scale = ||v||_1 / numel_t, then ceil(numel_t/8)
 *                    bytes, bit i (LSB first) set when entry i is negative.
 * Choco is node-synchronous: it applies once every edge has completed the
 * round and projects once every edge is idle. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

typedef struct choco {
	float *xhat, *s, *q;     /* q: this round's decompressed message */
	float *absv;             /* top-k selection scratch */
	uint32_t *idx;           /* random-k / top-k index scratch */
	uint8_t *msg;            /* this round's encoded message */
	size_t msg_len;
	uint64_t round;
	bool uncommitted;
	uint8_t seed[GSP_SEED_BYTES];
} choco;

static uint64_t kept(const gsp_node *node, const gsp_tensor *t)
{
	/* The float fraction is a decimal rounded to binary (0.05f is
	 * 0.05000000075); shave that rounding off before ceil. */
	double k = ceil((double)node->cfg.choco_fraction * (double)t->numel *
			(1.0 - 1e-7));
	uint64_t n = k < 1.0 ? 1 : (uint64_t)k;
	return n > t->numel ? t->numel : n;
}

static size_t tensor_bytes(const gsp_node *node, const gsp_tensor *t)
{
	if (node->cfg.method == GSP_METHOD_CHOCO_SIGN)
		return 4 + (size_t)((t->numel + 7) / 8);
	return (size_t)kept(node, t) * 8;
}

static size_t choco_msg_size(const gsp_node *node, uint64_t round)
{
	size_t n = 0;
	for (size_t i = 0; i < node->layout->n; i++)
		n += tensor_bytes(node, &node->layout->t[i]);
	return n;
}

static void choco_free(gsp_node *node)
{
	choco *c = node->priv;
	if (!c)
		return;
	free(c->xhat);
	free(c->s);
	free(c->q);
	free(c->absv);
	free(c->idx);
	free(c->msg);
	free(c);
	node->priv = NULL;
}

static int choco_init(gsp_node *node)
{
	size_t n = node->layout->floats, big = 1;
	for (size_t i = 0; i < node->layout->n; i++)
		if (node->layout->t[i].numel > big)
			big = node->layout->t[i].numel;
	choco *c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	node->priv = c;
	c->xhat = calloc(n, sizeof(float));
	c->s = calloc(n, sizeof(float));
	c->q = calloc(n, sizeof(float));
	c->absv = calloc(big, sizeof(float));
	c->idx = calloc(big, sizeof(uint32_t));
	c->msg_len = choco_msg_size(node, 1);
	c->msg = calloc(c->msg_len, 1);
	for (int i = 0; i < 8; i++)
		c->seed[i] = (uint8_t)(node->cfg.seed >> (8 * i));
	if (!c->xhat || !c->s || !c->q || !c->absv || !c->idx || !c->msg)
		return -ENOMEM;
	return 0;
}

static void put_u32(uint8_t *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static uint32_t get_u32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
	       (uint32_t)p[3] << 24;
}

static void put_f32(uint8_t *p, float f)
{
	uint32_t v;
	memcpy(&v, &f, 4);
	put_u32(p, v);
}

static float get_f32(const uint8_t *p)
{
	uint32_t v = get_u32(p);
	float f;
	memcpy(&f, &v, 4);
	return f;
}

/* Value of rank k (1 = largest) among a[0..n), reordering a. */
static float kth_largest(float *a, size_t n, size_t k)
{
	size_t lo = 0, hi = n - 1, want = k - 1;
	while (lo < hi) {
		float pivot = a[lo + (hi - lo) / 2];
		size_t i = lo, j = hi;
		while (i <= j) {
			while (a[i] > pivot)
				i++;
			while (a[j] < pivot)
				j--;
			if (i <= j) {
				float t = a[i];
				a[i] = a[j];
				a[j] = t;
				i++;
				if (j == 0)
					break;
				j--;
			}
		}
		if (want <= j)
			hi = j;
		else if (want >= i)
			lo = i;
		else
			break;
	}
	return a[want];
}

/* Indices of the k entries of largest magnitude of v into idx. */
static void select_topk(choco *c, const float *v, size_t n, size_t k)
{
	for (size_t i = 0; i < n; i++)
		c->absv[i] = fabsf(v[i]);
	float thr = kth_largest(c->absv, n, k);
	size_t w = 0;
	for (size_t i = 0; i < n && w < k; i++)
		if (fabsf(v[i]) > thr)
			c->idx[w++] = (uint32_t)i;
	for (size_t i = 0; i < n && w < k; i++)
		if (fabsf(v[i]) == thr)
			c->idx[w++] = (uint32_t)i;
}

/* k distinct uniform indices (partial Fisher-Yates) into idx[0..k). */
static int select_randk(choco *c, size_t ti, size_t n, size_t k)
{
	uint32_t stack[256];
	uint32_t *w = k <= 256 ? stack : malloc(k * sizeof(*w));
	if (!w)
		return -ENOMEM;
	int err = gsp__rng_words(c->seed, GSP_RNG_NODE, ti, c->round + 1, 0, w, k);
	for (size_t i = 0; i < n; i++)
		c->idx[i] = (uint32_t)i;
	for (size_t i = 0; !err && i < k; i++) {
		size_t j = i + (size_t)(((uint64_t)w[i] * (n - i)) >> 32);
		uint32_t t = c->idx[i];
		c->idx[i] = c->idx[j];
		c->idx[j] = t;
	}
	if (w != stack)
		free(w);
	return err;
}

/* Compresses v (= x - xhat) of tensor ti into q and the message at p. */
static int compress(gsp_node *node, size_t ti, const float *v, float *q,
		    uint8_t *p)
{
	choco *c = node->priv;
	const gsp_tensor *t = &node->layout->t[ti];
	size_t n = (size_t)t->numel;
	memset(q, 0, n * sizeof(float));
	if (node->cfg.method == GSP_METHOD_CHOCO_SIGN) {
		double l1 = 0.0;
		for (size_t i = 0; i < n; i++)
			l1 += fabs((double)v[i]);
		float scale = (float)(l1 / (double)n);
		if (!isfinite(scale))
			return GSP_ENONFINITE;
		put_f32(p, scale);
		memset(p + 4, 0, (n + 7) / 8);
		for (size_t i = 0; i < n; i++) {
			bool neg = v[i] < 0.0f;
			q[i] = neg ? -scale : scale;
			p[4 + i / 8] |= (uint8_t)(neg << (i % 8));
		}
		return 0;
	}
	size_t k = (size_t)kept(node, t);
	if (!gsp__all_finite(v, n))
		return GSP_ENONFINITE;
	if (node->cfg.method == GSP_METHOD_CHOCO_TOPK)
		select_topk(c, v, n, k);
	else if (select_randk(c, ti, n, k))
		return -ENOMEM;
	for (size_t e = 0; e < k; e++) {
		uint32_t i = c->idx[e];
		q[i] = v[i];
		put_u32(p + 8 * e, i);
		put_f32(p + 8 * e + 4, v[i]);
	}
	return 0;
}

static int choco_run(gsp_node *node, gsp__edge **apply, size_t na,
		     gsp__edge **proj, size_t np)
{
	choco *c = node->priv;
	size_t n = node->layout->floats;
	float *x = node->params;
	float g = node->cfg.gamma;
	if (na)
		for (size_t i = 0; i < n; i++)
			x[i] += g * (c->s[i] - c->xhat[i]);
	if (!np)
		return 0;
	float *v = gsp__node_scratch(node, n);
	if (!v)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++)
		v[i] = x[i] - c->xhat[i];
	uint8_t *p = c->msg;
	for (size_t ti = 0; ti < node->layout->n; ti++) {
		const gsp_tensor *t = &node->layout->t[ti];
		int err = compress(node, ti, v + t->offset, c->q + t->offset, p);
		if (err)
			return err;
		p += tensor_bytes(node, t);
	}
	for (size_t e = 0; e < np; e++)
		memcpy(proj[e]->next_msg, c->msg, c->msg_len);
	c->uncommitted = true;
	return 0;
}

static void choco_commit(gsp_node *node, gsp__edge *edge)
{
	choco *c = node->priv;
	if (!c->uncommitted)
		return;
	/* First edge of the round: xhat += q and s += w_ii q. */
	double wii = 1.0;
	for (size_t e = 0; e < node->n_edges; e++)
		wii -= node->edges[e].weight;
	for (size_t i = 0; i < node->layout->floats; i++) {
		c->xhat[i] += c->q[i];
		c->s[i] += (float)wii * c->q[i];
	}
	c->round++;
	c->uncommitted = false;
}

/* Checks a neighbour's message; with add, does s += w q_j. */
static int decode(gsp_node *node, const uint8_t *p, float w, bool add)
{
	choco *c = node->priv;
	for (size_t ti = 0; ti < node->layout->n; ti++) {
		const gsp_tensor *t = &node->layout->t[ti];
		float *s = c->s + t->offset;
		size_t n = (size_t)t->numel;
		if (node->cfg.method == GSP_METHOD_CHOCO_SIGN) {
			float scale = get_f32(p);
			if (!isfinite(scale))
				return GSP_ENONFINITE;
			for (size_t i = 0; add && i < n; i++)
				s[i] += w * ((p[4 + i / 8] >> (i % 8)) & 1 ? -scale : scale);
		} else {
			size_t k = (size_t)kept(node, t);
			for (size_t e = 0; e < k; e++) {
				uint32_t i = get_u32(p + 8 * e);
				float v = get_f32(p + 8 * e + 4);
				if (i >= n)
					return GSP_ESHAPE;
				if (!isfinite(v))
					return GSP_ENONFINITE;
				if (add)
					s[i] += w * v;
			}
		}
		p += tensor_bytes(node, t);
	}
	return 0;
}

static int choco_complete(gsp_node *node, gsp__edge *edge, const uint8_t *msg)
{
	int err = decode(node, msg, edge->weight, false);
	if (!err)
		decode(node, msg, edge->weight, true);
	return err;
}

const gsp__method_ops gsp__choco_ops = {
	.synchronous = true,
	.node_init = choco_init,
	.node_free = choco_free,
	.msg_size = choco_msg_size,
	.run = choco_run,
	.commit = choco_commit,
	.complete = choco_complete,
};
