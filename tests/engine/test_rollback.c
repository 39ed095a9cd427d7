/* gsp_node_edge_rollback on one edge between two nodes (lo and hi), driven
 * call by call: a round that only one end applied is taken back to the
 * parameters it would have without that round, whether or not the edge
 * projected again since; a completed round not yet applied is dropped;
 * anything further back is refused and changes nothing; and the edge's
 * next generation runs as usual.  PowerGossip at ranks 1 and 3, warm and
 * cold, and exact gossip, each on matrices and a vector; PowerGossip once
 * more on a layout whose steps the workers share by tensors; windows of
 * exact rounds (gsp_node_edge_exact_rounds) on PowerGossip and exact
 * nodes, with take-backs on both sides of their two edges. */
#include "internal.h"
#include "testutil.h"

typedef struct method_case {
	const char *name;
	gsp_method method;
	unsigned rank;
	bool warm;
	const char *spec;
	bool window;       /* rounds 2..4 exact at their steps (a window) */
} method_case;

static const method_case cases[] = {
	{"pg rank 1 warm", GSP_METHOD_POWERGOSSIP, 1, true, "6x5,4x7,3", false},
	{"pg rank 1 cold", GSP_METHOD_POWERGOSSIP, 1, false, "6x5,4x7,3", false},
	{"pg rank 3 warm", GSP_METHOD_POWERGOSSIP, 3, true, "6x5,4x7,3", false},
	{"pg rank 3 cold", GSP_METHOD_POWERGOSSIP, 3, false, "6x5,4x7,3", false},
	{"exact", GSP_METHOD_EXACT, 1, true, "6x5,4x7,3", false},
	/* A window of exact rounds 2..4: round 1 taken back once round 2
	 * (exact) is projected, round 4 (exact) once round 5 (PowerGossip
	 * again) is, round 5 past the window. */
	{"window on pg", GSP_METHOD_POWERGOSSIP, 2, true, "6x5,4x7,3", true},
	{"window on exact", GSP_METHOD_EXACT, 1, true, "6x5,4x7,3", true},
	/* Large enough for pg_run to spread it over GSP_THREADS=2. */
	{"pg rank 2 spread", GSP_METHOD_POWERGOSSIP, 2, true,
	 "256x512,256x512,256x512,256x512,512", false},
};
#define N_CASES ((int)(sizeof(cases) / sizeof(*cases)))

enum { LO = 0, HI = 1 };

typedef struct pair {
	const method_case *mc;
	gsp_layout *layout;
	size_t n;
	float *x[2];
	gsp_node *node[2];
	double sum0;       /* sum of both nodes' parameters, and local changes */
} pair;

static double pair_sum(const pair *p, double *ret_abs)
{
	double s = 0.0, a = 0.0;
	for (int i = 0; i < 2; i++)
		for (size_t j = 0; j < p->n; j++) {
			s += p->x[i][j];
			a += fabs(p->x[i][j]);
		}
	if (ret_abs)
		*ret_abs = a;
	return s;
}

/* The updates of rounds both ends applied cancel in the sum. */
static void assert_conserved(const pair *p)
{
	double abs_sum, s = pair_sum(p, &abs_sum);
	ck_assert_msg(fabs(s - p->sum0) <= 1e-6 * abs_sum, "%s: sum %g, was %g",
		      p->mc->name, s, p->sum0);
}

static pair pair_new(const method_case *mc)
{
	pair p = {.mc = mc};
	ck_assert_int_eq(gsp_layout_parse(mc->spec, &p.layout), 0);
	p.n = gsp_layout_floats(p.layout);
	gsp_config cfg = config_of(mc->method, mc->rank, 0.8);
	cfg.warm_start = mc->warm;
	uint8_t seed[GSP_SEED_BYTES];
	cluster_seed(seed, 5);
	for (int i = 0; i < 2; i++) {
		p.x[i] = malloc(p.n * sizeof(float));
		ck_assert_ptr_nonnull(p.x[i]);
		gsp_fill_gaussian(p.x[i], p.n, 31, (unsigned)i);
		ck_assert_int_eq(gsp_node_new(p.layout, p.x[i], &cfg, &p.node[i]), 0);
		ck_assert_int_eq(gsp_node_add_edge(p.node[i], 0.5f,
						   i == LO ? GSP_ROLE_LO : GSP_ROLE_HI,
						   seed, sizeof(seed)), 0);
		static const float steps[3] = {0.6f, 1.3f, 0.4f};
		if (mc->window)
			ck_assert_int_eq(gsp_node_edge_exact_rounds(p.node[i], 0, 1,
								    steps, 3), 0);
	}
	p.sum0 = pair_sum(&p, NULL);
	return p;
}

