/*
 * Topologies and mixing weights.
 *
 * This module owns gsp_graph: an undirected simple graph on n nodes built
 * from a named topology (ring, torus, complete, exponential) or parsed from
 * an edge list, one node's neighbours in a named topology without building
 * the graph (the same edge generator), its Metropolis-Hastings mixing weights (by mixing.c's
 * rule), and the spectrum of I - W that fixes the best consensus step and
 * the finite-time schedule of steps that reaches the exact average.
 * Every graph it hands out has n >= 2, no self loops, no duplicate edges
 * and no isolated node; edges are stored sorted by (lo, hi) with lo < hi.
 */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "gossip.h"

/* LAPACK (Fortran ABI): eigenvalues of a symmetric matrix. */
void dsyev_(const char *jobz, const char *uplo, const int *n, double *a,
	    const int *lda, double *w, double *work, const int *lwork, int *info);

/* Largest graph whose dense n x n spectrum we are willing to compute. */
#define SPECTRUM_MAX_NODES 4096u

typedef struct edge {
	unsigned lo, hi;
} edge;

struct gsp_graph {
	unsigned n;
	size_t nedges;
	edge *edges;        /* sorted by (lo, hi), lo < hi */
	unsigned *degree;   /* n entries */
	size_t *adj_off;    /* n + 1 offsets into adj */
	unsigned *adj;      /* neighbours of node i, ascending, at adj_off[i] */
};

static const char *const topology_names[] = {
	[GSP_TOPO_RING] = "ring",
	[GSP_TOPO_TORUS] = "torus",
	[GSP_TOPO_COMPLETE] = "complete",
	[GSP_TOPO_EXPONENTIAL] = "exponential",
	[GSP_TOPO_EDGELIST] = "edgelist",
};

#define N_TOPOLOGIES (sizeof(topology_names) / sizeof(topology_names[0]))

int gsp_topology_parse(const char *name, gsp_topology *ret_topo)
{
	if (!name || !ret_topo)
		return -EINVAL;
	for (size_t t = 0; t < N_TOPOLOGIES; t++) {
		if (strcmp(name, topology_names[t]) == 0) {
			*ret_topo = (gsp_topology)t;
			return 0;
		}
	}
	return -EINVAL;
}

const char *gsp_topology_name(gsp_topology topo)
{
	if ((unsigned)topo >= N_TOPOLOGIES)
		return NULL;
	return topology_names[topo];
}

void gsp_graph_free(gsp_graph *graph)
{
	if (!graph)
		return;
	free(graph->edges);
	free(graph->degree);
	free(graph->adj_off);
	free(graph->adj);
	free(graph);
}

static int edge_cmp(const void *pa, const void *pb)
{
	const edge *a = pa, *b = pb;

	if (a->lo != b->lo)
		return a->lo < b->lo ? -1 : 1;
	if (a->hi != b->hi)
		return a->hi < b->hi ? -1 : 1;
	return 0;
}

/*
 * Builds a graph from `count` candidate edges with ids < n, taking ownership
 * of `edges` (freed on failure).  Each pair is oriented lo < hi; self loops
 * and isolated nodes are errors.  Duplicates are merged when `merge_dups`,
 * otherwise they are errors too.
 */
