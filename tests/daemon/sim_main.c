/* sim_main.c: the command line, the sweep of schedules and its summary
 * (the simulation: edgesim.h). */
#include "edgesim.h"


static unsigned long long seeds = 1000, first = 1, steps = 200;

static unsigned long long min_windows, min_window_faults;

static unsigned faults;

static const char *faults_name = "none";

static bool expect, sabotage, trace, one;

static gsp_config cfg;

static const char *prog;

static int result;


/* Failing seeds listed (the first replays with --trace). */
#define BAD_SHOWN 20

/* The schedules, inside one Check test (edgepair.h asserts with Check). */
START_TEST(test_schedules)
{
	unsigned long long moved = 0, stuck = 0, reported = 0, first_bad = 0, sabotaged = 0;
	unsigned long long bad[BAD_SHOWN];
	unsigned n_bad = 0;
	double worst = 0, first_bad_drift = 0;
	sim_stats st = {0};
	for (unsigned long long k = first; k < first + seeds; k++) {
		double drift;
		bool sab;
		if (trace)
			printf("seed %llu:\n", k);
		int rc = sim_run(k, &cfg, (unsigned)steps, faults, sabotage, trace, &drift, &sab, &st);
		if (drift > worst)
			worst = drift;
		if (rc && !first_bad) {
			first_bad = k;
			first_bad_drift = drift;
		}
		sabotaged += sab;
		if ((rc == 1 || rc == 2) && n_bad < BAD_SHOWN)
			bad[n_bad++] = k;
		moved += rc == 1;
		stuck += rc == 2;
		reported += rc == 3;
	}
	printf("%llu schedules of %llu actions (%s, faults %s): %llu moved the "
	       "average, %llu moved it after an expired DetachWait, lost records or another buffer, "
	       "%llu did not resume; worst drift %.3g\n", seeds, steps,
	       gsp_method_name(cfg.method), faults_name, moved, reported, stuck,
	       worst);
	if (faults & FAULT_WEIGHT)
		printf("weight: %llu SIGHUPs; %llu generations started at an end whose own "
		       "Weight was not the agreed one\n", st.sighups, st.other_weight);
	if (faults & FAULT_HALFCLOSE)
		printf("halfclose: %llu sessions closed at one end first; %llu frames "
		       "delivered after their sender's close\n", st.half_closed, st.late);
	if (faults & FAULT_UPBUSY)
		printf("upbusy: %llu sessions up during a step off the loop\n", st.up_busy);
	if (st.stalled)
		printf("stalled: %llu schedules came to a point where nothing could happen (and "
		       "count as not resumed)\n", st.stalled);
	if (st.unwritten)
		printf("unwritten: %llu DETACHes lost their write before the model went (a "
		       "take-back by subtraction then waits for DetachWait)\n", st.unwritten);
	if (faults & FAULT_SIGTERM)
		printf("sigterm: %llu daemons stopped by SIGTERM and started again\n",
		       st.sigterms);
	if (faults & FAULT_LEAVEWAIT)
		printf("leavewait: %llu LeaveWaits passed before the removed peer answered\n",
		       st.leave_expired);
	if (faults & FAULT_AVERAGE)
		printf("average: %llu AVERAGEs (%llu while the peer's ran), %llu rounds (%llu off "
		       "the loop), %llu edges held; ended by: every edge's rounds over %llu, "
		       "round limit %llu, time limit %llu (%llu of them during a round off the "
		       "loop), no session %llu, DETACH %llu (and %llu DETACHes waited for a "
		       "round off the loop); %llu rounds taken back in a write of their own; "
		       "then the trainer: DRAIN and DETACH %llu, DETACH %llu, STEP %llu, "
		       "AVERAGE %llu\n", st.averages, st.avg_both, st.avg_rounds, st.avg_off,
		       st.avg_holds, st.avg_end[AVEND_SETTLED], st.avg_end[AVEND_ROUNDS],
		       st.avg_end[AVEND_TIME] + st.avg_end[AVEND_TIME_OFF],
		       st.avg_end[AVEND_TIME_OFF], st.avg_end[AVEND_NOSESSION],
		       st.avg_end[AVEND_CANCELLED], st.avg_detach_off, st.avg_takebacks,
		       st.avg_next[NEXT_DETACH_DRAIN], st.avg_next[NEXT_DETACH],
		       st.avg_next[NEXT_STEP], st.avg_next[NEXT_AVERAGE]);
	if (faults & FAULT_FINITE)
		printf("finite: %llu schedule windows opened at an end, %llu let go by "
		       "edges_sched_release; %llu faults came while a window was open\n",
		       st.windows, st.released, st.window_faults);
	if (n_bad) {
		printf("failing seeds:");
		for (unsigned k = 0; k < n_bad; k++)
			printf(" %llu", bad[k]);
		printf("%s\n", moved + stuck > n_bad ? " ..." : "");
	}
	if (sabotage)
		printf("sabotage: %llu schedules lost an update\n", sabotaged);
	if (first_bad) {
		/* In full, so that a replay can be compared bit for bit. */
		printf("replay seed %llu: drift %.17g\n", first_bad, first_bad_drift);
		printf("replay: %s --seed %llu --steps %llu --faults %s --method %s --layout %s%s "
		       "--trace\n", prog, first_bad, steps, faults_name,
		       gsp_method_name(cfg.method), sim_layout, sabotage ? " --sabotage" : "");
	}
	/* --expect-violations (with --faults crash, the checker's own
	 * test): the drift is seen. */
	if (expect)
		result = reported > 0 && !moved && !stuck ? 0 : 1;
	else
		result = moved || stuck ? 1 : 0;
	/* --min-windows: the sweep must have reached what it is for. */
	if (st.windows < min_windows || st.window_faults < min_window_faults) {
		printf("too few: %llu windows (at least %llu wanted), %llu faults in "
		       "windows (at least %llu wanted)\n", st.windows, min_windows,
		       st.window_faults, min_window_faults);
		result = 1;
	}
}

