/*
 * libgossip: the PowerGossip engine and its baselines.
 *
 * This header owns the public engine API: model layouts, gossip nodes and
 * their edges, the three-call round protocol (project / complete / apply),
 * topologies with their mixing weights, and error codes.  No event loop, no
 * I/O, no logging: the daemon and the simulator put whatever transport they
 * like between project() on one end and complete() on the other.
 *
 * Glossary
 *   layout     an ordered list of named float32 tensors packed into one flat
 *              parameter buffer; tensors of >= 2 dims are viewed as m x k
 *              matrices (m = first dim, k = product of the rest), 0/1-dim
 *              tensors ("vectors") travel uncompressed.
 *   node       one worker's view: its layout, its parameter buffer (owned by
 *              the caller), its method and its edges.
 *   edge       one neighbour: mixing weight w, role (lo or hi), 32-byte seed,
 *              a round counter and per-method state.
 *   round      one gossip exchange on one edge; rounds count from 1.  Odd
 *              rounds send m x r projections, even rounds k x r.
 *   message    what project() produces for one edge and one round; its byte
 *              layout is documented in docs/ENGINE.md and at gsp_node_message().
 *
 * Round protocol of one edge (identical at both ends):
 *   IDLE --project--> IN_FLIGHT --complete(peer msg)--> COMPLETED --apply--> IDLE
 * gsp_node_step() = apply every COMPLETED edge, then project every IDLE
 * edge, fused into one pass over the parameters.
 *
 * Conventions: functions return 0 (or a count) on success and a negative
 * errno or GSP_E* code on failure; on failure outputs (ret_*) and state are
 * left untouched.  Destructors accept NULL.
 */
#ifndef GOSSIP_H
#define GOSSIP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(GSP_BUILDING_LIBRARY)
#define GSP_EXPORT __attribute__((visibility("default")))
#else
#define GSP_EXPORT
#endif
#define GSP_MUST_CHECK __attribute__((warn_unused_result))

/* ---- errors ----------------------------------------------------------- */

/* Project-specific codes lie below -4096, outside the errno range. */
enum {
	GSP_ENONFINITE = -4097, /* a NaN or infinity in parameters or a message */
	GSP_ESTATE = -4098,     /* call not valid in the edge's current state */
	GSP_ESHAPE = -4099,     /* layout or message shape mismatch */
	GSP_EROUND = -4100,     /* message for a round the edge is not in */
};

/* Human-readable text for any return code (errno or GSP_E*). */
GSP_EXPORT const char *gsp_strerror(int err);

/* ---- layouts ---------------------------------------------------------- */

#define GSP_MAX_DIMS 8
#define GSP_NAME_MAX 64

typedef struct gsp_tensor {
	char name[GSP_NAME_MAX];
	unsigned ndim;               /* 0..GSP_MAX_DIMS */
	uint64_t shape[GSP_MAX_DIMS];
	/* Derived by gsp_layout_new(): */
	uint64_t offset;             /* first float in the flat buffer */
	uint64_t numel;
	uint64_t m, k;               /* matrix view (compressed tensors only) */
	bool compressed;             /* ndim >= 2 */
} gsp_tensor;

typedef struct gsp_layout gsp_layout;

/* Validates and copies n tensor descriptions (name, ndim, shape); every
 * dimension must be >= 1 and the total must fit in memory.  Derived fields
 * of the input are ignored. */
GSP_EXPORT int gsp_layout_new(const gsp_tensor *tensors, size_t n,
			      gsp_layout **ret_layout) GSP_MUST_CHECK;
/* Parses "100x100,64x300,64" (x-separated dims, comma-separated tensors;
 * names become t0, t1, ...). */
GSP_EXPORT int gsp_layout_parse(const char *spec, gsp_layout **ret_layout) GSP_MUST_CHECK;
GSP_EXPORT void gsp_layout_free(gsp_layout *layout);
GSP_EXPORT size_t gsp_layout_count(const gsp_layout *layout);
GSP_EXPORT const gsp_tensor *gsp_layout_tensor(const gsp_layout *layout, size_t i);
GSP_EXPORT uint64_t gsp_layout_floats(const gsp_layout *layout);

/* ---- parameter types ------------------------------------------------- */

/* What a parameter buffer holds (host byte order).  The values are those
 * of REGISTER's dtype option (PROTOCOL.md 5.2). */
