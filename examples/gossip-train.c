/*
 * gossip-train: trains an MLP on Fashion-MNIST as one node of a gossipd
 * network (or alone, --standalone, as a baseline).
 *
 * This program owns the training loop and its command line.  The network
 * is examples/mlp.c, the optimizer examples/sgd.c, the data shards
 * examples/trainset.c and the report lines examples/train_report.c.
 *
 * Each step follows docs/ALGORITHM.md section 5 (D-PSGD): the gradient of a
 * batch of this node's shard at the current model, then a gossip STEP
 * (gossipd mixes the model with the neighbours' in the shared buffer),
 * then the momentum-SGD step with that gradient on the gossiped model.
 * The momentum buffer stays private.  Every node initialises from the same
 * --init-seed, so all start from one model (as the reference PowerGossip
 * code does): gossip then only has to hold together what the different
 * shards pull apart.  At the end: DRAIN, gossip-only AVERAGE, and the test
 * accuracy of the averaged model.
 *
 * Exit status: 0 success, 1 runtime error (the message names the cause),
 * 2 usage error.
 */
#include <cblas.h>
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli.h"
#include "client.h"
#include "trainerlink.h"
#include "idx.h"
#include "mlp.h"
#include "rng.h"
#include "sgd.h"
#include "train_report.h"
#include "trainset.h"

#define PROG "gossip-train"
#define EVAL_BATCH 500u

typedef struct opts {
	const char *socket;
	bool standalone;
	const char *name;
	unsigned node, nodes;
	unsigned sizes[GSP_MLP_MAX_LAYERS + 1];
	int n_sizes;
	unsigned epochs, batch;
	float lr, momentum;
	uint64_t init_seed, data_seed;
	const char *data_dir;
	unsigned report_every;
	gsp_report_format format;
	bool sync;
	unsigned wait_edges, wait_seconds;
	bool average;
	float average_target;
	uint32_t average_ms, average_rounds;
	const char *dump;
	int threads;
	gsp_client_precision precision;   /* of the factors on the wire */
} opts;

/* Everything one run holds. */
typedef struct trainer {
	const opts *o;
	gsp_client *client;       /* NULL when standalone */
	gsp_mlp *net;
	gsp_sgd sgd;
	gsp_trainset train, test;
	float *params;            /* gossipd's shared buffer, or malloc'd */
	float *batch_x;           /* EVAL_BATCH (or batch) rows */
	uint8_t *batch_y;
	uint32_t *order;          /* this epoch's shard order */
	size_t steps_per_epoch;   /* the same on every node: smallest shard */
	double accuracy;          /* after the last epoch */
	uint64_t steps;
	gsp_client_step_result last; /* stats of the last STEP */
	struct timespec t0;
} trainer;

static void usage(FILE *f)
{
	fprintf(f,
"usage: " PROG " --socket PATH --node I --nodes N [options]\n"
"       " PROG " --standalone [--node I --nodes N] [options]\n"
"Trains an MLP on Fashion-MNIST shard I of N with momentum SGD, gossiping\n"
"the model through the local gossipd after every step; at the end averages\n"
"with the neighbours and reports the averaged model's test accuracy.\n\n"
"  --socket PATH         gossipd's API socket\n"
"  --standalone          no daemon: train alone on the shard (a baseline;\n"
"                        --nodes 1 is the whole training set)\n"
"  --node I, --nodes N   this node's shard of the 60000 training images\n"
"                        (default 0 of 1)\n"
"  --layers SIZES        layer sizes (default 784-512-256-10)\n"
"  --epochs E            passes over the shard (default 3)\n"
"  --batch B             batch size (default 64)\n"
"  --lr LR               learning rate (default 0.05)\n"
"  --momentum M          momentum (default 0.9)\n"
"  --init-seed S         initial model; the same on every node (default 1)\n"
"  --data-seed S         shard permutation, the same on every node, and\n"
"                        batch order (default 42)\n"
"  --data-dir DIR        Fashion-MNIST directory\n"
"                        (default " GSP_FMNIST_DIR ")\n"
"  --report-every K      also report every K steps (default 0: per epoch)\n"
"  --json | --csv        machine-readable reports (JSON lines, CSV)\n"
"  --sync                STEP with the SYNC flag (wait for every edge)\n"
"  --wait-edges N        before training, wait until N edges are up\n"
"                        (default 0: every configured edge)\n"
"  --wait-time S         ... for at most S seconds (default 60)\n"
"  --average-target T    AVERAGE until the consensus estimate is <= T\n"
"                        (default 0.001)\n"
"  --average-time MS     AVERAGE time limit (default 30000)\n"
"  --average-rounds N    AVERAGE round limit (default 0: none)\n"
"  --no-average          skip AVERAGE at the end\n"
"  --dump FILE           write the final parameters as raw float32\n"
"  --threads N           OpenBLAS threads (default 1)\n"
"  --precision P         factors on the wire: float32, float16 or\n"
"                        bfloat16 (default: the daemon's, float32)\n"
"  --name NAME           client name shown by the daemon\n"
"  --help                this text\n\n"
"Data: the Debian package dataset-fashion-mnist.\n"
"Exit status: 0 success, 1 runtime error, 2 usage error.\n");
}

