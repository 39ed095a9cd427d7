/* 16-bit parameters: the float16 and bfloat16 conversions (16 -> 32 bits
 * over all 65536 inputs against a reference made with ldexp; 32 -> 16
 * bits at every midpoint between two neighbouring 16-bit values and at
 * the edges: NaN, infinity, subnormals, overflow), and a 16-bit node's
 * float32 master copy: gossip conserves the masters' sum as float32
 * gossip does, with the trainers' changes to the 16-bit buffers counted
 * exactly, and the buffers hold the rounded masters. */
#include <float.h>
#include <stdint.h>

#include "internal.h"
#include "testutil.h"

static uint32_t bits(float f)
{
	uint32_t u;
	memcpy(&u, &f, sizeof(u));
	return u;
}

static float from_bits(uint32_t u)
{
	float f;
	memcpy(&f, &u, sizeof(f));
	return f;
}

/* The reference value of a 16-bit pattern with `mbits` mantissa bits
 * and an exponent of `ebits` bits. */
static double reference(uint16_t h, unsigned ebits, unsigned mbits)
{
	unsigned emax = (1u << ebits) - 1, bias = emax / 2;
	unsigned e = (h >> mbits) & emax, m = h & ((1u << mbits) - 1);
	double sign = (h & 0x8000u) ? -1.0 : 1.0;
	if (e == emax)
		return m ? NAN : sign * INFINITY;
	if (e == 0)
		return sign * ldexp(m, 1 - (int)bias - (int)mbits);
	return sign * ldexp((1u << mbits) + m, (int)e - (int)bias - (int)mbits);
}

typedef struct kind {
	float (*from16)(uint16_t);
	uint16_t (*to16)(float);
	unsigned ebits, mbits;
	uint16_t max_finite;   /* largest finite, positive */
} kind;

static const kind half = {gsp_half_to_float, gsp_float_to_half, 5, 10, 0x7bff};
static const kind bf16 = {gsp_bf16_to_float, gsp_float_to_bf16, 8, 7, 0x7f7f};

/* Every pattern; under valgrind (test_small) every 13th, odd and even
 * ones alike: the plain build takes them all. */
static void check_from16_all(const kind *k)
{
	const uint32_t stride = test_size(1, 13);
	for (uint32_t h = 0; h <= 0xffff; h += stride) {
		float f = k->from16((uint16_t)h);
		double want = reference((uint16_t)h, k->ebits, k->mbits);
		if (isnan(want)) {
			ck_assert_msg(isnan(f), "0x%04x: %a is not NaN", h, f);
			ck_assert_int_eq(!!signbit(f), !!(h & 0x8000u));
			/* The payload stays (its top bits). */
			uint32_t pay = h & ((1u << k->mbits) - 1);
			ck_assert_uint_eq((bits(f) >> (23 - k->mbits)) & ((1u << k->mbits) - 1), pay);
		} else {
			ck_assert_msg((double)f == want && !!signbit(f) == !!signbit(want),
				      "0x%04x: %a, want %a", h, f, want);
			/* and back, bit for bit */
			ck_assert_uint_eq(k->to16(f), h);
		}
	}
}

START_TEST(test_half_from16_exhaustive)
{
	check_from16_all(&half);
}
END_TEST

START_TEST(test_bf16_from16_exhaustive)
{
	check_from16_all(&bf16);
}
END_TEST

/* Between every two neighbouring finite values a < b of either sign:
 * the midpoint (exact in float32) goes to the even one, anything above
 * it to b, anything below to a. */
static void check_to16_midpoints(const kind *k)
{
	const uint32_t stride = test_size(1, 13);   /* as check_from16_all */
	for (uint32_t sign = 0; sign <= 0x8000u; sign += 0x8000u)
		for (uint32_t h = 0; h < k->max_finite; h += stride) {
			uint16_t a = (uint16_t)(sign | h), b = (uint16_t)(sign | (h + 1));
			float fa = k->from16(a), fb = k->from16(b);
			float mid = (float)(((double)fa + (double)fb) / 2);
			ck_assert((double)mid == ((double)fa + (double)fb) / 2);
			uint16_t even = (h & 1u) ? b : a;
			ck_assert_msg(k->to16(mid) == even, "mid of 0x%04x: 0x%04x", a,
				      k->to16(mid));
			ck_assert_uint_eq(k->to16(nextafterf(mid, fb)), b);
			ck_assert_uint_eq(k->to16(nextafterf(mid, fa)), a);
		}
}

