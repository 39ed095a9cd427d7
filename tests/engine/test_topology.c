/*
 * Unit tests for topologies and mixing weights: edge and degree counts of
 * the named topologies, the strict edge-list parser, Metropolis-Hastings
 * weights (symmetric, rows summing to 1) and the spectrum of I - W against
 * closed forms.
 */
#include <check.h>
#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "gossip.h"

/* A pointer no constructor may return, to prove outputs stay untouched. */
#define SENTINEL ((gsp_graph *)&sentinel_storage)
static int sentinel_storage;

static gsp_graph *graph_new(gsp_topology topo, unsigned n)
{
	gsp_graph *g = NULL;

	ck_assert_int_eq(gsp_graph_new(topo, n, &g), 0);
	ck_assert_ptr_nonnull(g);
	ck_assert_uint_eq(gsp_graph_nodes(g), n);
	return g;
}

static gsp_graph *graph_parse(const char *spec, unsigned n)
{
	gsp_graph *g = NULL;

	ck_assert_int_eq(gsp_graph_parse_edges(spec, n, &g), 0);
	ck_assert_ptr_nonnull(g);
	return g;
}

/* Edges strictly ascending by (lo, hi) with lo < hi < n, and the degrees
 * add up to twice the edge count. */
static void check_invariants(const gsp_graph *g)
{
	unsigned n = gsp_graph_nodes(g), plo = 0, phi = 0;
	size_t m = gsp_graph_edge_count(g), degsum = 0;

	for (size_t e = 0; e < m; e++) {
		unsigned lo, hi;

		ck_assert_int_eq(gsp_graph_edge(g, e, &lo, &hi), 0);
		ck_assert_uint_lt(lo, hi);
		ck_assert_uint_lt(hi, n);
		if (e > 0)
			ck_assert(lo > plo || (lo == plo && hi > phi));
		plo = lo;
		phi = hi;
	}
	for (unsigned i = 0; i < n; i++) {
		ck_assert_uint_gt(gsp_graph_degree(g, i), 0);
		degsum += gsp_graph_degree(g, i);
	}
	ck_assert_uint_eq(degsum, 2 * m);
}

static void check_regular(gsp_topology topo, unsigned n, size_t edges,
			  unsigned degree)
{
	gsp_graph *g = graph_new(topo, n);

	check_invariants(g);
	ck_assert_uint_eq(gsp_graph_edge_count(g), edges);
	for (unsigned i = 0; i < n; i++)
		ck_assert_uint_eq(gsp_graph_degree(g, i), degree);
	gsp_graph_free(g);
}

/* W is symmetric, non-negative, zero off the edges, rows sum to 1, and
 * edge weights follow Metropolis-Hastings. */
static void check_weights(const gsp_graph *g)
{
	unsigned n = gsp_graph_nodes(g);
	size_t edges = 0;

	for (unsigned i = 0; i < n; i++) {
		double row = 0;

		for (unsigned j = 0; j < n; j++) {
			double w = gsp_graph_weight(g, i, j);

			ck_assert_double_eq(w, gsp_graph_weight(g, j, i));
			ck_assert_double_ge(w, 0);
			row += w;
			if (i < j && w > 0) {
				unsigned di = gsp_graph_degree(g, i);
				unsigned dj = gsp_graph_degree(g, j);

				ck_assert_double_eq_tol(w, 1.0 / (1 + (di > dj ? di : dj)), 1e-15);
				edges++;
			}
		}
		ck_assert_double_eq_tol(row, 1.0, 1e-12);
	}
	ck_assert_uint_eq(edges, gsp_graph_edge_count(g));
	ck_assert_double_eq(gsp_graph_weight(g, 0, n), 0);
	ck_assert_double_eq(gsp_graph_weight(g, n, 0), 0);
}

static void check_spectrum(const gsp_graph *g, double lambda2, double lambda_max)
{
	double l2 = -1, lmax = -1, gamma = -1;

	ck_assert_int_eq(gsp_graph_spectrum(g, &l2, &lmax), 0);
	ck_assert_double_eq_tol(l2, lambda2, 1e-4);
	ck_assert_double_eq_tol(lmax, lambda_max, 1e-4);
	ck_assert_int_eq(gsp_graph_optimal_gamma(g, &gamma), 0);
	ck_assert_double_eq_tol(gamma, 2 / (lambda2 + lambda_max), 1e-4);
}

