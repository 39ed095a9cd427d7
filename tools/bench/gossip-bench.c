/*
 * gossip-bench: engine micro-benchmarks.
 *
 * `gossip-bench compute` measures what one gossip STEP costs a worker on a
 * real model layout (ResNet-50 by default): gsp_node_step() with k edges,
 * every one COMPLETED, so the step applies k pending low-rank updates and
 * projects k new messages.  The yardstick is one read-write pass over the
 * same parameters (cblas_saxpy, and cblas_sscal in place), timed
 * interleaved with the steps in the same run; the ratio step / pass is the
 * figure of merit (goal: <= 1.5 at rank 1 for k <= 8).  With --dtype
 * float16 or bfloat16 each row also times the same step on a 16-bit
 * buffer of the same parameter count (its float32 master copy read in and
 * written back: docs/ENGINE.md), beside the float32 one (goal: <= 1.1x).
 *
 * OpenBLAS worker threads busy-wait (sched_yield) for about 2^28 cycles
 * after every call.  On a small machine that takes a core away from the
 * step timed right after the baselines, which measures OpenBLAS, not the
 * step.  So unless OPENBLAS_THREAD_TIMEOUT is already set, compute sets it
 * to 4 (idle workers sleep at once) and re-executes itself: OpenBLAS reads
 * it only when it is loaded.
 */
#include <cblas.h>
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "gossip.h"
#include "shapes.h"

#ifdef GSP_SOURCE_DIR
#define GSP_DEFAULT_SHAPES GSP_SOURCE_DIR "/tools/data/resnet50.shapes"
#else
#define GSP_DEFAULT_SHAPES "tools/data/resnet50.shapes"
#endif

#define MAX_LIST 32

/* ---- small helpers ---------------------------------------------------- */

static int die(const char *what, const char *arg)
{
	fprintf(stderr, "gossip-bench: %s: '%s' (see --help)\n", what, arg);
	return 2;
}

static int parse_uint(const char *s, unsigned long long max,
		      unsigned long long *ret)
{
	char *end;
	errno = 0;
	if (!s || *s < '0' || *s > '9')
		return -EINVAL;
	unsigned long long v = strtoull(s, &end, 10);
	if (errno || *end || v > max)
		return -EINVAL;
	*ret = v;
	return 0;
}

/* "1,2,4,8" into 1..MAX_LIST values, each in [1, max]. */
static int parse_list(const char *s, unsigned max, unsigned *out,
		      size_t *ret_n)
{
	char buf[256];
	size_t n = 0;
	if (!s || strlen(s) >= sizeof(buf))
		return -EINVAL;
	strcpy(buf, s);
	char *save = NULL;
	for (char *tok = strtok_r(buf, ",", &save); tok;
	     tok = strtok_r(NULL, ",", &save)) {
		unsigned long long v;
		if (n == MAX_LIST || parse_uint(tok, max, &v) || v < 1)
			return -EINVAL;
		out[n++] = (unsigned)v;
	}
	if (n == 0)
		return -EINVAL;
	*ret_n = n;
	return 0;
}

static double now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec * 1e-6;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

