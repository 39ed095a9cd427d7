/* PowerGossip properties (docs/ALGORITHM.md section 6): conservation of the
 * network average, equivalence with exact gossip at full rank, monotone
 * consensus, power iteration on a frozen difference, bit-identical edge
 * buffers, recovery from equal models, exact bit counts, and argument
 * checks that change no state. */
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "internal.h"
#include "testutil.h"

/* Fills 30x20 D = U diag(s) V^T with s = 8, 4, 2, 1, 1/2, ... using the
 * singular vectors of a random matrix (LAPACK sgesvd), and returns U and V
 * (column c of U: u[i*20+c]; row c of vt: v_c). */
extern void sgesvd_(const char *jobu, const char *jobvt, const int *m,
		    const int *n, float *a, const int *lda, float *s, float *u,
		    const int *ldu, float *vt, const int *ldvt, float *work,
		    const int *lwork, int *info);

enum { DM = 30, DK = 20 };

static void svd(const float *x, float *u, float *s, float *vt)
{
	/* Column-major a = x^T's storage: row-major x (DM x DK) is
	 * column-major DK x DM, so decompose x^T = V S U^T. */
	float a[DM * DK], work[4096];
	int m = DK, n = DM, lda = DK, ldu = DK, ldvt = DM, lwork = 4096, info;
	memcpy(a, x, sizeof(a));
	/* x^T = A (DK x DM, col-major) = P S Q^T  =>  x = Q S P^T. */
	float p[DK * DK], qt[DM * DM];
	sgesvd_("A", "A", &m, &n, a, &lda, s, p, &ldu, qt, &ldvt, work, &lwork,
		&info);
	ck_assert_int_eq(info, 0);
	/* Left vectors of x: columns of Q = rows of Q^T; col-major qt has
	 * Q^T(r, c) at qt[c*DM + r], so Q(i, c) = Q^T(c, i) = qt[i*DM + c]. */
	for (int i = 0; i < DM; i++)
		for (int c = 0; c < DK; c++)
			u[i * DK + c] = qt[i * DM + c];
	/* Right vectors of x: columns of P; P(j, c) at p[c*DK + j]. */
	for (int c = 0; c < DK; c++)
		for (int j = 0; j < DK; j++)
			vt[c * DK + j] = p[c * DK + j];
}

START_TEST(test_conservation)
{
	static const unsigned ranks[] = {1, 4};
	double gamma = optimal_gamma(GSP_TOPO_RING, 8);
	for (unsigned ri = 0; ri < 2; ri++) {
		gsp_config cfg = config_of(GSP_METHOD_POWERGOSSIP, ranks[ri], gamma);
		cluster c = cluster_new(GSP_TOPO_RING, 8, NULL,
					test_small() ? "30x30,16x80" : "100x100,64x300",
					&cfg, 1);
		double worst = 0.0;
		for (unsigned r = 0; r < 10; r++) {
			cluster_rounds(&c, test_size(100, 20));
			gsp_sim_stats st = cluster_stats(&c);
			ck_assert(st.finite);
			if (st.mean_drift > worst)
				worst = st.mean_drift;
		}
		ck_assert_msg(worst <= 1e-5, "rank %u: mean drift %g", ranks[ri],
			      worst);
		cluster_free(&c);
	}
}
END_TEST

START_TEST(test_full_rank_is_exact)
{
	double gamma = optimal_gamma(GSP_TOPO_RING, 8);
	gsp_config pg = config_of(GSP_METHOD_POWERGOSSIP, 16, gamma);
	gsp_config ex = config_of(GSP_METHOD_EXACT, 1, gamma);
	cluster a = cluster_new(GSP_TOPO_RING, 8, NULL, "16x16", &pg, 3);
	cluster b = cluster_new(GSP_TOPO_RING, 8, NULL, "16x16", &ex, 3);
	for (unsigned r = 0; r < 60; r++) {
		cluster_rounds(&a, 1);
		cluster_rounds(&b, 1);
		double num = 0.0, den = 0.0;
		for (unsigned i = 0; i < 8; i++) {
			const float *x = gsp_sim_params(a.sim, i);
			const float *y = gsp_sim_params(b.sim, i);
			for (unsigned j = 0; j < 256; j++) {
				num += (double)(x[j] - y[j]) * (x[j] - y[j]);
				den += (double)y[j] * y[j];
			}
		}
		ck_assert_msg(sqrt(num / den) <= 1e-5, "round %u: rel %g", r + 1,
			      sqrt(num / den));
	}
	/* Non-square at r = min(m, k) is not exact gossip (ALGORITHM 6.2). */
	cluster_free(&a);
	cluster_free(&b);
}
END_TEST