static int die(const char *what, const char *arg)
{
	return gsp_cli_die(PROG, what, arg);
}

static int parse_uint(const char *arg, unsigned long long min,
		      unsigned long long max, const char *what, uint64_t *ret)
{
	unsigned long long v;
	if (gsp_cli_uint(arg, max, &v) || v < min)
		return die(what, arg);
	*ret = v;
	return 0;
}

static int parse_args(int argc, char **argv, opts *o)
{
	static const struct option lo[] = {
		{"socket", required_argument, 0, 'S'},
		{"standalone", no_argument, 0, 'A'},
		{"node", required_argument, 0, 'i'},
		{"nodes", required_argument, 0, 'n'},
		{"layers", required_argument, 0, 'L'},
		{"epochs", required_argument, 0, 'e'},
		{"batch", required_argument, 0, 'b'},
		{"lr", required_argument, 0, 'l'},
		{"momentum", required_argument, 0, 'm'},
		{"init-seed", required_argument, 0, 's'},
		{"data-seed", required_argument, 0, 'd'},
		{"data-dir", required_argument, 0, 'D'},
		{"report-every", required_argument, 0, 'k'},
		{"json", no_argument, 0, 'J'},
		{"csv", no_argument, 0, 'C'},
		{"sync", no_argument, 0, 'y'},
		{"wait-edges", required_argument, 0, 'W'},
		{"wait-time", required_argument, 0, 'w'},
		{"average-target", required_argument, 0, 'a'},
		{"average-time", required_argument, 0, 't'},
		{"average-rounds", required_argument, 0, 'r'},
		{"no-average", no_argument, 0, 'x'},
		{"dump", required_argument, 0, 'F'},
		{"threads", required_argument, 0, 'T'},
		{"name", required_argument, 0, 'N'},
		{"precision", required_argument, 0, 'P'},
		{"help", no_argument, 0, 'h'},
		{0, 0, 0, 0},
	};
	uint64_t v;
	int c;

	while ((c = getopt_long(argc, argv, "", lo, NULL)) != -1) {
		int bad = 0;
		switch (c) {
		case 'S': o->socket = optarg; break;
		case 'A': o->standalone = true; break;
		case 'i':
			bad = parse_uint(optarg, 0, 65535, "bad --node", &v);
			o->node = (unsigned)v;
			break;
		case 'n':
			bad = parse_uint(optarg, 1, 60000, "bad --nodes", &v);
			o->nodes = (unsigned)v;
			break;
		case 'L':
			o->n_sizes = gsp_mlp_parse_sizes(optarg, o->sizes);
			if (o->n_sizes < 0 ||
			    o->sizes[0] != GSP_FMNIST_ROWS * GSP_FMNIST_COLS ||
			    o->sizes[o->n_sizes - 1] != GSP_FMNIST_CLASSES)
				return die("--layers: sizes 1..65536 from 784 "
					   "inputs to 10 classes, e.g. "
					   "784-512-256-10", optarg);
			break;
		case 'e':
			bad = parse_uint(optarg, 0, 100000, "bad --epochs", &v);
			o->epochs = (unsigned)v;
			break;
		case 'b':
			bad = parse_uint(optarg, 1, 65536, "bad --batch", &v);
			o->batch = (unsigned)v;
			break;
		case 'l':
			if (gsp_cli_float(optarg, &o->lr))
				return die("bad --lr", optarg);
			break;
		case 'm':
			if (gsp_cli_float(optarg, &o->momentum) ||
			    o->momentum >= 1.0f)
				return die("--momentum needs 0 <= M < 1", optarg);
			break;
		case 's':
			bad = parse_uint(optarg, 0, UINT64_MAX, "bad --init-seed",
					 &o->init_seed);
			break;
		case 'd':
			bad = parse_uint(optarg, 0, UINT64_MAX, "bad --data-seed",
					 &o->data_seed);
			break;
		case 'D': o->data_dir = optarg; break;
		case 'k':
			bad = parse_uint(optarg, 0, UINT32_MAX,
					 "bad --report-every", &v);
			o->report_every = (unsigned)v;
			break;
		case 'J': o->format = GSP_REPORT_JSON; break;
		case 'C': o->format = GSP_REPORT_CSV; break;
		case 'y': o->sync = true; break;
		case 'W':
			bad = parse_uint(optarg, 0, 65535, "bad --wait-edges", &v);
			o->wait_edges = (unsigned)v;
			break;
		case 'w':
			bad = parse_uint(optarg, 1, 86400, "bad --wait-time", &v);
			o->wait_seconds = (unsigned)v;
			break;
		case 'a':
			if (gsp_cli_float(optarg, &o->average_target))
				return die("bad --average-target", optarg);
			break;
		case 't':
			bad = parse_uint(optarg, 0, UINT32_MAX,
					 "bad --average-time", &v);
			o->average_ms = (uint32_t)v;
			break;
		case 'r':
			bad = parse_uint(optarg, 0, UINT32_MAX,
					 "bad --average-rounds", &v);
			o->average_rounds = (uint32_t)v;
			break;
		case 'x': o->average = false; break;
		case 'F': o->dump = optarg; break;
		case 'T':
			bad = parse_uint(optarg, 1, 1024, "bad --threads", &v);
			o->threads = (int)v;
			break;
		case 'N':
			if (strlen(optarg) > GSP_CLIENT_NAME_MAX)
				return die("--name is too long", optarg);
			o->name = optarg;
			break;
		case 'P': {
			static const char *const names[] = {"float32", "float16", "bfloat16"};
			unsigned p = 0;
			while (p < 3 && strcmp(optarg, names[p]) != 0)
				p++;
			if (p == 3)
				return die("--precision: float32, float16 or bfloat16", optarg);
			o->precision = (gsp_client_precision)(GSP_CLIENT_PRECISION_FLOAT32 + p);
			break;
		}
		case 'h':
			usage(stdout);
			exit(0);
		default:
			usage(stderr);
			return 2;
		}
		if (bad)
			return bad;
	}
	if (optind < argc)
		return die("unexpected argument", argv[optind]);
	if (!o->socket && !o->standalone)
		return die("--socket is required (or --standalone)", NULL);
	if (o->socket && o->standalone)
		return die("--standalone takes no --socket", o->socket);
	if (o->node >= o->nodes)
		return die("--node must be below --nodes", NULL);
	if (o->average && o->average_ms == 0 && o->average_rounds == 0)
		return die("AVERAGE needs a time or round limit",
			   "--average-time 0");
	return 0;
}