START_TEST(test_ring)
{
	static const unsigned ns[] = { 3, 4, 8, 17, 100 };

	for (size_t t = 0; t < sizeof(ns) / sizeof(ns[0]); t++)
		check_regular(GSP_TOPO_RING, ns[t], ns[t], 2);
	/* Two nodes: 0-1 and 1-0 coincide. */
	check_regular(GSP_TOPO_RING, 2, 1, 1);

	gsp_graph *g = graph_new(GSP_TOPO_RING, 8);
	for (unsigned i = 0; i < 8; i++) {
		ck_assert_double_eq_tol(gsp_graph_weight(g, i, (i + 1) % 8), 1.0 / 3, 1e-15);
		ck_assert_double_eq_tol(gsp_graph_weight(g, i, i), 1.0 / 3, 1e-15);
		ck_assert_double_eq(gsp_graph_weight(g, i, (i + 2) % 8), 0);
	}
	gsp_graph_free(g);

	g = SENTINEL;
	ck_assert_int_eq(gsp_graph_new(GSP_TOPO_RING, 1, &g), -EINVAL);
	ck_assert_int_eq(gsp_graph_new(GSP_TOPO_RING, 0, &g), -EINVAL);
	ck_assert_ptr_eq(g, SENTINEL);
}
END_TEST

START_TEST(test_torus)
{
	check_regular(GSP_TOPO_TORUS, 16, 32, 4);  /* 4 x 4 */
	check_regular(GSP_TOPO_TORUS, 9, 18, 4);   /* 3 x 3 */
	check_regular(GSP_TOPO_TORUS, 12, 24, 4);  /* 3 x 4 */
	check_regular(GSP_TOPO_TORUS, 100, 200, 4);
	/* A side of 2: up and down wrap onto the same edge. */
	check_regular(GSP_TOPO_TORUS, 8, 12, 3);   /* 2 x 4 */
	check_regular(GSP_TOPO_TORUS, 6, 9, 3);    /* 2 x 3 */
	check_regular(GSP_TOPO_TORUS, 4, 4, 2);    /* 2 x 2: a 4-cycle */
	check_regular(GSP_TOPO_TORUS, 14, 21, 3);  /* 2 x 7 */

	/* 2 x 4: node 0 sits in row 0, column 0. */
	gsp_graph *g = graph_new(GSP_TOPO_TORUS, 8);
	ck_assert_double_gt(gsp_graph_weight(g, 0, 1), 0);
	ck_assert_double_gt(gsp_graph_weight(g, 0, 3), 0);
	ck_assert_double_gt(gsp_graph_weight(g, 0, 4), 0);
	ck_assert_double_eq(gsp_graph_weight(g, 0, 2), 0);
	ck_assert_double_eq(gsp_graph_weight(g, 0, 5), 0);
	gsp_graph_free(g);

	static const unsigned bad[] = { 0, 1, 2, 3, 5, 7, 13, 4093 };
	for (size_t t = 0; t < sizeof(bad) / sizeof(bad[0]); t++) {
		g = SENTINEL;
		ck_assert_int_eq(gsp_graph_new(GSP_TOPO_TORUS, bad[t], &g), -EINVAL);
		ck_assert_ptr_eq(g, SENTINEL);
	}
}
END_TEST

START_TEST(test_complete)
{
	for (unsigned n = 2; n <= 20; n++)
		check_regular(GSP_TOPO_COMPLETE, n, (size_t)n * (n - 1) / 2, n - 1);
}
END_TEST