START_TEST(test_monotone_consensus)
{
	static const struct {
		unsigned rank;
		const char *spec, *small;   /* small: test_small() */
	} cases[] = {{1, "100x100", "20x20"}, {4, "100x100", "20x20"},
		     {1, "64x300,64", "16x60,16"}, {2, "28x28,10x50", "14x14,5x25"}};
	double gamma = optimal_gamma(GSP_TOPO_RING, 8);
	for (unsigned ci = 0; ci < sizeof(cases) / sizeof(*cases); ci++) {
		gsp_config cfg = config_of(GSP_METHOD_POWERGOSSIP, cases[ci].rank,
					   gamma);
		const char *spec = test_small() ? cases[ci].small : cases[ci].spec;
		cluster c = cluster_new(GSP_TOPO_RING, 8, NULL, spec, &cfg, 5);
		double e0 = cluster_stats(&c).error, prev = e0;
		for (unsigned r = 0; r < 1000; r++) {
			cluster_rounds(&c, 1);
			double e = cluster_stats(&c).error;
			ck_assert_msg(e <= prev * (1 + 1e-6) + 1e-12 * e0,
				      "%s rank %u round %u: %g > %g",
				      spec, cases[ci].rank, r + 1, e,
				      prev);
			prev = e;
		}
		ck_assert_msg(prev <= 1e-2 * e0, "%s rank %u: %g of initial",
			      spec, cases[ci].rank, prev / e0);
		cluster_free(&c);
	}
}
END_TEST

static double col_cos(const float *q, unsigned r, unsigned c,
		      const float *ref, size_t stride, size_t n)
{
	double dot = 0.0, nq = 0.0, nr = 0.0;
	for (size_t i = 0; i < n; i++) {
		dot += (double)q[i * r + c] * ref[i * stride];
		nq += (double)q[i * r + c] * q[i * r + c];
		nr += (double)ref[i * stride] * ref[i * stride];
	}
	return fabs(dot) / sqrt(nq * nr);
}

START_TEST(test_power_iteration)
{
	/* Two nodes, one edge, gamma 0: D = X_1 - X_0 stays frozen. */
	gsp_config cfg = config_of(GSP_METHOD_POWERGOSSIP, 2, 0.0);
	cluster c = cluster_new(GSP_TOPO_EDGELIST, 2, "0-1", "30x20", &cfg, 9);
	float u[DM * DK], s[DK], vt[DK * DK];
	svd(gsp_sim_params(c.sim, 1), u, s, vt);
	float *d = gsp_sim_params(c.sim, 1);
	memset(d, 0, DM * DK * sizeof(float));
	for (int i = 0; i < DM; i++)
		for (int j = 0; j < DK; j++)
			for (int k = 0; k < DK; k++)
				d[i * DK + j] += u[i * DK + k] * ldexpf(8.0f, -k) *
						 vt[k * DK + j];
	memset(gsp_sim_params(c.sim, 0), 0, DM * DK * sizeof(float));
	cluster_rounds(&c, 40);
	/* The next odd projection orthonormalizes B in place: V. */
	gsp_node *n0 = gsp_sim_node(c.sim, 0);
	ck_assert_int_eq(gsp_node_project(n0), 1);
	const float *a, *b;
	unsigned r;
	ck_assert_int_eq(gsp_node_edge_factors(n0, 0, 0, &a, &b, &r), 0);
	ck_assert_uint_eq(r, 2);
	for (unsigned col = 0; col < 2; col++) {
		double cv = col_cos(b, r, col, vt + col * DK, 1, DK);
		double cu = col_cos(a, r, col, u + col, DK, DM);
		ck_assert_msg(cv >= 1 - 1e-5, "v%u cos %g", col, cv);
		ck_assert_msg(cu >= 1 - 1e-5, "u%u cos %g", col, cu);
	}
	cluster_free(&c);
}
END_TEST

