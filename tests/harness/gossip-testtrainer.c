/*
 * gossip-testtrainer: a trainer without training, for the integration
 * tests.  Registers a random model with the local gossipd, fills it with
 * N(0,1) data from a seed (exactly gossip-sim's data for node
 * --node-index) or from a file (--load), calls STEP a number of times
 * (optionally detaching and registering again every N steps, optionally
 * dumping the parameters every N steps), DRAIN, optionally AVERAGE, dumps
 * the final parameters as raw float32 and detaches.
 *
 * Exit status: 0 success, 1 runtime error (the message names the cause),
 * 2 usage error.
 */
#include <errno.h>
#include <getopt.h>
#include <time.h>
#include <unistd.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "client.h"
#include "trainerlink.h"
#include "gossip.h"
#include "sim.h"

#define PROG "gossip-testtrainer"

typedef struct opts {
	const char *socket;
	const char *data;
	const char *name;
	uint64_t seed;
	unsigned node_index;
	unsigned long long steps;
	unsigned compute_ms;
	bool sync;
	bool average;
	double target;
	uint32_t average_ms;
	uint32_t average_rounds;
	unsigned hold_ms;
	unsigned pause_ms;
	const char *stop_file;
	const char *dump;
	const char *dump_initial;
	unsigned long long dump_every;
	const char *load;
	unsigned long long reattach_every;
	bool reattach_drain;
	bool status;
	bool quiet;
	unsigned wait_edges;
	uint32_t join_ms;
} opts;

static void usage(FILE *f)
{
	fprintf(f,
"usage: " PROG " --socket PATH [options]\n"
"Registers a random model with gossipd, runs gossip steps, drains, detaches.\n\n"
"  --socket PATH             gossipd's API socket (required)\n"
"  --data random:SPEC        model layout, e.g. random:100x100,64x300,64\n"
"                            (default random:100x100)\n"
"  --seed S                  data seed (default 42)\n"
"  --node-index I            data stream: the data of gossip-sim's node I\n"
"                            for the same --data and --seed (default 0)\n"
"  --steps N                 STEP calls (default 10)\n"
"  --stop-file FILE          end the steps early once FILE exists (looked\n"
"                            for before each STEP; --steps stays the cap)\n"
"  --sync                    STEP with the SYNC flag (wait for every edge)\n"
"  --compute-ms MS           sleep MS before each STEP (a trainer's compute);\n"
"                            the step loop's wall time is printed at the end\n"
"  --average TARGET          then AVERAGE until the consensus estimate\n"
"                            is <= TARGET\n"
"  --average-time MS         AVERAGE time limit (default 10000; 0: none)\n"
"  --average-rounds N        AVERAGE round limit (default 0: none)\n"
"  --pause-ms MS             stay registered, idle, MS ms after the steps,\n"
"                            before the DRAIN and AVERAGE (a late neighbour)\n"
"  --hold-ms MS              then stay registered, idle, MS ms (a trainer\n"
"                            at a barrier) before the dump and DETACH\n"
"  --dump FILE               write the final parameters as raw float32\n"
"  --dump-initial FILE       write the initial parameters likewise\n"
"  --dump-every N            also after every N-th STEP, to FILE.S (S the\n"
"                            step count; needs --dump): with --sync, the\n"
"                            consensus error as it falls\n"
"  --load FILE               initial parameters from FILE (raw float32 of\n"
"                            the model's size) instead of the seed's data\n"
"  --reattach-every N        every N steps: DETACH, REGISTER the same tensors\n"
"                            again and copy the parameters back (a trainer\n"
"                            that gives its model back mid-run); rounds in\n"
"                            flight are not drained first unless\n"
"  --reattach-drain          DRAIN before each of those DETACHes\n"
"  --status                  print the daemon's status JSON at the end\n"
"  --wait-edges N            before stepping, wait until N edges are up\n"
"  --join MS                 then FETCH: start from a neighbour's model\n"
"                            (at most MS ms); --dump-initial then writes\n"
"                            the copy, and FILE.own the trainer's own\n"
"                            initialisation\n"
"  --name NAME               client name shown by the daemon\n"
"  --quiet                   no per-step lines\n"
"  --help                    this text\n\n"
"Exit status: 0 success, 1 runtime error, 2 usage error.\n");
}

static int die(const char *what, const char *arg)
{
	return gsp_cli_die(PROG, what, arg);
}

