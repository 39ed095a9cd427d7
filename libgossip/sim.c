/* In-process simulation: one gossip node per graph vertex, messages handed
 * from project() on one end to complete() on the other, and the consensus
 * metrics of the paper's experiment computed in double precision. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <sodium.h>

#include "internal.h"
#include "sim.h"

typedef struct sim_edge {
	unsigned lo, hi;
	int at_lo, at_hi;         /* edge index inside each node */
} sim_edge;

struct gsp_sim {
	unsigned n;
	uint64_t floats;
	gsp_node **nodes;
	float **params;
	sim_edge *edges;
	size_t n_edges;
	double *mean0;
	double mean0_max;
	uint64_t round;
};

void gsp_sim_free(gsp_sim *sim)
{
	if (!sim)
		return;
	for (unsigned i = 0; i < sim->n; i++) {
		if (sim->nodes)
			gsp_node_free(sim->nodes[i]);
		if (sim->params)
			free(sim->params[i]);
	}
	free(sim->nodes);
	free(sim->params);
	free(sim->edges);
	free(sim->mean0);
	free(sim);
}

static int sim_build(gsp_sim *sim, const gsp_graph *graph,
		     const gsp_layout *layout, const gsp_config *cfg,
		     const uint8_t *seed)
{
	for (unsigned i = 0; i < sim->n; i++) {
		sim->params[i] = calloc(sim->floats ? sim->floats : 1,
					sizeof(float));
		if (!sim->params[i])
			return -ENOMEM;
		gsp_config c = *cfg;
		c.seed = cfg->seed * 1000003u + i;
		int err = gsp_node_new(layout, sim->params[i], &c, &sim->nodes[i]);
		if (err)
			return err;
	}
	for (size_t e = 0; e < sim->n_edges; e++) {
		sim_edge *se = &sim->edges[e];
		int err = gsp_graph_edge(graph, e, &se->lo, &se->hi);
		if (err)
			return err;
		uint8_t es[GSP_SEED_BYTES];
		gsp_sim_edge_seed(seed, se->lo, se->hi, es);
		float w = (float)gsp_graph_weight(graph, se->lo, se->hi);
		se->at_lo = gsp_node_add_edge(sim->nodes[se->lo], w, GSP_ROLE_LO,
					      es, sizeof(es));
		if (se->at_lo < 0)
			return se->at_lo;
		se->at_hi = gsp_node_add_edge(sim->nodes[se->hi], w, GSP_ROLE_HI,
					      es, sizeof(es));
		if (se->at_hi < 0)
			return se->at_hi;
	}
	return 0;
}

void gsp_sim_edge_seed(const uint8_t *seed, unsigned lo, unsigned hi,
		       uint8_t *ret_seed)
{
	uint8_t in[8];
	for (int b = 0; b < 4; b++) {
		in[b] = (uint8_t)(lo >> (8 * b));
		in[4 + b] = (uint8_t)(hi >> (8 * b));
	}
	crypto_generichash(ret_seed, GSP_SEED_BYTES, in, sizeof(in), seed,
			   GSP_SEED_BYTES);
}

int gsp_sim_new(const gsp_graph *graph, const gsp_layout *layout,
		const gsp_config *cfg, const uint8_t *seed, gsp_sim **ret_sim)
{
	if (!graph || !layout || !cfg || !seed || !ret_sim)
		return -EINVAL;
	if (sodium_init() < 0)
		return -EIO;
	gsp_sim *sim = calloc(1, sizeof(*sim));
	if (!sim)
		return -ENOMEM;
	sim->n = gsp_graph_nodes(graph);
	sim->floats = gsp_layout_floats(layout);
	sim->n_edges = gsp_graph_edge_count(graph);
	sim->nodes = calloc(sim->n, sizeof(*sim->nodes));
	sim->params = calloc(sim->n, sizeof(*sim->params));
	sim->edges = calloc(sim->n_edges, sizeof(*sim->edges));
	sim->mean0 = calloc(sim->floats ? sim->floats : 1, sizeof(double));
	int err = -ENOMEM;
	if (sim->nodes && sim->params && sim->edges && sim->mean0)
		err = sim_build(sim, graph, layout, cfg, seed);
	if (err) {
		gsp_sim_free(sim);
		return err;
	}
	*ret_sim = sim;
	return 0;
}

unsigned gsp_sim_nodes(const gsp_sim *sim)
{
	return sim ? sim->n : 0;
}

gsp_node *gsp_sim_node(gsp_sim *sim, unsigned i)
{
	return sim && i < sim->n ? sim->nodes[i] : NULL;
}