static void assert_edges_identical(cluster *c)
{
	for (size_t e = 0; e < gsp_graph_edge_count(c->graph); e++) {
		unsigned lo, hi;
		size_t at_lo, at_hi;
		ck_assert_int_eq(gsp_sim_edge(c->sim, e, &lo, &at_lo, &hi, &at_hi), 0);
		for (size_t t = 0; t < gsp_layout_count(c->layout); t++) {
			const gsp_tensor *ten = gsp_layout_tensor(c->layout, t);
			if (!ten->compressed)
				continue;
			const float *a0, *b0, *a1, *b1;
			unsigned r;
			ck_assert_int_eq(gsp_node_edge_factors(gsp_sim_node(c->sim, lo),
					 at_lo, t, &a0, &b0, &r), 0);
			ck_assert_int_eq(gsp_node_edge_factors(gsp_sim_node(c->sim, hi),
					 at_hi, t, &a1, &b1, NULL), 0);
			ck_assert(memcmp(a0, a1, ten->m * r * sizeof(float)) == 0);
			ck_assert(memcmp(b0, b1, ten->k * r * sizeof(float)) == 0);
		}
	}
}

START_TEST(test_buffers_identical)
{
	gsp_config cfg = config_of(GSP_METHOD_POWERGOSSIP, 3,
				   optimal_gamma(GSP_TOPO_RING, 8));
	cluster c = cluster_new(GSP_TOPO_RING, 8, NULL, "100x100,64x300,7", &cfg, 11);
	cluster_rounds(&c, test_size(1000, 30));
	assert_edges_identical(&c);
	cluster_free(&c);
	cfg.warm_start = false;
	c = cluster_new(GSP_TOPO_EXPONENTIAL, 8, NULL, "40x30", &cfg, 12);
	cluster_rounds(&c, 101);
	assert_edges_identical(&c);
	cluster_free(&c);
}
END_TEST

START_TEST(test_equal_models_recover)
{
	gsp_config cfg = config_of(GSP_METHOD_POWERGOSSIP, 2,
				   optimal_gamma(GSP_TOPO_RING, 8));
	cluster c = cluster_new(GSP_TOPO_RING, 8, NULL, "30x40,5", &cfg, 13);
	uint64_t n = gsp_layout_floats(c.layout);
	for (unsigned i = 1; i < 8; i++)
		memcpy(gsp_sim_params(c.sim, i), gsp_sim_params(c.sim, 0),
		       n * sizeof(float));
	ck_assert_int_eq(gsp_sim_start(c.sim), 0);
	for (unsigned r = 0; r < 10; r++) {
		cluster_rounds(&c, 1);
		gsp_sim_stats st = cluster_stats(&c);
		ck_assert(st.finite);
		ck_assert(st.error == 0.0);
	}
	gsp_edge_info info;
	ck_assert_int_eq(gsp_node_edge_info(gsp_sim_node(c.sim, 0), 0, &info), 0);
	ck_assert_msg(info.refills > 0, "zero factors were never refilled");
	/* Perturb one worker: the edges must pick the difference up again. */
	float *x = gsp_sim_params(c.sim, 3);
	for (uint64_t j = 0; j < n; j++)
		x[j] += (float)((j % 7) - 3) * 0.25f;
	double e0 = cluster_stats(&c).error;
	ck_assert(e0 > 0.0);
	for (unsigned r = 0; r < 300; r++) {
		cluster_rounds(&c, 1);
		ck_assert(cluster_stats(&c).finite);
	}
	ck_assert_msg(cluster_stats(&c).error <= 1e-3 * e0, "did not recover: %g",
		      cluster_stats(&c).error / e0);
	assert_edges_identical(&c);
	cluster_free(&c);
}
END_TEST

