/*
 * libgossip internals shared by the engine's modules: the layout, node and
 * edge structures, the method operations table, the edge RNG, the
 * orthonormalization and the fused low-rank kernel.  Not installed.
 */
#ifndef GOSSIP_INTERNAL_H
#define GOSSIP_INTERNAL_H

#include <string.h>

#include "gossip.h"

#define GSP_HIDDEN __attribute__((visibility("hidden")))

struct gsp_layout {
	size_t n;
	gsp_tensor *t;
	uint64_t floats;         /* total floats */
	uint64_t vec_floats;     /* floats in uncompressed (0/1-dim) tensors */
	size_t n_compressed;
	uint64_t max_dim;        /* max over compressed tensors of max(m, k) */
};

typedef struct gsp__edge {
	gsp_role role;
	gsp_edge_state state;
	bool active;             /* inactive edges are skipped by every call */
	bool held;               /* not projected (gsp_node_edge_hold) */
	float weight;
	uint64_t round;          /* last projected round */
	uint64_t applied;        /* rounds 1..applied are in params */
	float applied_coef;      /* gsp__edge_coef when `applied` was applied */
	bool undoable;           /* that update can still be rebuilt: cleared
	                          * by complete, which overwrites it */
	uint8_t seed[GSP_SEED_BYTES];
	uint8_t *msg;            /* retained outgoing message of `round` */
	uint8_t *next_msg;       /* project() writes here; swapped on commit */
	size_t msg_len;
	size_t msg_cap;
	void *priv;              /* the node's method's state */
	/* A window of exact rounds (gsp_node_edge_exact_rounds): rounds
	 * win_from + 1 .. win_from + n_steps are exact gossip whatever the
	 * node's method, round win_from + t applied with steps[t - 1].
	 * xdiff: such a round's update on a node of another method (an
	 * exact node's is in priv).  n_steps 0: no window. */
	uint64_t win_from;
	float *steps;
	size_t n_steps;
	float *xdiff;
	uint64_t tx_bytes, rx_bytes, tx_msgs, rx_msgs, exact_bytes, refills;
} gsp__edge;

typedef struct gsp__method_ops {
	/* Node-level methods (choco) apply only when every edge completed the
	 * round and project only when every edge is idle. */
	bool synchronous;
	int (*node_init)(gsp_node *node);
	void (*node_free)(gsp_node *node);
	int (*edge_init)(gsp_node *node, gsp__edge *edge);
	void (*edge_free)(gsp__edge *edge);
	size_t (*msg_size)(const gsp_node *node, uint64_t round);
	/* Applies the updates of apply[] (cannot fail: inputs were validated
	 * by complete), then writes the next round's message of every edge in
	 * proj[] into edge->next_msg.  Projection state is committed only by
	 * commit(), which node.c calls only if run() succeeded.  Returns 0,
	 * or a negative code if projecting failed (the applies still count):
	 * GSP_ENONFINITE if a message it wrote is not finite (each method
	 * checks where its messages are made, once per value). */
	int (*run)(gsp_node *node, gsp__edge **apply, size_t n_apply,
		   gsp__edge **proj, size_t n_proj);
	void (*commit)(gsp_node *node, gsp__edge *edge);
	/* Validates msg (length already checked; finiteness is the method's
	 * to check) and, only if valid, updates the edge's pending state
	 * from the retained and received messages. */
	int (*complete)(gsp_node *node, gsp__edge *edge, const uint8_t *msg);
	/* Subtracts the update of round edge->applied, as it was added with
	 * edge->applied_coef, from params (cannot fail; node.c checks that
	 * edge->undoable).  NULL: the method cannot take rounds back. */
	void (*rollback)(gsp_node *node, gsp__edge *edge);
	/* The edge's method state as one block of floats (edge_state.c
	 * saves and loads it); NULL: the state cannot be saved. */
	float *(*edge_mem)(const gsp_node *node, gsp__edge *edge, size_t *ret_floats);
} gsp__method_ops;

struct gsp_node {
	gsp_layout *layout;
	/* The float32 values every method works on: the caller's buffer for
	 * a float32 node, the node's own master copy of a 16-bit buffer
	 * (dtype.c) otherwise. */
	float *params;
	void *buffer;            /* the caller's, of dtype */
	gsp_dtype dtype;
	bool master_owned;       /* params and seen are the node's */
	uint16_t *seen;          /* 16-bit: the buffer as last read or written */
	gsp_config cfg;
	const gsp__method_ops *ops;
	gsp__edge *edges;
	size_t n_edges;
	void *priv;              /* method state */
	float *scratch;          /* method scratch, grown on demand */
	size_t scratch_len;
};

/* A 16-bit node's master copy (dtype.c; no-ops for float32): its
 * allocation from the buffer, the trainer's changes read into it before
 * a call that uses params, the rounded values written back after one that
 * changed them. */
