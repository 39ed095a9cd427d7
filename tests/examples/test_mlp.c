/*
 * Unit tests for gossip-train's building blocks: the MLP (examples/mlp.c:
 * layout, initialisation, backpropagation against finite differences,
 * learning a tiny problem), momentum SGD (examples/sgd.c), the random stream
 * (examples/rng.c) and Fashion-MNIST shards (examples/trainset.c, on the real
 * data set when the Debian package is installed).
 */
#include <check.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "idx.h"
#include "mlp.h"
#include "rng.h"
#include "sgd.h"
#include "trainset.h"

/* A network of sizes for batches of up to cap rows, bound to its own
 * parameter buffer initialised from seed. */
static gsp_mlp *make_net(const unsigned *sizes, unsigned n, unsigned cap,
			 uint64_t seed, float **ret_params)
{
	gsp_mlp *net;
	ck_assert_int_eq(gsp_mlp_new(sizes, n, cap, &net), 0);
	float *p = calloc(gsp_mlp_param_count(net), sizeof(float));
	ck_assert_ptr_nonnull(p);
	gsp_mlp_bind(net, p);
	gsp_mlp_init(net, seed);
	*ret_params = p;
	return net;
}

static void random_batch(gsp_rng *rng, float *x, size_t n_x, uint8_t *y,
			 size_t n_y, unsigned classes)
{
	for (size_t i = 0; i < n_x; i++)
		x[i] = gsp_rng_uniform(rng, -1.0f, 1.0f);
	for (size_t i = 0; i < n_y; i++)
		y[i] = (uint8_t)gsp_rng_below(rng, classes);
}

START_TEST(test_parse_sizes)
{
	unsigned s[GSP_MLP_MAX_LAYERS + 1];

	ck_assert_int_eq(gsp_mlp_parse_sizes("784-512-256-10", s), 4);
	ck_assert_uint_eq(s[0], 784);
	ck_assert_uint_eq(s[3], 10);
	ck_assert_int_eq(gsp_mlp_parse_sizes("784-10", s), 2);
	const char *bad[] = {"", "784", "784--10", "-784-10", "784-10-",
			     "784-0-10", "784-x-10", "784-+5-10", "784-65537-10",
			     "1-2-3-4-5-6-7-8-9-10"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(*bad); i++)
		ck_assert_msg(gsp_mlp_parse_sizes(bad[i], s) == -EINVAL,
			      "accepted '%s'", bad[i]);
}
END_TEST

START_TEST(test_layout_matches_pytorch_linear)
{
	const unsigned sizes[] = {784, 512, 256, 10};
	gsp_mlp *net;
	gsp_tensor t[6];
	uint64_t total = 0;

	ck_assert_int_eq(gsp_mlp_new(sizes, 4, 8, &net), 0);
	ck_assert_uint_eq(gsp_mlp_tensor_count(net), 6);
	gsp_mlp_tensors(net, t);
	ck_assert_str_eq(t[0].name, "fc1.weight");
	ck_assert_uint_eq(t[0].ndim, 2);
	ck_assert_uint_eq(t[0].shape[0], 512);
	ck_assert_uint_eq(t[0].shape[1], 784);
	ck_assert_str_eq(t[1].name, "fc1.bias");
	ck_assert_uint_eq(t[1].ndim, 1);
	ck_assert_uint_eq(t[1].shape[0], 512);
	ck_assert_str_eq(t[4].name, "fc3.weight");
	ck_assert_uint_eq(t[4].shape[0], 10);
	ck_assert_uint_eq(t[4].shape[1], 256);
	for (int i = 0; i < 6; i++)
		total += t[i].ndim == 2 ? t[i].shape[0] * t[i].shape[1]
					: t[i].shape[0];
	ck_assert_uint_eq(total, gsp_mlp_param_count(net));
	ck_assert_uint_eq(total, 512 * 785 + 256 * 513 + 10 * 257);
	gsp_mlp_free(net);
}
END_TEST