START_TEST(test_bits_per_round)
{
	gsp_config cfg = config_of(GSP_METHOD_POWERGOSSIP, 2, 1.0);
	cluster c = cluster_new(GSP_TOPO_RING, 8, NULL, "100x100,64x300,3x1x5,64,1",
				&cfg, 17);
	/* Section 6.5: 32 * sum r*(m if odd else k) + 32 * vector entries;
	 * 3x1x5 has r = min(2, 3, 5) = 2. */
	uint64_t odd = 32 * (2 * 100 + 2 * 64 + 2 * 3) + 32 * 65;
	uint64_t even = 32 * (2 * 100 + 2 * 300 + 2 * 5) + 32 * 65;
	gsp_node *n0 = gsp_sim_node(c.sim, 0);
	ck_assert_int_eq(gsp_node_message_size(n0, 0, 1) * 8, odd);
	ck_assert_int_eq(gsp_node_message_size(n0, 0, 2) * 8, even);
	/* The same sizes without naming an edge, and before a node has one
	 * (the daemon sizes its links' frames at REGISTER, edges or not). */
	ck_assert_int_eq(gsp_node_method_message_size(n0, 1) * 8, odd);
	ck_assert_int_eq(gsp_node_method_message_size(n0, 2) * 8, even);
	ck_assert_int_eq(gsp_node_method_message_size(n0, 0), -EINVAL);
	ck_assert_int_eq(gsp_node_method_message_size(NULL, 1), -EINVAL);
	gsp_layout *l;
	ck_assert_int_eq(gsp_layout_parse("100x100,64x300,3x1x5,64,1", &l), 0);
	float *x = calloc(gsp_layout_floats(l), sizeof(float));
	gsp_node *alone;
	ck_assert_int_eq(gsp_node_new(l, x, &cfg, &alone), 0);
	ck_assert_int_eq(gsp_node_method_message_size(alone, 1) * 8, odd);
	ck_assert_int_eq(gsp_node_method_message_size(alone, 2) * 8, even);
	gsp_node_free(alone);
	gsp_layout_free(l);
	free(x);
	uint64_t want = 0;
	for (unsigned r = 1; r <= 5; r++) {
		cluster_rounds(&c, 1);
		want += 2 * (r & 1 ? odd : even);  /* two neighbours */
		ck_assert_uint_eq(cluster_stats(&c).bits_worker0, want);
	}
	gsp_edge_info info;
	ck_assert_int_eq(gsp_node_edge_info(n0, 1, &info), 0);
	ck_assert_uint_eq(info.tx_bytes * 8, want / 2);
	ck_assert_uint_eq(info.rx_bytes, info.tx_bytes);
	ck_assert_uint_eq(info.exact_bytes, 5 * 4 * gsp_layout_floats(c.layout));
	cluster_free(&c);
}
END_TEST

START_TEST(test_fused_step_matches_apply_then_project)
{
	/* Two identical pairs: one uses step(), the other apply()+project(). */
	gsp_config cfg = config_of(GSP_METHOD_POWERGOSSIP, 2, 0.7);
	cluster a = cluster_new(GSP_TOPO_EDGELIST, 3, "0-1,1-2,0-2",
				"300x200,50x7x3x3,9", &cfg, 19);
	cluster b = cluster_new(GSP_TOPO_EDGELIST, 3, "0-1,1-2,0-2",
				"300x200,50x7x3x3,9", &cfg, 19);
	uint64_t n = gsp_layout_floats(a.layout);
	for (unsigned r = 0; r < 9; r++) {
		for (unsigned i = 0; i < 3; i++) {
			ck_assert_int_eq(gsp_node_step(gsp_sim_node(a.sim, i)), 2);
			ck_assert_int_eq(gsp_node_apply(gsp_sim_node(b.sim, i)),
					 r ? 2 : 0);
			ck_assert_int_eq(gsp_node_project(gsp_sim_node(b.sim, i)), 2);
			ck_assert(memcmp(gsp_sim_params(a.sim, i),
					 gsp_sim_params(b.sim, i), n * 4) == 0);
		}
		/* Deliver every message on both clusters. */
		cluster *cs[2] = {&a, &b};
		for (int k = 0; k < 2; k++)
			for (size_t e = 0; e < 3; e++) {
				unsigned lo, hi;
				size_t al, ah, ll, lh;
				const void *ml, *mh;
				uint64_t rl, rh;
				gsp_sim_edge(cs[k]->sim, e, &lo, &al, &hi, &ah);
				gsp_node *nl = gsp_sim_node(cs[k]->sim, lo);
				gsp_node *nh = gsp_sim_node(cs[k]->sim, hi);
				ck_assert_int_eq(gsp_node_message(nl, al, &ml, &ll, &rl), 0);
				ck_assert_int_eq(gsp_node_message(nh, ah, &mh, &lh, &rh), 0);
				ck_assert_uint_eq(rl, r + 1);
				ck_assert_int_eq(gsp_node_complete(nl, al, rh, mh, lh), 0);
				ck_assert_int_eq(gsp_node_complete(nh, ah, rl, ml, ll), 0);
			}
	}
	cluster_free(&a);
	cluster_free(&b);
}
END_TEST