static void pair_free(pair *p)
{
	for (int i = 0; i < 2; i++) {
		gsp_node_free(p->node[i]);
		free(p->x[i]);
	}
	gsp_layout_free(p->layout);
}

/* Completes `to`'s round with the message `from` retained. */
static void deliver(pair *p, int from, int to)
{
	const void *msg;
	size_t len;
	uint64_t round;
	ck_assert_int_eq(gsp_node_message(p->node[from], 0, &msg, &len, &round), 0);
	ck_assert_int_eq(gsp_node_complete(p->node[to], 0, round, msg, len), 0);
}

/* n whole rounds: both ends step (apply the last, project the next) and
 * exchange; both end COMPLETED. */
static void pair_rounds(pair *p, unsigned n)
{
	for (unsigned r = 0; r < n; r++) {
		ck_assert_int_eq(gsp_node_step(p->node[LO]), 1);
		ck_assert_int_eq(gsp_node_step(p->node[HI]), 1);
		deliver(p, HI, LO);
		deliver(p, LO, HI);
	}
}

static gsp_edge_info edge_info(const pair *p, int i)
{
	gsp_edge_info info;
	ck_assert_int_eq(gsp_node_edge_info(p->node[i], 0, &info), 0);
	return info;
}

static float *params_copy(const pair *p, int i)
{
	float *c = malloc(p->n * sizeof(float));
	ck_assert_ptr_nonnull(c);
	memcpy(c, p->x[i], p->n * sizeof(float));
	return c;
}

static double max_rel_error(const float *x, const float *ref, size_t n)
{
	double err = 0.0, big = 0.0;
	for (size_t j = 0; j < n; j++) {
		err = fmax(err, fabs((double)x[j] - ref[j]));
		big = fmax(big, fabs((double)ref[j]));
	}
	return err / big;
}

static double distance(const pair *p)
{
	double d = 0.0;
	for (size_t j = 0; j < p->n; j++)
		d += ((double)p->x[LO][j] - p->x[HI][j]) *
		     ((double)p->x[LO][j] - p->x[HI][j]);
	return sqrt(d);
}

/* The next generation after a rollback: both ends reset, nothing in it to
 * take back yet, and rounds run (and mix) again. */
static void pair_resume(pair *p)
{
	uint8_t seed[GSP_SEED_BYTES];
	cluster_seed(seed, 77);
	for (int pass = 0; pass < 2; pass++)
		for (int i = 0; i < 2; i++) {
			ck_assert_int_eq(gsp_node_edge_reset(p->node[i], 0, 0.5f,
				i == LO ? GSP_ROLE_LO : GSP_ROLE_HI, seed,
				sizeof(seed)), 0);
			if (pass == 0)
				ck_assert_int_eq(gsp_node_edge_rollback(p->node[i], 0, 0), 0);
		}
	double d0 = distance(p);
	pair_rounds(p, 3);
	for (int i = 0; i < 2; i++) {
		ck_assert_int_eq(gsp_node_apply(p->node[i]), 1);
		gsp_edge_info info = edge_info(p, i);
		ck_assert(info.active && info.state == GSP_EDGE_IDLE && info.round == 3);
	}
	ck_assert_msg(distance(p) < d0, "%s: no mixing after reset", p->mc->name);
	assert_conserved(p);
}

/* A training step between rounds, kept by the rollback. */
static void local_change(pair *p, float *ref)
{
	for (size_t j = 0; j < p->n; j++) {
		float d = 0.125f * (float)((int)(j % 5) - 2);
		p->x[LO][j] += d;
		ref[j] += d;
		p->sum0 += d;
	}
}

enum take_back_mode {
	APPLIED,        /* IDLE at round+1 */
	PROJECTED,      /* IN_FLIGHT at round+2 */
	DISABLED,       /* the same, then the edge disabled */
};

/* k whole rounds, then round k+1 reaches lo only (hi never gets lo's
 * message); lo applies it, and perhaps projects k+2; the neighbour ended
 * at k, so lo takes k+1 back. */