END_TEST


/* "none", "all", or a comma-separated list of reset, detach, remove,
 * timeout (a DETACH's DetachWait passes before the peer answers),
 * restart (a daemon killed, restarted with its records), crash (killed,
 * its records lost), weight (a SIGHUP changes one end's Weight or
 * degree), halfclose (a session ends at one end first), upbusy (a new
 * session may come up while a step runs off the loop), average (a
 * trainer's time-limited AVERAGE), avgdetach (with average: the trainer
 * may DETACH during its AVERAGE), modelgoes (with detach: the model goes
 * at a later action than the one its edge ended in), leavewait (with
 * remove: the removed peer's LeaveWait passes before it answered), skip
 * (with finite: the schedule's window has rounds the edge sits out),
 * sigterm (a daemon stops on SIGTERM, keeping its generations, and starts
 * again), swarm
 * (each schedule draws its own odds for the others: FAULT_SWARM).  "all"
 * is every one but crash (its drift is allowed), avgdetach (open: see
 * docs/RELIABILITY.md) and swarm. */
static int parse_faults(const char *list, unsigned *ret)
{
	static const struct { const char *name; unsigned bit; } names[] = {
		{"reset", FAULT_RESET}, {"detach", FAULT_DETACH}, {"remove", FAULT_REMOVE},
		{"crash", FAULT_CRASH}, {"timeout", FAULT_TIMEOUT}, {"restart", FAULT_RESTART},
		{"newbuffer", FAULT_NEWBUFFER},
		{"weight", FAULT_WEIGHT}, {"halfclose", FAULT_HALFCLOSE}, {"upbusy", FAULT_UPBUSY},
		{"average", FAULT_AVERAGE}, {"avgdetach", FAULT_AVGDETACH},
		{"modelgoes", FAULT_MODELGOES}, {"leavewait", FAULT_LEAVEWAIT},
		{"finite", FAULT_FINITE}, {"skip", FAULT_SKIP}, {"swarm", FAULT_SWARM},
		{"sigterm", FAULT_SIGTERM},
		{"all", FAULT_RESET | FAULT_DETACH | FAULT_REMOVE | FAULT_TIMEOUT | FAULT_RESTART |
			FAULT_SIGTERM |
			FAULT_WEIGHT | FAULT_HALFCLOSE | FAULT_UPBUSY | FAULT_AVERAGE |
			FAULT_AVGDETACH | FAULT_MODELGOES | FAULT_LEAVEWAIT | FAULT_FINITE},
		{"none", 0},
	};
	unsigned bits = 0;
	const char *p = list;
	while (*p) {
		size_t n = strcspn(p, ",");
		size_t k = 0;
		while (k < sizeof(names) / sizeof(names[0]) &&
		       (strlen(names[k].name) != n || strncmp(names[k].name, p, n)))
			k++;
		if (k == sizeof(names) / sizeof(names[0]))
			return -1;
		bits |= names[k].bit;
		p += n + (p[n] == ',');
	}
	*ret = bits;
	return 0;
}


