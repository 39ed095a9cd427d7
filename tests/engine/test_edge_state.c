/* gsp_node_edge_save and gsp_node_edge_load: an edge's state, saved at
 * any point of a round (idle, in flight, completed) and loaded into a
 * fresh node over a copy of the parameters, goes on exactly as the
 * original does (same messages, same parameters, bit for bit); bytes
 * that do not fit the node are refused and change nothing.  PowerGossip
 * warm and cold (whose factors' buffers swap every round), with 16-bit
 * factors on the wire (whose records hold 16-bit messages), and exact
 * gossip (that choco cannot save is test_rollback's
 * test_choco_not_supported). */
#include "internal.h"
#include "testutil.h"

typedef struct method_case {
	const char *name;
	gsp_method method;
	unsigned rank;
	bool warm;
	gsp_dtype wire;    /* powergossip's factors on the wire */
} method_case;

static const method_case cases[] = {
	{"pg rank 1 warm", GSP_METHOD_POWERGOSSIP, 1, true, GSP_DTYPE_FLOAT32},
	{"pg rank 3 warm", GSP_METHOD_POWERGOSSIP, 3, true, GSP_DTYPE_FLOAT32},
	{"pg rank 2 cold", GSP_METHOD_POWERGOSSIP, 2, false, GSP_DTYPE_FLOAT32},
	{"pg rank 2 float16 wire", GSP_METHOD_POWERGOSSIP, 2, true, GSP_DTYPE_FLOAT16},
	{"pg rank 1 bfloat16 wire", GSP_METHOD_POWERGOSSIP, 1, true, GSP_DTYPE_BFLOAT16},
	{"exact", GSP_METHOD_EXACT, 1, true, GSP_DTYPE_FLOAT32},
};
#define N_CASES ((int)(sizeof(cases) / sizeof(*cases)))
#define SPEC "6x5,4x7,3"

/* One end: its parameters and node with one edge. */
typedef struct end {
	float *x;
	gsp_node *node;
} end;

static gsp_config config(const method_case *mc)
{
	gsp_config cfg = config_of(mc->method, mc->rank, 0.8);
	cfg.warm_start = mc->warm;
	cfg.wire = mc->wire;
	return cfg;
}

static end end_new(const method_case *mc, const gsp_layout *l, const float *x0,
		   gsp_role role, int seed_no)
{
	size_t n = gsp_layout_floats(l);
	end e = {.x = malloc(n * sizeof(float))};
	ck_assert_ptr_nonnull(e.x);
	memcpy(e.x, x0, n * sizeof(float));
	gsp_config cfg = config(mc);
	ck_assert_int_eq(gsp_node_new(l, e.x, &cfg, &e.node), 0);
	uint8_t seed[GSP_SEED_BYTES];
	cluster_seed(seed, seed_no);
	ck_assert_int_eq(gsp_node_add_edge(e.node, 0.5f, role, seed, sizeof(seed)), 0);
	return e;
}

static void end_free(end *e)
{
	gsp_node_free(e->node);
	free(e->x);
}

static void deliver(const end *from, end *to)
{
	const void *msg;
	size_t len;
	uint64_t round;
	ck_assert_int_eq(gsp_node_message(from->node, 0, &msg, &len, &round), 0);
	ck_assert_int_eq(gsp_node_complete(to->node, 0, round, msg, len), 0);
}

/* A copy of `e` made from its saved edge: a fresh node (another seed,
 * which the load replaces) over a copy of its parameters. */
static end twin(const method_case *mc, const gsp_layout *l, const end *e)
{
	end t = end_new(mc, l, e->x, GSP_ROLE_LO, 99);
	uint8_t *buf;
	size_t len;
	ck_assert_int_eq(gsp_node_edge_save(e->node, 0, &buf, &len), 0);
	ck_assert_int_eq(gsp_node_edge_load(t.node, 0, buf, len), 0);
	free(buf);
	return t;
}

static void assert_same(const end *a, const end *b, size_t n, const char *name)
{
	ck_assert_msg(!memcmp(a->x, b->x, n * sizeof(float)), "%s: parameters differ", name);
	gsp_edge_info ia, ib;
	ck_assert_int_eq(gsp_node_edge_info(a->node, 0, &ia), 0);
	ck_assert_int_eq(gsp_node_edge_info(b->node, 0, &ib), 0);
	ck_assert_int_eq(ia.state, ib.state);
	ck_assert_uint_eq(ia.round, ib.round);
	ck_assert_int_eq(ia.role, ib.role);
	const void *ma, *mb;
	size_t la, lb;
	if (ia.round) {
		ck_assert_int_eq(gsp_node_message(a->node, 0, &ma, &la, NULL), 0);
		ck_assert_int_eq(gsp_node_message(b->node, 0, &mb, &lb, NULL), 0);
		ck_assert_uint_eq(la, lb);
		ck_assert_msg(!memcmp(ma, mb, la), "%s: messages differ", name);
	}
}