START_TEST(test_half_to16_midpoints)
{
	check_to16_midpoints(&half);
}
END_TEST

START_TEST(test_bf16_to16_midpoints)
{
	check_to16_midpoints(&bf16);
}
END_TEST

START_TEST(test_half_to16_edges)
{
	ck_assert_uint_eq(gsp_float_to_half(0.0f), 0x0000);
	ck_assert_uint_eq(gsp_float_to_half(-0.0f), 0x8000);
	ck_assert_uint_eq(gsp_float_to_half(INFINITY), 0x7c00);
	ck_assert_uint_eq(gsp_float_to_half(-INFINITY), 0xfc00);
	/* Overflow: 65504 is the largest; 65520, its tie with 2^16, and up
	 * round to infinity. */
	ck_assert_uint_eq(gsp_float_to_half(65504.0f), 0x7bff);
	ck_assert_uint_eq(gsp_float_to_half(nextafterf(65520.0f, 0)), 0x7bff);
	ck_assert_uint_eq(gsp_float_to_half(65520.0f), 0x7c00);
	ck_assert_uint_eq(gsp_float_to_half(-1e6f), 0xfc00);
	ck_assert_uint_eq(gsp_float_to_half(FLT_MAX), 0x7c00);
	/* Subnormals: 2^-24 is the smallest; 2^-25, its tie with 0, is 0. */
	ck_assert_uint_eq(gsp_float_to_half(0x1p-24f), 0x0001);
	ck_assert_uint_eq(gsp_float_to_half(0x1p-25f), 0x0000);
	ck_assert_uint_eq(gsp_float_to_half(nextafterf(0x1p-25f, 1)), 0x0001);
	ck_assert_uint_eq(gsp_float_to_half(-0x1p-26f), 0x8000);
	ck_assert_uint_eq(gsp_float_to_half(0x1.8p-24f), 0x0002);   /* tie: even */
	ck_assert_uint_eq(gsp_float_to_half(0x1p-14f), 0x0400);     /* smallest normal */
	ck_assert_uint_eq(gsp_float_to_half(nextafterf(0x1p-14f, 0)), 0x0400);
	ck_assert_uint_eq(gsp_float_to_half(FLT_MIN), 0x0000);
	ck_assert_uint_eq(gsp_float_to_half(from_bits(1)), 0x0000); /* float32 subnormal */
	/* NaN: quiet, sign kept, even with only low payload bits. */
	uint16_t n = gsp_float_to_half(from_bits(0x7f800001u));
	ck_assert((n & 0x7c00u) == 0x7c00u && (n & 0x3ffu) != 0 && (n & 0x200u));
	n = gsp_float_to_half(from_bits(0xffc00000u));
	ck_assert((n & 0xfe00u) == 0xfe00u);
}
END_TEST

START_TEST(test_bf16_to16_edges)
{
	ck_assert_uint_eq(gsp_float_to_bf16(-0.0f), 0x8000);
	ck_assert_uint_eq(gsp_float_to_bf16(INFINITY), 0x7f80);
	ck_assert_uint_eq(gsp_float_to_bf16(FLT_MAX), 0x7f80);      /* overflow */
	ck_assert_uint_eq(gsp_float_to_bf16(from_bits(0x7f7f7fffu)), 0x7f7f);
	ck_assert_uint_eq(gsp_float_to_bf16(from_bits(0x7f7f8000u)), 0x7f80); /* tie: even */
	ck_assert_uint_eq(gsp_float_to_bf16(from_bits(0x00008000u)), 0x0000); /* tie: even */
	ck_assert_uint_eq(gsp_float_to_bf16(from_bits(0x00018000u)), 0x0002);
	ck_assert_uint_eq(gsp_float_to_bf16(from_bits(0x00008001u)), 0x0001);
	ck_assert_uint_eq(gsp_float_to_bf16(FLT_MIN), 0x0080);
	uint16_t n = gsp_float_to_bf16(from_bits(0x7f800001u));
	ck_assert((n & 0x7f80u) == 0x7f80u && (n & 0x7fu) != 0);
	n = gsp_float_to_bf16(from_bits(0xff800001u));
	ck_assert((n & 0xff80u) == 0xff80u && (n & 0x7fu) != 0);
}
END_TEST