START_TEST(test_exponential)
{
	check_regular(GSP_TOPO_EXPONENTIAL, 8, 20, 5);
	check_regular(GSP_TOPO_EXPONENTIAL, 16, 56, 7);
	check_regular(GSP_TOPO_EXPONENTIAL, 2, 1, 1);
	check_regular(GSP_TOPO_EXPONENTIAL, 3, 3, 2);
	/* n = 5: +-1, +-2 and +-4 = -+1 reach everyone. */
	check_regular(GSP_TOPO_EXPONENTIAL, 5, 10, 4);

	gsp_graph *g = graph_new(GSP_TOPO_EXPONENTIAL, 8);
	for (unsigned j = 1; j < 8; j++) {
		bool want = j == 1 || j == 2 || j == 4 || j == 6 || j == 7;

		ck_assert_int_eq(gsp_graph_weight(g, 0, j) > 0, want);
	}
	gsp_graph_free(g);
}
END_TEST

START_TEST(test_new_invalid)
{
	gsp_graph *g = SENTINEL;

	ck_assert_int_eq(gsp_graph_new(GSP_TOPO_EDGELIST, 8, &g), -EINVAL);
	ck_assert_int_eq(gsp_graph_new((gsp_topology)99, 8, &g), -EINVAL);
	ck_assert_int_eq(gsp_graph_new(GSP_TOPO_COMPLETE, 1, &g), -EINVAL);
	ck_assert_int_eq(gsp_graph_new(GSP_TOPO_EXPONENTIAL, 1, &g), -EINVAL);
	ck_assert_ptr_eq(g, SENTINEL);
	/* K_n on 2^32 - 1 nodes cannot fit in memory. */
	ck_assert_int_lt(gsp_graph_new(GSP_TOPO_COMPLETE, 0xffffffffu, &g), 0);
	ck_assert_ptr_eq(g, SENTINEL);

	g = graph_new(GSP_TOPO_RING, 4);
	unsigned lo = 77, hi = 77;
	ck_assert_int_eq(gsp_graph_edge(g, 4, &lo, &hi), -EINVAL);
	ck_assert_uint_eq(lo, 77);
	ck_assert_uint_eq(hi, 77);
	ck_assert_uint_eq(gsp_graph_degree(g, 4), 0);
	gsp_graph_free(g);
	gsp_graph_free(NULL);
}
END_TEST

/* gsp_topology_neighbours() is each node's row of the graph
 * gsp_graph_new() builds: for every topology and n = 2..64 (torus where
 * n shapes one), node i's list is exactly the j of the edges (i, j),
 * ascending and distinct.  (Mismatches are counted and asserted once per
 * graph: an assertion per entry costs Check a write each.) */
START_TEST(test_neighbours_match_graph)
{
	static const gsp_topology topos[] = { GSP_TOPO_RING, GSP_TOPO_TORUS,
		GSP_TOPO_COMPLETE, GSP_TOPO_EXPONENTIAL };
	static bool want[64][64];
	unsigned nb[64];

	for (size_t t = 0; t < sizeof(topos) / sizeof(topos[0]); t++) {
		for (unsigned n = 2; n <= 64; n++) {
			gsp_graph *g = NULL;
			size_t count = 999, bad = 0;

			if (gsp_graph_new(topos[t], n, &g) < 0) {
				ck_assert_int_eq(topos[t], GSP_TOPO_TORUS);
				ck_assert_int_eq(gsp_topology_neighbours(topos[t], n, 0, nb,
									 64, &count), -EINVAL);
				ck_assert_uint_eq(count, 999);
				continue;
			}
			memset(want, 0, sizeof(want));
			for (size_t e = 0; e < gsp_graph_edge_count(g); e++) {
				unsigned lo = n, hi = n;

				bad += gsp_graph_edge(g, e, &lo, &hi) != 0 || hi >= n;
				if (hi < n)
					want[lo][hi] = want[hi][lo] = true;
			}
			for (unsigned i = 0; i < n; i++) {
				bad += gsp_topology_neighbours(topos[t], n, i, nb, 64,
							       &count) != 0;
				bad += count != gsp_graph_degree(g, i);
				for (size_t k = 0; k < count && k < 64; k++)
					bad += !want[i][nb[k]] || (k > 0 && nb[k - 1] >= nb[k]);
			}
			ck_assert_msg(bad == 0, "%s on %u nodes: %zu mismatches",
				      gsp_topology_name(topos[t]), n, bad);
			gsp_graph_free(g);
		}
	}
}
END_TEST