static double median(double *v, size_t n)
{
	qsort(v, n, sizeof(*v), cmp_double);
	return n & 1 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* Deterministic floats in [-s, s): a 64-bit LCG, high bits. */
static void fill(float *x, size_t n, uint64_t seed, float s)
{
	uint64_t z = seed * 0x9E3779B97F4A7C15ull + 1;
	for (size_t i = 0; i < n; i++) {
		z = z * 6364136223846793005ull + 1442695040888963407ull;
		x[i] = s * ((float)(z >> 40) * (1.0f / 8388608.0f) - 1.0f);
	}
}

static float *alloc_floats(size_t n)
{
	void *p = NULL;
	if (posix_memalign(&p, 64, (n ? n : 1) * sizeof(float)))
		return NULL;
	return p;
}

/* ---- compute ---------------------------------------------------------- */

typedef struct compute_opts {
	const char *shapes;
	unsigned edges[MAX_LIST], ranks[MAX_LIST];
	size_t n_edges, n_ranks;
	unsigned repeat;
	const char *csv;
	int threads;             /* 0: leave OpenBLAS as configured */
	gsp_dtype dtype;         /* float32: no 16-bit column */
} compute_opts;

static void compute_usage(FILE *f)
{
	fprintf(f,
"usage: gossip-bench compute [options]\n"
"Times gsp_node_step() (apply k pending updates + project k messages) on a\n"
"model layout against one read-write pass over the same parameters.\n\n"
"  --shapes FILE     model shapes (default $GSP_SHAPES, else\n"
"                    %s)\n"
"  --edges LIST      edge counts k (default 1,2,4,8)\n"
"  --ranks LIST      powergossip ranks (default 1,4)\n"
"  --repeat N        timed repetitions per row; medians reported (default 31)\n"
"  --csv FILE        write k,rank,step_ms,pass_ms,ratio,sscal_ms,ratio_inplace\n"
"  --threads N       OpenBLAS threads (default: as configured)\n"
"  --dtype NAME      float16 or bfloat16: also time the step of a 16-bit\n"
"                    buffer (every value changed before each step, as a\n"
"                    trainer does) beside the float32 one (csv: two more\n"
"                    columns, step16_ms,ratio16)\n"
"  --help            this text\n"
"Environment: GSP_SHAPES (default shapes file), GSP_THREADS (threads of\n"
"the engine's kernel; default: the CPUs available, at most 8), GSP_KERNEL\n"
"(avx512, avx2 or generic: a narrower kernel than the CPU's widest),\n"
"OPENBLAS_THREAD_TIMEOUT (set to 4 unless given, see the source).\n",
		GSP_DEFAULT_SHAPES);
}

/* A synthetic neighbour message: this end's own message plus small noise,
 * so the pending update is a small, finite, non-zero low-rank matrix. */
static int complete_edge(gsp_node *node, size_t e, float *peer,
			 const float *noise)
{
	const void *msg;
	size_t len;
	uint64_t round;
	int err = gsp_node_message(node, e, &msg, &len, &round);
	if (err)
		return err;
	const float *mine = msg;
	for (size_t i = 0; i < len / 4; i++)
		peer[i] = mine[i] + noise[i];
	return gsp_node_complete(node, e, round, peer, len);
}

typedef struct row {
	unsigned k, rank;
	double step_ms, saxpy_ms, sscal_ms;
} row;

/* A trainer's update of every value of a 16-bit buffer (the last bit
 * flipped), so the step reads every one in. */
static void touch16(uint16_t *buf, size_t n)
{
	for (size_t i = 0; i < n; i++)
		buf[i] ^= 1;
}

/* One (k, rank) measurement on the buffer (n values of dtype); x, y are
 * n-float scratch buffers for the baselines. */
static int compute_row(const compute_opts *o, const gsp_layout *layout,
		       void *params, gsp_dtype dtype, float *x, float *y, size_t n,
		       unsigned k, unsigned rank, row *ret)
{
	gsp_config cfg;
	gsp_config_default(&cfg);
	cfg.rank = rank;
	cfg.gamma = 1.0f;
	gsp_node *node = NULL;
	float *peer = NULL, *noise = NULL;
	double *t_step = calloc(3 * (size_t)o->repeat, sizeof(double));
	double *t_saxpy = t_step + o->repeat, *t_sscal = t_saxpy + o->repeat;
	int err = t_step ? gsp_node_new_typed(layout, params, dtype, &cfg, &node) : -ENOMEM;
	for (unsigned e = 0; !err && e < k; e++) {
		uint8_t seed[GSP_SEED_BYTES] = {0};
		seed[0] = (uint8_t)e;
		seed[1] = (uint8_t)k;
		seed[2] = (uint8_t)rank;
		seed[3] = 0xb5;
		int idx = gsp_node_add_edge(node, 1.0f / (float)(k + 1),
					    e & 1 ? GSP_ROLE_HI : GSP_ROLE_LO,
					    seed, sizeof(seed));
		if (idx < 0)
			err = idx;
	}
	size_t cap = 0;
	for (unsigned e = 0; !err && e < k; e++)
		for (uint64_t rd = 1; rd <= 2; rd++) {
			int64_t s = gsp_node_message_size(node, e, rd);
			if (s < 0)
				err = (int)s;
			else if ((size_t)s > cap)
				cap = (size_t)s;
		}
	if (!err) {
		peer = alloc_floats(cap / 4);
		noise = alloc_floats(cap / 4);
		if (!peer || !noise)
			err = -ENOMEM;
		else
			fill(noise, cap / 4, 1000 + k * 16 + rank, 1e-3f);
	}
	/* Round 1 on every edge; the odd-indexed edges then wait one step,
	 * so afterwards half the edges project odd rounds (X V) and half
	 * even ones (X^T U) in every timed step. */
	if (!err) {
		int r = gsp_node_project(node);
		err = r < 0 ? r : 0;
	}
	for (unsigned e = 0; !err && e < k; e += 2)
		err = complete_edge(node, e, peer, noise);
	if (!err) {
		int r = gsp_node_step(node);
		err = r < 0 ? r : 0;
	}
	/* One untimed warm-up step, then the timed ones; every edge is
	 * completed (untimed) before each step. */
	for (unsigned rep = 0; !err && rep <= o->repeat; rep++) {
		for (unsigned e = 0; !err && e < k; e++)
			err = complete_edge(node, e, peer, noise);
		if (err)
			break;
		if (dtype != GSP_DTYPE_FLOAT32)
			touch16(params, n);
		double t0 = now_ms();
		int r = gsp_node_step(node);
		double t1 = now_ms();
		if (r < 0) {
			err = r;
			break;
		}
		/* Baselines in the same loop: saxpy y += a x (alternating
		 * sign so y stays bounded), then sscal of y in place by 2 or
		 * 1/2 (exact in float). */
		float a = rep & 1 ? -1e-3f : 1e-3f;
		double t2 = now_ms();
		cblas_saxpy((int)n, a, x, 1, y, 1);
		double t3 = now_ms();
		cblas_sscal((int)n, rep & 1 ? 0.5f : 2.0f, y, 1);
		double t4 = now_ms();
		if (rep == 0)
			continue;
		t_step[rep - 1] = t1 - t0;
		t_saxpy[rep - 1] = t3 - t2;
		t_sscal[rep - 1] = t4 - t3;
	}
	if (!err) {
		*ret = (row){
			.k = k, .rank = rank,
			.step_ms = median(t_step, o->repeat),
			.saxpy_ms = median(t_saxpy, o->repeat),
			.sscal_ms = median(t_sscal, o->repeat),
		};
	}
	gsp_node_free(node);
	free(peer);
	free(noise);
	free(t_step);
	return err;
}

static int compute_parse(int argc, char **argv, compute_opts *o)
{
	static const struct option lo[] = {
		{"shapes", required_argument, 0, 's'},
		{"edges", required_argument, 0, 'e'},
		{"ranks", required_argument, 0, 'r'},
		{"repeat", required_argument, 0, 'n'},
		{"csv", required_argument, 0, 'c'},
		{"threads", required_argument, 0, 't'},
		{"dtype", required_argument, 0, 'd'},
		{"help", no_argument, 0, 'h'},
		{0, 0, 0, 0},
	};
	unsigned long long v;
	int c;
	while ((c = getopt_long(argc, argv, "", lo, NULL)) != -1) {
		switch (c) {
		case 's':
			o->shapes = optarg;
			break;
		case 'e':
			if (parse_list(optarg, 4096, o->edges, &o->n_edges))
				return die("--edges needs a list of 1..4096", optarg);
			break;
		case 'r':
			if (parse_list(optarg, GSP_MAX_RANK, o->ranks, &o->n_ranks))
				return die("--ranks needs a list of 1..1024", optarg);
			break;
		case 'n':
			if (parse_uint(optarg, 100000, &v) || v < 1)
				return die("--repeat needs 1..100000", optarg);
			o->repeat = (unsigned)v;
			break;
		case 'c':
			o->csv = optarg;
			break;
		case 't':
			if (parse_uint(optarg, 1024, &v) || v < 1)
				return die("--threads needs 1..1024", optarg);
			o->threads = (int)v;
			break;
		case 'd':
			if (gsp_dtype_parse(optarg, &o->dtype) || o->dtype == GSP_DTYPE_FLOAT32)
				return die("--dtype needs float16 or bfloat16", optarg);
			break;
		case 'h':
			compute_usage(stdout);
			exit(0);
		default:
			compute_usage(stderr);
			return 2;
		}
	}
	if (optind < argc)
		return die("unexpected argument", argv[optind]);
	return 0;
}

static int cmd_compute(int argc, char **argv)
{
	compute_opts o = {
		.edges = {1, 2, 4, 8}, .n_edges = 4,
		.ranks = {1, 4}, .n_ranks = 2,
		.repeat = 31,
	};
	o.shapes = getenv("GSP_SHAPES");
	if (!o.shapes || !*o.shapes)
		o.shapes = GSP_DEFAULT_SHAPES;
	int rc = compute_parse(argc, argv, &o);
	if (rc)
		return rc;
	if (o.threads)
		openblas_set_num_threads(o.threads);

	gsp_tensor *tensors = NULL;
	size_t nt = 0;
	unsigned line = 0;
	int err = gsp_shapes_load(o.shapes, &tensors, &nt, &line);
	if (err == -EINVAL && line) {
		fprintf(stderr, "gossip-bench: %s:%u: malformed line\n",
			o.shapes, line);
		return 1;
	}
	if (err) {
		fprintf(stderr, "gossip-bench: %s: %s\n", o.shapes,
			gsp_strerror(err));
		return 1;
	}
	gsp_layout *layout = NULL;
	err = gsp_layout_new(tensors, nt, &layout);
	free(tensors);
	if (err) {
		fprintf(stderr, "gossip-bench: %s: %s\n", o.shapes,
			gsp_strerror(err));
		return 1;
	}
	size_t n = gsp_layout_floats(layout);
	if (n > 0x7fffffff) {
		fprintf(stderr, "gossip-bench: model too large for BLAS int\n");
		gsp_layout_free(layout);
		return 1;
	}
	float *params = alloc_floats(n), *x = alloc_floats(n),
	      *y = alloc_floats(n);
	bool typed = o.dtype != GSP_DTYPE_FLOAT32;
	uint16_t *buf16 = typed ? calloc(n, sizeof(uint16_t)) : NULL;
	FILE *csv = NULL;
	if (!params || !x || !y || (typed && !buf16)) {
		fprintf(stderr, "gossip-bench: out of memory\n");
		rc = 1;
		goto out;
	}
	fill(params, n, 1, 1.0f);
	fill(x, n, 2, 1.0f);
	fill(y, n, 3, 1.0f);
	for (size_t i = 0; typed && i < n; i++)
		buf16[i] = o.dtype == GSP_DTYPE_FLOAT16 ? gsp_float_to_half(params[i])
							 : gsp_float_to_bf16(params[i]);
	if (o.csv) {
		csv = fopen(o.csv, "w");
		if (!csv) {
			fprintf(stderr, "gossip-bench: %s: %s\n", o.csv,
				strerror(errno));
			rc = 1;
			goto out;
		}
		fprintf(csv, "k,rank,step_ms,pass_ms,ratio,sscal_ms,ratio_inplace%s\n",
			typed ? ",step16_ms,ratio16" : "");
	}

	const char *tmo = getenv("OPENBLAS_THREAD_TIMEOUT");
	const char *gth = getenv("GSP_THREADS");
	printf("model: %s, %zu tensors, %zu floats (%.1f MB); repeat %u "
	       "(medians)\nopenblas threads %d, OPENBLAS_THREAD_TIMEOUT=%s, "
	       "GSP_THREADS=%s, kernel %s\n",
	       o.shapes, gsp_layout_count(layout), n, n * 4.0 / 1e6,
	       o.repeat, openblas_get_num_threads(), tmo ? tmo : "(unset)",
	       gth ? gth : "(unset)", gsp_kernel_name());
	printf("%4s %5s %10s %10s %7s %10s %13s", "k", "rank", "step_ms",
	       "saxpy_ms", "ratio", "sscal_ms", "ratio_inplace");
	if (typed)
		printf(" %10s %8s  (%s)", "step16_ms", "ratio16", gsp_dtype_name(o.dtype));
	printf("\n");
	for (size_t ri = 0; ri < o.n_ranks; ri++)
		for (size_t ki = 0; ki < o.n_edges; ki++) {
			row r, r16 = {0};
			err = compute_row(&o, layout, params, GSP_DTYPE_FLOAT32, x, y, n,
					  o.edges[ki], o.ranks[ri], &r);
			if (!err && typed)
				err = compute_row(&o, layout, buf16, o.dtype, x, y, n,
						  o.edges[ki], o.ranks[ri], &r16);
			if (err) {
				fprintf(stderr, "gossip-bench: k=%u rank=%u: %s\n",
					o.edges[ki], o.ranks[ri],
					gsp_strerror(err));
				rc = 1;
				goto out;
			}
			printf("%4u %5u %10.3f %10.3f %7.3f %10.3f %13.3f",
			       r.k, r.rank, r.step_ms, r.saxpy_ms,
			       r.step_ms / r.saxpy_ms, r.sscal_ms,
			       r.step_ms / r.sscal_ms);
			if (typed)
				printf(" %10.3f %8.3f", r16.step_ms, r16.step_ms / r.step_ms);
			printf("\n");
			fflush(stdout);
			if (csv)
				fprintf(csv, "%u,%u,%.4f,%.4f,%.4f,%.4f,%.4f",
					r.k, r.rank, r.step_ms, r.saxpy_ms,
					r.step_ms / r.saxpy_ms, r.sscal_ms,
					r.step_ms / r.sscal_ms);
			if (csv && typed)
				fprintf(csv, ",%.4f,%.4f", r16.step_ms, r16.step_ms / r.step_ms);
			if (csv)
				fprintf(csv, "\n");
		}
out:
	if (csv && fclose(csv) && !rc) {
		fprintf(stderr, "gossip-bench: %s: %s\n", o.csv, strerror(errno));
		rc = 1;
	}
	free(params);
	free(buf16);
	free(x);
	free(y);
	gsp_layout_free(layout);
	return rc;
}

/* ---- dispatch --------------------------------------------------------- */

static const struct {
	const char *name;
	int (*run)(int argc, char **argv);
	const char *help;
} commands[] = {
	{"compute", cmd_compute,
	 "time one step (apply + project, k edges) against one pass over the model"},
};

static void usage(FILE *f)
{
	fprintf(f, "usage: gossip-bench <command> [options]\n\ncommands:\n");
	for (size_t i = 0; i < sizeof(commands) / sizeof(*commands); i++)
		fprintf(f, "  %-10s %s\n", commands[i].name, commands[i].help);
	fprintf(f, "\n'gossip-bench <command> --help' describes its options.\n");
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		usage(stderr);
		return 2;
	}
	if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 ||
	    strcmp(argv[1], "help") == 0) {
		usage(stdout);
		return 0;
	}
	if (strcmp(argv[1], "compute") == 0 &&
	    !getenv("OPENBLAS_THREAD_TIMEOUT")) {
		/* See the top of this file; on failure, run as we are. */
		if (setenv("OPENBLAS_THREAD_TIMEOUT", "4", 1) == 0)
			execv("/proc/self/exe", argv);
	}
	for (size_t i = 0; i < sizeof(commands) / sizeof(*commands); i++)
		if (strcmp(argv[1], commands[i].name) == 0)
			return commands[i].run(argc - 1, argv + 1);
	fprintf(stderr, "gossip-bench: unknown command '%s'\n", argv[1]);
	usage(stderr);
	return 2;
}