static int parse_args(int argc, char **argv, opts *o)
{
	static const struct option lo[] = {
		{"socket", required_argument, 0, 'S'},
		{"data", required_argument, 0, 'd'},
		{"seed", required_argument, 0, 's'},
		{"node-index", required_argument, 0, 'i'},
		{"steps", required_argument, 0, 'n'},
		{"stop-file", required_argument, 0, 'F'},
		{"sync", no_argument, 0, 'y'},
		{"compute-ms", required_argument, 0, 'C'},
		{"average", required_argument, 0, 'a'},
		{"average-time", required_argument, 0, 't'},
		{"average-rounds", required_argument, 0, 'r'},
		{"hold-ms", required_argument, 0, 'H'},
		{"pause-ms", required_argument, 0, 'P'},
		{"dump", required_argument, 0, 'D'},
		{"dump-initial", required_argument, 0, 'I'},
		{"dump-every", required_argument, 0, 'E'},
		{"load", required_argument, 0, 'L'},
		{"reattach-every", required_argument, 0, 'R'},
		{"reattach-drain", no_argument, 0, 'Q'},
		{"status", no_argument, 0, 'j'},
		{"wait-edges", required_argument, 0, 'W'},
		{"join", required_argument, 0, 'J'},
		{"name", required_argument, 0, 'N'},
		{"quiet", no_argument, 0, 'q'},
		{"help", no_argument, 0, 'h'},
		{0, 0, 0, 0},
	};
	unsigned long long v;
	float f;
	int c;

	while ((c = getopt_long(argc, argv, "", lo, NULL)) != -1) {
		switch (c) {
		case 'S':
			o->socket = optarg;
			break;
		case 'd':
			if (strncmp(optarg, "random:", 7) != 0)
				return die("--data takes random:SPEC", optarg);
			o->data = optarg;
			break;
		case 's':
			if (gsp_cli_uint(optarg, UINT64_MAX, &v))
				return die("bad --seed", optarg);
			o->seed = v;
			break;
		case 'i':
			if (gsp_cli_uint(optarg, 1u << 20, &v))
				return die("bad --node-index", optarg);
			o->node_index = (unsigned)v;
			break;
		case 'n':
			if (gsp_cli_uint(optarg, UINT64_MAX, &v))
				return die("bad --steps", optarg);
			o->steps = v;
			break;
		case 'F':
			o->stop_file = optarg;
			break;
		case 'y':
			o->sync = true;
			break;
		case 'C':
			if (gsp_cli_uint(optarg, 60000, &v))
				return die("bad --compute-ms", optarg);
			o->compute_ms = (unsigned)v;
			break;
		case 'a':
			if (gsp_cli_float(optarg, &f))
				return die("bad --average target", optarg);
			o->average = true;
			o->target = f;
			break;
		case 't':
			if (gsp_cli_uint(optarg, UINT32_MAX, &v))
				return die("bad --average-time", optarg);
			o->average_ms = (uint32_t)v;
			break;
		case 'r':
			if (gsp_cli_uint(optarg, UINT32_MAX, &v))
				return die("bad --average-rounds", optarg);
			o->average_rounds = (uint32_t)v;
			break;
		case 'H':
			if (gsp_cli_uint(optarg, 3600000, &v))
				return die("bad --hold-ms", optarg);
			o->hold_ms = (unsigned)v;
			break;
		case 'P':
			if (gsp_cli_uint(optarg, 3600000, &v))
				return die("bad --pause-ms", optarg);
			o->pause_ms = (unsigned)v;
			break;
		case 'D':
			o->dump = optarg;
			break;
		case 'I':
			o->dump_initial = optarg;
			break;
		case 'E':
			if (gsp_cli_uint(optarg, UINT64_MAX, &v) || v == 0)
				return die("bad --dump-every", optarg);
			o->dump_every = v;
			break;
		case 'L':
			o->load = optarg;
			break;
		case 'R':
			if (gsp_cli_uint(optarg, UINT64_MAX, &v) || v == 0)
				return die("bad --reattach-every", optarg);
			o->reattach_every = v;
			break;
		case 'Q':
			o->reattach_drain = true;
			break;
		case 'j':
			o->status = true;
			break;
		case 'W':
			if (gsp_cli_uint(optarg, 65535, &v))
				return die("bad --wait-edges", optarg);
			o->wait_edges = (unsigned)v;
			break;
		case 'J':
			if (gsp_cli_uint(optarg, UINT32_MAX, &v) || v == 0)
				return die("bad --join", optarg);
			o->join_ms = (uint32_t)v;
			break;
		case 'N':
			if (strlen(optarg) > GSP_CLIENT_NAME_MAX)
				return die("--name is too long", optarg);
			o->name = optarg;
			break;
		case 'q':
			o->quiet = true;
			break;
		case 'h':
			usage(stdout);
			exit(0);
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind < argc)
		return die("unexpected argument", argv[optind]);
	if (!o->socket)
		return die("--socket is required", NULL);
	if (o->dump_every && !o->dump)
		return die("--dump-every needs --dump", NULL);
	if (o->reattach_drain && !o->reattach_every)
		return die("--reattach-drain needs --reattach-every", NULL);
	if (o->average && o->average_ms == 0 && o->average_rounds == 0)
		return die("--average needs a time or round limit",
			   "--average-time 0");
	return 0;
}

static int fail(gsp_client *c, const char *what, int err)
{
	return trainer_link_fail(PROG, c, what, err);
}

/* Reads exactly n floats of raw float32 from path into x. */
static int load(const char *path, float *x, uint64_t n)
{
	FILE *f = fopen(path, "rb");

	if (!f) {
		fprintf(stderr, PROG ": --load %s: %s\n", path, strerror(errno));
		return -1;
	}
	if (fread(x, sizeof(float), n, f) != n || fgetc(f) != EOF) {
		fprintf(stderr, PROG ": --load %s: not %llu float32 values\n",
			path, (unsigned long long)n);
		fclose(f);
		return -1;
	}
	fclose(f);
	return 0;
}

/* The parameters after STEP s, to FILE.s of --dump FILE.  0, or 1 after a
 * message. */
static int dump_step(const opts *o, const float *x, uint64_t floats,
		     unsigned long long s)
{
	size_t len = strlen(o->dump) + 24;
	char *path = malloc(len);
	int err;

	if (!path) {
		fprintf(stderr, PROG ": out of memory\n");
		return 1;
	}
	snprintf(path, len, "%s.%llu", o->dump, s);
	err = trainer_link_dump(PROG, path, x, floats);
	free(path);
	return err ? 1 : 0;
}

/* DETACH (after DRAIN with --reattach-drain) and REGISTER the same
 * tensors again, carrying the parameters over: the client unmaps the old
 * buffer at DETACH and REGISTER gives a new, zeroed one.  0, or 1 after a
 * message. */
static int reattach(const opts *o, gsp_client *c, const gsp_tensor *tensors,
		    size_t n, float **params, float *copy, uint64_t floats)
{
	gsp_client_step_result st;
	int err;

	if (o->reattach_drain) {
		err = gsp_client_step(c, GSP_CLIENT_STEP_DRAIN, &st);
		if (err < 0)
			return fail(c, "reattach drain", err);
	}
	/* The values after DETACH: it may take a round back. */
	err = gsp_client_detach_copy(c, copy);
	if (err < 0)
		return fail(c, "reattach detach", err);
	err = gsp_client_register(c, tensors, n, params);
	if (err < 0)
		return fail(c, "reattach register", err);
	memcpy(*params, copy, floats * sizeof(float));
	return 0;
}

static int run(const opts *o, const gsp_layout *layout)
{
	size_t n = gsp_layout_count(layout);
	uint64_t floats = gsp_layout_floats(layout);
	gsp_tensor *tensors = calloc(n, sizeof(*tensors));
	gsp_client *c = NULL;
	gsp_client_step_result st = {0};
	gsp_client_average_result avg;
	float *params, *copy = NULL;
	unsigned long long reattached = 0;
	int err, rc = 1;

	if (!tensors) {
		fprintf(stderr, PROG ": out of memory\n");
		return 1;
	}
	for (size_t i = 0; i < n; i++)
		tensors[i] = *gsp_layout_tensor(layout, i);
	if (trainer_link_connect(PROG, o->socket, o->name, &c) < 0)
		goto out;
	err = gsp_client_register(c, tensors, n, &params);
	if (err < 0) {
		fail(c, "register", err);
		goto out;
	}
	if (o->load) {
		if (load(o->load, params, floats))
			goto out;
	} else {
		gsp_fill_gaussian(params, floats, o->seed, o->node_index);
	}
	if (o->reattach_every && !(copy = malloc(floats * sizeof(float)))) {
		fprintf(stderr, PROG ": out of memory\n");
		goto out;
	}
	if (o->join_ms) {
		/* The trainer's own initialisation, then the network's. */
		char own[4096];
		gsp_client_fetch_result fr;
		snprintf(own, sizeof(own), "%s.own", o->dump_initial ? o->dump_initial : "");
		if (o->dump_initial && trainer_link_dump(PROG, own, params, floats))
			goto out;
		if (o->wait_edges && trainer_link_wait_edges(PROG, c, o->wait_edges, 30))
			goto out;
		err = gsp_client_fetch(c, o->join_ms, &fr);
		if (err < 0) {
			fail(c, "fetch", err);
			goto out;
		}
		printf("joined: %llu bytes from peer %s in %u ms\n",
		       (unsigned long long)fr.bytes, fr.bytes ? fr.peer : "(none: no "
		       "neighbour has stepped)", fr.took_ms);
	}
	if (o->dump_initial &&
	    trainer_link_dump(PROG, o->dump_initial, params, floats))
		goto out;
	if (o->wait_edges && !o->join_ms &&
	    trainer_link_wait_edges(PROG, c, o->wait_edges, 30))
		goto out;

	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	unsigned long long s;
	for (s = 0; s < o->steps; s++) {
		if (o->stop_file && access(o->stop_file, F_OK) == 0)
			break;
		if (o->compute_ms)
			usleep(o->compute_ms * 1000u);
		err = gsp_client_step(c, o->sync ? GSP_CLIENT_STEP_SYNC : 0, &st);
		if (err < 0) {
			fail(c, "step", err);
			goto out;
		}
		if (!o->quiet)
			printf("step %llu applied %u projected %u skipped %u "
			       "staleness %u sent %llu received %llu "
			       "estimate %.6g\n",
			       (unsigned long long)st.step, st.edges_applied,
			       st.edges_projected, st.edges_skipped,
			       st.max_staleness,
			       (unsigned long long)st.bytes_sent,
			       (unsigned long long)st.bytes_received,
			       st.consensus_estimate);
		if (o->dump_every && (s + 1) % o->dump_every == 0 &&
		    dump_step(o, params, floats, s + 1))
			goto out;
		if (o->reattach_every && (s + 1) % o->reattach_every == 0 &&
		    s + 1 < o->steps) {
			if (reattach(o, c, tensors, n, &params, copy, floats))
				goto out;
			reattached++;
		}
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	printf("steps %llu seconds %.6f\n", s,
	       (double)(t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9);
	printf("client offline_steps %llu reconnects %u reattached %llu\n",
	       (unsigned long long)st.offline_steps, st.reconnects, reattached);
	if (o->pause_ms)
		usleep((useconds_t)o->pause_ms * 1000);
	/* Settle the edges before the parameters are read and the model
	 * detached (with --sync every round, so the run replays gossip-sim;
	 * else a straggler's round is left to DETACH). */
	struct timespec d0, d1;
	clock_gettime(CLOCK_MONOTONIC, &d0);
	err = gsp_client_step(c, GSP_CLIENT_STEP_DRAIN |
				 (o->sync ? GSP_CLIENT_STEP_SYNC : 0), &st);
	if (err < 0) {
		fail(c, "drain", err);
		goto out;
	}
	clock_gettime(CLOCK_MONOTONIC, &d1);
	printf("drain seconds %.3f\n",
	       (double)(d1.tv_sec - d0.tv_sec) + (d1.tv_nsec - d0.tv_nsec) / 1e9);
	if (o->average) {
		struct timespec a0, a1;
		clock_gettime(CLOCK_MONOTONIC, &a0);
		err = gsp_client_average(c, o->target, o->average_ms,
					 o->average_rounds, &avg);
		if (err < 0) {
			fail(c, "average", err);
			goto out;
		}
		clock_gettime(CLOCK_MONOTONIC, &a1);
		printf("average rounds %u estimate %.6g reached %s seconds %.3f\n",
		       avg.rounds, avg.estimate, avg.reached ? "yes" : "no",
		       (double)(a1.tv_sec - a0.tv_sec) + (a1.tv_nsec - a0.tv_nsec) / 1e9);
		/* CLOCK_MONOTONIC, the same for every trainer on the machine:
		 * which node's AVERAGE started last. */
		printf("average started %.6f\n", (double)a0.tv_sec + a0.tv_nsec / 1e9);
	}
	if (o->hold_ms)
		usleep((useconds_t)o->hold_ms * 1000);
	if (o->status) {
		char *json;
		err = gsp_client_status(c, &json);
		if (err < 0) {
			fail(c, "status", err);
			goto out;
		}
		printf("%s\n", json);
		free(json);
	}
	/* The dump is what DETACH left (it may take a round back). */
	float *last = o->dump ? malloc(floats * sizeof(float)) : NULL;
	if (o->dump && !last) {
		fprintf(stderr, "%s: out of memory\n", PROG);
		goto out;
	}
	fflush(stdout);
	err = gsp_client_detach_copy(c, last);
	if (err < 0) {
		free(last);
		fail(c, "detach", err);
		goto out;
	}
	err = o->dump ? trainer_link_dump(PROG, o->dump, last, floats) : 0;
	free(last);
	if (err)
		goto out;
	rc = 0;

out:
	gsp_client_close(c);
	free(copy);
	free(tensors);
	return rc;
}

int main(int argc, char **argv)
{
	opts o = {.data = "random:100x100", .name = PROG, .seed = 42,
		  .steps = 10, .average_ms = 10000};
	gsp_layout *layout;
	int rc;

	rc = parse_args(argc, argv, &o);
	if (rc)
		return rc;
	if (gsp_layout_parse(o.data + 7, &layout) < 0)
		return die("bad --data", o.data);
	rc = run(&o, layout);
	gsp_layout_free(layout);
	return rc;
}