START_TEST(test_neighbours_invalid)
{
	unsigned nb[8] = { 0 };
	size_t count = 999;

	ck_assert_int_eq(gsp_topology_neighbours(GSP_TOPO_RING, 1, 0, nb, 8, &count), -EINVAL);
	ck_assert_int_eq(gsp_topology_neighbours(GSP_TOPO_RING, 8, 8, nb, 8, &count), -EINVAL);
	ck_assert_int_eq(gsp_topology_neighbours(GSP_TOPO_EDGELIST, 8, 0, nb, 8, &count), -EINVAL);
	ck_assert_int_eq(gsp_topology_neighbours(GSP_TOPO_TORUS, 7, 0, nb, 8, &count), -EINVAL);
	ck_assert_int_eq(gsp_topology_neighbours(GSP_TOPO_RING, 8, 0, NULL, 8, &count), -EINVAL);
	ck_assert_int_eq(gsp_topology_neighbours(GSP_TOPO_RING, 8, 0, nb, 8, NULL), -EINVAL);
	/* K_9: 8 neighbours do not fit in 7, and nothing is claimed. */
	ck_assert_int_eq(gsp_topology_neighbours(GSP_TOPO_COMPLETE, 9, 4, nb, 7, &count), -ENOSPC);
	ck_assert_uint_eq(count, 999);
	ck_assert_int_eq(gsp_topology_neighbours(GSP_TOPO_COMPLETE, 9, 4, nb, 8, &count), 0);
	ck_assert_uint_eq(count, 8);
	ck_assert_uint_eq(nb[3], 3);
	ck_assert_uint_eq(nb[4], 5);
}
END_TEST

START_TEST(test_weights)
{
	static const gsp_topology topos[] = {
		GSP_TOPO_RING, GSP_TOPO_TORUS, GSP_TOPO_COMPLETE, GSP_TOPO_EXPONENTIAL,
	};
	static const unsigned ns[] = { 4, 6, 8, 9, 12, 16, 30 };

	for (size_t t = 0; t < sizeof(topos) / sizeof(topos[0]); t++) {
		for (size_t k = 0; k < sizeof(ns) / sizeof(ns[0]); k++) {
			gsp_graph *g = graph_new(topos[t], ns[k]);

			check_weights(g);
			gsp_graph_free(g);
		}
	}

	/* Star on 5 nodes: the hub has degree 4, so every weight is 1/5. */
	gsp_graph *g = graph_parse("0-1,0-2,3-0,0-4", 5);
	check_invariants(g);
	check_weights(g);
	ck_assert_double_eq_tol(gsp_graph_weight(g, 0, 0), 0.2, 1e-15);
	ck_assert_double_eq_tol(gsp_graph_weight(g, 2, 0), 0.2, 1e-15);
	ck_assert_double_eq_tol(gsp_graph_weight(g, 3, 3), 0.8, 1e-15);
	ck_assert_double_eq(gsp_graph_weight(g, 1, 2), 0);
	gsp_graph_free(g);

	/* Path 0-1-2-3 given out of order. */
	g = graph_parse("2-3,1-0,2-1", 4);
	check_invariants(g);
	check_weights(g);
	ck_assert_uint_eq(gsp_graph_degree(g, 0), 1);
	ck_assert_uint_eq(gsp_graph_degree(g, 1), 2);
	ck_assert_double_eq_tol(gsp_graph_weight(g, 0, 1), 1.0 / 3, 1e-15);
	ck_assert_double_eq_tol(gsp_graph_weight(g, 0, 0), 2.0 / 3, 1e-15);
	ck_assert_double_eq_tol(gsp_graph_weight(g, 1, 1), 1.0 / 3, 1e-15);
	gsp_graph_free(g);

	/* An irregular graph: a triangle with a tail. */
	g = graph_parse("0-1,1-2,2-0,2-3,3-4,4-5", 6);
	check_invariants(g);
	check_weights(g);
	gsp_graph_free(g);
}
END_TEST