int gsp_sim_edge(const gsp_sim *sim, size_t e, unsigned *ret_lo,
		 size_t *ret_at_lo, unsigned *ret_hi, size_t *ret_at_hi)
{
	if (!sim || e >= sim->n_edges || !ret_lo || !ret_at_lo || !ret_hi ||
	    !ret_at_hi)
		return -EINVAL;
	*ret_lo = sim->edges[e].lo;
	*ret_at_lo = (size_t)sim->edges[e].at_lo;
	*ret_hi = sim->edges[e].hi;
	*ret_at_hi = (size_t)sim->edges[e].at_hi;
	return 0;
}

float *gsp_sim_params(gsp_sim *sim, unsigned i)
{
	return sim && i < sim->n ? sim->params[i] : NULL;
}

void gsp_sim_fill_gaussian(gsp_sim *sim, uint64_t seed)
{
	for (unsigned i = 0; i < sim->n; i++)
		gsp_fill_gaussian(sim->params[i], sim->floats, seed, i);
}

static void network_mean(const gsp_sim *sim, double *mean)
{
	memset(mean, 0, sim->floats * sizeof(double));
	for (unsigned i = 0; i < sim->n; i++)
		for (uint64_t j = 0; j < sim->floats; j++)
			mean[j] += sim->params[i][j];
	for (uint64_t j = 0; j < sim->floats; j++)
		mean[j] /= sim->n;
}

int gsp_sim_start(gsp_sim *sim)
{
	if (!sim)
		return -EINVAL;
	network_mean(sim, sim->mean0);
	sim->mean0_max = 0.0;
	for (uint64_t j = 0; j < sim->floats; j++)
		if (fabs(sim->mean0[j]) > sim->mean0_max)
			sim->mean0_max = fabs(sim->mean0[j]);
	sim->round = 0;
	return 0;
}

int gsp_sim_round(gsp_sim *sim)
{
	if (!sim)
		return -EINVAL;
	for (unsigned i = 0; i < sim->n; i++) {
		int r = gsp_node_step(sim->nodes[i]);
		if (r < 0)
			return r;
	}
	for (size_t e = 0; e < sim->n_edges; e++) {
		const sim_edge *se = &sim->edges[e];
		const void *mlo, *mhi;
		size_t llo, lhi;
		uint64_t rlo, rhi;
		int err = gsp_node_message(sim->nodes[se->lo], se->at_lo, &mlo,
					   &llo, &rlo);
		if (!err)
			err = gsp_node_message(sim->nodes[se->hi], se->at_hi,
					       &mhi, &lhi, &rhi);
		if (!err)
			err = gsp_node_complete(sim->nodes[se->lo], se->at_lo,
						rhi, mhi, lhi);
		if (!err)
			err = gsp_node_complete(sim->nodes[se->hi], se->at_hi,
						rlo, mlo, llo);
		if (err)
			return err;
	}
	for (unsigned i = 0; i < sim->n; i++) {
		int r = gsp_node_apply(sim->nodes[i]);
		if (r < 0)
			return r;
	}
	sim->round++;
	return 0;
}

int gsp_sim_measure(const gsp_sim *sim, gsp_sim_stats *ret_stats)
{
	if (!sim || !ret_stats)
		return -EINVAL;
	double *mean = malloc((sim->floats ? sim->floats : 1) * sizeof(double));
	if (!mean)
		return -ENOMEM;
	network_mean(sim, mean);
	gsp_sim_stats st = {.round = sim->round, .finite = true};
	double drift = 0.0;
	for (unsigned i = 0; i < sim->n; i++)
		for (uint64_t j = 0; j < sim->floats; j++) {
			double d = sim->params[i][j] - mean[j];
			st.error += d * d;
			if (!isfinite(sim->params[i][j]))
				st.finite = false;
		}
	st.error /= sim->n;
	for (uint64_t j = 0; j < sim->floats; j++)
		if (fabs(mean[j] - sim->mean0[j]) > drift)
			drift = fabs(mean[j] - sim->mean0[j]);
	st.mean_drift = sim->mean0_max > 0.0 ? drift / sim->mean0_max : drift;
	gsp_node *n0 = sim->nodes[0];
	for (size_t e = 0; e < gsp_node_edge_count(n0); e++) {
		gsp_edge_info info;
		gsp_node_edge_info(n0, e, &info);
		st.bits_worker0 += info.tx_bytes * 8;
	}
	free(mean);
	*ret_stats = st;
	return 0;
}
