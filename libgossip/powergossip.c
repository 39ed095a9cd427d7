/* PowerGossip (ALGORITHM.md): per-edge shared factors A (m x r) and
 * B (k x r) per compressed tensor, warm-started power iteration on the
 * model difference, and exact gossip of the 0/1-dim tensors.
 *
 * Message of round t (float32, row-major, layout order): for every
 * compressed tensor X (m x k) the projection X V (m x r) if t is odd or
 * X^T U (k x r) if t is even; then every uncompressed tensor's values. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

typedef struct pg_factor {
	float *a, *b, *q;  /* each max(m,k) x r; q is the next projection */
} pg_factor;

typedef struct pg_edge {
	pg_factor *f;      /* one per compressed tensor */
	float *vdiff;      /* pending difference of the uncompressed tensors */
	uint64_t refills;  /* of the projection not yet committed */
	float *mem;
} pg_edge;

static unsigned tensor_rank(const gsp_node *node, const gsp_tensor *t)
{
	uint64_t r = node->cfg.rank;
	if (r > t->m)
		r = t->m;
	if (r > t->k)
		r = t->k;
	return (unsigned)r;
}

static size_t pg_msg_size(const gsp_node *node, uint64_t round)
{
	const gsp_layout *l = node->layout;
	uint64_t floats = l->vec_floats;
	for (size_t i = 0; i < l->n; i++) {
		const gsp_tensor *t = &l->t[i];
		if (t->compressed)
			floats += (round & 1 ? t->m : t->k) * tensor_rank(node, t);
	}
	return (size_t)floats * 4;
}

static void pg_edge_free(gsp__edge *edge)
{
	pg_edge *pe = edge->priv;
	if (!pe)
		return;
	free(pe->f);
	free(pe->mem);
	free(pe);
	edge->priv = NULL;
}

static int pg_edge_init(gsp_node *node, gsp__edge *edge)
{
	const gsp_layout *l = node->layout;
	pg_edge *pe = calloc(1, sizeof(*pe));
	if (!pe)
		return -ENOMEM;
	edge->priv = pe;
	uint64_t floats = l->vec_floats;
	for (size_t i = 0; i < l->n; i++)
		if (l->t[i].compressed)
			floats += 3 * (l->t[i].m > l->t[i].k ? l->t[i].m : l->t[i].k) *
				  tensor_rank(node, &l->t[i]);
	pe->f = calloc(l->n, sizeof(*pe->f));
	pe->mem = calloc(floats ? floats : 1, sizeof(float));
	if (!pe->f || !pe->mem)
		return -ENOMEM;
	float *p = pe->mem;
	for (size_t i = 0; i < l->n; i++) {
		const gsp_tensor *t = &l->t[i];
		if (!t->compressed)
			continue;
		unsigned r = tensor_rank(node, t);
		size_t big = (size_t)(t->m > t->k ? t->m : t->k) * r;
		pg_factor *f = &pe->f[i];
		f->a = p;
		f->b = p + big;
		f->q = p + 2 * big;
		p += 3 * big;
		int err = gsp__rng_uniform(edge->seed, GSP_RNG_INIT_A, i, 0, 0,
					   f->a, t->m * r, 1);
		if (!err)
			err = gsp__rng_uniform(edge->seed, GSP_RNG_INIT_B, i, 0,
					       0, f->b, t->k * r, 1);
		if (err)
			return err;
	}
	pe->vdiff = p;
	return 0;
}

/* Next round's projection vectors of one edge into f->q, orthonormal. */
static void pg_prepare(gsp_node *node, gsp__edge *edge)
{
	const gsp_layout *l = node->layout;
	pg_edge *pe = edge->priv;
	uint64_t round = edge->round + 1;
	pe->refills = 0;
	for (size_t i = 0; i < l->n; i++) {
		const gsp_tensor *t = &l->t[i];
		if (!t->compressed)
			continue;
		unsigned r = tensor_rank(node, t);
		pg_factor *f = &pe->f[i];
		size_t rows = round & 1 ? t->k : t->m;
		if (node->cfg.warm_start)
			memcpy(f->q, round & 1 ? f->b : f->a,
			       rows * r * sizeof(float));
		else
			gsp__rng_uniform(edge->seed, GSP_RNG_COLD, i, round, 0,
					 f->q, rows * r, 1);
		pe->refills += gsp__orthonormalize(f->q, rows, r, edge->seed,
						     i, round);
	}
}

/* Float offset of tensor `ti` (ti = layout size: the vectors) in a
 * round's message, from the table pg_node_init builds once. */
static size_t msg_offset(const gsp_node *node, size_t ti, uint64_t round)
{
	const size_t *off = node->priv;
	return off[(round & 1) * (node->layout->n + 1) + ti];
}