START_TEST(test_spectrum_closed_forms)
{
	const double pi = acos(-1.0);
	gsp_graph *g;

	/* Ring of 8: W has eigenvalues 1/3 + 2/3 cos(2 pi k / 8). */
	g = graph_new(GSP_TOPO_RING, 8);
	double l2 = 1 - (1.0 / 3 + 2.0 / 3 * cos(2 * pi / 8));
	check_spectrum(g, l2, 4.0 / 3);
	double gamma = 0;
	ck_assert_int_eq(gsp_graph_optimal_gamma(g, &gamma), 0);
	ck_assert_double_eq_tol(gamma, 1.3084, 1e-4);
	gsp_graph_free(g);

	/* Ring of 64, same closed form. */
	g = graph_new(GSP_TOPO_RING, 64);
	check_spectrum(g, 2.0 / 3 * (1 - cos(2 * pi / 64)), 4.0 / 3);
	gsp_graph_free(g);

	/* K_n: every weight is 1/n, W = J/n, so I - W has eigenvalues 0 and 1. */
	static const unsigned ns[] = { 2, 3, 5, 16 };
	for (size_t t = 0; t < sizeof(ns) / sizeof(ns[0]); t++) {
		g = graph_new(GSP_TOPO_COMPLETE, ns[t]);
		check_spectrum(g, 1, 1);
		gsp_graph_free(g);
	}

	/* 4 x 4 torus: W = (I + A)/5 and A has eigenvalues
	 * 2 cos(pi k / 2) + 2 cos(pi l / 2) in {4, 2, 0, -2, -4}. */
	g = graph_new(GSP_TOPO_TORUS, 16);
	check_spectrum(g, 2.0 / 5, 8.0 / 5);
	gsp_graph_free(g);
}
END_TEST

START_TEST(test_spectrum_invalid)
{
	double l2 = 7, lmax = 7, gamma = 7;
	gsp_graph *g = graph_parse("0-1,2-3", 4);

	/* Disconnected: parses, but has no spectral gap. */
	ck_assert_int_eq(gsp_graph_spectrum(g, &l2, &lmax), -EINVAL);
	ck_assert_int_eq(gsp_graph_optimal_gamma(g, &gamma), -EINVAL);
	gsp_graph_free(g);

	/* Beyond the dense solver's cap. */
	g = graph_new(GSP_TOPO_RING, 4097);
	ck_assert_int_eq(gsp_graph_spectrum(g, &l2, &lmax), -E2BIG);
	ck_assert_int_eq(gsp_graph_optimal_gamma(g, &gamma), -E2BIG);
	gsp_graph_free(g);

	ck_assert_double_eq(l2, 7);
	ck_assert_double_eq(lmax, 7);
	ck_assert_double_eq(gamma, 7);
}
END_TEST

/* ||prod_t (I - g_t L) v|| / ||v - mean(v)|| in double precision, with L =
 * I - W from gsp_graph_weight, for a pseudo-random v. */
static double schedule_residual(const gsp_graph *g, const double *gammas, size_t k)
{
	unsigned n = gsp_graph_nodes(g);
	double *v = calloc(n, sizeof(*v)), *nv = calloc(n, sizeof(*nv)), mean = 0, d0 = 0, d = 0;
	ck_assert(v && nv);
	for (unsigned i = 0; i < n; i++) {
		v[i] = (double)((i * 2654435761u) % 1000) / 1000.0 - 0.5;
		mean += v[i] / n;
	}
	for (unsigned i = 0; i < n; i++)
		d0 += (v[i] - mean) * (v[i] - mean);
	for (size_t t = 0; t < k; t++) {
		for (unsigned i = 0; i < n; i++) {
			double s = 0;
			for (unsigned j = 0; j < n; j++)
				if (j != i)
					s += gsp_graph_weight(g, i, j) * (v[j] - v[i]);
			nv[i] = v[i] + gammas[t] * s;
		}
		memcpy(v, nv, n * sizeof(*v));
	}
	for (unsigned i = 0; i < n; i++)
		d += (v[i] - mean) * (v[i] - mean);
	free(v);
	free(nv);
	return sqrt(d / d0);
}

/* Finite-time schedules: one step per distinct non-zero eigenvalue of
 * I - W, and those steps take any vector to its mean; one step fewer
 * does not. */