START_TEST(test_dtype_names)
{
	gsp_dtype d;
	ck_assert_int_eq(gsp_dtype_parse("bfloat16", &d), 0);
	ck_assert_int_eq(d, GSP_DTYPE_BFLOAT16);
	ck_assert_int_eq(gsp_dtype_parse("float16", &d), 0);
	ck_assert_int_eq(d, GSP_DTYPE_FLOAT16);
	ck_assert_int_eq(gsp_dtype_parse("float64", &d), -EINVAL);
	ck_assert_uint_eq(gsp_dtype_size(GSP_DTYPE_FLOAT32), 4);
	ck_assert_uint_eq(gsp_dtype_size(GSP_DTYPE_FLOAT16), 2);
	ck_assert_uint_eq(gsp_dtype_size((gsp_dtype)3), 0);
	ck_assert_ptr_null(gsp_dtype_name((gsp_dtype)3));
	gsp_layout *l;
	gsp_node *node;
	gsp_config cfg;
	uint16_t buf[4] = {0};
	gsp_config_default(&cfg);
	ck_assert_int_eq(gsp_layout_parse("4", &l), 0);
	ck_assert_int_eq(gsp_node_new_typed(l, buf, (gsp_dtype)3, &cfg, &node), -EINVAL);
	gsp_layout_free(l);
}
END_TEST

/* ---- the passes over a buffer and its master -------------------------- */

static uint64_t lcg(uint64_t *s)
{
	*s = *s * 6364136223846793005ull + 1442695040888963407ull;
	return *s >> 33;
}


/* The passes (vector or scalar, as GSP_KERNEL and the CPU pick) against
 * their definition, over every 16-bit pattern as the buffer's value, the
 * seen value the master's rounding, its neighbour's, or any (a master
 * anywhere, an infinity, a NaN), at odd counts (the vector passes'
 * tails). */
static void check_passes(const kind *k, gsp_dtype dtype)
{
	/* Each of the 4 cases over every pattern (under valgrind every 16th:
	 * test_small()), then 5 more for the tails. */
	const size_t step = test_size(1, 64), quarter = 65536 / step, n = 4 * quarter + 5;
	float *master = malloc(n * sizeof(float)), *want = malloc(n * sizeof(float));
	uint16_t *buf = malloc(n * sizeof(uint16_t)), *seen = malloc(n * sizeof(uint16_t));
	ck_assert(master && want && buf && seen);
	uint64_t s = 3;
	for (size_t i = 0; i < n; i++) {
		uint16_t p = (uint16_t)(i % quarter * step);
		float v = k->from16((uint16_t)(p + (i / quarter == 1)));
		switch (i / quarter) {
		case 0: master[i] = v; break;                               /* unchanged */
		case 1: master[i] = v * (1 + 0x1p-12f * (float)(lcg(&s) % 9)); break;
		case 2: master[i] = from_bits((uint32_t)lcg(&s) << 1 ^ (uint32_t)lcg(&s)); break;
		default: master[i] = i & 1 ? INFINITY : -NAN; break;
		}
		buf[i] = i / quarter == 2 ? (uint16_t)lcg(&s) : p;
		seen[i] = i / quarter == 2 && i & 1 ? (uint16_t)lcg(&s) : k->to16(master[i]);
	}
	for (size_t i = 0; i < n; i++) {             /* the definition */
		float fs = k->from16(seen[i]);
		want[i] = buf[i] == seen[i] ? master[i]
			  : k->from16(buf[i]) + (isfinite(fs) ? master[i] - fs : 0.0f);
	}
	gsp__dtype_arrays a = {master, buf, seen};
	gsp__dtype_read_in(dtype, &a, n);
	for (size_t i = 0; i < n; i++) {
		ck_assert_msg(bits(master[i]) == bits(want[i]) ||
			      (isnan(master[i]) && isnan(want[i])),
			      "read in %zu (0x%04x): %a, want %a", i, buf[i], master[i], want[i]);
		ck_assert_uint_eq(seen[i], buf[i]);
	}
	gsp__dtype_write_out(dtype, &a, n);
	for (size_t i = 0; i < n; i++) {
		ck_assert_msg(buf[i] == k->to16(master[i]), "write out %zu: 0x%04x, want 0x%04x",
			      i, buf[i], k->to16(master[i]));
		ck_assert_uint_eq(seen[i], buf[i]);
	}
	free(master);
	free(want);
	free(buf);
	free(seen);
}