int main(int argc, char **argv)
{
	prog = argv[0];
	gsp_log_init(GSP_LOG_ERROR);
	gsp_config_default(&cfg);
	cfg.method = GSP_METHOD_EXACT;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
		if (!strcmp(a, "--seeds") && v)
			seeds = strtoull(argv[++i], NULL, 10);
		else if (!strcmp(a, "--seed") && v) {
			first = strtoull(argv[++i], NULL, 10);
			one = true;
		} else if (!strcmp(a, "--steps") && v)
			steps = strtoull(argv[++i], NULL, 10);
		else if (!strcmp(a, "--faults") && v) {
			faults_name = argv[++i];
			if (parse_faults(faults_name, &faults) != 0)
				goto usage;
		} else if (!strcmp(a, "--method") && v) {
			if (gsp_method_parse(argv[++i], &cfg.method) != 0)
				goto usage;
		} else if (!strcmp(a, "--layout") && v) {
			sim_layout = argv[++i];
		} else if (!strcmp(a, "--min-windows") && i + 2 < argc) {
			min_windows = strtoull(argv[++i], NULL, 10);
			min_window_faults = strtoull(argv[++i], NULL, 10);
		} else if (!strcmp(a, "--expect-violations"))
			expect = true;
		else if (!strcmp(a, "--sabotage"))
			sabotage = true;
		else if (!strcmp(a, "--trace"))
			trace = true;
		else
			goto usage;
	}
	if (one)
		seeds = 1;
	/* GSP_SIM_SEEDS_DIVISOR=N (tools/run-tests: 2 in build/, 10 under
	 * the sanitizers, enough to find memory errors): a sweep runs
	 * seeds/N schedules; meson test alone runs them all.  Not for the
	 * checker's own tests,
	 * whose counts they assert.  --min-windows scales with them. */
	const char *div = getenv("GSP_SIM_SEEDS_DIVISOR");
	if (div && !one && !expect && !sabotage && strtoull(div, NULL, 10) > 1) {
		unsigned long long d = strtoull(div, NULL, 10);
		seeds /= d;
		if (!seeds)
			seeds = 1;
		min_windows /= d;
		min_window_faults /= d;
	}
	if (trace) {
		gsp_log_init(GSP_LOG_DEBUG);
		setvbuf(stdout, NULL, _IONBF, 0);   /* in order with the log */
	}
	Suite *su = suite_create("daemon-sim");
	TCase *tc = tcase_create("schedules");
	tcase_set_timeout(tc, 600);
	tcase_add_test(tc, test_schedules);
	suite_add_tcase(su, tc);
	SRunner *sr = srunner_create(su);
	srunner_set_fork_status(sr, CK_NOFORK);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed || result ? 1 : 0;
usage:
	fprintf(stderr, "usage: %s [--seeds N] [--seed S] [--steps N] [--faults none|all|LIST] "
		"[--method M] [--layout SPEC] [--min-windows W F] [--expect-violations] [--sabotage] "
		"[--trace]\n"
		"LIST: comma-separated reset, detach, remove, timeout, restart, crash, weight, "
		"halfclose, upbusy, average, avgdetach, modelgoes, leavewait, finite, skip, sigterm, "
		"swarm\n", argv[0]);
	return 2;
}