typedef enum gsp_dtype {
	GSP_DTYPE_FLOAT32 = 0,
	GSP_DTYPE_FLOAT16 = 1,       /* IEEE 754 binary16 */
	GSP_DTYPE_BFLOAT16 = 2,      /* the top half of a float32 */
} gsp_dtype;

/* "float32", "float16", "bfloat16"; NULL / -EINVAL for anything else. */
GSP_EXPORT const char *gsp_dtype_name(gsp_dtype dtype);
GSP_EXPORT int gsp_dtype_parse(const char *name, gsp_dtype *ret_dtype);
/* Bytes per value: 4, 2, 2; 0 for an unknown dtype. */
GSP_EXPORT size_t gsp_dtype_size(gsp_dtype dtype);
/* Conversions: 16 -> 32 bits is exact; 32 -> 16 rounds to nearest, ties
 * to even, overflows to infinity, keeps the sign of zeros, and makes a NaN
 * a quiet NaN of the same sign. */
GSP_EXPORT float gsp_half_to_float(uint16_t h);
GSP_EXPORT uint16_t gsp_float_to_half(float f);
GSP_EXPORT float gsp_bf16_to_float(uint16_t h);
GSP_EXPORT uint16_t gsp_float_to_bf16(float f);

/* ---- methods and configuration --------------------------------------- */

typedef enum gsp_method {
	GSP_METHOD_POWERGOSSIP = 0,
	GSP_METHOD_EXACT,
	GSP_METHOD_CHOCO_TOPK,
	GSP_METHOD_CHOCO_RANDK,
	GSP_METHOD_CHOCO_SIGN,
} gsp_method;

/* Parses "powergossip", "exact", "choco-topk", "choco-randk", "choco-sign". */
GSP_EXPORT int gsp_method_parse(const char *name, gsp_method *ret_method);
GSP_EXPORT const char *gsp_method_name(gsp_method method);

typedef struct gsp_config {
	gsp_method method;
	unsigned rank;          /* powergossip: >= 1; clamped to min(m,k) */
	bool warm_start;        /* powergossip: reuse last round's factor */
	float gamma;            /* consensus step, > 0 (0 allowed: freeze) */
	float choco_fraction;   /* choco top-k / random-k: kept fraction (0,1] */
	uint64_t seed;          /* node-local randomness (choco random-k) */
	/* powergossip: precision of the factors in its messages (float32,
	 * or float16 / bfloat16: half the bytes; both ends diff the same
	 * rounded values, so the average stays conserved).  Other methods,
	 * and exact rounds (gsp_node_edge_exact_rounds), send float32. */
	gsp_dtype wire;
} gsp_config;

/* Reference defaults: powergossip, rank 1, warm start, gamma 1, 1%. */
GSP_EXPORT void gsp_config_default(gsp_config *cfg);

/* ---- nodes and edges -------------------------------------------------- */

typedef struct gsp_node gsp_node;

typedef enum gsp_role { GSP_ROLE_LO = 0, GSP_ROLE_HI = 1 } gsp_role;
typedef enum gsp_edge_state {
	GSP_EDGE_IDLE = 0,
	GSP_EDGE_IN_FLIGHT,
	GSP_EDGE_COMPLETED,
} gsp_edge_state;

#define GSP_SEED_BYTES 32
#define GSP_MAX_RANK 1024

typedef struct gsp_edge_info {
	gsp_role role;
	gsp_edge_state state;
	bool active;
	float weight;               /* w_ij */
	uint64_t round;             /* last projected round (0 before any) */
	uint64_t tx_bytes, rx_bytes;   /* message bytes, each direction */
	uint64_t tx_msgs, rx_msgs;
	uint64_t exact_bytes;       /* what exact gossip would have sent */
	uint64_t refills;           /* zero columns refilled from the RNG */
	uint64_t window_end;        /* the open window's last round
				     * (gsp_node_edge_exact_rounds; 0: none) */
} gsp_edge_info;

/* params: m floats laid out as in layout, owned by the caller and alive for
 * the node's lifetime; the node reads and writes it only inside
 * gsp_node_step/apply/project and gsp_node_edge_rollback.  The layout is
 * copied. */
GSP_EXPORT int gsp_node_new(const gsp_layout *layout, float *params,
			    const gsp_config *cfg, gsp_node **ret_node) GSP_MUST_CHECK;