START_TEST(test_half_passes)
{
	check_passes(&half, GSP_DTYPE_FLOAT16);
}
END_TEST

START_TEST(test_bf16_passes)
{
	check_passes(&bf16, GSP_DTYPE_BFLOAT16);
}
END_TEST

/* ---- a 16-bit node's master copy -------------------------------------- */

#define NODES 3
typedef struct ring16 {
	gsp_layout *layout;
	gsp_node *node[NODES];
	uint16_t *buf[NODES];
	size_t n;
	const kind *k;
} ring16;

/* Three nodes in a ring (edge e between node e and e+1), buffers of
 * dtype filled with values in [-2, 2). */
static ring16 ring_new(gsp_dtype dtype, gsp_method method)
{
	ring16 r = {.k = dtype == GSP_DTYPE_FLOAT16 ? &half : &bf16};
	gsp_config cfg = config_of(method, 2, 1.0);
	uint64_t s = 99;
	ck_assert_int_eq(gsp_layout_parse("24x16,16", &r.layout), 0);
	r.n = gsp_layout_floats(r.layout);
	for (int i = 0; i < NODES; i++) {
		r.buf[i] = malloc(r.n * sizeof(uint16_t));
		ck_assert_ptr_nonnull(r.buf[i]);
		for (size_t j = 0; j < r.n; j++)
			r.buf[i][j] = r.k->to16((float)(lcg(&s) % 4096) / 1024.0f - 2.0f);
		ck_assert_int_eq(gsp_node_new_typed(r.layout, r.buf[i], dtype, &cfg,
						    &r.node[i]), 0);
	}
	for (int e = 0; e < NODES; e++) {
		uint8_t seed[GSP_SEED_BYTES];
		cluster_seed(seed, (uint8_t)(e + 1));
		/* node e's edge 0 goes to e + 1 (lo), its edge 1 to e - 1 (hi) */
		ck_assert_int_eq(gsp_node_add_edge(r.node[e], 1.0f / 3, GSP_ROLE_LO,
						   seed, sizeof(seed)), 0);
	}
	for (int e = 0; e < NODES; e++) {
		uint8_t seed[GSP_SEED_BYTES];
		cluster_seed(seed, (uint8_t)(e + 1));
		ck_assert_int_eq(gsp_node_add_edge(r.node[(e + 1) % NODES], 1.0f / 3,
						   GSP_ROLE_HI, seed, sizeof(seed)), 1);
	}
	return r;
}

static void ring_free(ring16 *r)
{
	for (int i = 0; i < NODES; i++) {
		gsp_node_free(r->node[i]);
		free(r->buf[i]);
	}
	gsp_layout_free(r->layout);
}

/* One synchronous round: every node steps, then each edge's two
 * messages are exchanged. */
static void ring_round(ring16 *r)
{
	for (int i = 0; i < NODES; i++)
		ck_assert_int_ge(gsp_node_step(r->node[i]), 0);
	for (int e = 0; e < NODES; e++) {
		gsp_node *lo = r->node[e], *hi = r->node[(e + 1) % NODES];
		const void *ml, *mh;
		size_t ll, lh;
		uint64_t rl, rh;
		ck_assert_int_eq(gsp_node_message(lo, 0, &ml, &ll, &rl), 0);
		ck_assert_int_eq(gsp_node_message(hi, 1, &mh, &lh, &rh), 0);
		ck_assert_int_eq(gsp_node_complete(lo, 0, rh, mh, lh), 0);
		ck_assert_int_eq(gsp_node_complete(hi, 1, rl, ml, ll), 0);
	}
}