static void take_back(const method_case *mc, unsigned k, enum take_back_mode mode)
{
	pair p = pair_new(mc);
	pair_rounds(&p, k);
	ck_assert_int_eq(gsp_node_step(p.node[LO]), 1);
	ck_assert_int_eq(gsp_node_step(p.node[HI]), 1);
	deliver(&p, HI, LO);
	float *ref = params_copy(&p, LO);
	ck_assert_int_eq(gsp_node_apply(p.node[LO]), 1);
	ck_assert(memcmp(ref, p.x[LO], p.n * sizeof(float)) != 0);
	local_change(&p, ref);
	/* What is subtracted is what was added, at the old weight and the
	 * old step. */
	ck_assert_int_eq(gsp_node_edge_set_weight(p.node[LO], 0, 0.25f), 0);
	ck_assert_int_eq(gsp_node_set_gamma(p.node[LO], 2.5f), 0);
	if (mode != APPLIED)
		ck_assert_int_eq(gsp_node_project(p.node[LO]), 1);
	if (mode == DISABLED)
		ck_assert_int_eq(gsp_node_edge_disable(p.node[LO], 0), 0);
	ck_assert_uint_eq(edge_info(&p, LO).round, k + 1 + (mode != APPLIED));

	ck_assert_int_eq(gsp_node_edge_rollback(p.node[LO], 0, k), 1);
	ck_assert_int_eq(gsp_node_set_gamma(p.node[LO], 0.8f), 0);
	double err = max_rel_error(p.x[LO], ref, p.n);
	ck_assert_msg(err <= 1e-6, "%s, round %u, mode %d: error %g", mc->name,
		      k + 1, mode, err);
	gsp_edge_info info = edge_info(&p, LO);
	ck_assert(!info.active && info.state == GSP_EDGE_IDLE);
	/* At hi, in flight at k+1: nothing to take back. */
	float *hi = params_copy(&p, HI);
	ck_assert_int_eq(gsp_node_edge_rollback(p.node[HI], 0, k), 0);
	ck_assert(memcmp(hi, p.x[HI], p.n * sizeof(float)) == 0);
	assert_conserved(&p);
	/* Taken back once: not again, and nothing more. */
	memcpy(ref, p.x[LO], p.n * sizeof(float));
	if (k > 0)
		ck_assert_int_eq(gsp_node_edge_rollback(p.node[LO], 0, k - 1), -ERANGE);
	ck_assert_int_eq(gsp_node_edge_rollback(p.node[LO], 0, k), 0);
	ck_assert(memcmp(ref, p.x[LO], p.n * sizeof(float)) == 0);
	ck_assert_int_eq(gsp_node_apply(p.node[LO]), 0);
	pair_resume(&p);
	free(hi);
	free(ref);
	pair_free(&p);
}

/* Rounds taken back: 1 and 5 odd, 4 even. */
static const unsigned taken[] = {1, 4, 5};

START_TEST(test_take_back_applied)
{
	for (unsigned t = 0; t < 3; t++)
		take_back(&cases[_i], taken[t] - 1, APPLIED);
}
END_TEST

START_TEST(test_take_back_projected)
{
	for (unsigned t = 0; t < 3; t++)
		take_back(&cases[_i], taken[t] - 1, PROJECTED);
}
END_TEST

START_TEST(test_take_back_disabled)
{
	for (unsigned t = 0; t < 3; t++)
		take_back(&cases[_i], taken[t] - 1, DISABLED);
}
END_TEST

/* Round k+1 completed at lo only and not yet applied: dropped, and no
 * later apply or step lands it. */
START_TEST(test_completed_dropped)
{
	for (unsigned k = 3; k <= 4; k++) {
		pair p = pair_new(&cases[_i]);
		pair_rounds(&p, k);
		ck_assert_int_eq(gsp_node_step(p.node[LO]), 1);
		ck_assert_int_eq(gsp_node_step(p.node[HI]), 1);
		deliver(&p, HI, LO);
		float *ref = params_copy(&p, LO);
		ck_assert_int_eq(gsp_node_edge_rollback(p.node[LO], 0, k), 0);
		gsp_edge_info info = edge_info(&p, LO);
		ck_assert(!info.active && info.state == GSP_EDGE_IDLE);
		ck_assert_uint_eq(info.round, k + 1);
		ck_assert_int_eq(gsp_node_apply(p.node[LO]), 0);
		ck_assert_int_eq(gsp_node_step(p.node[LO]), 0);
		ck_assert(memcmp(ref, p.x[LO], p.n * sizeof(float)) == 0);
		ck_assert_int_eq(gsp_node_edge_rollback(p.node[HI], 0, k), 0);
		assert_conserved(&p);
		pair_resume(&p);
		free(ref);
		pair_free(&p);
	}
}
END_TEST