/* Snapshot of everything an edge holds, to prove a failed call changed
 * nothing. */
typedef struct snapshot {
	gsp_edge_info info;
	float a[64 * 4], b[64 * 4];
	float params[64 * 48 + 8];
} snapshot;

static void snap(gsp_node *node, const float *params, size_t nparams,
		 snapshot *s)
{
	const float *a, *b;
	unsigned r;
	memset(s, 0, sizeof(*s));
	ck_assert_int_eq(gsp_node_edge_info(node, 0, &s->info), 0);
	ck_assert_int_eq(gsp_node_edge_factors(node, 0, 0, &a, &b, &r), 0);
	memcpy(s->a, a, 64 * r * sizeof(float));
	memcpy(s->b, b, 48 * r * sizeof(float));
	memcpy(s->params, params, nparams * sizeof(float));
}

START_TEST(test_bad_arguments)
{
	gsp_layout *layout;
	ck_assert_int_eq(gsp_layout_parse("64x48,8", &layout), 0);
	static float params[64 * 48 + 8];
	for (size_t i = 0; i < sizeof(params) / sizeof(*params); i++)
		params[i] = (float)(i % 13) - 6.0f;
	gsp_config cfg = config_of(GSP_METHOD_POWERGOSSIP, 0, 1.0);
	gsp_node *node = (gsp_node *)0x1;
	ck_assert_int_lt(gsp_node_new(layout, params, &cfg, &node), 0);
	ck_assert_ptr_eq(node, (gsp_node *)0x1);
	cfg.rank = GSP_MAX_RANK + 1;
	ck_assert_int_lt(gsp_node_new(layout, params, &cfg, &node), 0);
	cfg.rank = 4;
	cfg.gamma = NAN;
	ck_assert_int_lt(gsp_node_new(layout, params, &cfg, &node), 0);
	cfg.gamma = -1.0f;
	ck_assert_int_lt(gsp_node_new(layout, params, &cfg, &node), 0);
	cfg.gamma = 1.0f;
	ck_assert_int_eq(gsp_node_new(layout, params, &cfg, &node), 0);

	uint8_t seed[GSP_SEED_BYTES] = {1};
	ck_assert_int_eq(gsp_node_add_edge(node, 0.5f, GSP_ROLE_LO, seed, 31), -EINVAL);
	ck_assert_int_eq(gsp_node_add_edge(node, 0.5f, GSP_ROLE_LO, seed, 33), -EINVAL);
	ck_assert_int_eq(gsp_node_add_edge(node, 0.0f, GSP_ROLE_LO, seed, 32), -EINVAL);
	ck_assert_int_eq(gsp_node_add_edge(node, NAN, GSP_ROLE_LO, seed, 32), -EINVAL);
	ck_assert_int_eq(gsp_node_add_edge(node, 0.5f, (gsp_role)7, seed, 32), -EINVAL);
	ck_assert_uint_eq(gsp_node_edge_count(node), 0);
	ck_assert_int_eq(gsp_node_add_edge(node, 0.5f, GSP_ROLE_HI, seed, 32), 0);

	size_t n = sizeof(params) / sizeof(*params);
	snapshot before, after;
	static float msg[64 * 4 + 8 + 1];
	/* Complete before any projection: wrong state. */
	snap(node, params, n, &before);
	ck_assert_int_eq(gsp_node_complete(node, 0, 1, msg, (64 * 4 + 8) * 4),
			 GSP_ESTATE);
	/* Non-finite parameters: projection refused, nothing changes. */
	params[100] = NAN;
	snap(node, params, n, &before);
	ck_assert_int_eq(gsp_node_project(node), GSP_ENONFINITE);
	snap(node, params, n, &after);
	ck_assert(memcmp(&before, &after, sizeof(before)) == 0);
	params[100] = INFINITY;
	ck_assert_int_eq(gsp_node_step(node), GSP_ENONFINITE);
	params[100] = 1.0f;
	params[64 * 48 + 3] = NAN;  /* in the 1-D tensor */
	ck_assert_int_eq(gsp_node_project(node), GSP_ENONFINITE);
	snap(node, params, n, &after);
	params[64 * 48 + 3] = before.params[64 * 48 + 3];
	ck_assert(memcmp(before.a, after.a, sizeof(before.a)) == 0);
	ck_assert(memcmp(&before.info, &after.info, sizeof(before.info)) == 0);
	params[64 * 48] = 3e38f;   /* the 1-D tensor travels as is */
	ck_assert_int_eq(gsp_node_project(node), 1);
	snap(node, params, n, &before);
	size_t len = (64 * 4 + 8) * 4;
	ck_assert_int_eq(gsp_node_message_size(node, 0, 1), (int64_t)len);
	/* Wrong size, wrong round, misaligned, non-finite, overflowing. */
	ck_assert_int_eq(gsp_node_complete(node, 0, 1, msg, len - 4), GSP_ESHAPE);
	ck_assert_int_eq(gsp_node_complete(node, 0, 1, msg, len + 4), GSP_ESHAPE);
	ck_assert_int_eq(gsp_node_complete(node, 0, 2, msg, len), GSP_EROUND);
	ck_assert_int_eq(gsp_node_complete(node, 0, 0, msg, len), GSP_EROUND);
	ck_assert_int_eq(gsp_node_complete(node, 0, 1, (uint8_t *)msg + 1, len),
			 -EINVAL);
	ck_assert_int_eq(gsp_node_complete(node, 1, 1, msg, len), -EINVAL);
	ck_assert_int_eq(gsp_node_complete(node, 0, 1, NULL, len), -EINVAL);
	msg[5] = NAN;
	ck_assert_int_eq(gsp_node_complete(node, 0, 1, msg, len), GSP_ENONFINITE);
	msg[5] = INFINITY;
	ck_assert_int_eq(gsp_node_complete(node, 0, 1, msg, len), GSP_ENONFINITE);
	const void *mine;
	size_t mlen;
	ck_assert_int_eq(gsp_node_message(node, 0, &mine, &mlen, NULL), 0);
	msg[5] = 0.0f;
	msg[64 * 4] = -3e38f;   /* finite, but hi - lo = 3e38 + 3e38 is not */
	ck_assert_int_eq(gsp_node_complete(node, 0, 1, msg, len), GSP_ENONFINITE);
	snap(node, params, n, &after);
	ck_assert(memcmp(&before, &after, sizeof(before)) == 0);
	/* A good message still completes the round afterwards. */
	memcpy(msg, mine, len);
	msg[0] += 1.0f;
	ck_assert_int_eq(gsp_node_complete(node, 0, 1, msg, len), 0);
	ck_assert_int_eq(gsp_node_complete(node, 0, 1, msg, len), GSP_ESTATE);
	ck_assert_int_eq(gsp_node_apply(node), 1);
	gsp_node_free(node);
	gsp_node_free(NULL);
	gsp_layout_free(layout);
}
END_TEST