/* Message offsets for even (row 0) and odd (row 1) rounds. */
static int pg_node_init(gsp_node *node)
{
	const gsp_layout *l = node->layout;
	size_t *off = calloc(2 * (l->n + 1), sizeof(*off));
	if (!off)
		return -ENOMEM;
	for (unsigned odd = 0; odd < 2; odd++) {
		size_t *row = off + odd * (l->n + 1), pos = 0;
		for (size_t i = 0; i < l->n; i++) {
			const gsp_tensor *t = &l->t[i];
			row[i] = pos;
			if (t->compressed)
				pos += (odd ? t->m : t->k) * tensor_rank(node, t);
		}
		row[l->n] = pos;
	}
	node->priv = off;
	return 0;
}

static void pg_node_free(gsp_node *node)
{
	free(node->priv);
	node->priv = NULL;
}

/* Copies column block [c0, c0 + r) of a rows x ld matrix to/from a
 * rows x r one, scaling by s. */
static void gather(float *restrict dst, size_t ld, size_t c0,
		   const float *restrict src, size_t rows, unsigned r, float s)
{
	for (size_t i = 0; i < rows; i++)
		for (unsigned c = 0; c < r; c++)
			dst[i * ld + c0 + c] = s * src[i * r + c];
}

static void scatter(float *restrict dst, const float *restrict src,
		    size_t ld, size_t c0, size_t rows, unsigned r)
{
	for (size_t i = 0; i < rows; i++)
		for (unsigned c = 0; c < r; c++)
			dst[i * r + c] = src[i * ld + c0 + c];
}

/* The same for the transposed matrices the kernel takes (R^T, V^T, Me^T):
 * rows [c0, c0 + r) of an r' x ldt matrix to/from a rows x r one.  At
 * rank 1 these are plain copies. */
static void gather_t(float *restrict dst, size_t ldt, size_t c0,
		     const float *restrict src, size_t rows, unsigned r)
{
	if (r == 1) {
		memcpy(dst + c0 * ldt, src, rows * sizeof(float));
		return;
	}
	for (unsigned c = 0; c < r; c++)
		for (size_t i = 0; i < rows; i++)
			dst[(c0 + c) * ldt + i] = src[i * r + c];
}

static void scatter_t(float *restrict dst, const float *restrict src,
		      size_t ldt, size_t c0, size_t rows, unsigned r)
{
	if (r == 1) {
		memcpy(dst, src + c0 * ldt, rows * sizeof(float));
		return;
	}
	for (unsigned c = 0; c < r; c++)
		for (size_t i = 0; i < rows; i++)
			dst[i * r + c] = src[(c0 + c) * ldt + i];
}

/* Row stride of the transposed matrices: rows on cache lines, an odd
 * number of lines apart (what the kernel runs fastest on). */
static size_t pg_ldt(uint64_t k)
{
	size_t ld = ((size_t)k + 15) & ~(size_t)15;
	return ld & 16 ? ld : ld + 16;
}

/* Floats of scratch pg_tensor() uses for tensor t (64-byte multiple). */
static size_t pg_tensor_scratch(const gsp_node *node, const gsp_tensor *t,
				size_t na, size_t np)
{
	size_t n = (t->m + pg_ldt(t->k)) * (na + np) * tensor_rank(node, t);
	return ((n + 15) & ~(size_t)15) + 32;
}

/* Tensors take turns in this many scratch slots, so the buffers handed to
 * the kernel's helper threads are not rewritten while still in their
 * caches (see kernel.c). */
#define PG_SLOTS 4

static void pg_tensor(gsp_node *node, size_t ti, gsp__edge **apply,
		      size_t na, gsp__edge **proj, size_t np, float *s)
{
	const gsp_tensor *t = &node->layout->t[ti];
	unsigned r = tensor_rank(node, t);
	size_t m = t->m, k = t->k, no = 0, ne = 0, ldt = pg_ldt(k);
	for (size_t e = 0; e < np; e++)
		if ((proj[e]->round + 1) & 1)
			no += r;
		else
			ne += r;
	size_t ra = na * r;
	/* L, U and Mo row-major; R^T, V^T and Me^T 64-byte aligned. */
	float *L = s, *RT = L + ((m * ra + 15) & ~(size_t)15);
	float *VT = RT + ldt * ra, *MeT = VT + ldt * no, *Mo = MeT + ldt * ne;
	float *U = Mo + ((m * no + 15) & ~(size_t)15);
	for (size_t e = 0; e < na; e++) {
		pg_factor *f = &((pg_edge *)apply[e]->priv)->f[ti];
		gather(L, ra, e * r, f->a, m, r, gsp__edge_coef(node, apply[e]));
		gather_t(RT, ldt, e * r, f->b, k, r);
	}
	for (size_t e = 0, co = 0, ce = 0; e < np; e++) {
		pg_factor *f = &((pg_edge *)proj[e]->priv)->f[ti];
		if ((proj[e]->round + 1) & 1) {
			gather_t(VT, ldt, co, f->q, k, r);
			co += r;
		} else {
			gather(U, ne, ce, f->q, m, r, 1.0f);
			ce += r;
		}
	}
	gsp__lowrank_job job = {
		.x = node->params + t->offset, .m = m, .k = k,
		.l = L, .na = ra, .mo = Mo, .no = no, .u = U, .ne = ne,
		.rt = RT, .vt = VT, .met = MeT, .ldt = ldt,
	};
	gsp__lowrank_run(&job);
	for (size_t e = 0, co = 0, ce = 0; e < np; e++) {
		uint64_t round = proj[e]->round + 1;
		float *msg = (float *)proj[e]->next_msg +
			     msg_offset(node, ti, round);
		if (round & 1) {
			scatter(msg, Mo, no, co, m, r);
			co += r;
		} else {
			scatter_t(msg, MeT, ldt, ce, k, r);
			ce += r;
		}
	}
}