static double master_sum(const ring16 *r, size_t j)
{
	double s = 0;
	for (int i = 0; i < NODES; i++)
		s += gsp_node_values(r->node[i])[j];
	return s;
}

/* Gossip with a trainer at every node that changes its 16-bit buffer
 * between steps: each parameter's sum over the masters moves by exactly
 * the trainers' changes of the buffers (up to float32 rounding, as with
 * float32 parameters), never by the rounding of the buffers; each buffer
 * holds its rounded master after every step; the nodes approach
 * consensus.  Dropping the part of the master below the 16-bit precision
 * at a trainer's change would move the sum by up to half a unit in the
 * last 16-bit place per change. */
static void check_masters_conserved(gsp_dtype dtype, gsp_method method)
{
	ring16 r = ring_new(dtype, method);
	double *want = calloc(r.n, sizeof(double));
	ck_assert_ptr_nonnull(want);
	for (size_t j = 0; j < r.n; j++)
		want[j] = master_sum(&r, j);
	uint64_t s = 5;
	const unsigned rounds = 40;
	double tol = 0;
	for (unsigned t = 0; t < rounds; t++) {
		ring_round(&r);
		tol += NODES * 8 * 0x1p-24;     /* float32 roundings per round, |x| < 4 */
		for (int i = 0; i < NODES; i++)
			for (size_t j = 0; j < r.n; j++)
				ck_assert_uint_eq(r.buf[i][j],
						  r.k->to16(gsp_node_values(r.node[i])[j]));
		for (size_t j = 0; j < r.n; j++)
			ck_assert_msg(fabs(master_sum(&r, j) - want[j]) <= tol,
				      "round %u, value %zu: sum %.9g, want %.9g", t, j,
				      master_sum(&r, j), want[j]);
		/* The trainers: a small step on a few values of each buffer. */
		for (int i = 0; i < NODES; i++)
			for (size_t j = lcg(&s) % 7; j < r.n; j += 7) {
				uint16_t old = r.buf[i][j];
				float v = r.k->from16(old) + ((float)(lcg(&s) % 64) - 31.5f) / 256.0f;
				r.buf[i][j] = r.k->to16(v);
				want[j] += (double)r.k->from16(r.buf[i][j]) - r.k->from16(old);
			}
	}
	/* Without trainers, the nodes agree on every value to 16 bits. */
	double spread = 0;
	for (unsigned t = 0; t < 60; t++)
		ring_round(&r);
	for (size_t j = 0; j < r.n; j++)
		for (int i = 1; i < NODES; i++)
			spread = fmax(spread, fabs(gsp_node_values(r.node[i])[j] -
						   gsp_node_values(r.node[0])[j]));
	ck_assert_msg(spread < 1e-3, "spread %g", spread);
	free(want);
	ring_free(&r);
}

START_TEST(test_bf16_exact_conserved)
{
	check_masters_conserved(GSP_DTYPE_BFLOAT16, GSP_METHOD_EXACT);
}
END_TEST

START_TEST(test_half_exact_conserved)
{
	check_masters_conserved(GSP_DTYPE_FLOAT16, GSP_METHOD_EXACT);
}
END_TEST

START_TEST(test_bf16_powergossip_conserved)
{
	check_masters_conserved(GSP_DTYPE_BFLOAT16, GSP_METHOD_POWERGOSSIP);
}
END_TEST

START_TEST(test_half_powergossip_conserved)
{
	check_masters_conserved(GSP_DTYPE_FLOAT16, GSP_METHOD_POWERGOSSIP);
}
END_TEST

/* A step that finds the buffer as the node left it changes no master; a
 * trainer's value over a master that overflowed to infinity replaces it
 * (no inf - inf). */
