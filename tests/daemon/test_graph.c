/* Unit tests of the computed neighbour set (daemon/graph.h): for n = 1..64
 * and every topology each member's neighbours are its row of libgossip's
 * graph on the members in hash order (dead ones out, suspect ones in),
 * hence symmetric; the degrees; small n; a ring closing over a dead
 * member and splicing a joiner in, with graph_diff() naming the only
 * edges that change. */
#include <check.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <sodium.h>

#include "graph.h"
#include "membertest.h"
#include "testutil.h"

enum { MAXN = 64 };

static const gsp_topology topos[] = { GSP_TOPO_RING, GSP_TOPO_TORUS,
	GSP_TOPO_COMPLETE, GSP_TOPO_EXPONENTIAL };
#define N_TOPOS (sizeof(topos) / sizeof(topos[0]))

static members views[MAXN + 1];
static graph_neighbour nb[MAXN + 1][MAXN];
static size_t nb_count[MAXN + 1];

/* The status every view holds of node i in the symmetry test. */
static unsigned status_of(unsigned i)
{
	return i % 7 == 4 ? GSP_MEMBER_DEAD :
	       i % 5 == 3 ? GSP_MEMBER_SUSPECT : GSP_MEMBER_ALIVE;
}

/* views[i] for i < n: node i's table of nodes 0..n-1, ours alive.
 * (One assertion for all: each costs Check a write.) */
static void build_views(unsigned n, bool with_statuses)
{
	unsigned bad = 0;

	for (unsigned i = 0; i < n; i++) {
		test_table(&views[i], i, MAXN + 1);
		for (unsigned j = 0; j < n; j++) {
			gsp_member rec = test_record(j, 1, with_statuses ?
						     status_of(j) : GSP_MEMBER_ALIVE);

			if (j != i)
				bad += members_merge(&views[i], &rec, 0) != MERGE_NEW;
		}
	}
	ck_assert_uint_eq(bad, 0);
}

static void free_views(unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		members_free(&views[i]);
}

/* View v's neighbours in row `row` of nb. */
static void compute_into(gsp_topology topo, unsigned v, unsigned row)
{
	ck_assert_int_eq(graph_neighbours(topo, &views[v], nb[row], MAXN,
					  &nb_count[row], NULL, NULL), 0);
}

static void compute(gsp_topology topo, unsigned i)
{
	compute_into(topo, i, i);
}

static unsigned id_of(const uint8_t key[GSP_KEY_BYTES])
{
	unsigned id;

	memcpy(&id, key, sizeof(id));
	return id;
}

static bool has(unsigned i, unsigned j)
{
	for (size_t k = 0; k < nb_count[i]; k++)
		if (id_of(nb[i][k].key) == j)
			return true;
	return false;
}

static int by_hash(const void *a, const void *b)
{
	uint8_t ka[GSP_KEY_BYTES], kb[GSP_KEY_BYTES], ha[32], hb[32];

	test_key(*(const unsigned *)a, ka);
	test_key(*(const unsigned *)b, kb);
	crypto_generichash(ha, 32, ka, GSP_KEY_BYTES, NULL, 0);
	crypto_generichash(hb, 32, kb, GSP_KEY_BYTES, NULL, 0);
	return memcmp(ha, hb, 32);
}

/* Every member's neighbours are its row of gsp_graph_new() on the members
 * alive or suspect, sorted by BLAKE2b-256 of their keys (a torus n cannot
 * shape: the ring), and a is b's neighbour exactly when b is a's. */
START_TEST(test_equals_libgossip_and_symmetric)
{
	for (unsigned n = 1; n <= MAXN; n++) {
		unsigned ord[MAXN], ng = 0;

		build_views(n, true);
		for (unsigned i = 0; i < n; i++)
			if (status_of(i) != GSP_MEMBER_DEAD)
				ord[ng++] = i;
		qsort(ord, ng, sizeof(*ord), by_hash);
		for (size_t t = 0; t < N_TOPOS; t++) {
			static bool want[MAXN][MAXN];
			gsp_graph *g = NULL;

			memset(want, 0, sizeof(want));
			if (ng > 1 && gsp_graph_new(topos[t], ng, &g) < 0) {
				ck_assert_int_eq(topos[t], GSP_TOPO_TORUS);
				ck_assert_int_eq(gsp_graph_new(GSP_TOPO_RING, ng, &g), 0);
			}
			for (size_t e = 0; e < gsp_graph_edge_count(g); e++) {
				unsigned lo, hi;

				ck_assert_int_eq(gsp_graph_edge(g, e, &lo, &hi), 0);
				want[ord[lo]][ord[hi]] = want[ord[hi]][ord[lo]] = true;
			}
			size_t bad = 0;
			for (unsigned p = 0; p < ng; p++) {
				unsigned i = ord[p], gn = 0, self = 0;
				size_t cnt = 0;

				bad += graph_neighbours(topos[t], &views[i], nb[i], MAXN,
							&cnt, &gn, &self) != 0;
				nb_count[i] = cnt;
				bad += gn != ng || self != p;
				bad += cnt != (ng > 1 ? gsp_graph_degree(g, p) : 0);
				for (size_t k = 0; k < cnt; k++) {
					unsigned j = id_of(nb[i][k].key);

					bad += !want[i][j] || ord[nb[i][k].pos] != j;
				}
			}
			for (unsigned a = 0; a < ng; a++)
				for (unsigned b = 0; b < ng; b++)
					bad += has(ord[a], ord[b]) != has(ord[b], ord[a]);
			ck_assert_msg(bad == 0, "%s on %u members (%u in the graph): "
				      "%zu mismatches", gsp_topology_name(topos[t]),
				      n, ng, bad);
			gsp_graph_free(g);
		}
		free_views(n);
	}
}
END_TEST