/* Rounds at `lo` and its peer `hi`; at `point` (0 idle after a step's
 * apply of round 2, 1 in flight, 2 completed) lo is saved and its twin
 * goes on beside it with the same messages from hi. */
/* The two ends of one edge over SPEC, from gaussian parameters of
 * stream `fill` (pair_free frees it all). */
typedef struct pair {
	gsp_layout *l;
	size_t n;
	float *x0, *y0;
	end lo, hi;
} pair;

static void pair_new(const method_case *mc, uint64_t fill, pair *p)
{
	ck_assert_int_eq(gsp_layout_parse(SPEC, &p->l), 0);
	p->n = gsp_layout_floats(p->l);
	p->x0 = malloc(p->n * sizeof(float));
	p->y0 = malloc(p->n * sizeof(float));
	gsp_fill_gaussian(p->x0, p->n, fill, 0);
	gsp_fill_gaussian(p->y0, p->n, fill, 1);
	p->lo = end_new(mc, p->l, p->x0, GSP_ROLE_LO, 5);
	p->hi = end_new(mc, p->l, p->y0, GSP_ROLE_HI, 5);
}

static void pair_free(pair *p)
{
	end_free(&p->lo);
	end_free(&p->hi);
	free(p->x0);
	free(p->y0);
	gsp_layout_free(p->l);
}

/* A round at both ends: each steps, then each gets the other's message. */
static void pair_round(pair *p)
{
	ck_assert_int_eq(gsp_node_step(p->lo.node), 1);
	ck_assert_int_eq(gsp_node_step(p->hi.node), 1);
	deliver(&p->hi, &p->lo);
	deliver(&p->lo, &p->hi);
}

START_TEST(test_continues)
{
	const method_case *mc = &cases[_i / 3];
	int point = _i % 3;
	pair p;
	pair_new(mc, 31, &p);
	gsp_layout *l = p.l;
	size_t n = p.n;
	end lo = p.lo, hi = p.hi;
	for (int r = 0; r < 2; r++)
		pair_round(&p);
	if (point == 0)
		ck_assert_int_eq(gsp_node_apply(lo.node), 1);
	if (point >= 1) {
		ck_assert_int_eq(gsp_node_step(lo.node), 1);
		ck_assert_int_eq(gsp_node_step(hi.node), 1);
	}
	if (point == 2)
		deliver(&hi, &lo);
	end t = twin(mc, l, &lo);
	assert_same(&lo, &t, n, mc->name);
	/* The round under way ends at both, then three more. */
	if (point == 1) {
		deliver(&hi, &lo);
		deliver(&hi, &t);
	}
	if (point >= 1)
		deliver(&lo, &hi);
	assert_same(&lo, &t, n, mc->name);
	for (int r = 0; r < 3; r++) {
		ck_assert_int_eq(gsp_node_step(lo.node), 1);
		ck_assert_int_eq(gsp_node_step(t.node), 1);
		ck_assert_int_eq(gsp_node_step(hi.node), 1);
		deliver(&hi, &lo);
		deliver(&hi, &t);
		deliver(&lo, &hi);
		assert_same(&lo, &t, n, mc->name);
	}
	end_free(&t);
	pair_free(&p);
}
END_TEST

/* gsp_node_edge_hold: a held edge is not projected, keeps its state,
 * applies a completed round and projects again once let go, its rounds
 * going on where they were; a bad edge is -EINVAL. */