static int graph_build(unsigned n, edge *edges, size_t count, bool merge_dups,
		       gsp_graph **ret_graph)
{
	gsp_graph *g = NULL;
	size_t m = 0;
	int r = -EINVAL;

	if (n < 2 || count == 0)
		goto fail;
	for (size_t e = 0; e < count; e++) {
		unsigned a = edges[e].lo, b = edges[e].hi;

		if (a == b || a >= n || b >= n)
			goto fail;
		edges[e].lo = a < b ? a : b;
		edges[e].hi = a < b ? b : a;
	}
	qsort(edges, count, sizeof(*edges), edge_cmp);
	for (size_t e = 0; e < count; e++) {
		if (m > 0 && edge_cmp(&edges[m - 1], &edges[e]) == 0) {
			if (!merge_dups)
				goto fail;
			continue;
		}
		edges[m++] = edges[e];
	}

	r = -ENOMEM;
	g = calloc(1, sizeof(*g));
	if (!g)
		goto fail;
	g->n = n;
	g->nedges = m;
	g->edges = edges;
	edges = NULL;
	g->degree = calloc(n, sizeof(*g->degree));
	g->adj_off = calloc((size_t)n + 1, sizeof(*g->adj_off));
	g->adj = calloc(m, 2 * sizeof(*g->adj));
	if (!g->degree || !g->adj_off || !g->adj)
		goto fail;

	for (size_t e = 0; e < m; e++) {
		g->degree[g->edges[e].lo]++;
		g->degree[g->edges[e].hi]++;
	}
	r = -EINVAL;
	for (unsigned i = 0; i < n; i++) {
		if (g->degree[i] == 0)
			goto fail;
		g->adj_off[i + 1] = g->adj_off[i] + g->degree[i];
	}

	/* Neighbours below i arrive in order of lo (as i is their hi), then
	 * those above i in order of hi, so every adjacency row is sorted. */
	size_t *fill = g->adj_off;
	for (size_t e = 0; e < m; e++)
		g->adj[fill[g->edges[e].hi]++] = g->edges[e].lo;
	for (size_t e = 0; e < m; e++)
		g->adj[fill[g->edges[e].lo]++] = g->edges[e].hi;
	/* fill[i] now equals the old adj_off[i + 1]: shift back. */
	memmove(g->adj_off + 1, g->adj_off, n * sizeof(*g->adj_off));
	g->adj_off[0] = 0;

	*ret_graph = g;
	return 0;
fail:
	free(edges);
	gsp_graph_free(g);
	return r;
}

static edge *edges_alloc(uint64_t count)
{
	if (count == 0 || count > SIZE_MAX / sizeof(edge))
		return NULL;
	return calloc((size_t)count, sizeof(edge));
}

/* Most nearly square factorisation n = a x b with 2 <= a <= b, or -EINVAL. */
static int torus_shape(unsigned n, unsigned *ret_a, unsigned *ret_b)
{
	unsigned best = 0;

	for (unsigned a = 2; (uint64_t)a * a <= n; a++)
		if (n % a == 0)
			best = a;
	if (best == 0)
		return -EINVAL;
	*ret_a = best;
	*ret_b = n / best;
	return 0;
}

/* A named topology on n nodes, as its edge generator needs it.  Node i
 * generates fwd_count() edges, the t-th to fwd_node(); together (with
 * duplicates, which graph_build merges) they are the graph's edges. */
typedef struct topo_shape {
	gsp_topology topo;
	unsigned n;
	unsigned a, b;      /* torus: a rows of b */
	unsigned jmax;      /* exponential: 2^j < n for j < jmax */
} topo_shape;

/* The shape, and the number of edges all nodes generate together;
 * -EINVAL for n < 2, an unnamed topology or a torus n does not shape. */
static int shape_of(gsp_topology topo, unsigned n, topo_shape *ret,
		    uint64_t *ret_count)
{
	topo_shape s = { .topo = topo, .n = n };

	if (n < 2)
		return -EINVAL;
	switch (topo) {
	case GSP_TOPO_RING:
		*ret_count = n;
		break;
	case GSP_TOPO_TORUS:
		if (torus_shape(n, &s.a, &s.b) < 0)
			return -EINVAL;
		*ret_count = 2 * (uint64_t)n;
		break;
	case GSP_TOPO_COMPLETE:
		*ret_count = (uint64_t)n * (n - 1) / 2;
		break;
	case GSP_TOPO_EXPONENTIAL:
		while (s.jmax < 32 && (UINT64_C(1) << s.jmax) < n)
			s.jmax++;
		*ret_count = (uint64_t)n * s.jmax;
		break;
	default:
		return -EINVAL;
	}
	*ret = s;
	return 0;
}