/* n node 0 sees, all alive, in topo: node 0's degree. */
static size_t degree(gsp_topology topo, unsigned n)
{
	build_views(1, false);
	for (unsigned j = 1; j < n; j++)
		test_merge(&views[0], j, 1, GSP_MEMBER_ALIVE, 0, MERGE_NEW);
	compute(topo, 0);
	free_views(1);
	return nb_count[0];
}

START_TEST(test_degrees_and_small_n)
{
	/* Torus a x b: 2 neighbours a way, 1 where the way has 2 nodes. */
	static const unsigned torus[][2] = { { 4, 2 }, { 6, 3 }, { 8, 3 }, { 9, 4 },
		{ 10, 3 }, { 12, 4 }, { 15, 4 }, { 16, 4 }, { 64, 4 } };

	for (size_t t = 0; t < N_TOPOS; t++) {
		ck_assert_uint_eq(degree(topos[t], 1), 0);
		ck_assert_uint_eq(degree(topos[t], 2), 1);
		ck_assert_uint_eq(degree(topos[t], 3), 2);
	}
	for (unsigned n = 3; n <= 40; n++) {
		ck_assert_uint_eq(degree(GSP_TOPO_RING, n), 2);
		ck_assert_uint_eq(degree(GSP_TOPO_COMPLETE, n), n - 1);
	}
	for (size_t k = 0; k < sizeof(torus) / sizeof(torus[0]); k++)
		ck_assert_uint_eq(degree(GSP_TOPO_TORUS, torus[k][0]), torus[k][1]);
	/* Exponential on 2^k: +-2^j, 2^(k-1) once. */
	for (unsigned k = 2, n = 4; n <= MAXN; k++, n *= 2)
		ck_assert_uint_eq(degree(GSP_TOPO_EXPONENTIAL, n), 2 * k - 1);

	/* n = 3 and n prime: the torus is the ring, the same neighbours. */
	static const unsigned primes[] = { 3, 5, 7, 13, 31 };
	for (size_t k = 0; k < sizeof(primes) / sizeof(primes[0]); k++) {
		build_views(primes[k], false);
		compute_into(GSP_TOPO_TORUS, 0, 0);
		compute_into(GSP_TOPO_RING, 0, 1);
		ck_assert_uint_eq(nb_count[0], nb_count[1]);
		ck_assert_mem_eq(nb[0], nb[1], nb_count[0] * sizeof(nb[0][0]));
		if (primes[k] == 3) {
			compute_into(GSP_TOPO_COMPLETE, 0, 1);
			ck_assert_mem_eq(nb[0], nb[1], 2 * sizeof(nb[0][0]));
		}
		free_views(primes[k]);
	}
}
END_TEST

/* Our own record is not needed: we are in the graph anyway. */
START_TEST(test_without_own_record_and_errors)
{
	members m;
	uint8_t key[GSP_KEY_BYTES];
	graph_neighbour out[8];
	size_t cnt = 99;

	build_views(8, false);
	compute(GSP_TOPO_EXPONENTIAL, 0);
	test_key(0, key);
	ck_assert_int_eq(members_init(&m, key, 16), 0);
	for (unsigned j = 1; j < 8; j++)
		test_merge(&m, j, 1, GSP_MEMBER_ALIVE, 0, MERGE_NEW);
	ck_assert_int_eq(graph_neighbours(GSP_TOPO_EXPONENTIAL, &m, out, 8, &cnt,
					  NULL, NULL), 0);
	ck_assert_uint_eq(cnt, nb_count[0]);
	ck_assert_mem_eq(out, nb[0], cnt * sizeof(out[0]));

	cnt = 99;
	ck_assert_int_eq(graph_neighbours(GSP_TOPO_EDGELIST, &m, out, 8, &cnt,
					  NULL, NULL), -EINVAL);
	ck_assert_int_eq(graph_neighbours(GSP_TOPO_COMPLETE, &m, out, 6, &cnt,
					  NULL, NULL), -ENOSPC);
	ck_assert_uint_eq(cnt, 99);
	members_free(&m);
	free_views(8);
}
END_TEST