START_TEST(test_edge_generations)
{
	/* A ring edge drops out mid-run and comes back with a new seed. */
	gsp_config cfg = config_of(GSP_METHOD_POWERGOSSIP, 2,
				   optimal_gamma(GSP_TOPO_RING, 8));
	cluster c = cluster_new(GSP_TOPO_RING, 8, NULL, "30x20,4", &cfg, 41);
	double e0 = cluster_stats(&c).error;
	cluster_rounds(&c, 5);
	unsigned lo, hi;
	size_t al, ah;
	ck_assert_int_eq(gsp_sim_edge(c.sim, 0, &lo, &al, &hi, &ah), 0);
	gsp_node *nl = gsp_sim_node(c.sim, lo), *nh = gsp_sim_node(c.sim, hi);
	ck_assert_int_eq(gsp_node_edge_disable(nl, al), 0);
	ck_assert_int_eq(gsp_node_edge_disable(nh, ah), 0);
	gsp_edge_info info;
	ck_assert_int_eq(gsp_node_edge_info(nl, al, &info), 0);
	ck_assert(!info.active);
	/* The sim still delivers on every edge, so drive the rest by hand:
	 * a disabled edge neither projects nor completes. */
	ck_assert_int_eq(gsp_node_step(nl), 1);
	static float junk[1024];
	ck_assert_int_eq(gsp_node_complete(nl, al, 6, junk, 4), GSP_ESTATE);
	ck_assert_int_eq(gsp_node_edge_info(nl, al, &info), 0);
	ck_assert_uint_eq(info.round, 5);
	uint8_t seed[GSP_SEED_BYTES] = {99};
	float w = (float)gsp_graph_weight(c.graph, lo, hi);
	ck_assert_int_eq(gsp_node_edge_reset(nl, al, 0.0f, GSP_ROLE_LO, seed, 32), -EINVAL);
	ck_assert_int_eq(gsp_node_edge_reset(nl, al, w, GSP_ROLE_LO, seed, 32), 0);
	ck_assert_int_eq(gsp_node_edge_reset(nh, ah, w, GSP_ROLE_HI, seed, 32), 0);
	ck_assert_int_eq(gsp_node_edge_set_weight(nh, ah, 2.0f), -EINVAL);
	ck_assert_int_eq(gsp_node_edge_info(nl, al, &info), 0);
	ck_assert(info.active && info.round == 0 && info.state == GSP_EDGE_IDLE);
	/* Node lo already projected its other edge: finish that round by
	 * stepping everyone else, then the sim carries on. */
	for (unsigned i = 0; i < 8; i++)
		if (i != lo)
			ck_assert_int_ge(gsp_node_project(gsp_sim_node(c.sim, i)), 0);
	ck_assert_int_eq(gsp_node_project(nl), 1);
	for (size_t e = 0; e < gsp_graph_edge_count(c.graph); e++) {
		unsigned a, b;
		size_t ea, eb, la, lb;
		const void *ma, *mb;
		uint64_t ra, rb;
		gsp_sim_edge(c.sim, e, &a, &ea, &b, &eb);
		gsp_node *na = gsp_sim_node(c.sim, a), *nb = gsp_sim_node(c.sim, b);
		ck_assert_int_eq(gsp_node_message(na, ea, &ma, &la, &ra), 0);
		ck_assert_int_eq(gsp_node_message(nb, eb, &mb, &lb, &rb), 0);
		ck_assert_uint_eq(ra, rb);
		ck_assert_int_eq(gsp_node_complete(na, ea, rb, mb, lb), 0);
		ck_assert_int_eq(gsp_node_complete(nb, eb, ra, ma, la), 0);
	}
	for (unsigned i = 0; i < 8; i++)
		ck_assert_int_ge(gsp_node_apply(gsp_sim_node(c.sim, i)), 0);
	cluster_rounds(&c, 400);
	gsp_sim_stats st = cluster_stats(&c);
	ck_assert_msg(st.mean_drift <= 1e-5, "drift %g", st.mean_drift);
	ck_assert_msg(st.error <= 1e-3 * e0, "error %g of initial", st.error / e0);
	assert_edges_identical(&c);
	cluster_free(&c);
}
END_TEST