START_TEST(test_init_is_seeded_and_bounded)
{
	const unsigned sizes[] = {50, 20, 3};
	float *a, *b, *c;
	gsp_mlp *na = make_net(sizes, 3, 1, 7, &a);
	gsp_mlp *nb = make_net(sizes, 3, 1, 7, &b);
	gsp_mlp *nc = make_net(sizes, 3, 1, 8, &c);
	size_t n = gsp_mlp_param_count(na);

	ck_assert_mem_eq(a, b, n * sizeof(float));
	ck_assert_int_ne(memcmp(a, c, n * sizeof(float)), 0);
	/* Layer 1: 20 x 50 weights and 20 biases within 1/sqrt(50); layer 2
	 * within 1/sqrt(20); and they are not all tiny. */
	float max1 = 0, max2 = 0;
	for (size_t i = 0; i < 20 * 51; i++)
		max1 = fmaxf(max1, fabsf(a[i]));
	for (size_t i = 20 * 51; i < n; i++)
		max2 = fmaxf(max2, fabsf(a[i]));
	ck_assert_float_le(max1, 1 / sqrtf(50));
	ck_assert_float_gt(max1, 0.9f / sqrtf(50));
	ck_assert_float_le(max2, 1 / sqrtf(20));
	ck_assert_float_gt(max2, 0.5f / sqrtf(20));
	gsp_mlp_free(na);
	gsp_mlp_free(nb);
	gsp_mlp_free(nc);
	free(a);
	free(b);
	free(c);
}
END_TEST

/* Backpropagation agrees with central finite differences of the loss for
 * every parameter of a two-hidden-layer network. */
START_TEST(test_gradient_matches_finite_differences)
{
	const unsigned sizes[] = {6, 5, 4, 3}, batch = 4;
	float *p, x[4 * 6];
	uint8_t y[4];
	gsp_rng rng = gsp_rng_new(11, 0);
	gsp_mlp *net = make_net(sizes, 4, batch, 3, &p);
	size_t n = gsp_mlp_param_count(net);
	const double eps = 1e-3;

	random_batch(&rng, x, batch * 6, y, batch, 3);
	double loss = gsp_mlp_loss_grad(net, x, y, batch);
	ck_assert(isfinite(loss) && loss > 0);
	float *grad = malloc(n * sizeof(float));
	ck_assert_ptr_nonnull(grad);
	memcpy(grad, gsp_mlp_grads(net), n * sizeof(float));
	ck_assert_double_eq_tol(gsp_mlp_loss(net, x, y, batch), loss, 1e-12);

	double worst = 0, norm = 0;
	for (size_t i = 0; i < n; i++) {
		float keep = p[i];
		p[i] = (float)(keep + eps);
		double up = gsp_mlp_loss(net, x, y, batch);
		p[i] = (float)(keep - eps);
		double down = gsp_mlp_loss(net, x, y, batch);
		p[i] = keep;
		double numeric = (up - down) / (2 * eps);
		double err = fabs(numeric - grad[i]);
		ck_assert_msg(err <= 2e-3 + 2e-2 * fabs(numeric),
			      "parameter %zu: backprop %g, finite difference %g",
			      i, grad[i], numeric);
		worst = fmax(worst, err);
		norm += numeric * numeric;
	}
	/* The gradient is not trivially zero, and agreement is close. */
	ck_assert_double_gt(sqrt(norm), 0.05);
	ck_assert_double_lt(worst, 1e-3);
	gsp_mlp_free(net);
	free(grad);
	free(p);
}
END_TEST

/* Three separable clusters: momentum SGD drives the loss down and the
 * network classifies every point. */
START_TEST(test_learns_tiny_problem)
{
	const unsigned sizes[] = {4, 16, 3}, batch = 30;
	float *p, x[30 * 4];
	uint8_t y[30];
	gsp_rng rng = gsp_rng_new(5, 0);
	gsp_mlp *net = make_net(sizes, 3, batch, 9, &p);
	gsp_sgd sgd;

	for (unsigned r = 0; r < batch; r++) {
		y[r] = (uint8_t)(r % 3);
		for (unsigned j = 0; j < 4; j++)
			x[r * 4 + j] = (j == y[r] ? 2.0f : 0.0f) +
				       gsp_rng_uniform(&rng, -0.5f, 0.5f);
	}
	ck_assert_int_eq(gsp_sgd_init(&sgd, gsp_mlp_param_count(net), 0.1f,
				      0.9f), 0);
	double first = gsp_mlp_loss(net, x, y, batch), last = first;
	ck_assert_uint_lt(gsp_mlp_correct(net, x, y, batch), batch);
	for (int step = 0; step < 100; step++) {
		last = gsp_mlp_loss_grad(net, x, y, batch);
		gsp_sgd_step(&sgd, p, gsp_mlp_grads(net));
	}
	last = gsp_mlp_loss(net, x, y, batch);
	ck_assert_msg(last < first / 10, "loss %g -> %g", first, last);
	ck_assert_uint_eq(gsp_mlp_correct(net, x, y, batch), batch);
	gsp_sgd_free(&sgd);
	gsp_mlp_free(net);
	free(p);
}
END_TEST