GSP_HIDDEN int gsp__node_master_init(gsp_node *node);
GSP_HIDDEN void gsp__node_read_in(gsp_node *node);
GSP_HIDDEN void gsp__node_write_out(gsp_node *node);
/* The arrays of those passes: the master, the buffer, and the buffer as
 * the node last saw or wrote it. */
typedef struct gsp__dtype_arrays {
	float *master;
	uint16_t *buf, *seen;
} gsp__dtype_arrays;
/* The two passes over n values (dtype.c: the vector ones where the CPU
 * has them, the scalar ones for the rest; float32: nothing). */
GSP_HIDDEN void gsp__dtype_read_in(gsp_dtype dtype, const gsp__dtype_arrays *a,
				   size_t n);
GSP_HIDDEN void gsp__dtype_write_out(gsp_dtype dtype, const gsp__dtype_arrays *a,
				     size_t n);
/* dtype_x86.c: whether the CPU has AVX2 and F16C, and the passes over
 * the first values, 8 at a time, with the same results as the scalar
 * ones; they return how many values they did (0 without AVX2 and F16C). */
GSP_HIDDEN bool gsp__dtype_x86_ok(void);
GSP_HIDDEN size_t gsp__dtype_read_in_x86(gsp_dtype dtype, const gsp__dtype_arrays *a,
					 size_t n);
GSP_HIDDEN size_t gsp__dtype_write_out_x86(gsp_dtype dtype, const gsp__dtype_arrays *a,
					   size_t n);

GSP_HIDDEN extern const gsp__method_ops gsp__powergossip_ops;
GSP_HIDDEN extern const gsp__method_ops gsp__exact_ops;
GSP_HIDDEN extern const gsp__method_ops gsp__choco_ops;
GSP_HIDDEN extern const gsp__method_ops gsp__skip_ops;

/* Whether round `round` of an edge is in its window of exact rounds. */
static inline bool gsp__in_window(const gsp__edge *edge, uint64_t round)
{
	return edge->n_steps && round > edge->win_from &&
	       round - edge->win_from <= edge->n_steps;
}

/* The operations of an edge's round `round`: exact gossip's in its
 * window (a skipped round's where its step is 0: skip.c), else the node's
 * method. */
static inline const gsp__method_ops *gsp__round_ops(const gsp_node *node,
						    const gsp__edge *edge,
						    uint64_t round)
{
	if (!gsp__in_window(edge, round))
		return node->ops;
	return edge->steps[round - edge->win_from - 1] == 0.0f ? &gsp__skip_ops
								: &gsp__exact_ops;
}

/* Where exact gossip keeps an edge's update: priv on an exact node,
 * xdiff in a window on a node of another method. */
static inline float *gsp__exact_diff(const gsp_node *node, const gsp__edge *edge)
{
	return node->ops == &gsp__exact_ops ? (float *)edge->priv : edge->xdiff;
}

/* Scratch of at least n floats, valid until the next call; NULL on OOM. */
GSP_HIDDEN float *gsp__node_scratch(gsp_node *node, size_t n);
/* Message buffers of at least cap bytes, the retained message kept;
 * -ENOMEM leaves the edge as it was. */
GSP_HIDDEN int gsp__edge_msg_room(gsp__edge *edge, size_t cap);
/* Coefficient of an edge's update: +gamma*w at lo, -gamma*w at hi. */
GSP_HIDDEN float gsp__edge_coef(const gsp_node *node, const gsp__edge *edge);

/* ---- edge RNG (rng.c) ---- */
enum gsp__rng_purpose {
	GSP_RNG_INIT_A = 1,
	GSP_RNG_INIT_B = 2,
	GSP_RNG_REFILL = 3,     /* a zero or dependent column */
	GSP_RNG_COLD = 4,       /* warm start off: a fresh factor each round */
	GSP_RNG_NODE = 5,       /* node-local streams (choco random-k) */
	GSP_RNG_DATA = 6,       /* simulation data */
};
/* n uniform floats in [-1, 1) from the stream (seed, purpose, a, b, c),
 * written out[i * stride].  Bit-identical on every machine: keyed BLAKE2b
 * derives a sub-seed, libsodium's deterministic generator gives bytes, and
 * exact integer arithmetic turns them into floats. */
GSP_HIDDEN int gsp__rng_uniform(const uint8_t seed[GSP_SEED_BYTES],
				uint32_t purpose, uint64_t a, uint64_t b,
				uint64_t c, float *out, size_t n, size_t stride);
/* n raw 32-bit words from the same kind of stream. */
GSP_HIDDEN int gsp__rng_words(const uint8_t seed[GSP_SEED_BYTES],
			      uint32_t purpose, uint64_t a, uint64_t b,
			      uint64_t c, uint32_t *out, size_t n);