static double seconds_since(const struct timespec *t0)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)(t.tv_sec - t0->tv_sec) +
	       (double)(t.tv_nsec - t0->tv_nsec) * 1e-9;
}

/* Loads the shard and the test set; explains a missing data set. */
static int load_data(trainer *t)
{
	const opts *o = t->o;
	const char *dir = o->data_dir ? o->data_dir : GSP_FMNIST_DIR;
	int err = gsp_trainset_load(o->data_dir, "train", o->node, o->nodes,
				    o->data_seed, &t->train);

	if (err == 0) {
		err = gsp_trainset_load(o->data_dir, "t10k", 0, 1, 0, &t->test);
		if (err < 0)
			gsp_trainset_free(&t->train);
	}
	if (err == -ENOENT)
		fprintf(stderr, PROG ": Fashion-MNIST is not in %s: install the "
			"Debian package dataset-fashion-mnist (apt-get install "
			"dataset-fashion-mnist) or pass --data-dir\n", dir);
	else if (err == -EINVAL && o->nodes > 1)
		fprintf(stderr, PROG ": cannot make shard %u of %u from the "
			"Fashion-MNIST files in %s (bad files, or too many "
			"nodes)\n", o->node, o->nodes, dir);
	else if (err < 0)
		fprintf(stderr, PROG ": cannot load Fashion-MNIST from %s: %s\n",
			dir, strerror(-err));
	if (err < 0)
		return -1;
	t->steps_per_epoch = t->train.source_count / o->nodes / o->batch;
	if (t->steps_per_epoch == 0) {
		fprintf(stderr, PROG ": the smallest shard has %zu images, "
			"fewer than one batch of %u\n",
			t->train.source_count / o->nodes, o->batch);
		return -1;
	}
	return 0;
}

