/* Helpers shared by the engine's unit tests: building simulated clusters
 * and comparing node states.  Header-only, static functions. */
#ifndef GSP_TESTUTIL_H
#define GSP_TESTUTIL_H

#include <check.h>
#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "gossip.h"
#include "sim.h"

typedef struct cluster {
	gsp_graph *graph;
	gsp_layout *layout;
	gsp_sim *sim;
} cluster;

static inline void cluster_seed(uint8_t seed[GSP_SEED_BYTES], uint8_t v)
{
	memset(seed, 0, GSP_SEED_BYTES);
	seed[0] = v;
}

/* n-node graph of `topo` (or edge list), layout spec, config; data N(0,1)
 * from data_seed; started. */
static inline cluster cluster_new(gsp_topology topo, unsigned n,
				  const char *edges, const char *spec,
				  const gsp_config *cfg, uint64_t data_seed)
{
	cluster c = {0};
	uint8_t seed[GSP_SEED_BYTES];
	cluster_seed(seed, 7);
	if (edges)
		ck_assert_int_eq(gsp_graph_parse_edges(edges, n, &c.graph), 0);
	else
		ck_assert_int_eq(gsp_graph_new(topo, n, &c.graph), 0);
	ck_assert_int_eq(gsp_layout_parse(spec, &c.layout), 0);
	ck_assert_int_eq(gsp_sim_new(c.graph, c.layout, cfg, seed, &c.sim), 0);
	gsp_sim_fill_gaussian(c.sim, data_seed);
	ck_assert_int_eq(gsp_sim_start(c.sim), 0);
	return c;
}

static inline void cluster_free(cluster *c)
{
	gsp_sim_free(c->sim);
	gsp_layout_free(c->layout);
	gsp_graph_free(c->graph);
}

static inline gsp_sim_stats cluster_stats(const cluster *c)
{
	gsp_sim_stats st;
	ck_assert_int_eq(gsp_sim_measure(c->sim, &st), 0);
	return st;
}

static inline void cluster_rounds(cluster *c, unsigned rounds)
{
	for (unsigned i = 0; i < rounds; i++)
		ck_assert_int_eq(gsp_sim_round(c->sim), 0);
}

static inline double optimal_gamma(gsp_topology topo, unsigned n)
{
	gsp_graph *g;
	double gamma;
	ck_assert_int_eq(gsp_graph_new(topo, n, &g), 0);
	ck_assert_int_eq(gsp_graph_optimal_gamma(g, &gamma), 0);
	gsp_graph_free(g);
	return gamma;
}

/* GSP_TEST_SMALL=1 in the environment (the valgrind setup in
 * tests/meson.build, where every instruction costs 50-300 times more):
 * numeric tests run on smaller sizes, with the same checks. */
static inline bool test_small(void)
{
	const char *v = getenv("GSP_TEST_SMALL");
	return v && *v && strcmp(v, "0") != 0;
}

/* A size for a numeric test: `full`, or `small` under test_small(). */
static inline unsigned test_size(unsigned full, unsigned small)
{
	return test_small() ? small : full;
}

static inline gsp_config config_of(gsp_method method, unsigned rank,
				   double gamma)
{
	gsp_config cfg;
	gsp_config_default(&cfg);
	cfg.method = method;
	cfg.rank = rank;
	cfg.gamma = (float)gamma;
	return cfg;
}

/* Runs a Check suite with its own runner; the process exit status. */
static inline int run_suite(Suite *s)
{
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

#endif
