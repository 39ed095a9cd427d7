/*
 * libgossip simulation: n gossip nodes in one process, connected by the
 * exact project / complete / apply calls the daemon uses, with the
 * consensus metrics of the paper's experiment.  Used by gossip-sim, the
 * unit tests and the benchmarks.
 */
#ifndef GOSSIP_SIM_H
#define GOSSIP_SIM_H

#include "gossip.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct gsp_sim gsp_sim;

typedef struct gsp_sim_stats {
	uint64_t round;             /* rounds run since gsp_sim_start */
	double error;               /* (1/n) sum_i ||X_i - mean||^2 */
	double mean_drift;          /* max |mean - mean_0| / max |mean_0| */
	uint64_t bits_worker0;      /* cumulative bits sent by node 0 */
	bool finite;                /* no NaN/inf in any node */
} gsp_sim_stats;

/* One node per graph vertex, all with the same layout and config.  Edge
 * seeds are derived from `seed` (GSP_SEED_BYTES) and the edge's (lo, hi)
 * with keyed BLAKE2b, so no two edges share a seed. */
GSP_EXPORT int gsp_sim_new(const gsp_graph *graph, const gsp_layout *layout,
			   const gsp_config *cfg, const uint8_t *seed,
			   gsp_sim **ret_sim) GSP_MUST_CHECK;
GSP_EXPORT void gsp_sim_free(gsp_sim *sim);
/* The seed gsp_sim gives edge (lo, hi): keyed BLAKE2b of the two indices.
 * gossipd uses it too when configured with SimSeed/Index, so a daemon
 * cluster can replay a simulation exactly. */
GSP_EXPORT void gsp_sim_edge_seed(const uint8_t *seed, unsigned lo, unsigned hi,
				  uint8_t *ret_seed);
GSP_EXPORT unsigned gsp_sim_nodes(const gsp_sim *sim);
GSP_EXPORT gsp_node *gsp_sim_node(gsp_sim *sim, unsigned i);
/* Graph edge e: its two nodes and the edge index inside each node. */
GSP_EXPORT int gsp_sim_edge(const gsp_sim *sim, size_t e, unsigned *ret_lo,
			    size_t *ret_at_lo, unsigned *ret_hi, size_t *ret_at_hi);
/* Node i's parameter buffer (gsp_layout_floats floats), to fill before
 * gsp_sim_start. */
GSP_EXPORT float *gsp_sim_params(gsp_sim *sim, unsigned i);
/* Fills every node with independent N(0,1) entries from `seed` (node i
 * uses its own stream). */
GSP_EXPORT void gsp_sim_fill_gaussian(gsp_sim *sim, uint64_t seed);
/* Fills x[0..n) with N(0,1) entries from (seed, stream): exactly what
 * gsp_sim_fill_gaussian(sim, seed) puts in node `stream`, so a trainer
 * outside the simulator can hold the same data as simulated node i.  The
 * uniforms are bit-identical everywhere; the Box-Muller transform uses
 * the C library's log, sin and cos. */
GSP_EXPORT void gsp_fill_gaussian(float *x, uint64_t n, uint64_t seed,
				  unsigned stream);
/* Records the initial network average; call once the data is in place. */
GSP_EXPORT int gsp_sim_start(gsp_sim *sim) GSP_MUST_CHECK;
/* One synchronous gossip round on every edge: each node step()s (apply
 * pending + project), every message is delivered to the other end with
 * complete(), and every node applies.  Returns 0 or the first error. */
GSP_EXPORT int gsp_sim_round(gsp_sim *sim) GSP_MUST_CHECK;
GSP_EXPORT int gsp_sim_measure(const gsp_sim *sim, gsp_sim_stats *ret_stats);

#ifdef __cplusplus
}
#endif
#endif