/* The old and new sets of node i differ by exactly `added` and `removed`
 * (ids, UINT32_MAX for none). */
static void check_diff(const graph_neighbour *old_set, size_t n_old, unsigned i,
		       unsigned added, unsigned removed)
{
	size_t add[MAXN], rem[MAXN], n_add = 99, n_rem = 99;

	graph_diff(old_set, n_old, nb[i], nb_count[i], add, &n_add, rem, &n_rem);
	ck_assert_uint_eq(n_add, added != UINT32_MAX);
	ck_assert_uint_eq(n_rem, removed != UINT32_MAX);
	if (n_add)
		ck_assert_uint_eq(id_of(nb[i][add[0]].key), added);
	if (n_rem)
		ck_assert_uint_eq(id_of(old_set[rem[0]].key), removed);
}

/* A ring of 8 closes over a member that dies: its two neighbours become
 * each other's, and nobody else's neighbours change. */
START_TEST(test_ring_closes_over_dead)
{
	static graph_neighbour before[8][MAXN];
	size_t before_count[8];
	unsigned ord[8];

	build_views(8, false);
	for (unsigned i = 0; i < 8; i++) {
		ord[i] = i;
		compute(GSP_TOPO_RING, i);
		memcpy(before[i], nb[i], sizeof(before[i]));
		before_count[i] = nb_count[i];
	}
	qsort(ord, 8, sizeof(*ord), by_hash);
	unsigned x = ord[3], p = ord[2], q = ord[4];
	for (unsigned i = 0; i < 8; i++) {
		if (i == x)
			continue;
		test_merge(&views[i], x, 1, GSP_MEMBER_DEAD, 5, MERGE_NEWER);
		compute(GSP_TOPO_RING, i);
		ck_assert(!has(i, x));
		check_diff(before[i], before_count[i], i,
			   i == p ? q : i == q ? p : UINT32_MAX,
			   i == p || i == q ? x : UINT32_MAX);
	}
	free_views(8);
}
END_TEST

/* A joiner in a ring of 16 is spliced in between two neighbours, which
 * each gain it and lose each other; the 14 others keep theirs. */
START_TEST(test_ring_splices_joiner)
{
	static graph_neighbour before[16][MAXN];
	size_t before_count[16];
	unsigned ord[17], j = 16, changed = 0;

	build_views(16, false);
	for (unsigned i = 0; i < 16; i++) {
		compute(GSP_TOPO_RING, i);
		memcpy(before[i], nb[i], sizeof(before[i]));
		before_count[i] = nb_count[i];
		test_merge(&views[i], j, 1, GSP_MEMBER_ALIVE, 1, MERGE_NEW);
	}
	test_table(&views[j], j, MAXN + 1);
	for (unsigned i = 0; i < 17; i++) {
		ord[i] = i;
		if (i != j)
			test_merge(&views[j], i, 1, GSP_MEMBER_ALIVE, 1, MERGE_NEW);
	}
	qsort(ord, 17, sizeof(*ord), by_hash);
	unsigned at = 0;
	while (ord[at] != j)
		at++;
	unsigned p = ord[(at + 16) % 17], q = ord[(at + 1) % 17];
	compute(GSP_TOPO_RING, j);
	ck_assert_uint_eq(nb_count[j], 2);
	ck_assert(has(j, p) && has(j, q));
	for (unsigned i = 0; i < 16; i++) {
		compute(GSP_TOPO_RING, i);
		changed += i == p || i == q;
		check_diff(before[i], before_count[i], i,
			   i == p || i == q ? j : UINT32_MAX,
			   i == p ? q : i == q ? p : UINT32_MAX);
	}
	ck_assert_uint_eq(changed, 2);
	free_views(17);
}
END_TEST

int main(void)
{
	if (sodium_init() < 0)
		return EXIT_FAILURE;
	Suite *s = suite_create("daemon-graph");
	TCase *tc = tcase_create("graph");
	tcase_add_test(tc, test_equals_libgossip_and_symmetric);
	tcase_add_test(tc, test_degrees_and_small_n);
	tcase_add_test(tc, test_without_own_record_and_errors);
	tcase_add_test(tc, test_ring_closes_over_dead);
	tcase_add_test(tc, test_ring_splices_joiner);
	suite_add_tcase(s, tc);
	return run_suite(s);
}