/* Everything a failed call must leave as it was: parameters, edge info
 * and (powergossip) every factor. */
typedef struct snapshot {
	float *params;
	gsp_edge_info info;
	float *factors;
	size_t n_factors;
} snapshot;

static snapshot snap(const pair *p, int i)
{
	snapshot s = {.params = params_copy(p, i), .info = edge_info(p, i)};
	size_t cap = 0;
	for (size_t t = 0; p->mc->method == GSP_METHOD_POWERGOSSIP &&
			   t < gsp_layout_count(p->layout); t++) {
		const gsp_tensor *ten = gsp_layout_tensor(p->layout, t);
		const float *a, *b;
		unsigned r;
		if (!ten->compressed)
			continue;
		ck_assert_int_eq(gsp_node_edge_factors(p->node[i], 0, t, &a, &b, &r), 0);
		size_t add = (ten->m + ten->k) * r;
		if (s.n_factors + add > cap) {
			cap = 2 * (s.n_factors + add);
			s.factors = realloc(s.factors, cap * sizeof(float));
			ck_assert_ptr_nonnull(s.factors);
		}
		memcpy(s.factors + s.n_factors, a, ten->m * r * sizeof(float));
		memcpy(s.factors + s.n_factors + ten->m * r, b,
		       ten->k * r * sizeof(float));
		s.n_factors += add;
	}
	return s;
}

static void assert_unchanged(const pair *p, int i, snapshot *before)
{
	snapshot now = snap(p, i);
	ck_assert(memcmp(now.params, before->params, p->n * sizeof(float)) == 0);
	ck_assert(memcmp(&now.info, &before->info, sizeof(now.info)) == 0);
	ck_assert_uint_eq(now.n_factors, before->n_factors);
	ck_assert(now.n_factors == 0 ||
		  memcmp(now.factors, before->factors,
			 now.n_factors * sizeof(float)) == 0);
	free(now.params);
	free(now.factors);
	free(before->params);
	free(before->factors);
}

static void assert_refused(pair *p, size_t edge, uint64_t round, int want)
{
	snapshot before = snap(p, LO);
	ck_assert_int_eq(gsp_node_edge_rollback(p->node[LO], edge, round), want);
	assert_unchanged(p, LO, &before);
}

START_TEST(test_refused)
{
	pair p = pair_new(&cases[_i]);
	pair_rounds(&p, 5);
	for (int i = 0; i < 2; i++)
		ck_assert_int_eq(gsp_node_apply(p.node[i]), 1);
	/* Applied 1..5: rounds 4 and 5 back is one too many. */
	assert_refused(&p, 0, 3, -ERANGE);
	assert_refused(&p, 1, 4, -EINVAL);
	assert_refused(&p, SIZE_MAX, 4, -EINVAL);
	ck_assert_int_eq(gsp_node_edge_rollback(NULL, 0, 4), -EINVAL);
	ck_assert_int_eq(gsp_node_project(p.node[LO]), 1);
	assert_refused(&p, 0, 3, -ERANGE);
	/* Round 6 completed since round 5 was applied: 5 is gone. */
	ck_assert_int_eq(gsp_node_project(p.node[HI]), 1);
	deliver(&p, HI, LO);
	assert_refused(&p, 0, 4, -ERANGE);
	ck_assert_int_eq(gsp_node_apply(p.node[LO]), 1);
	assert_refused(&p, 0, 4, -ERANGE);
	/* Round 6 itself can still be taken back. */
	ck_assert_int_eq(gsp_node_edge_rollback(p.node[LO], 0, 5), 1);
	ck_assert_int_eq(gsp_node_edge_rollback(p.node[HI], 0, 5), 0);
	assert_conserved(&p);
	pair_resume(&p);
	pair_free(&p);
}
END_TEST

/* The neighbour ended where this end is: nothing to take back, and the
 * edge is disabled (a completed round still lands, as with
 * gsp_node_edge_disable). */