static unsigned fwd_count(const topo_shape *s, unsigned i)
{
	switch (s->topo) {
	case GSP_TOPO_RING:
		return 1;
	case GSP_TOPO_TORUS:
		return 2;
	case GSP_TOPO_COMPLETE:
		return s->n - 1 - i;
	case GSP_TOPO_EXPONENTIAL:
		return s->jmax;
	default:
		return 0;
	}
}

static unsigned fwd_node(const topo_shape *s, unsigned i, unsigned t)
{
	unsigned n = s->n, r, c;

	switch (s->topo) {
	case GSP_TOPO_RING:
		return (i + 1) % n;
	case GSP_TOPO_TORUS:
		/* Node r * b + c sits in row r, column c; link right and down. */
		r = i / s->b;
		c = i % s->b;
		if (t == 0)
			return r * s->b + (c + 1) % s->b;
		return ((r + 1) % s->a) * s->b + c;
	case GSP_TOPO_COMPLETE:
		return i + 1 + t;
	case GSP_TOPO_EXPONENTIAL:
		/* i - 2^j is covered by the edge from (i - 2^j) + 2^j. */
		return (unsigned)(((uint64_t)i + (UINT64_C(1) << t)) % n);
	default:
		return i;
	}
}

int gsp_graph_new(gsp_topology topo, unsigned n, gsp_graph **ret_graph)
{
	topo_shape s;
	uint64_t count;
	edge *edges;
	size_t k = 0;

	if (!ret_graph || shape_of(topo, n, &s, &count) < 0)
		return -EINVAL;
	edges = edges_alloc(count);
	if (!edges)
		return -ENOMEM;
	for (unsigned i = 0; i < n; i++)
		for (unsigned t = 0; t < fwd_count(&s, i); t++)
			edges[k++] = (edge){ i, fwd_node(&s, i, t) };
	return graph_build(n, edges, k, true, ret_graph);
}

/* Adds j to the ascending, distinct list[0..*len) if absent; counts it in
 * *len even when cap leaves no room for it (then only counts). */
static void sorted_add(unsigned *list, size_t cap, size_t *len, unsigned j)
{
	size_t lo = 0, hi = *len < cap ? *len : cap;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (list[mid] == j)
			return;
		if (list[mid] < j)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (*len < cap) {
		memmove(list + lo + 1, list + lo, (*len - lo) * sizeof(*list));
		list[lo] = j;
	}
	(*len)++;
}

int gsp_topology_neighbours(gsp_topology topo, unsigned n, unsigned i,
			    unsigned *ret, size_t cap, size_t *ret_count)
{
	topo_shape s;
	uint64_t count;
	size_t len = 0;

	if (!ret_count || (cap && !ret) || i >= n ||
	    shape_of(topo, n, &s, &count) < 0)
		return -EINVAL;
	/* Every node's generated edges, as gsp_graph_new() builds them:
	 * those from i and those to i. */
	for (unsigned k = 0; k < n; k++) {
		for (unsigned t = 0; t < fwd_count(&s, k); t++) {
			unsigned j = fwd_node(&s, k, t);

			if (k == i)
				sorted_add(ret, cap, &len, j);
			else if (j == i)
				sorted_add(ret, cap, &len, k);
		}
	}
	if (len > cap)
		return -ENOSPC;
	*ret_count = len;
	return 0;
}

/* Parses a decimal id < n at *p, advancing p.  Digits only: no sign, no
 * space.  Accumulates in 64 bits and stops as soon as the value reaches n,
 * so it never overflows. */
static int parse_id(const char **p, unsigned n, unsigned *ret_id)
{
	const char *s = *p;
	uint64_t v = 0;

	if (*s < '0' || *s > '9')
		return -EINVAL;
	while (*s >= '0' && *s <= '9') {
		v = v * 10 + (uint64_t)(*s - '0');
		if (v >= n)
			return -EINVAL;
		s++;
	}
	*p = s;
	*ret_id = (unsigned)v;
	return 0;
}