static void pg_vectors(gsp_node *node, gsp__edge **apply, size_t na,
		       gsp__edge **proj, size_t np)
{
	const gsp_layout *l = node->layout;
	size_t v = 0;
	for (size_t i = 0; i < l->n; i++) {
		const gsp_tensor *t = &l->t[i];
		if (t->compressed)
			continue;
		float *x = node->params + t->offset;
		for (size_t e = 0; e < na; e++) {
			const float *d = ((pg_edge *)apply[e]->priv)->vdiff + v;
			float c = gsp__edge_coef(node, apply[e]);
			for (size_t j = 0; j < t->numel; j++)
				x[j] += c * d[j];
		}
		for (size_t e = 0; e < np; e++) {
			uint64_t round = proj[e]->round + 1;
			float *msg = (float *)proj[e]->next_msg +
				     msg_offset(node, l->n, round) + v;
			memcpy(msg, x, t->numel * sizeof(float));
		}
		v += t->numel;
	}
}

static int pg_run(gsp_node *node, gsp__edge **apply, size_t na,
		  gsp__edge **proj, size_t np)
{
	const gsp_layout *l = node->layout;
	for (size_t e = 0; e < np; e++)
		pg_prepare(node, proj[e]);
	size_t slot = 0;
	for (size_t i = 0; i < l->n; i++)
		if (l->t[i].compressed) {
			size_t n = pg_tensor_scratch(node, &l->t[i], na, np);
			slot = n > slot ? n : slot;
		}
	float *s = gsp__node_scratch(node, PG_SLOTS * slot + 16);
	if (!s)
		return -ENOMEM;
	s += (16 - ((uintptr_t)s / sizeof(float)) % 16) % 16;   /* 64 bytes */
	for (size_t i = 0, n = 0; i < l->n; i++)
		if (l->t[i].compressed)
			pg_tensor(node, i, apply, na, proj, np,
				  s + (n++ % PG_SLOTS) * slot);
	pg_vectors(node, apply, na, proj, np);
	return 0;
}

static void swap(float **a, float **b)
{
	float *t = *a;
	*a = *b;
	*b = t;
}

static void pg_commit(gsp_node *node, gsp__edge *edge)
{
	pg_edge *pe = edge->priv;
	uint64_t round = edge->round + 1;
	edge->refills += pe->refills;
	for (size_t i = 0; i < node->layout->n; i++)
		if (node->layout->t[i].compressed)
			swap(round & 1 ? &pe->f[i].b : &pe->f[i].a, &pe->f[i].q);
}

static int pg_complete(gsp_node *node, gsp__edge *edge, const uint8_t *msg)
{
	const gsp_layout *l = node->layout;
	pg_edge *pe = edge->priv;
	const float *mine = (const float *)edge->msg;
	const float *peer = (const float *)msg;
	size_t n = edge->msg_len / 4;
	/* Differences of finite values can still overflow: check first. */
	if (!gsp__edge_diff(mine, peer, edge->role, NULL, n))
		return GSP_ENONFINITE;
	size_t off = 0;
	for (size_t i = 0; i < l->n; i++) {
		const gsp_tensor *t = &l->t[i];
		if (!t->compressed)
			continue;
		size_t len = (edge->round & 1 ? t->m : t->k) *
			     tensor_rank(node, t);
		gsp__edge_diff(mine + off, peer + off, edge->role,
			       edge->round & 1 ? pe->f[i].a : pe->f[i].b, len);
		off += len;
	}
	gsp__edge_diff(mine + off, peer + off, edge->role, pe->vdiff,
		       l->vec_floats);
	return 0;
}

int gsp_node_edge_factors(const gsp_node *node, size_t edge, size_t tensor,
			  const float **ret_a, const float **ret_b,
			  unsigned *ret_rank)
{
	if (!node || edge >= node->n_edges || node->ops != &gsp__powergossip_ops ||
	    tensor >= node->layout->n || !node->layout->t[tensor].compressed)
		return -EINVAL;
	const pg_factor *f = &((pg_edge *)node->edges[edge].priv)->f[tensor];
	if (ret_a)
		*ret_a = f->a;
	if (ret_b)
		*ret_b = f->b;
	if (ret_rank)
		*ret_rank = tensor_rank(node, &node->layout->t[tensor]);
	return 0;
}

const gsp__method_ops gsp__powergossip_ops = {
	.synchronous = false,
	.float_messages = true,
	.node_init = pg_node_init,
	.node_free = pg_node_free,
	.edge_init = pg_edge_init,
	.edge_free = pg_edge_free,
	.msg_size = pg_msg_size,
	.run = pg_run,
	.commit = pg_commit,
	.complete = pg_complete,
};
