/*
 * A deterministic simulation of the edge protocol (daemon/edge.h), in
 * the manner of FoundationDB's simulation tests: two edge sets over real
 * engine nodes, a simulated transport (tests/daemon/edgepair.h: frames
 * wait in queues) and a seeded scheduler that picks, at every point, what
 * happens next: a STEP at either end, a STEP whose engine work runs "off
 * the loop" (the end is busy until the scheduler ends it), one frame
 * delivered, and with --faults, a session reset (frames in flight lost)
 * followed later by a new session, a trainer that detaches and registers
 * again (its end's generation gone), a reload that removes the peer
 * (the generation ends at that end) until the next session, a DETACH
 * whose DetachWait passes, and a daemon killed and restarted with or
 * without its edges' records.
 *
 * After each schedule the invariant is checked: once every frame is
 * delivered and both ends have applied what they completed, the pair's
 * sum equals the initial sum to float rounding (gossip never moves the
 * average).  Then liveness: with faults over, rounds resume at both ends.
 * A failing seed prints the command that replays it with its trace.
 *
 * --sabotage is the checker's own test (tests/daemon/test_sim_replay.py):
 * it plants a bug in the simulated daemon, not in the checker.  In one
 * schedule in 8, chosen from the seed, one end loses the update of one
 * round its STEP applied, and nothing reports it; the checker must find
 * the drift and the replay must repeat it.
 *
 * usage: test-daemon-sim [--seeds N] [--seed S] [--steps N]
 *                        [--faults none|all|reset,detach,remove,timeout,restart,crash]
 *                        [--method exact|powergossip]
 *                        [--expect-violations] [--sabotage] [--trace]
 * Exit 0 when every schedule holds but where a crash or an expired
 * DetachWait may cost a round (or, with --expect-violations and --faults
 * crash, when such schedules do move the average: the checker's own
 * test), else 1.
 */
#include <check.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "edgepair.h"
#include "log.h"

/* Faults a schedule may inject (--faults). */
enum { FAULT_RESET = 1, FAULT_DETACH = 2, FAULT_REMOVE = 4, FAULT_CRASH = 8,
       FAULT_TIMEOUT = 16, FAULT_RESTART = 32 };

