/* PowerGossip (docs/ALGORITHM.md): per-edge shared factors A (m x r) and
 * B (k x r) per compressed tensor, warm-started power iteration on the
 * model difference, and exact gossip of the 0/1-dim tensors.
 *
 * Message of round t (row-major, layout order): for every compressed
 * tensor X (m x k) the projection X V (m x r) if t is odd or X^T U
 * (k x r) if t is even; then every uncompressed tensor's values.  Values
 * are float32, or float16 / bfloat16 if the node's cfg.wire says so: the
 * projection is then made in float32 in the edge's stage and rounded into
 * the message, and complete() reads both the retained message and the
 * peer's back from those same 16-bit bytes, so both ends still apply
 * opposite updates. */
#include <errno.h>
#include <stdatomic.h>
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
	size_t n_mem;      /* floats in mem */
	/* 16-bit wire only (NULL for float32): the next message in float32
	 * before rounding, and room for two messages read back. */
	float *stage, *decoded;
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
	return (size_t)floats * gsp_dtype_size(node->cfg.wire);
}

/* Values in a round's message. */
static size_t pg_msg_values(const gsp_node *node, uint64_t round)
{
	return pg_msg_size(node, round) / gsp_dtype_size(node->cfg.wire);
}

/* Where run() writes the next message of an edge in float32. */
static float *pg_out(gsp__edge *edge)
{
	pg_edge *pe = edge->priv;
	return pe->stage ? pe->stage : (float *)edge->next_msg;
}