/* gsp_node_new for a buffer of m values of dtype.  A 16-bit node keeps a
 * float32 master copy of the buffer (taken here) and does all its
 * arithmetic on it: each call that uses the parameters first reads the
 * caller's changes (a value that is not the one the node last read or
 * wrote there: the master becomes it plus the part of the master the old
 * one had not), and each call that changes them writes the master back
 * rounded to nearest even.  So gossip moves the masters exactly as it
 * moves float32 parameters, and after each write the buffer is within
 * half a 16-bit unit in the last place of its master (docs/ENGINE.md,
 * "16-bit parameters").  -EINVAL for an unknown dtype. */
GSP_EXPORT int gsp_node_new_typed(const gsp_layout *layout, void *buffer,
				  gsp_dtype dtype, const gsp_config *cfg,
				  gsp_node **ret_node) GSP_MUST_CHECK;
/* The node's float32 values: the buffer itself for float32, the master
 * copy of a 16-bit buffer (read only; as of the node's last call). */
GSP_EXPORT const float *gsp_node_values(const gsp_node *node);
GSP_EXPORT void gsp_node_free(gsp_node *node);

/* Adds an edge with mixing weight 0 < weight <= 1, this node's role, and a
 * seed both ends share (GSP_SEED_BYTES).  Returns the edge index (>= 0). */
GSP_EXPORT int gsp_node_add_edge(gsp_node *node, float weight, gsp_role role,
				 const uint8_t *seed, size_t seed_len) GSP_MUST_CHECK;
GSP_EXPORT size_t gsp_node_edge_count(const gsp_node *node);
/* Starts a new generation on an edge: fresh state from a new seed, round
 * 0, IDLE and active (a reconnected neighbour).  -EBUSY while the edge
 * still holds a completed update (apply it first).  On failure the edge
 * is unchanged.  Byte counters carry on. */
GSP_EXPORT int gsp_node_edge_reset(gsp_node *node, size_t edge, float weight,
				   gsp_role role, const uint8_t *seed,
				   size_t seed_len) GSP_MUST_CHECK;
/* Takes an edge out of projection and completion (its neighbour is gone):
 * a round in flight is dropped; a completed round's update still lands at
 * the next apply, as it does at the other end.  gsp_node_edge_reset
 * brings the edge back. */
GSP_EXPORT int gsp_node_edge_disable(gsp_node *node, size_t edge);
/* Opens a window of exact rounds in an edge's generation: rounds
 * after_round + 1 .. after_round + n_steps are exact gossip whatever the
 * node's method (the message is the whole model), round after_round + t
 * applied with step steps[t - 1] instead of the node's gamma; later rounds
 * are the node's method again (PowerGossip warm-starts from its factors
 * of before the window).  Both ends of the edge open the same window, so a
 * round's kind follows from its number at both.  With
 * gsp_graph_finite_schedule's steps on every edge of the graph and rounds
 * in lockstep, every node holds the network average after n_steps rounds.
 * The edge may hold a completed round (after_round = that round: it lands
 * as before).  A take-back subtracts a round with the kind and step it was
 * applied with.  The window stays open until the edge applies a round
 * past it, and gsp_node_edge_reset closes it; gsp_node_edge_save keeps it
 * (with its update on a node of another method: a whole model more).
 * n_steps 0 opens nothing.  A step of 0 makes that round one the edge sits
 * out: its message is one float, 0 (anything else is malformed: -EBADMSG
 * from gsp_node_complete), and it changes nothing, but it completes at
 * both ends like any other (gsp_ring_matching_schedule's rounds use only
 * half of a ring's edges each).
 * steps: finite, >= 0, at most GSP_MAX_STEPS (-EINVAL); -ERANGE if the
 * edge has projected past after_round, -EBUSY if a window is open,
 * -ENOTSUP for the node-synchronous method (choco), -ENOMEM. */
#define GSP_MAX_STEPS 4096
GSP_EXPORT int gsp_node_edge_exact_rounds(gsp_node *node, size_t edge,
					  uint64_t after_round, const float *steps,
					  size_t n_steps) GSP_MUST_CHECK;
/* Holds an edge out of projection (hold true) or lets it project again:
 * gsp_node_step and gsp_node_project skip a held edge, which keeps its
 * state, still completes a round in flight and applies its update (an
 * AVERAGE whose rounds on this edge are over while others go on).
 * gsp_node_edge_reset lets it go.  -ENOTSUP for the node-synchronous
 * method (choco), whose rounds need every edge. */
