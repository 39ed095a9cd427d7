/* Layouts (parsing, matrix views, limits), error texts, method names, the
 * deterministic edge RNG, the orthonormalization with refill and the
 * finiteness checks. */
#include <float.h>
#include <math.h>

#include "internal.h"
#include "testutil.h"

START_TEST(test_layout_views)
{
	gsp_layout *l;
	ck_assert_int_eq(gsp_layout_parse("64x3x7x7,64,1000x2048,7", &l), 0);
	ck_assert_uint_eq(gsp_layout_count(l), 4);
	const gsp_tensor *t = gsp_layout_tensor(l, 0);
	ck_assert(t->compressed);
	ck_assert_uint_eq(t->m, 64);
	ck_assert_uint_eq(t->k, 3 * 7 * 7);
	ck_assert_str_eq(t->name, "t0");
	t = gsp_layout_tensor(l, 1);
	ck_assert(!t->compressed);
	ck_assert_uint_eq(t->offset, 64 * 147);
	t = gsp_layout_tensor(l, 3);
	ck_assert_uint_eq(t->offset, 64 * 147 + 64 + 1000 * 2048);
	ck_assert_uint_eq(gsp_layout_floats(l), 64 * 147 + 64 + 2048000 + 7);
	ck_assert_ptr_null(gsp_layout_tensor(l, 4));
	gsp_layout_free(l);
	gsp_layout_free(NULL);
}
END_TEST

START_TEST(test_layout_rejects)
{
	static const char *bad[] = {
		"", "0", "10x0", "x10", "10x", "10,", ",10", "10,,3", "10 x3",
		"-1", "+1", "1x2x3x4x5x6x7x8x9", "274877906945", "524288x524289",
		"10y3", "10\n", "1e3",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(*bad); i++) {
		gsp_layout *l = (gsp_layout *)0x1;
		ck_assert_msg(gsp_layout_parse(bad[i], &l) < 0, "accepted '%s'", bad[i]);
		ck_assert_ptr_eq(l, (gsp_layout *)0x1);
	}
	gsp_tensor t = {.ndim = 2, .shape = {3, 4}};
	memset(t.name, 'a', sizeof(t.name));   /* no terminating NUL */
	gsp_layout *l = NULL;
	ck_assert_int_eq(gsp_layout_new(&t, 1, &l), -EINVAL);
	ck_assert_int_eq(gsp_layout_new(&t, 0, &l), -EINVAL);
	ck_assert_ptr_null(l);
	/* A scalar (0 dims) is one uncompressed float. */
	gsp_tensor s = {.name = "scalar", .ndim = 0};
	ck_assert_int_eq(gsp_layout_new(&s, 1, &l), 0);
	ck_assert_uint_eq(gsp_layout_floats(l), 1);
	gsp_layout_free(l);
}
END_TEST

START_TEST(test_names_and_errors)
{
	static const char *names[] = {"powergossip", "exact", "choco-topk",
				      "choco-randk", "choco-sign"};
	for (size_t i = 0; i < 5; i++) {
		gsp_method m;
		ck_assert_int_eq(gsp_method_parse(names[i], &m), 0);
		ck_assert_str_eq(gsp_method_name(m), names[i]);
	}
	gsp_method m = GSP_METHOD_EXACT;
	ck_assert_int_eq(gsp_method_parse("power", &m), -EINVAL);
	ck_assert_int_eq(gsp_method_parse(NULL, &m), -EINVAL);
	ck_assert_int_eq(m, GSP_METHOD_EXACT);
	ck_assert_str_eq(gsp_strerror(-EINVAL), strerror(EINVAL));
	ck_assert_str_eq(gsp_strerror(GSP_ENONFINITE),
			 "non-finite value (NaN or infinity)");
	ck_assert_str_eq(gsp_strerror(-99999), "unknown error");
}
END_TEST