START_TEST(test_finite_schedule)
{
	static const struct {
		gsp_topology topo;
		unsigned n;
		const char *edges;
		size_t k;              /* distinct non-zero eigenvalues */
	} cases[] = {
		{GSP_TOPO_RING, 2, NULL, 1},
		{GSP_TOPO_RING, 3, NULL, 1},
		{GSP_TOPO_RING, 8, NULL, 4},
		{GSP_TOPO_RING, 17, NULL, 8},
		{GSP_TOPO_RING, 64, NULL, 32},
		{GSP_TOPO_COMPLETE, 6, NULL, 1},
		/* 4 x 4: I - W = (4I - A)/5, A's eigenvalues in {4, 2, 0, -2, -4}. */
		{GSP_TOPO_TORUS, 16, NULL, 4},
		{GSP_TOPO_EXPONENTIAL, 16, NULL, 0},
		{GSP_TOPO_EDGELIST, 6, "0-1,1-2,2-0,2-3,3-4,4-5", 0},
	};
	for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
		gsp_graph *g = cases[c].edges ? graph_parse(cases[c].edges, cases[c].n)
					      : graph_new(cases[c].topo, cases[c].n);
		double gammas[64], growth = 0;
		size_t k = 0;
		ck_assert_int_eq(gsp_graph_finite_schedule(g, gammas, 64, &k, &growth), 0);
		if (cases[c].k)
			ck_assert_uint_eq(k, cases[c].k);
		ck_assert(k >= 1 && k < cases[c].n);
		ck_assert(growth >= 1);
		for (size_t t = 0; t < k; t++) {
			ck_assert(gammas[t] > 0 && isfinite(gammas[t]));
			for (size_t u = 0; u < t; u++)
				ck_assert(fabs(gammas[t] - gammas[u]) > 1e-9 * gammas[t]);
		}
		double res = schedule_residual(g, gammas, k);
		ck_assert_msg(res <= 1e-9, "case %zu: residual %g", c, res);
		/* Every step is needed: without any one of them, not the mean. */
		for (size_t drop = 0; drop < k; drop++) {
			double less[64];
			size_t m = 0;
			for (size_t t = 0; t < k; t++)
				if (t != drop)
					less[m++] = gammas[t];
			ck_assert_msg(schedule_residual(g, less, m) > 1e-6,
				      "case %zu: step %zu is not needed", c, drop);
		}
		if (cases[c].topo == GSP_TOPO_COMPLETE || cases[c].n <= 3)
			ck_assert_double_eq_tol(growth, 1, 1e-9);
		gsp_graph_free(g);
	}
}
END_TEST

START_TEST(test_finite_schedule_closed_form)
{
	/* Ring of 8: I - W has eigenvalues (2 - 2 cos(2 pi k / 8)) / 3, k = 1..4;
	 * the largest first (Leja order). */
	const double pi = acos(-1.0);
	gsp_graph *g = graph_new(GSP_TOPO_RING, 8);
	double gammas[4], growth;
	size_t k;
	ck_assert_int_eq(gsp_graph_finite_schedule(g, gammas, 4, &k, &growth), 0);
	ck_assert_uint_eq(k, 4);
	ck_assert_double_eq_tol(gammas[0], 0.75, 1e-12);
	for (unsigned e = 1; e <= 4; e++) {
		double mu = (2 - 2 * cos(2 * pi * e / 8)) / 3;
		bool found = false;
		for (size_t t = 0; t < k; t++)
			found |= fabs(gammas[t] * mu - 1) < 1e-12;
		ck_assert_msg(found, "eigenvalue %g has no step", mu);
	}
	ck_assert(growth < 2);
	gsp_graph_free(g);
}
END_TEST