GSP_EXPORT int gsp_node_edge_hold(gsp_node *node, size_t edge, bool hold);
/* Takes back an edge's rounds after `round` so that this end has applied
 * exactly the rounds 1..round of the edge's generation (the neighbour ended
 * the generation there): a COMPLETED update not yet applied is dropped, and
 * the update of the last applied round is subtracted from params.  Only one
 * round can be taken back that way: the edge must be COMPLETED at round+1
 * (drop), IDLE at round+1 (applied, not yet projected again: subtract) or
 * IN_FLIGHT at round+2 (projected after applying round+1, not completed,
 * perhaps dropped by gsp_node_edge_disable since: subtract).  Rounds
 * already at or below `round` are nothing to do.  The edge is left
 * disabled (gsp_node_edge_reset starts the next generation).  Returns the
 * number of updates subtracted (0 or 1), -ERANGE if `round` is further
 * back than that, -ENOTSUP for the node-level (choco) methods, -EINVAL
 * for a bad edge.  On failure nothing changes. */
GSP_EXPORT int gsp_node_edge_rollback(gsp_node *node, size_t edge,
				      uint64_t round) GSP_MUST_CHECK;
/* One edge's whole state (round, counts, retained message, shared
 * factors and pending update) as bytes in a new buffer, and back into an
 * edge of a node of the same layout and method (a daemon restarted with
 * its trainer alive continues the edge).  -ENOTSUP for the node-level
 * (choco) methods; load: -EBADMSG when the bytes do not fit the node
 * (the edge is then unchanged). */
GSP_EXPORT int gsp_node_edge_save(const gsp_node *node, size_t edge,
				  uint8_t **ret_buf, size_t *ret_len) GSP_MUST_CHECK;
GSP_EXPORT int gsp_node_edge_load(gsp_node *node, size_t edge, const uint8_t *buf,
				  size_t len) GSP_MUST_CHECK;
/* The bytes gsp_node_edge_save() would give for the edge, without making
 * them (a caller with a budget asks first). */
GSP_EXPORT int gsp_node_edge_state_size(const gsp_node *node, size_t edge,
					size_t *ret_len) GSP_MUST_CHECK;
/* Changes the consensus step of updates applied from now on (a round's
 * take-back subtracts it with the step it was applied with); both ends
 * of an edge must apply a round with the same step.  gamma >= 0,
 * finite. */
GSP_EXPORT int gsp_node_set_gamma(gsp_node *node, float gamma);
/* Changes an edge's mixing weight (degrees changed); both ends must. */
GSP_EXPORT int gsp_node_edge_set_weight(gsp_node *node, size_t edge, float weight);
GSP_EXPORT int gsp_node_edge_info(const gsp_node *node, size_t edge,
				  gsp_edge_info *ret_info);

/* Apply every COMPLETED edge's update into params (they become IDLE).
 * Returns the number of edges applied. */
GSP_EXPORT int gsp_node_apply(gsp_node *node) GSP_MUST_CHECK;
/* Project the next round's message for every IDLE edge (they become
 * IN_FLIGHT).  Returns the number of edges projected.  Fails with
 * GSP_ENONFINITE, changing nothing, if params hold a NaN or infinity. */
GSP_EXPORT int gsp_node_project(gsp_node *node) GSP_MUST_CHECK;
/* Projects one IDLE edge only (a neighbour is waiting for that round). */
GSP_EXPORT int gsp_node_project_edge(gsp_node *node, size_t edge) GSP_MUST_CHECK;
/* apply + project fused into one pass over params.  Returns the number of
 * edges projected.  The apply part commits even if projecting fails. */
GSP_EXPORT int gsp_node_step(gsp_node *node) GSP_MUST_CHECK;
/* The instruction set the step's kernel runs on: "avx512", "avx2" or
 * "generic" (4-float vectors).  The widest the CPU runs; the environment
 * variable GSP_KERNEL may name a narrower one (for tests and
 * benchmarks). */
GSP_EXPORT const char *gsp_kernel_name(void);

/* The retained outgoing message of an IN_FLIGHT (or later) edge: bytes,
 * length and round.  Valid until the edge is next projected. */
GSP_EXPORT int gsp_node_message(const gsp_node *node, size_t edge,
				const void **ret_msg, size_t *ret_len,
				uint64_t *ret_round);