/* Builds the network and the parameter buffer: gossipd's (registered) or
 * plain memory; then initialises the model. */
static int setup_model(trainer *t)
{
	const opts *o = t->o;
	unsigned cap = o->batch > EVAL_BATCH ? o->batch : EVAL_BATCH;
	int err;

	if (gsp_mlp_new(o->sizes, (unsigned)o->n_sizes, cap, &t->net) < 0 ||
	    gsp_sgd_init(&t->sgd, gsp_mlp_param_count(t->net), o->lr,
			 o->momentum) < 0)
		goto nomem;
	t->batch_x = malloc((size_t)cap * t->train.features * sizeof(float));
	t->batch_y = malloc(cap);
	t->order = malloc(t->train.count * sizeof(*t->order));
	if (!t->batch_x || !t->batch_y || !t->order)
		goto nomem;

	if (o->standalone) {
		t->params = calloc(gsp_mlp_param_count(t->net), sizeof(float));
		if (!t->params)
			goto nomem;
	} else {
		size_t nt = gsp_mlp_tensor_count(t->net);
		gsp_tensor tensors[2 * GSP_MLP_MAX_LAYERS];
		gsp_mlp_tensors(t->net, tensors);
		err = trainer_link_connect(PROG, o->socket, o->name, &t->client);
		if (err == -ENOENT || err == -ECONNREFUSED)
			fprintf(stderr, PROG ": start gossipd first (see "
				"docs/DAEMON.md), or train without it: "
				"--standalone\n");
		if (err < 0)
			return -1;
		gsp_client_register_options ro = {.precision = o->precision};
		err = gsp_client_register_opts(t->client, tensors, nt, &ro, &t->params);
		if (err < 0)
			return -trainer_link_fail(PROG, t->client, "register", err);
	}
	gsp_mlp_bind(t->net, t->params);
	gsp_mlp_init(t->net, o->init_seed);
	return 0;
nomem:
	fprintf(stderr, PROG ": out of memory\n");
	return -1;
}

/* Test accuracy of the current model, 0..1. */
static double test_accuracy(trainer *t)
{
	size_t right = 0;

	for (size_t first = 0; first < t->test.count; first += EVAL_BATCH) {
		size_t n = t->test.count - first;
		n = n < EVAL_BATCH ? n : EVAL_BATCH;
		gsp_trainset_batch(&t->test, NULL, first, n, t->batch_x,
				   t->batch_y);
		right += gsp_mlp_correct(t->net, t->batch_x, t->batch_y,
					 (unsigned)n);
	}
	return (double)right / (double)t->test.count;
}

static void report(trainer *t, const char *event, unsigned epoch,
		   double loss, double accuracy)
{
	gsp_report r = gsp_report_empty(event, t->o->node);

	r.epoch = epoch;
	r.step = t->steps;
	r.loss = loss;
	r.test_accuracy = accuracy;
	if (t->client) {
		r.consensus = t->last.consensus_estimate;
		r.sent_mb = (double)t->last.bytes_sent / 1e6;
	}
	r.seconds = seconds_since(&t->t0);
	gsp_report_print(stdout, t->o->format, &r);
}

/* One step: gradient at the current model, gossip, optimizer step. */
static int train_step(trainer *t, const uint32_t *rows, double *loss)
{
	const opts *o = t->o;

	gsp_trainset_batch(&t->train, rows, 0, o->batch, t->batch_x, t->batch_y);
	*loss = gsp_mlp_loss_grad(t->net, t->batch_x, t->batch_y, o->batch);
	if (!isfinite(*loss)) {
		fprintf(stderr, PROG ": the loss diverged at step %llu (lower "
			"--lr)\n", (unsigned long long)t->steps);
		return -1;
	}
	if (t->client) {
		int err = gsp_client_step(t->client,
					  o->sync ? GSP_CLIENT_STEP_SYNC : 0,
					  &t->last);
		if (err < 0)
			return -trainer_link_fail(PROG, t->client, "step", err);
	}
	gsp_sgd_step(&t->sgd, t->params, gsp_mlp_grads(t->net));
	t->steps++;
	return 0;
}