int gsp_graph_parse_edges(const char *spec, unsigned n, gsp_graph **ret_graph)
{
	const char *p;
	size_t count = 1, k = 0;
	edge *edges;

	if (!spec || !ret_graph || n < 2 || *spec == '\0')
		return -EINVAL;
	for (p = spec; *p; p++)
		count += *p == ',';
	edges = edges_alloc(count);
	if (!edges)
		return -ENOMEM;

	for (p = spec;; p++) {
		unsigned a, b;

		if (parse_id(&p, n, &a) < 0 || *p++ != '-' ||
		    parse_id(&p, n, &b) < 0)
			goto malformed;
		edges[k++] = (edge){ a, b };
		if (*p == '\0')
			break;
		if (*p != ',')
			goto malformed;
	}
	return graph_build(n, edges, k, false, ret_graph);
malformed:
	free(edges);
	return -EINVAL;
}

unsigned gsp_graph_nodes(const gsp_graph *graph)
{
	return graph ? graph->n : 0;
}

size_t gsp_graph_edge_count(const gsp_graph *graph)
{
	return graph ? graph->nedges : 0;
}

int gsp_graph_edge(const gsp_graph *graph, size_t e, unsigned *ret_lo,
		   unsigned *ret_hi)
{
	if (!graph || e >= graph->nedges)
		return -EINVAL;
	if (ret_lo)
		*ret_lo = graph->edges[e].lo;
	if (ret_hi)
		*ret_hi = graph->edges[e].hi;
	return 0;
}

unsigned gsp_graph_degree(const gsp_graph *graph, unsigned i)
{
	if (!graph || i >= graph->n)
		return 0;
	return graph->degree[i];
}

static bool has_edge(const gsp_graph *g, unsigned i, unsigned j)
{
	const unsigned *lo = g->adj + g->adj_off[i];
	size_t len = g->degree[i];

	/* Binary search in i's sorted neighbour row. */
	while (len > 0) {
		size_t half = len / 2;

		if (lo[half] == j)
			return true;
		if (lo[half] < j) {
			lo += half + 1;
			len -= half + 1;
		} else {
			len = half;
		}
	}
	return false;
}

static double mh_weight(const gsp_graph *g, unsigned i, unsigned j)
{
	return gsp_mixing_weight(g->degree[i], g->degree[j]);
}

/* Sum of i's off-diagonal weights, i.e. 1 - w_ii. */
static double off_weight_sum(const gsp_graph *g, unsigned i)
{
	double sum = 0;

	for (size_t k = g->adj_off[i]; k < g->adj_off[i + 1]; k++)
		sum += mh_weight(g, i, g->adj[k]);
	return sum;
}

double gsp_graph_weight(const gsp_graph *graph, unsigned i, unsigned j)
{
	if (!graph || i >= graph->n || j >= graph->n)
		return 0;
	if (i == j)
		return 1.0 - off_weight_sum(graph, i);
	return has_edge(graph, i, j) ? mh_weight(graph, i, j) : 0;
}

static int graph_connected(const gsp_graph *g)
{
	unsigned *queue = calloc(g->n, sizeof(*queue));
	bool *seen = calloc(g->n, sizeof(*seen));
	size_t head = 0, tail = 0;
	int r = -ENOMEM;

	if (!queue || !seen)
		goto out;
	queue[tail++] = 0;
	seen[0] = true;
	while (head < tail) {
		unsigned i = queue[head++];

		for (size_t k = g->adj_off[i]; k < g->adj_off[i + 1]; k++) {
			unsigned j = g->adj[k];

			if (!seen[j]) {
				seen[j] = true;
				queue[tail++] = j;
			}
		}
	}
	r = tail == g->n ? 0 : -EINVAL;
out:
	free(queue);
	free(seen);
	return r;
}

/* The eigenvalues of I - W, ascending, in a new array of graph->n
 * (LAPACK dsyev).  -EINVAL for a disconnected graph, -E2BIG beyond the
 * dense solver's cap, -EDOM if LAPACK fails. */