/* A peer's message of the edge's retained round against ours, both read
 * at that round's wire precision (float32, or gsp_config.wire's 16 bits
 * for a PowerGossip round): ||peer - mine||^2, ||mine||^2 (in double) and
 * the number of values.  -EINVAL, GSP_ESTATE before any round, GSP_ESHAPE
 * if len is not the retained message's length. */
GSP_EXPORT int gsp_node_message_diff_norms(const gsp_node *node, size_t edge,
					   const void *peer, size_t len,
					   double *ret_num, double *ret_den,
					   size_t *ret_values) GSP_MUST_CHECK;
/* Size in bytes of any message for that edge and round (either end). */
GSP_EXPORT int64_t gsp_node_message_size(const gsp_node *node, size_t edge,
					 uint64_t round);
/* Size in bytes of the method's message at round on any edge outside a
 * finite-time window (whose rounds carry the whole model or nothing),
 * known before the node has an edge: what a link that may carry rounds
 * must let through.  -EINVAL for no node or round 0. */
GSP_EXPORT int64_t gsp_node_method_message_size(const gsp_node *node, uint64_t round);
/* Completes an IN_FLIGHT edge's round with the neighbour's message for the
 * same round (msg aligned to 4 bytes).  Validates length and content
 * (finite values, indices in range) before changing anything. */
GSP_EXPORT int gsp_node_complete(gsp_node *node, size_t edge, uint64_t round,
				 const void *msg, size_t len) GSP_MUST_CHECK;

/* Introspection for tests and tools: the shared factors A (m x r) and
 * B (k x r), row-major, of compressed tensor `tensor` on a powergossip edge.
 * Either output may be NULL.  ret_rank gets r. */
GSP_EXPORT int gsp_node_edge_factors(const gsp_node *node, size_t edge,
				     size_t tensor, const float **ret_a,
				     const float **ret_b, unsigned *ret_rank);

/* ---- topologies and mixing weights ----------------------------------- */

typedef enum gsp_topology {
	GSP_TOPO_RING = 0,
	GSP_TOPO_TORUS,
	GSP_TOPO_COMPLETE,
	GSP_TOPO_EXPONENTIAL,
	GSP_TOPO_EDGELIST,
} gsp_topology;

typedef struct gsp_graph gsp_graph;

GSP_EXPORT int gsp_topology_parse(const char *name, gsp_topology *ret_topo);
GSP_EXPORT const char *gsp_topology_name(gsp_topology topo);

/* Builds the graph on n nodes (ids 0..n-1).  Ring needs n >= 2; torus uses
 * the most nearly square a x b = n with a, b >= 2 (n >= 4, not prime);
 * exponential links i and i +- 2^j mod n. */
GSP_EXPORT int gsp_graph_new(gsp_topology topo, unsigned n,
			     gsp_graph **ret_graph) GSP_MUST_CHECK;
/* Node i's neighbours in the graph gsp_graph_new(topo, n) builds, without
 * building it: ascending, distinct, in ret[0..*ret_count).  Same topologies
 * and n as gsp_graph_new (-EINVAL otherwise, or for i >= n); -ENOSPC if i
 * has more than cap neighbours (n - 1 is always enough).  *ret_count is
 * written on success only.  Time O(n x edges per node), memory O(1): one
 * node's view of a computed graph (the daemon's membership). */
GSP_EXPORT int gsp_topology_neighbours(gsp_topology topo, unsigned n,
				       unsigned i, unsigned *ret, size_t cap,
				       size_t *ret_count) GSP_MUST_CHECK;
/* Parses an edge list "0-1,1-2,2-0" on n nodes (no self loops, no
 * duplicates; every node must have at least one edge). */
GSP_EXPORT int gsp_graph_parse_edges(const char *spec, unsigned n,
				     gsp_graph **ret_graph) GSP_MUST_CHECK;
GSP_EXPORT void gsp_graph_free(gsp_graph *graph);
GSP_EXPORT unsigned gsp_graph_nodes(const gsp_graph *graph);
GSP_EXPORT size_t gsp_graph_edge_count(const gsp_graph *graph);
/* Edge e as (lo, hi) with lo < hi. */
GSP_EXPORT int gsp_graph_edge(const gsp_graph *graph, size_t e, unsigned *ret_lo,
			      unsigned *ret_hi);