typedef struct sim {
	uint64_t rng;
	unsigned faults;
	bool trace;
	gsp_config cfg;
	unsigned steps;
	edgepair p;
	bool busy[2];            /* an offloaded step is running */
	bool detaching[2];       /* a DETACH waits for the edge to end */
	int ended_seen[2];
	unsigned actions;
	unsigned crashes;
	unsigned alone[2];       /* generations ended here without the peer:
				  * an expired DetachWait */
	/* Each end's records version as the last action and this one began:
	 * a kill may come inside the last action, after any of its writes
	 * of the records. */
	unsigned floor[2], began[2];
	/* --sabotage: the planted bug (sabotage_plan). */
	bool sab_armed;          /* this schedule has it */
	int sab_end;             /* at this end */
	unsigned sab_from;       /* the first STEP from this action on that
				  * applies a round loses its update */
	unsigned sab_action;     /* the action it did so in (0: not yet) */
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

/* --sabotage, the checker's own test.  The bug is planned from the seed
 * by a stream of its own (splitmix64), so a schedule's actions are the
 * same with and without it, and a replay of the seed plants it again. */
static void sabotage_plan(sim *s, uint64_t seed)
{
	uint64_t z = seed + 0x9e3779b97f4a7c15ull;
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	z ^= z >> 31;
	s->sab_armed = z % 8 == 0;
	s->sab_end = (int)((z >> 8) & 1);
	s->sab_from = 1 + (unsigned)((z >> 16) % (s->steps / 4 + 1));
}

/* The engine's part of a STEP at end i: apply the completed round, project
 * the next.  Sabotaged (once per planned schedule), the end then puts its
 * parameters back as they were before the apply, as a daemon bug that
 * loses an update would: the edge counts the round as applied, the peer
 * applied its half, and nothing is reported. */
static void engine_step(sim *s, int i)
{
	ep_end *x = end_of(s, i);
	gsp_edge_info info;
	if (!s->sab_armed || s->sab_action || i != s->sab_end || s->actions < s->sab_from ||
	    gsp_node_edge_count(x->node) == 0 ||
	    gsp_node_edge_info(x->node, x->e->index, &info) != 0 ||
	    info.state != GSP_EDGE_COMPLETED) {
		ck_assert_int_ge(gsp_node_step(x->node), 0);
		return;
	}
	size_t bytes = x->n_floats * sizeof(float);
	float *before = malloc(bytes);
	ck_assert_ptr_nonnull(before);
	memcpy(before, x->params, bytes);
	ck_assert_int_ge(gsp_node_step(x->node), 0);
	double lost = 0;
	for (size_t k = 0; k < x->n_floats; k++)
		lost += (double)x->params[k] - before[k];
	memcpy(x->params, before, bytes);
	free(before);
	s->sab_action = s->actions;
	if (s->trace)
		printf("       (sabotage: action %u, the step at %c, loses the update of round %"
		       PRIu64 ", sum %.3g)\n", s->actions, i ? 'b' : 'a', info.round, lost);
}

static void say(sim *s, const char *what, int i)
{
	s->actions++;
	if (s->trace)
		printf("  %4u %s%s\n", s->actions, what, i < 0 ? "" : i ? " b" : " a");
}

/* A STEP as step.c runs it on the loop (edgepair.h's ep_step, with the
 * engine's part in engine_step). */
static void step_on_loop(sim *s, int i)
{
	ep_end *x = end_of(s, i);
	uint32_t applied, skipped;
	say(s, "step", i);
	ep_write_begin(x);
	edges_step_begin(&x->set, 4, &applied, &skipped);
	engine_step(s, i);
	edges_step_done(&x->set);
	ep_write_end(x);
	ep_persist(x);   /* step_end's mesh_persist */
}

/* An offloaded STEP: begin and the engine's work now, the end busy until
 * offload_end (frames that arrive meanwhile are kept). */
static void offload_begin(sim *s, int i)
{
	ep_end *x = end_of(s, i);
	uint32_t applied, skipped;
	say(s, "step off the loop begins", i);
	ep_write_begin(x);
	edges_step_begin(&x->set, 4, &applied, &skipped);
	x->set.busy = true;
	s->busy[i] = true;
	engine_step(s, i);
}

static void offload_end(sim *s, int i)
{
	ep_end *x = end_of(s, i);
	say(s, "step off the loop ends", i);
	x->set.busy = false;
	s->busy[i] = false;
	edges_step_done(&x->set);
	ep_write_end(x);
	ep_persist(x);   /* step_end's mesh_persist */
	edges_after_busy(&x->set);
	edges_finish(&x->set);
}

static void deliver(sim *s, int i)
{
	ep_end *x = end_of(s, i);
	static const char *names[] = {"?", "MODEL", "ROUND", "RESYNC"};
	uint8_t type = x->out[0].len ? x->out[0].data[0] : 0;
	char what[64];
	snprintf(what, sizeof(what), "%s delivered, sent by", type < 4 ? names[type] : "frame");
	say(s, what, i);
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

/* The trainer at i asks to DETACH: its edge ends its generation with
 * the peer (frames the scheduler delivers), then detach_end. */
static void detach_begin(sim *s, int i)
{
	ep_end *x = end_of(s, i);
	/* The documented end is a DRAIN (here its apply) first; a DETACH
	 * without it lands, inside its write, what an ended generation
	 * counts (edges_detach). */
	if (pick(s, 2)) {
		say(s, "trainer drains and asks to detach at", i);
		ep_write_begin(x);
		ck_assert_int_ge(gsp_node_apply(x->node), 0);
		edges_finish(&x->set);
		ep_write_end(x);
	} else
		say(s, "trainer asks to detach (no DRAIN) at", i);
	/* The DETACH is a write of its own until the model goes. */
	ep_write_begin(x);
	s->detaching[i] = true;
	(void)edges_end_begin(&x->set);
}

/* The model goes (the edge ended, or DetachWait passed: timeout) and
 * the trainer registers the same parameters again. */
static void detach_end(sim *s, int i, bool timeout)
{
	say(s, timeout ? "DetachWait passes; trainer detached and registers again at"
		       : "edge ended; trainer detached and registers again at", i);
	s->detaching[i] = false;
	s->alone[i] += timeout;
	ep_reregister(end_of(s, i), &s->cfg);
	ep_write_end(end_of(s, i));
}

/* A reload removes the peer at i: the edge ends its generation with the
 * peer; then the peer goes (its session closes, after_action). */
static void removal(sim *s, int i)
{
	say(s, "peer removed (reload) at", i);
	if (edge_end_begin(end_of(s, i)->e, END_REMOVED))
		end_of(s, i)->ended++;
}

/* What the daemon does once an ending it asked for is over: DETACH
 * goes on, a leaving peer's session closes. */
static void after_action(sim *s)
{
	for (int i = 0; i < 2; i++) {
		ep_end *x = end_of(s, i);
		if (s->detaching[i] && !s->busy[i] && !edges_ending(&x->set))
			detach_end(s, i, false);
		if (x->ended != s->ended_seen[i]) {
			s->ended_seen[i] = x->ended;
			if (x->session && !s->detaching[i]) {
				say(s, "the leaving peer's session closes at", i);
				ep_end_session(x);
			}
		}
	}
}

/* The daemon at i is killed and restarts (its edge records gone; the
 * trainer's parameters stay, with what it had applied). */
static void crash(sim *s, int i)
{
	ep_end *x = end_of(s, i);
	say(s, "daemon killed and restarted at", i);
	s->crashes++;
	ep_restart(x, &s->cfg, false, true);
	/* Its records are gone. */
	for (int k = 0; k < EP_FILES; k++) {
		free(x->files[k].buf);
		x->files[k] = (ep_file){0};
	}
}

/* Whether the daemon at x can have been killed with records version v
 * on disk: v is kept, and the buffer then held what v counts or one
 * write more, which the undo copy undoes (*ret_undo). */
static bool may_die_at(const ep_end *x, unsigned v, bool *ret_undo)
{
	if (v == 0 || x->persists - v >= EP_FILES)
		return false;
	uint64_t w = x->files[v % EP_FILES].writes;
	*ret_undo = x->set.writing || w < x->set.writes;
	return x->set.writing ? w == x->set.writes : w + 1 >= x->set.writes;
}

/* The daemon at i is killed and restarts with its edges' records; its
 * trainer registers again at once or later.  The kill
 * comes at any point since the last action began: the file is then any
 * version written since (no older than what a delivered frame followed),
 * the frames sent before it may reach the peer (they were in the
 * kernel), and a write the file does not count is undone by the client
 * (PROTOCOL.md 5.4). */
static void restart(sim *s, int i)
{
	ep_end *x = end_of(s, i);
	unsigned lo = s->floor[i] > x->delivered ? s->floor[i] : x->delivered;
	unsigned options[EP_FILES], n = 0;
	bool undo = false;
	for (unsigned v = lo; v <= x->persists; v++)
		if (may_die_at(x, v, &undo))
			options[n++] = v;
	ck_assert_uint_gt(n, 0);
	unsigned v = options[pick(s, n)];
	(void)may_die_at(x, v, &undo);
	unsigned sendable = 0;
	while (sendable < x->n_out && x->out[sendable].persists <= v)
		sendable++;
	unsigned k = pick(s, sendable + 1);
	if (s->trace)
		printf("       (records version %u of %u%s; %u of %u frames reach the peer)\n",
		       v, x->persists, undo ? ", a write undone" : "", k, x->n_out);
	say(s, "daemon killed and restarted with its records at", i);
	while (k-- && x->session && x->n_out)
		(void)ep_deliver_one(x);
	/* Its trainer registers at once, or later (an action of its own). */
	ep_restart_from(x, &s->cfg, &x->files[v % EP_FILES], undo, pick(s, 2));
	/* The versions after v were never written. */
	x->persists = x->delivered = s->began[i] = v;
}

/* The trainer of a restarted daemon registers again: its sessions start
 * over, as at any REGISTER (GOODBYE "model changed"). */
static void registers(sim *s, int i)
{
	say(s, "the trainer registers again at", i);
	ep_attach(end_of(s, i));
	if (end_of(s, i)->session)
		ep_end_session(end_of(s, i));
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

/* The end at i can take a trainer's request or a fault: no step off
 * the loop, no DETACH under way, its model attached. */
static bool free_at(const sim *s, int i)
{
	return !s->busy[i] && !s->detaching[i] && end_of((sim *)s, i)->set.attached;
}

/* One random action that is possible now. */
static void act(sim *s)
{
	for (int k = 0; k < 2; k++) {
		s->floor[k] = s->began[k];
		s->began[k] = end_of(s, k)->persists;
	}
	for (;;) {
		int i = (int)pick(s, 2);
		ep_end *x = end_of(s, i);
		switch (pick(s, s->faults ? 13 : 8)) {
		case 0: case 1:
			if (free_at(s, i)) {
				step_on_loop(s, i);
				return;
			}
			break;
		case 2:
			if (free_at(s, i)) {
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
			if (x->session && (s->faults & FAULT_RESET)) {
				reset(s);
				return;
			}
			break;
		case 9:
			if (free_at(s, i) && (s->faults & FAULT_DETACH)) {
				detach_begin(s, i);
				return;
			}
			if (s->detaching[i] && (s->faults & FAULT_TIMEOUT) && pick(s, 4) == 0) {
				detach_end(s, i, true);
				return;
			}
			break;
		case 10:
			if (free_at(s, i) && x->e->live &&
			    !x->e->ending_self && (s->faults & FAULT_REMOVE)) {
				removal(s, i);
				return;
			}
			break;
		case 11:
			if (free_at(s, i) && (s->faults & FAULT_CRASH)) {
				crash(s, i);
				return;
			}
			break;
		case 12:
			if (free_at(s, i) && (s->faults & FAULT_RESTART)) {
				restart(s, i);
				return;
			}
			/* A restarted daemon's trainer registers again. */
			if (!x->set.attached && !s->busy[i]) {
				registers(s, i);
				return;
			}
			break;
		}
	}
}

/* Faults over: steps end, a clean session comes up, and every frame is
 * delivered and every completed update applied (what a STEP's apply
 * does, without projecting more), until nothing changes. */
static void settle(sim *s)
{
	for (int i = 0; i < 2; i++) {
		if (s->busy[i])
			offload_end(s, i);
		if (!end_of(s, i)->set.attached)
			registers(s, i);
	}
	for (int k = 0; k < 8; k++) {
		if (!s->p.a.session)
			ep_session_up(&s->p, (uint8_t)(77 + k));
		while (s->p.a.n_out || s->p.b.n_out) {
			if (s->p.a.n_out)
				ep_deliver_one(&s->p.a);
			if (s->p.b.n_out)
				ep_deliver_one(&s->p.b);
		}
		for (int i = 0; i < 2; i++) {
			ep_write_begin(end_of(s, i));
			ck_assert_int_ge(gsp_node_apply(end_of(s, i)->node), 0);
			edges_finish(&end_of(s, i)->set);
			ep_write_end(end_of(s, i));
		}
		after_action(s);
	}
	/* A last look at each other: ends that disagree report it. */
	if (!s->p.a.session)
		ep_session_up(&s->p, 99);
	while (s->p.a.n_out || s->p.b.n_out) {
		if (s->p.a.n_out)
			ep_deliver_one(&s->p.a);
		if (s->p.b.n_out)
			ep_deliver_one(&s->p.b);
	}
}

/* Runs schedule `seed`; returns 0 if it holds, 1 if the average moved,
 * 2 if rounds did not resume, 3 if the average moved in a schedule where
 * the protocol says it may (PROTOCOL.md 4.6): a daemon lost its edge
 * records (crash), or an end ended a generation without hearing its
 * peer (a DETACH whose DetachWait passed) while the peer ended it too.
 * A restart with records costs nothing: it must hold. */
static int run(uint64_t seed, const gsp_config *cfg, unsigned steps, unsigned faults,
	       bool sabotage, bool trace, double *ret_drift, bool *ret_sabotaged)
{
	sim s = {.rng = seed * 0x9e3779b97f4a7c15ull + 1, .faults = faults,
		 .trace = trace, .steps = steps, .cfg = *cfg};
	if (sabotage)
		sabotage_plan(&s, seed);
	ep_init(&s.p, "24x16,5", cfg);
	double sum0 = ep_sum(&s.p);
	double scale = 0;
	for (size_t k = 0; k < s.p.a.n_floats; k++)
		scale += fabs(s.p.a.params[k]) + fabs(s.p.b.params[k]);
	session_up(&s);
	for (unsigned k = 0; k < steps; k++) {
		act(&s);
		after_action(&s);
	}
	settle(&s);
	double drift = fabs(ep_sum(&s.p) - sum0) / scale;
	*ret_drift = drift;
	*ret_sabotaged = s.sab_action != 0;
	/* The protocol's documented cost: an end that lost its records, or
	 * both ends ending a generation without hearing each other. */
	int rc = drift > 1e-6 ? (s.crashes || s.alone[0] || s.alone[1] ? 3 : 1) : 0;
	/* Liveness: with faults over, a clean session carries rounds. */
	if (!rc) {
		ep_pump(&s.p);
		uint64_t a0 = s.p.a.e->rounds_completed, b0 = s.p.b.e->rounds_completed;
		for (int r = 0; r < 5; r++) {
			ck_assert_int_ge(ep_step(&s.p.a), 0);
			ck_assert_int_ge(ep_step(&s.p.b), 0);
			ep_pump(&s.p);
		}
		if (s.p.a.e->rounds_completed < a0 + 4 || s.p.b.e->rounds_completed < b0 + 4)
			rc = 2;
		for (int i = 0; rc == 2 && trace && i < 2; i++) {
			const edge *e = end_of(&s, i)->e;
			printf("  end %c: session %d state %d live %d gen %u next %u pending %d "
			       "ending %d/%d peer_attached %d attached %d\n", i ? 'b' : 'a',
			       end_of(&s, i)->session, e->state, e->live, e->generation,
			       e->next_generation, e->start_pending, e->ending, e->ending_self,
			       e->peer_attached, end_of(&s, i)->set.attached);
		}
	}
	ep_free(&s.p);
	return rc;
}

static unsigned long long seeds = 1000, first = 1, steps = 200;
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
	for (unsigned long long k = first; k < first + seeds; k++) {
		double drift;
		bool sab;
		if (trace)
			printf("seed %llu:\n", k);
		int rc = run(k, &cfg, (unsigned)steps, faults, sabotage, trace, &drift, &sab);
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
	       "average, %llu moved it after an expired DetachWait or lost records, "
	       "%llu did not resume; worst drift %.3g\n", seeds, steps,
	       gsp_method_name(cfg.method), faults_name, moved, reported, stuck,
	       worst);
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
		printf("replay: %s --seed %llu --steps %llu --faults %s --method %s%s --trace\n",
		       prog, first_bad, steps, faults_name,
		       gsp_method_name(cfg.method), sabotage ? " --sabotage" : "");
	}
	/* --expect-violations (with --faults crash, the checker's own
	 * test): the drift is seen. */
	if (expect)
		result = reported > 0 && !moved && !stuck ? 0 : 1;
	else
		result = moved || stuck ? 1 : 0;
}
END_TEST

/* "none", "all", or a comma-separated list of reset, detach, remove,
 * timeout (a DETACH's DetachWait passes before the peer answers),
 * restart (a daemon killed, restarted with its records), crash (killed,
 * its records lost). */
static int parse_faults(const char *list, unsigned *ret)
{
	static const struct { const char *name; unsigned bit; } names[] = {
		{"reset", FAULT_RESET}, {"detach", FAULT_DETACH}, {"remove", FAULT_REMOVE},
		{"crash", FAULT_CRASH}, {"timeout", FAULT_TIMEOUT}, {"restart", FAULT_RESTART},
		{"all", FAULT_RESET | FAULT_DETACH | FAULT_REMOVE | FAULT_TIMEOUT | FAULT_RESTART},
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
	fprintf(stderr, "usage: %s [--seeds N] [--seed S] [--steps N] [--faults none|all|reset,detach,remove] "
		"[--method M] [--expect-violations] [--sabotage] [--trace]\n", argv[0]);
	return 2;
}
