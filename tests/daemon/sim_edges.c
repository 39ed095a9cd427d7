/*
 * A deterministic simulation of the edge protocol (daemon/edge.h), in
 * the manner of FoundationDB's simulation tests: two edge sets over real
 * engine nodes, a simulated transport (tests/daemon/edgepair.h: frames
 * wait in queues) and a seeded scheduler that picks, at every point, what
 * happens next: a STEP at either end, a STEP whose engine work runs "off
 * the loop" (the end is busy until the scheduler ends it), one frame
 * delivered, and with --faults reset, a session reset (frames in flight
 * lost) followed later by a new session.
 *
 * After each schedule the invariant is checked: once every frame is
 * delivered and both ends have applied what they completed, the pair's
 * sum equals the initial sum to float rounding (gossip never moves the
 * average).  Then liveness: with faults over, rounds resume at both ends.
 * A failing seed prints the command that replays it with its trace.
 *
 * usage: test-daemon-sim [--seeds N] [--seed S] [--steps N]
 *                        [--faults none|reset] [--method exact|powergossip]
 *                        [--expect-violations] [--trace]
 * Exit 0 when every schedule holds (or, with --expect-violations, when
 * at least one breaks the invariant: the checker's own test), else 1.
 */
#include <check.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "edgepair.h"
#include "log.h"

typedef struct sim {
	uint64_t rng;
	bool faults, trace;
	unsigned steps;
	edgepair p;
	bool busy[2];            /* an offloaded step is running */
	unsigned actions;
} sim;

static uint64_t next(sim *s)
{
	/* xorshift64*: the whole schedule follows from the seed. */
	s->rng ^= s->rng >> 12;
	s->rng ^= s->rng << 25;
	s->rng ^= s->rng >> 27;
	return s->rng * 2685821657736338717ull;
}

static unsigned pick(sim *s, unsigned n)
{
	return (unsigned)(next(s) % n);
}

static ep_end *end_of(sim *s, int i)
{
	return i ? &s->p.b : &s->p.a;
}

static void say(sim *s, const char *what, int i)
{
	s->actions++;
	if (s->trace)
		printf("  %4u %s%s\n", s->actions, what, i < 0 ? "" : i ? " b" : " a");
}

/* A STEP as step.c runs it on the loop. */
static void step_on_loop(sim *s, int i)
{
	say(s, "step", i);
	ck_assert_int_ge(ep_step(end_of(s, i)), 0);
}

/* An offloaded STEP: begin and the engine's work now, the end busy until
 * offload_end (frames that arrive meanwhile are kept). */
static void offload_begin(sim *s, int i)
{
	ep_end *x = end_of(s, i);
	uint32_t applied, skipped;
	say(s, "step off the loop begins", i);
	edges_step_begin(&x->set, 4, &applied, &skipped);
	x->set.busy = true;
	s->busy[i] = true;
	ck_assert_int_ge(gsp_node_step(x->node), 0);
}

static void offload_end(sim *s, int i)
{
	ep_end *x = end_of(s, i);
	say(s, "step off the loop ends", i);
	x->set.busy = false;
	s->busy[i] = false;
	edges_after_busy(&x->set, false);
	edges_step_done(&x->set);
	edges_after_busy(&x->set, true);
	edges_finish(&x->set);
}

static void deliver(sim *s, int i)
{
	ep_end *x = end_of(s, i);
	say(s, "frame delivered, sent by", i);
	int err = ep_deliver_one(x);
	ck_assert_msg(err <= 1 || err >= 0, "frame refused: %d", err);
	if (err < 0 && s->trace)
		printf("       (refused: %d, session closed)\n", err);
}

static void reset(sim *s)
{
	say(s, "session reset (frames in flight lost)", -1);
	ep_end_session(&s->p.a);
}

static void session_up(sim *s)
{
	say(s, "new session", -1);
	ep_session_up(&s->p, (uint8_t)(1 + pick(s, 250)));
}

static bool quiet(const sim *s)
{
	return !s->busy[0] && !s->busy[1];
}

/* One random action that is possible now. */
static void act(sim *s)
{
	for (;;) {
		int i = (int)pick(s, 2);
		ep_end *x = end_of(s, i);
		switch (pick(s, s->faults ? 9 : 8)) {
		case 0: case 1:
			if (!s->busy[i]) {
				step_on_loop(s, i);
				return;
			}
			break;
		case 2:
			if (!s->busy[i]) {
				offload_begin(s, i);
				return;
			}
			break;
		case 3:
			if (s->busy[i]) {
				offload_end(s, i);
				return;
			}
			break;
		case 4: case 5: case 6: case 7:
			if (x->n_out) {
				deliver(s, i);
				return;
			}
			if (!x->session && !x->other->session && quiet(s)) {
				session_up(s);
				return;
			}
			break;
		case 8:
			if (x->session) {
				reset(s);
				return;
			}
			break;
		}
	}
}