static int eigenvalues(const gsp_graph *graph, double **ret_eig)
{
	double *a = NULL, *eig = NULL, *work = NULL, query;
	int n, lwork = -1, info = 0, r;

	if (!graph)
		return -EINVAL;
	r = graph_connected(graph);
	if (r < 0)
		return r;
	if (graph->n > SPECTRUM_MAX_NODES)
		return -E2BIG;
	n = (int)graph->n;

	r = -ENOMEM;
	a = calloc((size_t)n * (size_t)n, sizeof(*a));
	eig = calloc((size_t)n, sizeof(*eig));
	if (!a || !eig)
		goto out;
	/* L = I - W, column-major (symmetric, so either order will do).  The
	 * diagonal 1 - w_ii is the off-diagonal row sum, computed directly. */
	for (unsigned i = 0; i < graph->n; i++)
		a[(size_t)i * n + i] = off_weight_sum(graph, i);
	for (size_t e = 0; e < graph->nedges; e++) {
		unsigned lo = graph->edges[e].lo, hi = graph->edges[e].hi;
		double w = -mh_weight(graph, lo, hi);

		a[(size_t)lo * n + hi] = w;
		a[(size_t)hi * n + lo] = w;
	}

	dsyev_("N", "L", &n, a, &n, eig, &query, &lwork, &info);
	r = -EDOM;
	if (info != 0)
		goto out;
	lwork = 3 * n - 1;
	if (query > (double)lwork && query < (double)(INT_MAX / 2))
		lwork = (int)query;
	r = -ENOMEM;
	work = calloc((size_t)lwork, sizeof(*work));
	if (!work)
		goto out;
	dsyev_("N", "L", &n, a, &n, eig, work, &lwork, &info);
	r = -EDOM;
	if (info != 0)
		goto out;
	for (int i = 0; i < n; i++)
		if (!isfinite(eig[i]))
			goto out;
	*ret_eig = eig;
	eig = NULL;
	r = 0;
out:
	free(a);
	free(eig);
	free(work);
	return r;
}

int gsp_graph_spectrum(const gsp_graph *graph, double *ret_lambda2,
		       double *ret_lambda_max)
{
	double *eig;
	int r = eigenvalues(graph, &eig);

	if (r < 0)
		return r;
	/* Ascending: eig[0] is the consensus eigenvalue 0, and connectivity
	 * (checked) makes eig[1] the smallest non-zero one. */
	if (ret_lambda2)
		*ret_lambda2 = eig[1];
	if (ret_lambda_max)
		*ret_lambda_max = eig[graph->n - 1];
	free(eig);
	return 0;
}

/* Eigenvalues closer than this (relative to the largest) are one: the
 * solver's error is some 1e-15 of it, and a graph's distinct eigenvalues
 * lie far further apart than this for any graph within the solver's cap. */
#define DISTINCT_REL 1e-9

/* |prod over t in [from, to) of (1 - lambda * g[t])|. */
static double poly_abs(const double *g, size_t from, size_t to, double lambda)
{
	double p = 1;
	for (size_t t = from; t < to; t++)
		p *= 1 - lambda * g[t];
	return fabs(p);
}

/* Leja order of the k distinct non-zero eigenvalues mu[], in place: the
 * largest first, then each time the one farthest (in product of
 * distances) from those already taken.  The partial products of
 * (1 - lambda / mu_t) then stay small for every lambda, so neither the
 * disagreement nor a round's rounding error grows much before the later
 * rounds remove it. */
static void leja_order(double *mu, size_t k)
{
	for (size_t t = 0; t < k; t++) {
		size_t best = t;
		double best_v = -1;
		for (size_t i = t; i < k; i++) {
			double v = t ? 1 : mu[i];
			for (size_t c = 0; c < t; c++)
				v *= fabs(mu[i] - mu[c]);
			if (v > best_v) {
				best_v = v;
				best = i;
			}
		}
		double m = mu[best];
		mu[best] = mu[t];
		mu[t] = m;
	}
}