/* Four nodes of eight 256x512 tensors and a vector, six rounds (small:
 * four tensors, two rounds, still spread): every node's parameters into
 * out (4 x par_floats() floats). */
enum { PAR_FLOATS = 8 * 256 * 512 + 512 };
static size_t par_floats(void)
{
	return test_size(8, 4) * 256 * 512 + 512;
}

static void parallel_run(float *out)
{
	static const char spec[] = "256x512,256x512,256x512,256x512,"
				   "256x512,256x512,256x512,256x512,512";
	static const char small[] = "256x512,256x512,256x512,256x512,512";
	gsp_config cfg = config_of(GSP_METHOD_POWERGOSSIP, 2, 0.3);
	cluster c = cluster_new(GSP_TOPO_RING, 4, NULL,
				test_small() ? small : spec, &cfg, 5);
	cluster_rounds(&c, test_size(6, 2));
	for (unsigned i = 0; i < 4; i++)
		memcpy(out + (size_t)i * par_floats(), gsp_sim_params(c.sim, i),
		       par_floats() * sizeof(float));
	cluster_free(&c);
}

/* A step large enough to be spread over the workers by whole tensors
 * (powergossip.c, pg_run) computes, bit for bit, what one thread does. */
START_TEST(test_threads_do_not_change_results)
{
	size_t bytes = 4 * par_floats() * sizeof(float);
	float *alone = mmap(NULL, bytes, PROT_READ | PROT_WRITE,
			    MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	float *spread = malloc(bytes);
	ck_assert(alone != MAP_FAILED && spread);
	/* The child starts its own pool (this process has not used one
	 * yet) with one thread. */
	pid_t pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		setenv("GSP_THREADS", "1", 1);
		parallel_run(alone);
		_exit(gsp__pool_size() == 1 ? 0 : 3);
	}
	setenv("GSP_THREADS", "2", 1);
	parallel_run(spread);
	int status;
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	ck_assert_uint_eq(gsp__pool_size(), 2);
	ck_assert(memcmp(alone, spread, bytes) == 0);
	munmap(alone, bytes);
	free(spread);
}
END_TEST