static void settle(sim *s)
{
	for (int i = 0; i < 2; i++)
		if (s->busy[i])
			offload_end(s, i);
	while (s->p.a.n_out || s->p.b.n_out) {
		if (s->p.a.n_out)
			ep_deliver_one(&s->p.a);
		if (s->p.b.n_out)
			ep_deliver_one(&s->p.b);
	}
	ck_assert_int_ge(gsp_node_apply(s->p.a.node), 0);
	ck_assert_int_ge(gsp_node_apply(s->p.b.node), 0);
}

/* Runs schedule `seed`; returns 0 if it holds, 1 if the average moved,
 * 2 if rounds did not resume. */
static int run(uint64_t seed, const gsp_config *cfg, unsigned steps, bool faults,
	       bool trace, double *ret_drift)
{
	sim s = {.rng = seed * 0x9e3779b97f4a7c15ull + 1, .faults = faults,
		 .trace = trace, .steps = steps};
	ep_init(&s.p, "24x16,5", cfg);
	double sum0 = ep_sum(&s.p);
	double scale = 0;
	for (size_t k = 0; k < s.p.a.n_floats; k++)
		scale += fabs(s.p.a.params[k]) + fabs(s.p.b.params[k]);
	session_up(&s);
	for (unsigned k = 0; k < steps; k++)
		act(&s);
	settle(&s);
	double drift = fabs(ep_sum(&s.p) - sum0) / scale;
	*ret_drift = drift;
	int rc = drift > 1e-6 ? 1 : 0;
	/* Liveness: with faults over, a clean session carries rounds. */
	if (!rc) {
		if (!s.p.a.session)
			ep_session_up(&s.p, 77);
		ep_pump(&s.p);
		uint64_t a0 = s.p.a.e->rounds_completed, b0 = s.p.b.e->rounds_completed;
		for (int r = 0; r < 5; r++) {
			ck_assert_int_ge(ep_step(&s.p.a), 0);
			ck_assert_int_ge(ep_step(&s.p.b), 0);
			ep_pump(&s.p);
		}
		if (s.p.a.e->rounds_completed < a0 + 4 || s.p.b.e->rounds_completed < b0 + 4)
			rc = 2;
	}
	ep_free(&s.p);
	return rc;
}

static unsigned long long seeds = 1000, first = 1, steps = 200;
static bool faults, expect, trace, one;
static gsp_config cfg;
static const char *prog;
static int result;

/* The schedules, inside one Check test (edgepair.h asserts with Check). */
START_TEST(test_schedules)
{
	unsigned long long moved = 0, stuck = 0, first_bad = 0;
	double worst = 0;
	for (unsigned long long k = first; k < first + seeds; k++) {
		double drift;
		if (trace)
			printf("seed %llu:\n", k);
		int rc = run(k, &cfg, (unsigned)steps, faults, trace, &drift);
		if (drift > worst)
			worst = drift;
		if (rc && !first_bad)
			first_bad = k;
		moved += rc == 1;
		stuck += rc == 2;
	}
	printf("%llu schedules of %llu actions (%s, faults %s): %llu moved the "
	       "average, %llu did not resume; worst drift %.3g\n", seeds, steps,
	       gsp_method_name(cfg.method), faults ? "reset" : "none", moved, stuck,
	       worst);
	if (first_bad)
		printf("replay: %s --seed %llu --steps %llu --faults %s --method %s --trace\n",
		       prog, first_bad, steps, faults ? "reset" : "none",
		       gsp_method_name(cfg.method));
	if (expect)
		result = moved > 0 ? 0 : 1;
	else
		result = moved || stuck ? 1 : 0;
}
END_TEST

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
			faults = !strcmp(argv[++i], "reset");
			if (!faults && strcmp(argv[i], "none"))
				goto usage;
		} else if (!strcmp(a, "--method") && v) {
			if (gsp_method_parse(argv[++i], &cfg.method) != 0)
				goto usage;
		} else if (!strcmp(a, "--expect-violations"))
			expect = true;
		else if (!strcmp(a, "--trace"))
			trace = true;
		else
			goto usage;
	}
	if (one)
		seeds = 1;
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
	fprintf(stderr, "usage: %s [--seeds N] [--seed S] [--steps N] [--faults none|reset] "
		"[--method M] [--expect-violations] [--trace]\n", argv[0]);
	return 2;
}