int gsp_graph_finite_schedule(const gsp_graph *graph, double *ret_gammas,
			      size_t cap, size_t *ret_count, double *ret_growth)
{
	double *eig, *mu = NULL, *g = NULL;
	size_t k = 0;
	int r;

	if (!ret_count || (cap && !ret_gammas))
		return -EINVAL;
	r = eigenvalues(graph, &eig);
	if (r < 0)
		return r;
	size_t n = graph->n;
	double tol = DISTINCT_REL * eig[n - 1];
	r = -ENOMEM;
	mu = malloc(n * sizeof(*mu));
	g = malloc(n * sizeof(*g));
	if (!mu || !g)
		goto out;
	/* The distinct non-zero eigenvalues, ascending (eig[0] is 0). */
	for (size_t i = 1; i < n; i++)
		if (!k || eig[i] - mu[k - 1] > tol)
			mu[k++] = eig[i];
	r = -ENOSPC;
	if (k > cap)
		goto out;
	leja_order(mu, k);
	for (size_t t = 0; t < k; t++)
		g[t] = 1 / mu[t];
	if (ret_growth) {
		/* Over every eigenvalue and every round: how much the
		 * disagreement has grown after it, and how much an error made
		 * in it grows by the end. */
		double growth = 1;
		for (size_t i = 0; i < n; i++)
			for (size_t s = 1; s <= k; s++) {
				double pre = poly_abs(g, 0, s, eig[i]);
				double post = poly_abs(g, s, k, eig[i]);
				growth = fmax(growth, fmax(pre, post));
			}
		*ret_growth = growth;
	}
	memcpy(ret_gammas, g, k * sizeof(*g));
	*ret_count = k;
	r = 0;
out:
	free(eig);
	free(mu);
	free(g);
	return r;
}

int gsp_ring_matching_schedule(unsigned n, double *ret_weights, size_t cap,
			       size_t *ret_count)
{
	if (!ret_count || n == 0 || n % 2 || (cap && !ret_weights))
		return -EINVAL;
	if (n > GSP_MAX_RING_MATCHING)
		return -ENOSPC;
	/* The ring of the m pairs {2k, 2k + 1}: once a round of the first
	 * matching at 1/2 has made each pair's two values one, a round of
	 * the second at w moves pair k's two nodes by w toward pairs k - 1
	 * and k + 1, and the next first-matching round at 1/2 makes them one
	 * again: pair k's value then moves by w / 2 toward each neighbour,
	 * an exact gossip step of the ring of pairs with gamma = w / 2.  Its
	 * Laplacian's distinct non-zero eigenvalues: 2 - 2 cos(2 pi j / m),
	 * j = 1 .. m / 2 (on 2 pairs the two edges join the same pairs: 4).
	 * With m even the last of them is 4, the pairs' alternating mode;
	 * its step, a second-matching round at 1/2, goes last and needs no
	 * first-matching round after it: it averages each node with a node
	 * of the next pair, whose value is the mean's other side, so every
	 * node is at the mean after it.  That makes m = n / 2 rounds in all,
	 * the fewest there can be: a round moves a value one hop, and the
	 * ring's far side is n / 2 hops away. */
	unsigned m = n / 2, k = m / 2;
	size_t count = m;
	*ret_count = count;
	if (count > cap)
		return -ENOSPC;
	double mu[GSP_MAX_RING_MATCHING / 4];
	for (unsigned j = 1; j <= k; j++)
		mu[j - 1] = 2 - 2 * cos(2 * M_PI * j / m);
	leja_order(mu, m % 2 ? k : k - 1);   /* 4 stays last for m even */
	ret_weights[0] = 0.5;
	for (unsigned j = 0; j < k; j++) {
		ret_weights[1 + 2 * j] = 2 / mu[j];
		if (2 + 2 * j < count)
			ret_weights[2 + 2 * j] = 0.5;
	}
	return 0;
}

int gsp_graph_optimal_gamma(const gsp_graph *graph, double *ret_gamma)
{
	double l2, lmax;
	int r;

	if (!ret_gamma)
		return -EINVAL;
	r = gsp_graph_spectrum(graph, &l2, &lmax);
	if (r < 0)
		return r;
	if (!(l2 + lmax > 0))
		return -EDOM;
	*ret_gamma = 2.0 / (l2 + lmax);
	return 0;
}