START_TEST(test_finite_schedule_invalid)
{
	double gammas[4] = {7, 7, 7, 7}, growth = 7;
	size_t k = 7;
	gsp_graph *g = graph_new(GSP_TOPO_RING, 8);

	/* Room for 3 of the 4 steps: refused, nothing written. */
	ck_assert_int_eq(gsp_graph_finite_schedule(g, gammas, 3, &k, &growth), -ENOSPC);
	ck_assert_int_eq(gsp_graph_finite_schedule(g, gammas, 4, NULL, &growth), -EINVAL);
	ck_assert_int_eq(gsp_graph_finite_schedule(g, NULL, 4, &k, &growth), -EINVAL);
	ck_assert_int_eq(gsp_graph_finite_schedule(NULL, gammas, 4, &k, &growth), -EINVAL);
	gsp_graph_free(g);
	g = graph_parse("0-1,2-3", 4);
	ck_assert_int_eq(gsp_graph_finite_schedule(g, gammas, 4, &k, &growth), -EINVAL);
	gsp_graph_free(g);
	g = graph_new(GSP_TOPO_RING, 4097);
	ck_assert_int_eq(gsp_graph_finite_schedule(g, gammas, 4, &k, &growth), -E2BIG);
	gsp_graph_free(g);
	for (int t = 0; t < 4; t++)
		ck_assert_double_eq(gammas[t], 7);
	ck_assert_double_eq(growth, 7);
	ck_assert_uint_eq(k, 7);
}
END_TEST

/* The ring's matching schedule, applied to every node's row in double:
 * round t averages the pairs {i, i + 1 mod n}, i = t mod 2, at w_t; after
 * the K rounds every row is the uniform 1/n. */
START_TEST(test_ring_matching_schedule)
{
	for (unsigned n = 2; n <= 64; n += 2) {
		double w[64], *x = calloc((size_t)n * n, sizeof(*x));
		size_t k;
		ck_assert_int_eq(gsp_ring_matching_schedule(n, w, 64, &k), 0);
		ck_assert_uint_eq(k, n / 2);
		ck_assert_double_eq(w[0], 0.5);
		for (unsigned i = 0; i < n; i++)
			x[(size_t)i * n + i] = 1;            /* column j: node j's value of e_i */
		for (size_t t = 0; t < k; t++)
			for (unsigned a = (unsigned)(t % 2); a < n; a += 2) {
				unsigned b = (a + 1) % n;
				for (unsigned r = 0; r < n; r++) {
					double *xa = &x[(size_t)r * n + a], *xb = &x[(size_t)r * n + b];
					double va = *xa, vb = *xb;
					*xa = (1 - w[t]) * va + w[t] * vb;
					*xb = (1 - w[t]) * vb + w[t] * va;
				}
			}
		for (size_t i = 0; i < (size_t)n * n; i++)
			ck_assert_msg(fabs(x[i] - 1.0 / n) < 1e-9, "n %u: %g", n, x[i]);
		free(x);
	}
}
END_TEST

START_TEST(test_ring_matching_schedule_invalid)
{
	double w[8];
	size_t k;
	ck_assert_int_eq(gsp_ring_matching_schedule(7, w, 8, &k), -EINVAL);
	ck_assert_int_eq(gsp_ring_matching_schedule(0, w, 8, &k), -EINVAL);
	ck_assert_int_eq(gsp_ring_matching_schedule(8, w, 8, NULL), -EINVAL);
	ck_assert_int_eq(gsp_ring_matching_schedule(8, NULL, 8, &k), -EINVAL);
	ck_assert_int_eq(gsp_ring_matching_schedule(18, w, 8, &k), -ENOSPC);
	ck_assert_uint_eq(k, 9);
	ck_assert_int_eq(gsp_ring_matching_schedule(GSP_MAX_RING_MATCHING + 2, w, 8, &k),
			 -ENOSPC);
}
END_TEST

START_TEST(test_parse_edges)
{
	gsp_graph *g = graph_parse("0-1,1-2,2-0", 3);

	check_invariants(g);
	ck_assert_uint_eq(gsp_graph_edge_count(g), 3);
	gsp_graph_free(g);

	g = graph_parse("0-1", 2);
	ck_assert_uint_eq(gsp_graph_edge_count(g), 1);
	gsp_graph_free(g);

	/* Leading zeros are still decimal digits. */
	g = graph_parse("00-7,1-2,3-4,5-6,7-1", 8);
	ck_assert_uint_eq(gsp_graph_edge_count(g), 5);
	ck_assert_uint_eq(gsp_graph_degree(g, 7), 2);
	gsp_graph_free(g);
}
END_TEST