GSP_EXPORT unsigned gsp_graph_degree(const gsp_graph *graph, unsigned i);
/* Metropolis-Hastings weight w_ij = 1/(1+max(deg_i,deg_j)) for an edge
 * (gsp_mixing_weight), or the self weight w_ii = 1 - sum_j w_ij when
 * i == j; 0 for non-edges. */
GSP_EXPORT double gsp_graph_weight(const gsp_graph *graph, unsigned i, unsigned j);

/* The mixing rule itself (mixing.c), for a graph nobody holds whole (the
 * daemon knows its own degree and the one a neighbour's message carried).
 * Each is symmetric in its two ends.
 * gsp_mixing_weight: 1 / (1 + max(deg_i, deg_j)).
 * gsp_mixing_edge_weight: an edge's weight for a round: `configured` when
 * it is > 0, else gsp_mixing_weight of the two degrees, as a float.
 * gsp_mixing_agree_weight: the Weight two ends use from their offers in
 * [0, 1] (0: none): the same offer stands, else the smaller one offered,
 * so a Weight configured or changed at one end only never mixes the two
 * ends by different weights. */
GSP_EXPORT double gsp_mixing_weight(unsigned deg_i, unsigned deg_j);
GSP_EXPORT float gsp_mixing_edge_weight(float configured, unsigned deg_i, unsigned deg_j);
GSP_EXPORT float gsp_mixing_agree_weight(float ours, float theirs);
/* Eigenvalues of I - W: lambda_2 (smallest non-zero) and lambda_max
 * (LAPACK dsyev).  Fails with -EINVAL for a disconnected graph. */
GSP_EXPORT int gsp_graph_spectrum(const gsp_graph *graph, double *ret_lambda2,
				  double *ret_lambda_max) GSP_MUST_CHECK;
/* gamma = 2 / (lambda_2 + lambda_max), the best fixed consensus step. */
GSP_EXPORT int gsp_graph_optimal_gamma(const gsp_graph *graph,
				       double *ret_gamma) GSP_MUST_CHECK;
/* The finite-time consensus schedule: one step gamma_t = 1 / mu_t per
 * distinct non-zero eigenvalue mu_t of I - W, so that exact gossip
 * rounds x <- x - gamma_t (I - W) x, t = 1..K, in that order (all edges
 * of round t before any of round t + 1), leave every node with the
 * exact average, up to rounding (docs/ENGINE.md).  K (ret_count) is at
 * most n - 1: floor(n/2) on a ring, 1 on a complete graph.  ret_growth
 * (may be NULL): the largest factor by which the disagreement, or an
 * error made in one round, grows over the schedule (1 for a complete
 * graph; float32 rounding times it is what is left).  -ENOSPC if more
 * than cap steps; -EINVAL, -E2BIG, -EDOM as gsp_graph_spectrum. */
GSP_EXPORT int gsp_graph_finite_schedule(const gsp_graph *graph, double *ret_gammas,
					 size_t cap, size_t *ret_count,
					 double *ret_growth) GSP_MUST_CHECK;
/* A finite-time schedule on a ring of n nodes (n even) that uses one of
 * its two perfect matchings per round, so that each node exchanges its
 * model with one neighbour per round instead of two: in round t (from 0)
 * the edges {i, i + 1 mod n} with i = t mod 2 run, and each pair moves
 * x_i <- (1 - w_t) x_i + w_t x_j at both ends (ret_weights[t] = w_t; the
 * other matching's edges sit the round out).  After the K = n / 2
 * (ret_count) rounds, the fewest there can be, every node holds the exact
 * average, up to rounding: the first round averages each pair of the
 * first matching; then each pair of rounds, the second matching at
 * weight 2 / mu and the first at 1/2, is one step of the finite-time
 * schedule of the ring of those n / 2 pairs (mu its distinct non-zero
 * Laplacian eigenvalues in Leja order, but 4, if there, last, and then
 * without the first-matching round after it).  On 8 nodes: 4 rounds of
 * one model each, where gsp_graph_finite_schedule's 4 rounds send two
 * each.  -EINVAL if n is odd or 0; -ENOSPC if more than cap rounds or n
 * > GSP_MAX_RING_MATCHING. */
#define GSP_MAX_RING_MATCHING 4096
GSP_EXPORT int gsp_ring_matching_schedule(unsigned n, double *ret_weights, size_t cap,
					  size_t *ret_count) GSP_MUST_CHECK;

#ifdef __cplusplus
}
#endif
#endif
