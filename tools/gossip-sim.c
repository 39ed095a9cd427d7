/*
 * gossip-sim: n gossip workers in one process, driven through exactly the
 * project / complete / apply calls the daemon uses (libgossip/sim.h), on
 * the paper's consensus experiment.  Writes a CSV of
 * step,bits_per_worker,error,mean_drift and ends with a summary row.
 */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "gossip.h"
#include "idx.h"
#include "sim.h"

/* Steps of a finite-time schedule gossip-sim runs (a ring of 1024). */
#define GSP_SIM_SCHEDULE_MAX 512

typedef struct opts {
	unsigned nodes;
	gsp_topology topo;
	const char *edges;
	const char *data;
	uint64_t seed;
	gsp_config cfg;
	bool gamma_auto;
	bool gamma_finite;
	double schedule[GSP_SIM_SCHEDULE_MAX];   /* --gamma finite */
	size_t schedule_n;
	double schedule_growth;
	float gamma_after;       /* after the schedule: auto */
	unsigned iterations;
	unsigned steps;
	const char *csv;
	const char *dump;
	const char *fmnist_dir;
	double target;
	bool quiet;
} opts;

static void usage(FILE *f)
{
	fprintf(f,
"usage: gossip-sim [options]\n"
"Simulates n gossip workers in one process (consensus, no training).\n\n"
"  --nodes N                 workers (default 8)\n"
"  --topology T              ring|torus|complete|exponential|edgelist (ring)\n"
"  --edges LIST              edge list for --topology edgelist: 0-1,1-2,...\n"
"  --data SPEC               random:100x100[,64x300,...] | fashion-mnist\n"
"                            (default random:100x100)\n"
"  --fmnist-dir DIR          Fashion-MNIST files (default %s)\n"
"  --seed S                  data and edge seed (default 42)\n"
"  --method M                powergossip|exact|choco-topk|choco-randk|choco-sign\n"
"  --rank R                  powergossip rank (default 1)\n"
"  --iterations S            gossip rounds per step (default 1)\n"
"  --warm-start on|off       powergossip warm start (default on)\n"
"  --gamma G|auto|finite     consensus step (default 1; auto = 2/(l2+lmax));\n"
"                            finite (exact only): the first K rounds step\n"
"                            1/mu_t for the K distinct non-zero eigenvalues\n"
"                            mu_t of I - W (the exact average, up to\n"
"                            rounding), then auto\n"
"  --fraction F              choco top-k/random-k kept fraction (default 0.01)\n"
"  --steps N                 steps to run (default 1000)\n"
"  --target E                stop early once error <= E * initial error\n"
"  --csv FILE                write step,bits_per_worker,error,mean_drift\n"
"  --dump PREFIX             write node i's final parameters (raw float32)\n"
"                            to PREFIX.i\n"
"  --quiet                   no live progress on stderr\n"
"  --help                    this text\n",
		GSP_FMNIST_DIR);
}

static int die(const char *what, const char *arg)
{
	return gsp_cli_die("gossip-sim", what, arg);
}