START_TEST(test_rng_streams)
{
	uint8_t seed[GSP_SEED_BYTES] = {42};
	float a[1000], b[1000], c[1000];
	ck_assert_int_eq(gsp__rng_uniform(seed, GSP_RNG_INIT_A, 1, 2, 3, a, 1000, 1), 0);
	ck_assert_int_eq(gsp__rng_uniform(seed, GSP_RNG_INIT_A, 1, 2, 3, b, 1000, 1), 0);
	ck_assert(memcmp(a, b, sizeof(a)) == 0);
	ck_assert_int_eq(gsp__rng_uniform(seed, GSP_RNG_INIT_A, 1, 2, 4, c, 1000, 1), 0);
	ck_assert(memcmp(a, c, sizeof(a)) != 0);
	seed[31] ^= 1;
	ck_assert_int_eq(gsp__rng_uniform(seed, GSP_RNG_INIT_A, 1, 2, 3, c, 1000, 1), 0);
	ck_assert(memcmp(a, c, sizeof(a)) != 0);
	double mean = 0.0;
	for (int i = 0; i < 1000; i++) {
		ck_assert(a[i] >= -1.0f && a[i] < 1.0f);
		/* Exactly representable as k * 2^-23. */
		ck_assert(ldexpf(a[i], 23) == truncf(ldexpf(a[i], 23)));
		mean += a[i];
	}
	ck_assert(fabs(mean / 1000) < 0.1);
	/* Strided output writes only its own column. */
	float m[30];
	for (int i = 0; i < 30; i++)
		m[i] = 7.0f;
	ck_assert_int_eq(gsp__rng_uniform(seed, GSP_RNG_REFILL, 0, 0, 0, m + 1, 10, 3), 0);
	for (int i = 0; i < 30; i++)
		ck_assert(i % 3 == 1 ? m[i] != 7.0f : m[i] == 7.0f);
}
END_TEST

static void assert_orthonormal(const float *q, size_t rows, unsigned r)
{
	for (unsigned a = 0; a < r; a++)
		for (unsigned b = 0; b < r; b++) {
			double s = 0.0;
			for (size_t i = 0; i < rows; i++)
				s += (double)q[i * r + a] * q[i * r + b];
			ck_assert_msg(fabs(s - (a == b)) < 1e-5, "<%u,%u> = %g", a, b, s);
		}
}

START_TEST(test_orthonormalize)
{
	uint8_t seed[GSP_SEED_BYTES] = {9};
	enum { ROWS = 50, R = 4 };
	float q[ROWS * R], q2[ROWS * R];
	ck_assert_int_eq(gsp__rng_uniform(seed, GSP_RNG_INIT_A, 0, 0, 0, q, ROWS * R, 1), 0);
	ck_assert_uint_eq(gsp__orthonormalize(q, ROWS, R, seed, 0, 1), 0);
	assert_orthonormal(q, ROWS, R);
	/* A zero column and a copy of column 0 are both refilled, the same
	 * way every time (both ends of an edge must agree). */
	for (size_t i = 0; i < ROWS; i++) {
		q[i * R + 1] = 0.0f;
		q[i * R + 3] = 2.0f * q[i * R + 0];
	}
	memcpy(q2, q, sizeof(q));
	ck_assert_uint_eq(gsp__orthonormalize(q, ROWS, R, seed, 0, 2), 2);
	ck_assert_uint_eq(gsp__orthonormalize(q2, ROWS, R, seed, 0, 2), 2);
	ck_assert(memcmp(q, q2, sizeof(q)) == 0);
	assert_orthonormal(q, ROWS, R);
	/* Full rank square: an orthonormal basis of the whole space. */
	float sq[16 * 16];
	ck_assert_int_eq(gsp__rng_uniform(seed, GSP_RNG_INIT_B, 0, 0, 0, sq, 256, 1), 0);
	gsp__orthonormalize(sq, 16, 16, seed, 0, 1);
	assert_orthonormal(sq, 16, 16);
}
END_TEST

/* The copying form gives the in-place result bit for bit (both ends of an
 * edge may take either path), for one and several columns, on lengths
 * around the summation's lane count, and on columns that need refills. */