/* v = m v + g; x -= lr v (PyTorch's convention), by hand for two steps. */
START_TEST(test_sgd_momentum)
{
	gsp_sgd s;
	float x[2] = {1.0f, -2.0f};
	const float g1[2] = {0.5f, 1.0f}, g2[2] = {-1.0f, 0.0f};

	ck_assert_int_eq(gsp_sgd_init(&s, 2, 0.1f, 0.9f), 0);
	gsp_sgd_step(&s, x, g1);   /* v = g1 */
	ck_assert_float_eq_tol(x[0], 1.0f - 0.05f, 1e-6f);
	ck_assert_float_eq_tol(x[1], -2.0f - 0.1f, 1e-6f);
	gsp_sgd_step(&s, x, g2);   /* v = 0.9 g1 + g2 = (-0.55, 0.9) */
	ck_assert_float_eq_tol(x[0], 0.95f + 0.055f, 1e-6f);
	ck_assert_float_eq_tol(x[1], -2.1f - 0.09f, 1e-6f);
	gsp_sgd_free(&s);
}
END_TEST

START_TEST(test_rng_streams_and_shuffle)
{
	gsp_rng a = gsp_rng_new(1, 0), b = gsp_rng_new(1, 0);
	gsp_rng c = gsp_rng_new(1, 1);
	uint32_t perm[100];
	unsigned seen[100] = {0};

	ck_assert_uint_eq(gsp_rng_next(&a), gsp_rng_next(&b));
	ck_assert_uint_ne(gsp_rng_next(&a), gsp_rng_next(&c));
	for (int i = 0; i < 1000; i++) {
		float u = gsp_rng_uniform(&a, -2.0f, 3.0f);
		ck_assert(u >= -2.0f && u < 3.0f);
		ck_assert_uint_lt(gsp_rng_below(&a, 7), 7);
	}
	for (uint32_t i = 0; i < 100; i++)
		perm[i] = i;
	gsp_rng_shuffle(&a, perm, 100);
	unsigned moved = 0;
	for (uint32_t i = 0; i < 100; i++) {
		seen[perm[i]]++;
		moved += perm[i] != i;
	}
	for (int i = 0; i < 100; i++)
		ck_assert_uint_eq(seen[i], 1);
	ck_assert_uint_gt(moved, 50);
}
END_TEST

/* Three shards of the real training set: sizes 20000 each, the labels of
 * the three together are those of the whole set, and batches come out
 * normalised. */
START_TEST(test_shards_cover_training_set)
{
	gsp_trainset all, part[3];
	unsigned hist_all[10] = {0}, hist_parts[10] = {0};

	if (access(GSP_FMNIST_DIR "/train-images-idx3-ubyte.gz", R_OK) != 0) {
		fprintf(stderr, "test_mlp: " GSP_FMNIST_DIR " missing; shard "
			"test not run (install dataset-fashion-mnist)\n");
		return;
	}
	ck_assert_int_eq(gsp_trainset_load(NULL, "train", 0, 1, 0, &all), 0);
	ck_assert_uint_eq(all.count, 60000);
	for (unsigned i = 0; i < 3; i++) {
		ck_assert_int_eq(gsp_trainset_load(NULL, "train", i, 3, 42,
						   &part[i]), 0);
		ck_assert_uint_eq(part[i].count, 20000);
		for (size_t r = 0; r < part[i].count; r++)
			hist_parts[part[i].labels[r]]++;
	}
	for (size_t r = 0; r < all.count; r++)
		hist_all[all.labels[r]]++;
	ck_assert_mem_eq(hist_all, hist_parts, sizeof(hist_all));
	/* The shards are slices of a permutation, not of the file order. */
	ck_assert_int_ne(memcmp(part[0].pixels, all.pixels, 784 * 100), 0);

	float x[2 * 784];
	uint8_t y[2];
	gsp_trainset_batch(&all, NULL, 0, 2, x, y);
	ck_assert_uint_eq(y[0], all.labels[0]);
	for (int i = 0; i < 2 * 784; i++) {
		ck_assert(x[i] >= -0.82f && x[i] <= 2.03f);
	}
	ck_assert_int_eq(gsp_trainset_load(NULL, "train", 3, 3, 42, &part[0]) ==
			 -EINVAL, 1);
	gsp_trainset_free(&all);
	for (unsigned i = 0; i < 3; i++)
		gsp_trainset_free(&part[i]);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("mlp");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, test_parse_sizes);
	tcase_add_test(tc, test_layout_matches_pytorch_linear);
	tcase_add_test(tc, test_init_is_seeded_and_bounded);
	tcase_add_test(tc, test_gradient_matches_finite_differences);
	tcase_add_test(tc, test_learns_tiny_problem);
	tcase_add_test(tc, test_sgd_momentum);
	tcase_add_test(tc, test_rng_streams_and_shuffle);
	tcase_add_test(tc, test_shards_cover_training_set);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(suite());
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