static int train(trainer *t)
{
	const opts *o = t->o;
	size_t steps_per_epoch = t->steps_per_epoch;
	gsp_rng rng = gsp_rng_new(o->data_seed, 1 + (uint64_t)o->node);
	double window_loss = 0;
	unsigned window_steps = 0;

	for (size_t i = 0; i < t->train.count; i++)
		t->order[i] = (uint32_t)i;
	for (unsigned epoch = 0; epoch < o->epochs; epoch++) {
		double epoch_loss = 0;
		gsp_rng_shuffle(&rng, t->order, t->train.count);
		for (size_t s = 0; s < steps_per_epoch; s++) {
			double loss;
			if (train_step(t, t->order + s * o->batch, &loss))
				return -1;
			epoch_loss += loss;
			window_loss += loss;
			window_steps++;
			if (o->report_every && t->steps % o->report_every == 0) {
				report(t, "step", epoch + 1,
				       window_loss / window_steps, NAN);
				window_loss = 0;
				window_steps = 0;
			}
		}
		t->accuracy = test_accuracy(t);
		report(t, "epoch", epoch + 1, epoch_loss / steps_per_epoch,
		       t->accuracy);
	}
	return 0;
}

/* DRAIN, AVERAGE, and the final report with the averaged model's
 * accuracy. */
static int finish(trainer *t)
{
	const opts *o = t->o;
	gsp_report r = gsp_report_empty("final", o->node);
	int err;

	r.epoch = o->epochs;
	/* The model the last epoch measured (nothing touched it since). */
	r.test_accuracy = o->epochs ? t->accuracy : test_accuracy(t);
	if (t->client) {
		err = gsp_client_step(t->client, GSP_CLIENT_STEP_DRAIN |
					      (o->sync ? GSP_CLIENT_STEP_SYNC : 0),
				      &t->last);
		if (err < 0)
			return -trainer_link_fail(PROG, t->client, "drain", err);
		/* Bytes of training, the rounds DRAIN settled included. */
		r.sent_mb = (double)t->last.bytes_sent / 1e6;
		r.consensus = t->last.consensus_estimate;
		if (o->average) {
			gsp_client_average_result avg;
			err = gsp_client_average(t->client, o->average_target,
						 o->average_ms,
						 o->average_rounds, &avg);
			if (err < 0)
				return -trainer_link_fail(PROG, t->client,
							  "average", err);
			r.average_rounds = avg.rounds;
			r.consensus = avg.estimate;
			r.averaged_accuracy = test_accuracy(t);
		}
	}
	r.step = t->steps;
	r.seconds = seconds_since(&t->t0);
	gsp_report_print(stdout, o->format, &r);
	return 0;
}

static int run(const opts *o)
{
	trainer t = {.o = o};
	int rc = 1;

	t.last.consensus_estimate = NAN;
	if (load_data(&t) || setup_model(&t))
		goto out;
	if (t.client && trainer_link_wait_edges(PROG, t.client, o->wait_edges,
						o->wait_seconds))
		goto out;
	gsp_report_header(stdout, o->format);
	clock_gettime(CLOCK_MONOTONIC, &t.t0);
	if (train(&t) || finish(&t))
		goto out;
	size_t count = gsp_mlp_param_count(t.net);
	float *last = t.params;
	if (t.client) {
		/* The parameters as DETACH leaves them (it may take a round
		 * back), for the dump. */
		last = o->dump ? malloc(count * sizeof(float)) : NULL;
		if (o->dump && !last) {
			fprintf(stderr, "%s: out of memory\n", PROG);
			goto out;
		}
		int err = gsp_client_detach_copy(t.client, last);
		t.params = NULL;
		if (err < 0) {
			trainer_link_fail(PROG, t.client, "detach", err);
			free(last);
			goto out;
		}
	}
	int dumped = o->dump ? trainer_link_dump(PROG, o->dump, last, count) : 0;
	if (t.client)
		free(last);
	if (dumped)
		goto out;
	rc = 0;
out:
	if (o->standalone)
		free(t.params);
	gsp_client_close(t.client);
	gsp_mlp_free(t.net);
	gsp_sgd_free(&t.sgd);
	gsp_trainset_free(&t.train);
	gsp_trainset_free(&t.test);
	free(t.batch_x);
	free(t.batch_y);
	free(t.order);
	return rc;
}

int main(int argc, char **argv)
{
	opts o = {.name = PROG, .nodes = 1,
		  .sizes = {784, 512, 256, 10}, .n_sizes = 4, .epochs = 3, .batch = 64, .lr = 0.05f, .momentum = 0.9f,
		  .init_seed = 1, .data_seed = 42, .wait_seconds = 60,
		  .average = true, .average_target = 1e-3f,
		  .average_ms = 30000, .threads = 1};
	int rc = parse_args(argc, argv, &o);

	if (rc)
		return rc;
	openblas_set_num_threads(o.threads);
	return run(&o);
}