static int parse_args(int argc, char **argv, opts *o)
{
	static const struct option lo[] = {
		{"nodes", required_argument, 0, 'n'},
		{"topology", required_argument, 0, 't'},
		{"edges", required_argument, 0, 'E'},
		{"data", required_argument, 0, 'd'},
		{"fmnist-dir", required_argument, 0, 'F'},
		{"seed", required_argument, 0, 's'},
		{"method", required_argument, 0, 'm'},
		{"rank", required_argument, 0, 'r'},
		{"iterations", required_argument, 0, 'i'},
		{"warm-start", required_argument, 0, 'w'},
		{"gamma", required_argument, 0, 'g'},
		{"fraction", required_argument, 0, 'f'},
		{"steps", required_argument, 0, 'S'},
		{"target", required_argument, 0, 'T'},
		{"csv", required_argument, 0, 'c'},
		{"dump", required_argument, 0, 'D'},
		{"quiet", no_argument, 0, 'q'},
		{"help", no_argument, 0, 'h'},
		{0, 0, 0, 0},
	};
	unsigned long long v;
	float f;
	int c;
	while ((c = getopt_long(argc, argv, "", lo, NULL)) != -1) {
		switch (c) {
		case 'n':
			if (gsp_cli_uint(optarg, 4096, &v) || v < 2)
				return die("--nodes needs 2..4096", optarg);
			o->nodes = (unsigned)v;
			break;
		case 't':
			if (gsp_topology_parse(optarg, &o->topo))
				return die("unknown topology", optarg);
			break;
		case 'E':
			o->edges = optarg;
			break;
		case 'd':
			o->data = optarg;
			break;
		case 'F':
			o->fmnist_dir = optarg;
			break;
		case 's':
			if (gsp_cli_uint(optarg, UINT64_MAX, &v))
				return die("bad --seed", optarg);
			o->seed = v;
			break;
		case 'm':
			if (gsp_method_parse(optarg, &o->cfg.method))
				return die("unknown method", optarg);
			break;
		case 'r':
			if (gsp_cli_uint(optarg, GSP_MAX_RANK, &v) || v < 1)
				return die("--rank needs 1..1024", optarg);
			o->cfg.rank = (unsigned)v;
			break;
		case 'i':
			if (gsp_cli_uint(optarg, 1000, &v) || v < 1)
				return die("--iterations needs 1..1000", optarg);
			o->iterations = (unsigned)v;
			break;
		case 'w':
			if (strcmp(optarg, "on") && strcmp(optarg, "off"))
				return die("--warm-start takes on or off", optarg);
			o->cfg.warm_start = strcmp(optarg, "on") == 0;
			break;
		case 'g':
			o->gamma_finite = strcmp(optarg, "finite") == 0;
			if (strcmp(optarg, "auto") == 0 || o->gamma_finite)
				o->gamma_auto = true;
			else if (gsp_cli_float(optarg, &o->cfg.gamma))
				return die("bad --gamma", optarg);
			else
				o->gamma_auto = false;
			break;
		case 'f':
			if (gsp_cli_float(optarg, &f) || f <= 0.0f || f > 1.0f)
				return die("--fraction needs (0,1]", optarg);
			o->cfg.choco_fraction = f;
			break;
		case 'S':
			if (gsp_cli_uint(optarg, 100000000, &v))
				return die("bad --steps", optarg);
			o->steps = (unsigned)v;
			break;
		case 'T':
			if (gsp_cli_float(optarg, &f) || f <= 0.0f)
				return die("bad --target", optarg);
			o->target = f;
			break;
		case 'c':
			o->csv = optarg;
			break;
		case 'D':
			o->dump = optarg;
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
	if ((o->topo == GSP_TOPO_EDGELIST) != (o->edges != NULL))
		return die("--edges goes with --topology edgelist",
			   o->edges ? o->edges : "");
	return 0;
}

/* Fills every worker with its data; returns the layout through ret. */
static int load_data(const opts *o, gsp_layout **ret)
{
	if (strncmp(o->data, "random:", 7) == 0)
		return gsp_layout_parse(o->data + 7, ret);
	if (strcmp(o->data, "fashion-mnist") == 0)
		return gsp_layout_parse("28x28", ret);
	return -EINVAL;
}

static int fill_data(const opts *o, gsp_sim *sim)
{
	if (strncmp(o->data, "random:", 7) == 0) {
		gsp_sim_fill_gaussian(sim, o->seed);
		return 0;
	}
	gsp_idx img, lab;
	int err = gsp_fmnist_images(o->fmnist_dir, "train", &img, &lab);
	if (err) {
		fprintf(stderr, "gossip-sim: cannot load Fashion-MNIST from %s: %s"
			" (install the Debian package dataset-fashion-mnist)\n",
			o->fmnist_dir ? o->fmnist_dir : GSP_FMNIST_DIR,
			strerror(-err));
		return err;
	}
	const size_t px = GSP_FMNIST_ROWS * GSP_FMNIST_COLS;
	for (unsigned i = 0; i < gsp_sim_nodes(sim); i++) {
		uint64_t which = (o->seed + i) % img.dims[0];
		float *x = gsp_sim_params(sim, i);
		for (size_t p = 0; p < px; p++)
			x[p] = img.data[which * px + p] / 255.0f;
	}
	gsp_idx_free(&img);
	gsp_idx_free(&lab);
	return 0;
}

/* Node i's parameters into PREFIX.i. */
static int dump_nodes(const opts *o, gsp_sim *sim, uint64_t floats)
{
	for (unsigned i = 0; i < gsp_sim_nodes(sim); i++) {
		char path[4096];
		snprintf(path, sizeof(path), "%s.%u", o->dump, i);
		FILE *f = fopen(path, "wb");
		if (!f || fwrite(gsp_sim_params(sim, i), sizeof(float), floats, f) != floats ||
		    fclose(f) != 0) {
			fprintf(stderr, "gossip-sim: --dump %s: %s\n", path, strerror(errno));
			return -EIO;
		}
	}
	return 0;
}

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* Every node's step for the next round (--gamma finite). */
static int set_gamma(gsp_sim *sim, float gamma)
{
	for (unsigned i = 0; i < gsp_sim_nodes(sim); i++) {
		int err = gsp_node_set_gamma(gsp_sim_node(sim, i), gamma);
		if (err)
			return err;
	}
	return 0;
}

static int run(const opts *o, gsp_sim *sim, FILE *csv)
{
	gsp_sim_stats st, st0;
	int err = gsp_sim_measure(sim, &st0);
	if (err)
		return err;
	st = st0;
	bool tty = !o->quiet && isatty(STDERR_FILENO);
	double t0 = now(), shown = 0.0;
	if (csv)
		fprintf(csv, "step,bits_per_worker,error,mean_drift\n"
			     "0,0,%.9e,%.9e\n", st0.error, st0.mean_drift);
	unsigned step;
	uint64_t round = 0;
	for (step = 1; step <= o->steps; step++) {
		for (unsigned it = 0; it < o->iterations && !err; it++) {
			if (o->gamma_finite && round <= o->schedule_n)
				err = set_gamma(sim, round < o->schedule_n
							     ? (float)o->schedule[round]
							     : o->gamma_after);
			round++;
			if (!err)
				err = gsp_sim_round(sim);
		}
		if (!err)
			err = gsp_sim_measure(sim, &st);
		if (err)
			return err;
		if (csv)
			fprintf(csv, "%u,%llu,%.9e,%.9e\n", step,
				(unsigned long long)st.bits_worker0, st.error,
				st.mean_drift);
		bool last = step == o->steps || !st.finite ||
			    (o->target > 0 && st.error <= o->target * st0.error);
		double t = now();
		if (tty && (t - shown > 0.1 || last)) {
			/* One line under 80 columns, rewritten in place. */
			fprintf(stderr, "\rstep %6u/%-6u error %.2e (%.1e of start) "
				"%8.3f Mbit/worker ",
				step, o->steps, st.error,
				st0.error > 0 ? st.error / st0.error : 0.0,
				st.bits_worker0 / 1e6);
			shown = t;
		}
		if (!st.finite) {
			fprintf(stderr, "\ngossip-sim: diverged at step %u\n", step);
			break;
		}
		if (o->target > 0 && st.error <= o->target * st0.error)
			break;
	}
	if (tty)
		fputc('\n', stderr);
	if (o->gamma_finite)
		/* gamma= below is the step after the schedule. */
		printf("schedule=%zu growth=%.3g ", o->schedule_n, o->schedule_growth);
	printf("method=%s rank=%u gamma=%.6g nodes=%u steps=%u "
	       "bits_per_worker=%llu error=%.6e rel_error=%.6e mean_drift=%.3e "
	       "seconds=%.3f\n",
	       gsp_method_name(o->cfg.method), o->cfg.rank,
	       o->gamma_finite ? o->gamma_after : o->cfg.gamma,
	       o->nodes, step > o->steps ? o->steps : step,
	       (unsigned long long)st.bits_worker0, st.error,
	       st0.error > 0 ? st.error / st0.error : 0.0, st.mean_drift,
	       now() - t0);
	return st.finite ? 0 : GSP_ENONFINITE;
}

int main(int argc, char **argv)
{
	opts o = {.nodes = 8, .topo = GSP_TOPO_RING, .data = "random:100x100",
		  .seed = 42, .iterations = 1, .steps = 1000};
	gsp_config_default(&o.cfg);
	int rc = parse_args(argc, argv, &o);
	if (rc)
		return rc;
	o.cfg.seed = o.seed;
	gsp_graph *graph = NULL;
	gsp_layout *layout = NULL;
	gsp_sim *sim = NULL;
	FILE *csv = NULL;
	int err = o.edges ? gsp_graph_parse_edges(o.edges, o.nodes, &graph)
			  : gsp_graph_new(o.topo, o.nodes, &graph);
	if (err) {
		fprintf(stderr, "gossip-sim: cannot build %s graph on %u nodes: %s\n",
			gsp_topology_name(o.topo), o.nodes, gsp_strerror(err));
		return 2;
	}
	if (o.gamma_auto) {
		double g;
		err = gsp_graph_optimal_gamma(graph, &g);
		if (err) {
			fprintf(stderr, "gossip-sim: gamma=auto: %s\n", gsp_strerror(err));
			goto out;
		}
		o.cfg.gamma = (float)g;
	}
	if (o.gamma_finite) {
		if (o.cfg.method != GSP_METHOD_EXACT) {
			fprintf(stderr, "gossip-sim: --gamma finite needs --method exact "
					"(a compressed round does not move the whole difference)\n");
			err = -EINVAL;
			goto out;
		}
		err = gsp_graph_finite_schedule(graph, o.schedule, GSP_SIM_SCHEDULE_MAX,
						&o.schedule_n, &o.schedule_growth);
		if (err) {
			fprintf(stderr, "gossip-sim: gamma=finite: %s\n", gsp_strerror(err));
			goto out;
		}
		o.gamma_after = o.cfg.gamma;
		o.cfg.gamma = (float)o.schedule[0];
	}
	err = load_data(&o, &layout);
	if (err) {
		die("bad --data", o.data);
		goto out;
	}
	uint8_t seed[GSP_SEED_BYTES] = {0};
	for (int b = 0; b < 8; b++)
		seed[b] = (uint8_t)(o.seed >> (8 * b));
	err = gsp_sim_new(graph, layout, &o.cfg, seed, &sim);
	if (!err)
		err = fill_data(&o, sim);
	if (!err)
		err = gsp_sim_start(sim);
	if (err)
		goto out;
	if (o.csv && !(csv = fopen(o.csv, "w"))) {
		err = -errno;
		fprintf(stderr, "gossip-sim: %s: %s\n", o.csv, strerror(errno));
		goto out;
	}
	err = run(&o, sim, csv);
	if (!err && o.dump)
		err = dump_nodes(&o, sim, gsp_layout_floats(layout));
	if (csv && fclose(csv) != 0 && !err)
		err = -EIO;
out:
	if (err)
		fprintf(stderr, "gossip-sim: %s\n", gsp_strerror(err));
	gsp_sim_free(sim);
	gsp_layout_free(layout);
	gsp_graph_free(graph);
	return err ? 1 : 0;
}