START_TEST(test_nothing_to_do)
{
	pair p = pair_new(&cases[_i]);
	pair_rounds(&p, 4);
	float *ref = params_copy(&p, LO);
	ck_assert_int_eq(gsp_node_edge_rollback(p.node[LO], 0, 4), 0);
	gsp_edge_info info = edge_info(&p, LO);
	ck_assert(!info.active && info.state == GSP_EDGE_COMPLETED);
	ck_assert(memcmp(ref, p.x[LO], p.n * sizeof(float)) == 0);
	ck_assert_int_eq(gsp_node_apply(p.node[LO]), 1);
	memcpy(ref, p.x[LO], p.n * sizeof(float));
	ck_assert_int_eq(gsp_node_edge_rollback(p.node[LO], 0, 4), 0);
	ck_assert_int_eq(gsp_node_edge_rollback(p.node[LO], 0, 100), 0);
	ck_assert(memcmp(ref, p.x[LO], p.n * sizeof(float)) == 0);
	/* Round 5 in flight at hi, then dropped by disable: 1..4 applied. */
	ck_assert_int_eq(gsp_node_step(p.node[HI]), 1);
	ck_assert_int_eq(gsp_node_edge_disable(p.node[HI], 0), 0);
	float *hi = params_copy(&p, HI);
	ck_assert_int_eq(gsp_node_edge_rollback(p.node[HI], 0, 4), 0);
	ck_assert(memcmp(hi, p.x[HI], p.n * sizeof(float)) == 0);
	info = edge_info(&p, HI);
	ck_assert(!info.active && info.state == GSP_EDGE_IDLE && info.round == 5);
	assert_conserved(&p);
	pair_resume(&p);
	free(hi);
	free(ref);
	pair_free(&p);
}
END_TEST

START_TEST(test_choco_not_supported)
{
	gsp_layout *layout;
	ck_assert_int_eq(gsp_layout_parse("6x5,4x7,3", &layout), 0);
	float x[61];
	gsp_fill_gaussian(x, 61, 3, 0);
	gsp_config cfg = config_of(GSP_METHOD_CHOCO_TOPK, 1, 0.5);
	cfg.choco_fraction = 0.2f;
	gsp_node *node;
	ck_assert_int_eq(gsp_node_new(layout, x, &cfg, &node), 0);
	uint8_t seed[GSP_SEED_BYTES];
	cluster_seed(seed, 1);
	ck_assert_int_eq(gsp_node_add_edge(node, 0.5f, GSP_ROLE_LO, seed,
					   sizeof(seed)), 0);
	ck_assert_int_eq(gsp_node_project(node), 1);
	float before[61];
	gsp_edge_info info0, info1;
	memcpy(before, x, sizeof(x));
	ck_assert_int_eq(gsp_node_edge_info(node, 0, &info0), 0);
	ck_assert_int_eq(gsp_node_edge_rollback(node, 0, 0), -ENOTSUP);
	ck_assert_int_eq(gsp_node_edge_rollback(node, 1, 0), -EINVAL);
	/* Nor held out of projection: its rounds need every edge. */
	ck_assert_int_eq(gsp_node_edge_hold(node, 0, true), -ENOTSUP);
	/* Nor can its edges' state be saved (gsp_node_edge_save). */
	uint8_t *buf;
	size_t len;
	ck_assert_int_eq(gsp_node_edge_save(node, 0, &buf, &len), -ENOTSUP);
	ck_assert_int_eq(gsp_node_edge_load(node, 0, (const uint8_t *)"x", 1), -ENOTSUP);
	ck_assert_int_eq(gsp_node_edge_info(node, 0, &info1), 0);
	ck_assert(memcmp(&info0, &info1, sizeof(info0)) == 0);
	ck_assert(memcmp(before, x, sizeof(x)) == 0);
	gsp_node_free(node);
	gsp_layout_free(layout);
}
END_TEST

int main(void)
{
	/* Two workers, so the large case runs pg_run's spread path; small
	 * (valgrind) runs leave that case out. */
	setenv("GSP_THREADS", "2", 1);
	int n = test_small() ? N_CASES - 1 : N_CASES;
	Suite *s = suite_create("rollback");
	TCase *tc = tcase_create("rollback");
	tcase_set_timeout(tc, 240);
	tcase_add_loop_test(tc, test_take_back_applied, 0, n);
	tcase_add_loop_test(tc, test_take_back_projected, 0, n);
	tcase_add_loop_test(tc, test_take_back_disabled, 0, n);
	tcase_add_loop_test(tc, test_completed_dropped, 0, n);
	tcase_add_loop_test(tc, test_refused, 0, n);
	tcase_add_loop_test(tc, test_nothing_to_do, 0, n);
	tcase_add_test(tc, test_choco_not_supported);
	suite_add_tcase(s, tc);
	return run_suite(s);
}