START_TEST(test_read_in_unchanged_and_overflow)
{
	gsp_layout *l;
	gsp_node *node;
	gsp_config cfg = config_of(GSP_METHOD_EXACT, 1, 1.0);
	uint16_t buf[2] = {gsp_float_to_half(1.0f), gsp_float_to_half(-3.0f)};
	ck_assert_int_eq(gsp_layout_parse("2", &l), 0);
	ck_assert_int_eq(gsp_node_new_typed(l, buf, GSP_DTYPE_FLOAT16, &cfg, &node), 0);
	const float *m = gsp_node_values(node);
	ck_assert(m != (const float *)buf && m[0] == 1.0f && m[1] == -3.0f);
	ck_assert_int_eq(gsp_node_step(node), 0);          /* no edges */
	ck_assert(m[0] == 1.0f && m[1] == -3.0f);
	gsp_node_free(node);

	buf[0] = 0x7c00;                                  /* +inf */
	ck_assert_int_eq(gsp_node_new_typed(l, buf, GSP_DTYPE_FLOAT16, &cfg, &node), 0);
	uint8_t seed[GSP_SEED_BYTES];
	cluster_seed(seed, 1);
	ck_assert_int_eq(gsp_node_add_edge(node, 0.5f, GSP_ROLE_LO, seed, sizeof(seed)), 0);
	buf[0] = gsp_float_to_half(2.0f);                 /* the trainer's */
	ck_assert_int_eq(gsp_node_step(node), 1);
	m = gsp_node_values(node);
	ck_assert(m[0] == 2.0f);
	gsp_node_free(node);
	gsp_layout_free(l);
}
END_TEST

/* A trainer's value whose rounding unit is smaller than what the master
 * keeps below 16 bits: a master 1 + 3 * 2^-10 (0.375 ulp(1)) read in over
 * the trainer's 1 - 2^-8 (bfloat16's largest below 1) is 1 - 2^-10, which
 * rounds to 1.0, not to the trainer's value.  The next step, the buffer left as it was, changes
 * nothing (telling the trainer's changes by the master's rounding would
 * take that rounding for one, and move the master by 2^-8). */
START_TEST(test_change_into_a_finer_binade)
{
	float master = 1.0f + 3 * 0x1p-10f;
	uint16_t buf = gsp_float_to_bf16(1.0f), seen = buf;
	gsp__dtype_arrays a = {&master, &buf, &seen};
	buf = gsp_float_to_bf16(1.0f - 0x1p-8f);              /* the trainer's */
	gsp__dtype_read_in(GSP_DTYPE_BFLOAT16, &a, 1);
	ck_assert_float_eq(master, 1.0f - 0x1p-10f);
	ck_assert_uint_eq(gsp_float_to_bf16(master), gsp_float_to_bf16(1.0f));
	float before = master;
	gsp__dtype_read_in(GSP_DTYPE_BFLOAT16, &a, 1);
	ck_assert_float_eq(master, before);
	gsp__dtype_write_out(GSP_DTYPE_BFLOAT16, &a, 1);
	ck_assert_uint_eq(buf, gsp_float_to_bf16(1.0f));
}
END_TEST

int main(void)
{
	Suite *s = suite_create("dtype");
	TCase *tc = tcase_create("dtype");
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_half_from16_exhaustive);
	tcase_add_test(tc, test_bf16_from16_exhaustive);
	tcase_add_test(tc, test_half_to16_midpoints);
	tcase_add_test(tc, test_bf16_to16_midpoints);
	tcase_add_test(tc, test_half_to16_edges);
	tcase_add_test(tc, test_bf16_to16_edges);
	tcase_add_test(tc, test_dtype_names);
	tcase_add_test(tc, test_half_passes);
	tcase_add_test(tc, test_bf16_passes);
	tcase_add_test(tc, test_change_into_a_finer_binade);
	tcase_add_test(tc, test_bf16_exact_conserved);
	tcase_add_test(tc, test_half_exact_conserved);
	tcase_add_test(tc, test_bf16_powergossip_conserved);
	tcase_add_test(tc, test_half_powergossip_conserved);
	tcase_add_test(tc, test_read_in_unchanged_and_overflow);
	suite_add_tcase(s, tc);
	return run_suite(s);
}