/* ---- orthonormalization (orth.c) ---- */
/* Orthonormalizes the r columns of the rows x r row-major matrix q in
 * place with one pass of modified Gram-Schmidt in double accumulation.  A
 * column that is zero or (numerically) dependent on the previous ones is
 * refilled from the stream (seed, GSP_RNG_REFILL, tensor, round, column)
 * and orthogonalized again.  Returns the number of refilled columns. */
GSP_HIDDEN unsigned gsp__orthonormalize(float *q, size_t rows, unsigned r,
					const uint8_t seed[GSP_SEED_BYTES],
					uint64_t tensor, uint64_t round);
/* The same into q from src (rows x r, not overlapping q): the result
 * gsp__orthonormalize() would give on a copy of src, with one pass less
 * at rank 1. */
GSP_HIDDEN unsigned gsp__orthonormalize_copy(float *q, const float *src,
					     size_t rows, unsigned r,
					     const uint8_t seed[GSP_SEED_BYTES],
					     uint64_t tensor, uint64_t round);

/* ---- worker threads (pool.c) ---- */
#define GSP_POOL_MAX 8
/* A job's work for worker w (0 = the calling thread). */
typedef void (*gsp__pool_fn)(const void *job, unsigned w);
/* Workers, the caller included (starts the pool on first use). */
GSP_HIDDEN unsigned gsp__pool_size(void);
/* Takes the pool for this thread; false if another thread has it (then run
 * alone).  gsp__pool_run() needs it; release it after. */
GSP_HIDDEN bool gsp__pool_acquire(void);
GSP_HIDDEN void gsp__pool_release(void);
/* Calls fn(job, w) for w in [0, nw) (nw capped at the pool's size), on the
 * caller for w = 0 and on helpers for the others, and returns when all
 * have. */
GSP_HIDDEN void gsp__pool_run(unsigned nw, gsp__pool_fn fn, const void *job);

/* ---- fused low-rank kernel (kernel.c) ---- */
/* On one m x k row-major matrix X, in one blocked pass over its rows:
 *   X  += L R^T        L: m x na, R: k x na           (if na > 0)
 *   Mo  = X V          V: k x no, Mo: m x no           (if no > 0)
 *   Me  = X^T U        U: m x ne, Me: k x ne           (if ne > 0)
 * all row-major; the projections see X after the update.
 * With ldt != 0, R, V and Me are passed transposed instead (r, v and me
 * unused): R^T (na x ldt), V^T (no x ldt), Me^T (ne x ldt), row stride
 * ldt >= k; the kernel runs fastest with rows on 64-byte boundaries and
 * ldt an odd multiple of 16. */
typedef struct gsp__lowrank_job {
	float *x;
	uint64_t m, k;
	const float *l, *r;
	size_t na;
	const float *v;
	float *mo;
	size_t no;
	const float *u;
	float *me;
	size_t ne;
	const float *rt, *vt;   /* transposed forms, with ldt != 0 */
	float *met;
	size_t ldt;
} gsp__lowrank_job;
GSP_HIDDEN void gsp__lowrank_run(const gsp__lowrank_job *job);
/* The same on the calling thread alone, touching no shared state, so
 * several threads may run jobs at once.  Needs ldt != 0; spare: ldt floats
 * that stand in for the arrays of a zero count (never read or written). */
GSP_HIDDEN void gsp__lowrank_alone(const gsp__lowrank_job *job, float *spare);


/* hi - lo of an edge's two messages of n floats into out, oriented by this
 * end's role; with out NULL, only checks that every difference is finite.
 * Both ends compute the stored buffers with this one loop. */
GSP_HIDDEN bool gsp__edge_diff(const float *mine, const float *peer,
			       gsp_role role, float *out, size_t n);
/* True if all n floats are finite (finite.c). */
GSP_HIDDEN bool gsp__all_finite(const float *x, size_t n);
/* wire.c: n values of src into dst at wire precision (4 or 2 bytes each);
 * returns whether every written value is finite (a float16 overflow is
 * not).  decode: the same bytes back to float32, exactly. */
GSP_HIDDEN bool gsp__wire_encode(gsp_dtype wire, const float *src,
				 uint8_t *dst, size_t n);
GSP_HIDDEN void gsp__wire_decode(gsp_dtype wire, const uint8_t *src,
				 float *dst, size_t n);
/* True if all n differences hi[i] - lo[i] are finite. */
GSP_HIDDEN bool gsp__diff_finite(const float *hi, const float *lo, size_t n);
/* The bits of |f|; at least GSP_INF_BITS if and only if f is infinite or
 * NaN. */
#define GSP_INF_BITS 0x7f800000u
static inline uint32_t gsp__abs_bits(float f)
{
	uint32_t b;
	memcpy(&b, &f, sizeof(b));
	return b & 0x7fffffffu;
}

#endif