/* A step spread over two threads by tensors refuses non-finite
 * parameters in any tensor, whichever thread projects it, and then
 * commits nothing. */
START_TEST(test_nonfinite_refused_when_spread)
{
	setenv("GSP_THREADS", "2", 1);
	static const char spec[] = "256x512,256x512,256x512,256x512,"
				   "256x512,256x512,256x512,256x512,512";
	gsp_layout *layout;
	ck_assert_int_eq(gsp_layout_parse(spec, &layout), 0);
	static float params[PAR_FLOATS];
	for (size_t i = 0; i < PAR_FLOATS; i++)
		params[i] = (float)(i % 17) - 8.0f;
	gsp_config cfg = config_of(GSP_METHOD_POWERGOSSIP, 1, 0.5);
	gsp_node *node;
	ck_assert_int_eq(gsp_node_new(layout, params, &cfg, &node), 0);
	for (unsigned e = 0; e < 4; e++) {
		uint8_t seed[GSP_SEED_BYTES] = {(uint8_t)(e + 1)};
		ck_assert_int_eq(gsp_node_add_edge(node, 0.2f, e & 1 ? GSP_ROLE_HI
							       : GSP_ROLE_LO,
						   seed, sizeof(seed)), (int)e);
	}
	static const size_t bad[] = {0, 3 * 256 * 512 + 77, PAR_FLOATS - 1};
	for (size_t b = 0; b < sizeof(bad) / sizeof(*bad); b++) {
		float keep = params[bad[b]];
		params[bad[b]] = b == 1 ? INFINITY : NAN;
		ck_assert_int_eq(gsp_node_project(node), GSP_ENONFINITE);
		for (unsigned e = 0; e < 4; e++) {
			gsp_edge_info info;
			ck_assert_int_eq(gsp_node_edge_info(node, e, &info), 0);
			ck_assert_uint_eq(info.round, 0);
		}
		params[bad[b]] = keep;
	}
	ck_assert_uint_eq(gsp__pool_size(), 2);
	ck_assert_int_eq(gsp_node_project(node), 4);
	gsp_node_free(node);
	gsp_layout_free(layout);
}
END_TEST

/* GSP_KERNEL picks the variant the other tests then run on (the meson
 * suite runs this file once per variant), where the CPU can run it. */
START_TEST(test_kernel_variant)
{
	const char *want = getenv("GSP_KERNEL"), *got = gsp_kernel_name();
	ck_assert(strcmp(got, "avx512") == 0 || strcmp(got, "avx2") == 0 ||
		  strcmp(got, "generic") == 0);
	if (want && strcmp(want, "generic") == 0)
		ck_assert_str_eq(got, "generic");
#if defined(__x86_64__) && defined(__GNUC__)
	__builtin_cpu_init();
	bool avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
	if (want && strcmp(want, "avx2") == 0 && avx2)
		ck_assert_str_eq(got, "avx2");
	if (!want && avx2)
		ck_assert_str_ne(got, "generic");
#endif
}
END_TEST

int main(void)
{
	Suite *s = suite_create("powergossip");
	TCase *tc = tcase_create("properties");
	tcase_set_timeout(tc, 240);
	tcase_add_test(tc, test_conservation);
	tcase_add_test(tc, test_full_rank_is_exact);
	tcase_add_test(tc, test_monotone_consensus);
	tcase_add_test(tc, test_power_iteration);
	tcase_add_test(tc, test_buffers_identical);
	tcase_add_test(tc, test_equal_models_recover);
	tcase_add_test(tc, test_bits_per_round);
	tcase_add_test(tc, test_fused_step_matches_apply_then_project);
	tcase_add_test(tc, test_bad_arguments);
	tcase_add_test(tc, test_edge_generations);
	tcase_add_test(tc, test_threads_do_not_change_results);
	tcase_add_test(tc, test_nonfinite_refused_when_spread);
	tcase_add_test(tc, test_kernel_variant);
	suite_add_tcase(s, tc);
	return run_suite(s);
}