START_TEST(test_hold)
{
	pair p;
	pair_new(&cases[_i], 3, &p);
	end lo = p.lo;
	pair_round(&p);
	ck_assert_int_eq(gsp_node_edge_hold(lo.node, 0, true), 0);
	ck_assert_int_eq(gsp_node_edge_hold(lo.node, 1, true), -EINVAL);
	/* Held: the completed round applies, nothing is projected. */
	float before = lo.x[0];
	ck_assert_int_eq(gsp_node_step(lo.node), 0);
	ck_assert(lo.x[0] != before);
	gsp_edge_info info;
	ck_assert_int_eq(gsp_node_edge_info(lo.node, 0, &info), 0);
	ck_assert_int_eq(info.state, GSP_EDGE_IDLE);
	ck_assert_uint_eq(info.round, 1);
	ck_assert_int_eq(gsp_node_project(lo.node), 0);
	/* Let go: round 2 with the peer, as if never held. */
	ck_assert_int_eq(gsp_node_edge_hold(lo.node, 0, false), 0);
	pair_round(&p);
	ck_assert_int_eq(gsp_node_edge_info(lo.node, 0, &info), 0);
	ck_assert_uint_eq(info.round, 2);
	ck_assert_int_eq(info.state, GSP_EDGE_COMPLETED);
	pair_free(&p);
}
END_TEST

START_TEST(test_refuses_what_does_not_fit)
{
	const method_case *mc = &cases[_i];
	gsp_layout *l, *other;
	ck_assert_int_eq(gsp_layout_parse(SPEC, &l), 0);
	ck_assert_int_eq(gsp_layout_parse("6x5,4x7,4", &other), 0);
	size_t n = gsp_layout_floats(l);
	float *x0 = calloc(n + 1, sizeof(float));
	gsp_fill_gaussian(x0, n, 7, 0);
	end a = end_new(mc, l, x0, GSP_ROLE_LO, 5);
	ck_assert_int_eq(gsp_node_step(a.node), 1);
	uint8_t *buf;
	size_t len, size;
	ck_assert_int_eq(gsp_node_edge_save(a.node, 0, &buf, &len), 0);
	/* The size a caller with a budget asks for first is the saved one. */
	ck_assert_int_eq(gsp_node_edge_state_size(a.node, 0, &size), 0);
	ck_assert_uint_eq(size, len);
	ck_assert_int_eq(gsp_node_edge_state_size(a.node, 1, &size), -EINVAL);
	ck_assert_int_eq(gsp_node_edge_state_size(a.node, 0, NULL), -EINVAL);
	end b = end_new(mc, l, x0, GSP_ROLE_HI, 6);
	gsp_edge_info before, after;
	ck_assert_int_eq(gsp_node_edge_info(b.node, 0, &before), 0);
	/* Cut anywhere, or one byte more, or a bad magic. */
	for (size_t k = 0; k < len; k++)
		ck_assert_int_eq(gsp_node_edge_load(b.node, 0, buf, k), -EBADMSG);
	uint8_t *more = malloc(len + 1);
	memcpy(more, buf, len);
	more[len] = 0;
	ck_assert_int_eq(gsp_node_edge_load(b.node, 0, more, len + 1), -EBADMSG);
	more[0] ^= 1;
	ck_assert_int_eq(gsp_node_edge_load(b.node, 0, more, len), -EBADMSG);
	free(more);
	ck_assert_int_eq(gsp_node_edge_info(b.node, 0, &after), 0);
	ck_assert(!memcmp(&before, &after, sizeof(before)));
	/* Another layout: other sizes. */
	end c = end_new(mc, other, x0, GSP_ROLE_LO, 5);
	ck_assert_int_eq(gsp_node_edge_load(c.node, 0, buf, len), -EBADMSG);
	ck_assert_int_eq(gsp_node_edge_load(c.node, 1, buf, len), -EINVAL);
	/* PowerGossip at another wire precision: messages of another size. */
	if (mc->method == GSP_METHOD_POWERGOSSIP) {
		method_case wide = *mc;
		wide.wire = mc->wire == GSP_DTYPE_FLOAT32 ? GSP_DTYPE_FLOAT16
							  : GSP_DTYPE_FLOAT32;
		end d = end_new(&wide, l, x0, GSP_ROLE_HI, 6);
		ck_assert_int_eq(gsp_node_edge_load(d.node, 0, buf, len), -EBADMSG);
		end_free(&d);
	}
	free(buf);
	end_free(&a);
	end_free(&b);
	end_free(&c);
	free(x0);
	gsp_layout_free(l);
	gsp_layout_free(other);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("edge_state");
	TCase *tc = tcase_create("edge_state");
	tcase_add_loop_test(tc, test_continues, 0, 3 * N_CASES);
	tcase_add_loop_test(tc, test_refuses_what_does_not_fit, 0, N_CASES);
	tcase_add_loop_test(tc, test_hold, 0, N_CASES);
	suite_add_tcase(s, tc);
	return run_suite(s);
}