START_TEST(test_parse_edges_invalid)
{
	static const char *const bad[] = {
		"", "0-", "-1", "0-0", "0-1,0-1", "0-1,1-0", "0-9", "0-1,",
		",0-1", "0-1,,2-3", "a-b", "0--1", " 0-1", "0-1 ", "0 -1",
		"+0-1", "0-+1", "0x0-1", "0-1-2", "0,1", "0:1", "4294967296-1",
		"0-18446744073709551617", "1-2,3-4,5-6,7-0,0-8",
		/* Node 7 isolated. */
		"0-1,1-2,2-3,3-4,4-5,5-6",
	};

	for (size_t t = 0; t < sizeof(bad) / sizeof(bad[0]); t++) {
		gsp_graph *g = SENTINEL;
		int r = gsp_graph_parse_edges(bad[t], 8, &g);

		ck_assert_msg(r < 0, "accepted \"%s\"", bad[t]);
		ck_assert_ptr_eq(g, SENTINEL);
	}

	gsp_graph *g = SENTINEL;
	ck_assert_int_eq(gsp_graph_parse_edges("0-1", 1, &g), -EINVAL);
	ck_assert_int_eq(gsp_graph_parse_edges("0-1", 0, &g), -EINVAL);
	ck_assert_int_eq(gsp_graph_parse_edges(NULL, 4, &g), -EINVAL);
	ck_assert_ptr_eq(g, SENTINEL);
}
END_TEST

START_TEST(test_topology_names)
{
	static const gsp_topology topos[] = {
		GSP_TOPO_RING, GSP_TOPO_TORUS, GSP_TOPO_COMPLETE,
		GSP_TOPO_EXPONENTIAL, GSP_TOPO_EDGELIST,
	};

	for (size_t t = 0; t < sizeof(topos) / sizeof(topos[0]); t++) {
		const char *name = gsp_topology_name(topos[t]);
		gsp_topology back = (gsp_topology)-1;

		ck_assert_ptr_nonnull(name);
		ck_assert_int_eq(gsp_topology_parse(name, &back), 0);
		ck_assert_int_eq(back, topos[t]);
	}
	ck_assert_str_eq(gsp_topology_name(GSP_TOPO_TORUS), "torus");
	ck_assert_ptr_null(gsp_topology_name((gsp_topology)99));

	static const char *const bad[] = { "", "mesh", "Ring", "ring ", "torus2" };
	for (size_t t = 0; t < sizeof(bad) / sizeof(bad[0]); t++) {
		gsp_topology topo = GSP_TOPO_EXPONENTIAL;

		ck_assert_int_eq(gsp_topology_parse(bad[t], &topo), -EINVAL);
		ck_assert_int_eq(topo, GSP_TOPO_EXPONENTIAL);
	}
	gsp_topology topo = GSP_TOPO_EXPONENTIAL;
	ck_assert_int_eq(gsp_topology_parse(NULL, &topo), -EINVAL);
	ck_assert_int_eq(topo, GSP_TOPO_EXPONENTIAL);
}
END_TEST

static Suite *topology_suite(void)
{
	Suite *s = suite_create("topology");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, test_ring);
	tcase_add_test(tc, test_torus);
	tcase_add_test(tc, test_complete);
	tcase_add_test(tc, test_exponential);
	tcase_add_test(tc, test_new_invalid);
	tcase_add_test(tc, test_neighbours_match_graph);
	tcase_add_test(tc, test_neighbours_invalid);
	tcase_add_test(tc, test_weights);
	tcase_add_test(tc, test_spectrum_closed_forms);
	tcase_add_test(tc, test_spectrum_invalid);
	tcase_add_test(tc, test_finite_schedule);
	tcase_add_test(tc, test_finite_schedule_closed_form);
	tcase_add_test(tc, test_finite_schedule_invalid);
	tcase_add_test(tc, test_ring_matching_schedule);
	tcase_add_test(tc, test_ring_matching_schedule_invalid);
	tcase_add_test(tc, test_parse_edges);
	tcase_add_test(tc, test_parse_edges_invalid);
	tcase_add_test(tc, test_topology_names);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(topology_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