static void pg_edge_free(gsp__edge *edge)
{
	pg_edge *pe = edge->priv;
	if (!pe)
		return;
	free(pe->f);
	free(pe->mem);
	free(pe->stage);
	free(pe->decoded);
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
	if (node->cfg.wire != GSP_DTYPE_FLOAT32) {
		size_t odd = pg_msg_values(node, 1), even = pg_msg_values(node, 2);
		size_t most = odd > even ? odd : even;
		pe->stage = malloc((most ? most : 1) * sizeof(float));
		pe->decoded = malloc((most ? 2 * most : 1) * sizeof(float));
		if (!pe->stage || !pe->decoded)
			return -ENOMEM;
	}
	pe->n_mem = floats;
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

/* Next round's projection vectors of one edge for tensor i into f->q,
 * orthonormal; returns the columns refilled. */
static unsigned pg_prepare_tensor(gsp_node *node, gsp__edge *edge, size_t i)
{
	const gsp_tensor *t = &node->layout->t[i];
	if (!t->compressed)
		return 0;
	uint64_t round = edge->round + 1;
	unsigned r = tensor_rank(node, t);
	pg_factor *f = &((pg_edge *)edge->priv)->f[i];
	size_t rows = round & 1 ? t->k : t->m;
	if (node->cfg.warm_start)
		return gsp__orthonormalize_copy(f->q, round & 1 ? f->b : f->a,
						rows, r, edge->seed, i, round);
	gsp__rng_uniform(edge->seed, GSP_RNG_COLD, i, round, 0, f->q,
			 rows * r, 1);
	return gsp__orthonormalize(f->q, rows, r, edge->seed, i, round);
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

/* Tensor ti's share of the step: gathers the factors into s, runs the
 * kernel (alone on this thread if spare is set, see gsp__lowrank_alone,
 * else on the workers) and scatters the projections into the messages.
 * Returns whether the projections are all finite. */
static bool pg_tensor(gsp_node *node, size_t ti, gsp__edge **apply,
		      size_t na, gsp__edge **proj, size_t np, float *s,
		      float *spare)
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
	if (spare)
		gsp__lowrank_alone(&job, spare);
	else
		gsp__lowrank_run(&job);
	/* Checked here, while still in cache, rather than in every
	 * message. */
	bool finite = gsp__all_finite(Mo, m * no);
	for (size_t c = 0; c < ne; c++)
		finite = finite && gsp__all_finite(MeT + c * ldt, k);
	for (size_t e = 0, co = 0, ce = 0; e < np; e++) {
		uint64_t round = proj[e]->round + 1;
		float *msg = pg_out(proj[e]) + msg_offset(node, ti, round);
		if (round & 1) {
			scatter(msg, Mo, no, co, m, r);
			co += r;
		} else {
			scatter_t(msg, MeT, ldt, ce, k, r);
			ce += r;
		}
	}
	return finite;
}

/* x += c d over the uncompressed tensors, d their difference (vdiff). */
static void pg_add_vectors(gsp_node *node, const float *d, float c)
{
	const gsp_layout *l = node->layout;
	for (size_t i = 0; i < l->n; i++) {
		const gsp_tensor *t = &l->t[i];
		if (t->compressed)
			continue;
		float *x = node->params + t->offset;
		for (size_t j = 0; j < t->numel; j++)
			x[j] += c * d[j];
		d += t->numel;
	}
}

/* The uncompressed tensors: every pending difference added, then the
 * values copied into every message.  Edge by edge, so each edge's
 * difference and message are one sequential run; the values, about a
 * quarter of a MB for ResNet-50, stay in cache. */
static bool pg_vectors(gsp_node *node, gsp__edge **apply, size_t na,
		       gsp__edge **proj, size_t np)
{
	const gsp_layout *l = node->layout;
	bool finite = true;
	for (size_t e = 0; e < na; e++)
		pg_add_vectors(node, ((pg_edge *)apply[e]->priv)->vdiff,
			       gsp__edge_coef(node, apply[e]));
	/* Every message carries these same values: checked once. */
	for (size_t i = 0; np && i < l->n; i++)
		if (!l->t[i].compressed)
			finite = finite && gsp__all_finite(node->params + l->t[i].offset,
							   l->t[i].numel);
	for (size_t e = 0; e < np; e++) {
		uint64_t round = proj[e]->round + 1;
		float *msg = pg_out(proj[e]) + msg_offset(node, l->n, round);
		for (size_t i = 0; i < l->n; i++) {
			const gsp_tensor *t = &l->t[i];
			if (t->compressed)
				continue;
			memcpy(msg, node->params + t->offset,
			       t->numel * sizeof(float));
			msg += t->numel;
		}
	}
	return finite;
}

/* Scratch floats of pg_tensor() for the largest compressed tensor. */
static size_t pg_slot(const gsp_node *node, size_t na, size_t np)
{
	const gsp_layout *l = node->layout;
	size_t slot = 0;
	for (size_t i = 0; i < l->n; i++)
		if (l->t[i].compressed) {
			size_t n = pg_tensor_scratch(node, &l->t[i], na, np);
			slot = n > slot ? n : slot;
		}
	return slot;
}

/* 64-byte aligned view of n floats of the node's scratch (NULL: OOM). */
static float *pg_scratch(gsp_node *node, size_t n)
{
	float *s = gsp__node_scratch(node, n + 16);
	if (s)
		s += (16 - ((uintptr_t)s / sizeof(float)) % 16) % 16;
	return s;
}

/* At a 16-bit wire precision, every projected edge's staged message
 * rounded into next_msg; false if a rounded value is not finite. */
static bool pg_encode(gsp_node *node, gsp__edge **proj, size_t np)
{
	bool finite = true;
	for (size_t e = 0; e < np; e++) {
		pg_edge *pe = proj[e]->priv;
		if (pe->stage &&
		    !gsp__wire_encode(node->cfg.wire, pe->stage, proj[e]->next_msg,
				      pg_msg_values(node, proj[e]->round + 1)))
			finite = false;
	}
	return finite;
}

/* The whole step on the calling thread, tensor after tensor (each large
 * one shared row-wise with the workers by the kernel). */
static int pg_run_serial(gsp_node *node, gsp__edge **apply, size_t na,
			 gsp__edge **proj, size_t np)
{
	const gsp_layout *l = node->layout;
	for (size_t e = 0; e < np; e++) {
		pg_edge *pe = proj[e]->priv;
		pe->refills = 0;
		for (size_t i = 0; i < l->n; i++)
			pe->refills += pg_prepare_tensor(node, proj[e], i);
	}
	size_t slot = pg_slot(node, na, np);
	float *s = pg_scratch(node, PG_SLOTS * slot);
	if (!s)
		return -ENOMEM;
	bool finite = true;
	for (size_t i = 0, n = 0; i < l->n; i++)
		if (l->t[i].compressed &&
		    !pg_tensor(node, i, apply, na, proj, np,
			       s + (n++ % PG_SLOTS) * slot, NULL))
			finite = false;
	if (!pg_vectors(node, apply, na, proj, np))
		finite = false;
	if (finite && !pg_encode(node, proj, np))
		finite = false;
	return finite ? 0 : GSP_ENONFINITE;
}

/* A unit of a step spread by tensors: tensor i, or the vectors (i = n). */
typedef struct pg_item {
	uint64_t cost;
	size_t i;
} pg_item;

/* The step spread over the workers by whole tensors: each worker claims
 * the next item of the list (largest first, see pg_items) and
 * prepares, gathers, projects and scatters it on its own scratch, with
 * the kernel alone.  Claiming by timing balances the load as it really
 * is; it never changes the result, because an item's work does not depend
 * on which worker does it. */
typedef struct pg_job {
	gsp_node *node;
	gsp__edge **apply, **proj;
	size_t na, np;
	const pg_item *items;         /* in claiming order (pg_items) */
	size_t n_items;
	atomic_size_t *next;          /* index of the next item to claim */
	float *scratch;               /* per worker: slot + spare floats */
	size_t per_worker, slot;
	unsigned *refills;            /* per worker and projected edge */
	bool *finite;                 /* per worker: its messages finite */
} pg_job;

static void pg_worker(const void *arg, unsigned w)
{
	const pg_job *j = arg;
	const gsp_layout *l = j->node->layout;
	float *s = j->scratch + w * j->per_worker;
	unsigned *refills = j->refills + w * j->np;
	bool finite = true;
	for (size_t e = 0; e < j->np; e++)
		refills[e] = 0;
	for (;;) {
		size_t k = atomic_fetch_add_explicit(j->next, 1,
						     memory_order_relaxed);
		if (k >= j->n_items)
			break;
		size_t i = j->items[k].i;
		if (i == l->n) {
			if (!pg_vectors(j->node, j->apply, j->na, j->proj, j->np))
				finite = false;
			continue;
		}
		for (size_t e = 0; e < j->np; e++)
			refills[e] += pg_prepare_tensor(j->node, j->proj[e], i);
		if (!pg_tensor(j->node, i, j->apply, j->na, j->proj, j->np, s,
			       s + j->slot))
			finite = false;
	}
	j->finite[w] = finite;
}

/* A step is spread by tensors from this much work on (multiply-adds plus
 * PG_MEM_COST per element moved), ... */
#define PG_SPREAD_MIN_COST (1u << 22)
#define PG_MEM_COST 8
/* ... when no worker gets more than this many percent of the mean. */
#define PG_SPREAD_MAX_IMBALANCE 112

/* Largest first; equal costs in index order. */
static int pg_item_order(const void *pa, const void *pb)
{
	const pg_item *a = pa, *b = pb;
	if (a->cost != b->cost)
		return a->cost < b->cost ? 1 : -1;
	return (a->i > b->i) - (a->i < b->i);
}

/* The items of a step spread by tensors: the vectors as item n if there
 * are any, then every compressed tensor, largest first; items: n + 1
 * entries of room.  Returns their number, or 0 if the work is too small
 * or would not balance even when placed largest first on the least
 * loaded worker (one dominant tensor: the kernel's row split serves it
 * better). */
static size_t pg_items(const gsp_node *node, size_t na, size_t np,
		       unsigned nw, pg_item *items)
{
	const gsp_layout *l = node->layout;
	uint64_t load[GSP_POOL_MAX] = {0}, total = 0;
	/* The vectors first: their work is all per-edge data, cold at the
	 * start of a step, and takes far longer than its multiply-adds say;
	 * claimed among the last it would keep one worker busy at the end. */
	size_t n = 0;
	if (l->vec_floats)
		items[n++] = (pg_item){
			.cost = l->vec_floats * (na + np + PG_MEM_COST), .i = l->n,
		};
	size_t first = n;
	for (size_t i = 0; i < l->n; i++) {
		const gsp_tensor *t = &l->t[i];
		if (t->compressed)
			items[n++] = (pg_item){
				.cost = (uint64_t)t->numel *
					((na + np) * tensor_rank(node, t) + PG_MEM_COST),
				.i = i,
			};
	}
	qsort(items + first, n - first, sizeof(*items), pg_item_order);
	for (size_t k = 0; k < n; k++) {
		unsigned w = 0;
		for (unsigned v = 1; v < nw; v++)
			if (load[v] < load[w])
				w = v;
		load[w] += items[k].cost;
		total += items[k].cost;
	}
	uint64_t max = 0;
	for (unsigned w = 0; w < nw; w++)
		max = load[w] > max ? load[w] : max;
	bool spread = total >= PG_SPREAD_MIN_COST &&
		      max * nw * 100 <= total * PG_SPREAD_MAX_IMBALANCE;
	return spread ? n : 0;
}

static int pg_run(gsp_node *node, gsp__edge **apply, size_t na,
		  gsp__edge **proj, size_t np)
{
	const gsp_layout *l = node->layout;
	unsigned nw = gsp__pool_size();
	if (nw < 2 || !gsp__pool_acquire())
		return pg_run_serial(node, apply, na, proj, np);
	size_t slot = pg_slot(node, na, np), spare = 0;
	for (size_t i = 0; i < l->n; i++)
		if (l->t[i].compressed && pg_ldt(l->t[i].k) > spare)
			spare = pg_ldt(l->t[i].k);
	/* The claim counter alone on its cache line. */
	_Alignas(64) atomic_size_t next = 0;
	pg_job j = {
		.node = node, .apply = apply, .proj = proj, .na = na, .np = np,
		.next = &next, .slot = slot,
		.per_worker = (slot + spare + 15) & ~(size_t)15,
	};
	/* Scratch: the workers' regions (64-byte multiples), the items,
	 * refills. */
	size_t item_floats = sizeof(pg_item) / sizeof(float);
	size_t tail = (l->n + 1) * item_floats + nw * np + nw;
	float *s = pg_scratch(node, nw * j.per_worker + tail);
	pg_item *items = s ? (pg_item *)(s + nw * j.per_worker) : NULL;
	size_t n_items = s ? pg_items(node, na, np, nw, items) : 0;
	if (!n_items) {
		gsp__pool_release();
		return pg_run_serial(node, apply, na, proj, np);
	}
	j.scratch = s;
	j.items = items;
	j.n_items = n_items;
	j.refills = (unsigned *)(s + nw * j.per_worker + (l->n + 1) * item_floats);
	j.finite = (bool *)(j.refills + nw * np);
	gsp__pool_run(nw, pg_worker, &j);
	gsp__pool_release();
	bool finite = true;
	for (unsigned w = 0; w < nw; w++)
		finite = finite && j.finite[w];
	finite = finite && pg_encode(node, proj, np);
	for (size_t e = 0; e < np; e++) {
		pg_edge *pe = proj[e]->priv;
		pe->refills = 0;
		for (unsigned w = 0; w < nw; w++)
			pe->refills += j.refills[w * np + e];
	}
	return finite ? 0 : GSP_ENONFINITE;
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
	size_t n = pg_msg_values(node, edge->round);
	if (pe->decoded) {
		gsp__wire_decode(node->cfg.wire, edge->msg, pe->decoded, n);
		gsp__wire_decode(node->cfg.wire, msg, pe->decoded + n, n);
		mine = pe->decoded;
		peer = pe->decoded + n;
	}
	/* Catches a NaN or infinity in msg (mine is finite), and
	 * differences of finite values that overflow. */
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

/* Subtracts round edge->applied's update: coef A B^T per compressed
 * tensor, coef vdiff for the vectors.  Once round applied + 1 has been
 * projected, pg_commit has swapped the factor round `applied` completed
 * (A at odd rounds, B at even ones) into q; the other is still in place. */
static void pg_rollback(gsp_node *node, gsp__edge *edge)
{
	const gsp_layout *l = node->layout;
	pg_edge *pe = edge->priv;
	float c = -edge->applied_coef;
	bool moved = edge->round != edge->applied, odd = edge->applied & 1;
	for (size_t i = 0; i < l->n; i++) {
		const gsp_tensor *t = &l->t[i];
		if (!t->compressed)
			continue;
		const pg_factor *f = &pe->f[i];
		const float *a = moved && odd ? f->q : f->a;
		const float *b = moved && !odd ? f->q : f->b;
		unsigned r = tensor_rank(node, t);
		float *x = node->params + t->offset;
		for (uint64_t p = 0; p < t->m; p++)
			for (uint64_t q = 0; q < t->k; q++) {
				float s = 0.0f;
				for (unsigned j = 0; j < r; j++)
					s += c * a[p * r + j] * b[q * r + j];
				x[p * t->k + q] += s;
			}
	}
	pg_add_vectors(node, pe->vdiff, c);
}

int gsp_node_edge_factors(const gsp_node *node, size_t edge, size_t tensor,
			  const float **ret_a, const float **ret_b,
			  unsigned *ret_rank)
{
	if (!node || edge >= node->n_edges ||
	    node->ops != &gsp__powergossip_ops ||
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

/* Factors a, b, q of every compressed tensor and vdiff, one block.
 * pg_commit swaps the factors' pointers: first they go back to where
 * pg_edge_init put them (a, b, q in that order), so that the block
 * means the same in any edge of the layout.  NULL without memory. */
static float *pg_edge_mem(const gsp_node *node, gsp__edge *edge, size_t *ret_floats)
{
	const gsp_layout *l = node->layout;
	pg_edge *pe = edge->priv;
	float *p = pe->mem;
	for (size_t i = 0; i < l->n; i++) {
		const gsp_tensor *t = &l->t[i];
		if (!t->compressed)
			continue;
		size_t big = (size_t)(t->m > t->k ? t->m : t->k) * tensor_rank(node, t);
		pg_factor *f = &pe->f[i];
		if (f->a != p || f->b != p + big) {
			float *tmp = malloc(3 * big * sizeof(float));
			if (!tmp)
				return NULL;
			memcpy(tmp, f->a, big * sizeof(float));
			memcpy(tmp + big, f->b, big * sizeof(float));
			memcpy(tmp + 2 * big, f->q, big * sizeof(float));
			memcpy(p, tmp, 3 * big * sizeof(float));
			free(tmp);
			f->a = p;
			f->b = p + big;
			f->q = p + 2 * big;
		}
		p += 3 * big;
	}
	*ret_floats = pe->n_mem;
	return pe->mem;
}

const gsp__method_ops gsp__powergossip_ops = {
	.synchronous = false,
	.node_init = pg_node_init,
	.node_free = pg_node_free,
	.edge_init = pg_edge_init,
	.edge_free = pg_edge_free,
	.msg_size = pg_msg_size,
	.run = pg_run,
	.commit = pg_commit,
	.complete = pg_complete,
	.rollback = pg_rollback,
	.edge_mem = pg_edge_mem,
};