START_TEST(test_orthonormalize_copy)
{
	uint8_t seed[GSP_SEED_BYTES] = {7};
	static const size_t lengths[] = {1, 2, 7, 8, 9, 15, 16, 17, 50, 1001};
	enum { MAXN = 1001 * 3 };
	static float src[MAXN], keep[MAXN], q1[MAXN], q2[MAXN];
	for (unsigned r = 1; r <= 3; r += 2)
		for (size_t li = 0; li < sizeof(lengths) / sizeof(*lengths); li++)
			for (unsigned kind = 0; kind < 3; kind++) {
				size_t rows = lengths[li], n = rows * r;
				if (rows < r)
					continue;
				ck_assert_int_eq(gsp__rng_uniform(seed, GSP_RNG_INIT_A, li, r,
								  kind, src, n, 1), 0);
				if (kind == 1)          /* zero: refilled */
					memset(src, 0, n * sizeof(float));
				if (kind == 2)          /* NaN: refilled */
					src[n / 2] = NAN;
				memcpy(keep, src, n * sizeof(float));
				unsigned a = gsp__orthonormalize_copy(q1, src, rows, r,
								      seed, li, 3);
				memcpy(q2, src, n * sizeof(float));
				unsigned b = gsp__orthonormalize(q2, rows, r, seed, li, 3);
				ck_assert_uint_eq(a, b);
				ck_assert_msg(memcmp(q1, q2, n * sizeof(float)) == 0,
					      "rows %zu r %u kind %u", rows, r, kind);
				ck_assert(memcmp(src, keep, n * sizeof(float)) == 0);
				if (kind == 0)
					ck_assert_uint_eq(a, 0);
				else if (kind == 1)
					ck_assert_uint_eq(a, r);
				else
					ck_assert_uint_ge(a, 1);
				if (rows > r)
					assert_orthonormal(q1, rows, r);
			}
}
END_TEST

/* Every position of a non-finite value is found, in lengths that end in
 * every lane of the vector loop, and differences that overflow are
 * caught though both inputs are finite. */
START_TEST(test_finite_checks)
{
	enum { N = 70 };
	float a[N], b[N];
	const float bad[] = {NAN, INFINITY, -INFINITY};
	for (size_t n = 0; n <= N; n++) {
		for (size_t i = 0; i < N; i++) {
			a[i] = (float)i - 30.5f;
			b[i] = -a[i];
		}
		ck_assert(gsp__all_finite(a, n));
		ck_assert(gsp__diff_finite(a, b, n));
		for (size_t i = 0; i < n; i++)
			for (size_t v = 0; v < 3; v++) {
				float old = a[i];
				a[i] = bad[v];
				ck_assert_msg(!gsp__all_finite(a, n), "n %zu i %zu", n, i);
				ck_assert(!gsp__diff_finite(a, b, n));
				ck_assert(!gsp__diff_finite(b, a, n));
				a[i] = old;
			}
		if (n) {
			a[n - 1] = FLT_MAX;
			b[n - 1] = -FLT_MAX;
			ck_assert(gsp__all_finite(a, n) && gsp__all_finite(b, n));
			ck_assert(!gsp__diff_finite(a, b, n));
			/* The largest finite magnitude itself passes. */
			b[n - 1] = 0.0f;
			ck_assert(gsp__diff_finite(a, b, n));
			a[n - 1] = -FLT_MAX;
			ck_assert(gsp__diff_finite(a, b, n));
		}
	}
}
END_TEST

int main(void)
{
	Suite *s = suite_create("layout");
	TCase *tc = tcase_create("layout");
	tcase_add_test(tc, test_layout_views);
	tcase_add_test(tc, test_layout_rejects);
	tcase_add_test(tc, test_names_and_errors);
	tcase_add_test(tc, test_rng_streams);
	tcase_add_test(tc, test_orthonormalize);
	tcase_add_test(tc, test_orthonormalize_copy);
	tcase_add_test(tc, test_finite_checks);
	suite_add_tcase(s, tc);
	return run_suite(s);
}
