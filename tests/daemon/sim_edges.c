/*
 * A deterministic simulation of the edge protocol (daemon/edge.h), in
 * the manner of FoundationDB's simulation tests and TigerBeetle's VOPR:
 * two daemons' node cores (daemon/core.h: the code gossipd runs, with its
 * edge sets over real engine nodes), a simulated transport
 * (tests/daemon/edgepair.h: frames wait in queues), a simulated disk and
 * loop (the core's ops: records versions, timers the scheduler fires) and
 * a seeded scheduler that picks, at every point, what happens next: a
 * trainer's STEP at either end, a STEP whose engine work runs "off the
 * loop" (the end is busy until the scheduler ends it), one frame
 * delivered, and with --faults, a session reset (frames in flight lost)
 * followed later by a new session, a trainer that detaches and registers
 * again (its end's generation gone), a reload that removes the peer
 * (the generation ends at that end) until the next session, a DETACH
 * whose DetachWait passes, a DETACH whose model goes some actions after
 * its edge ended (modelgoes: a session may come up meanwhile, and no
 * generation may be agreed with it), a daemon killed and restarted with or
 * without its edges' records (with newbuffer, its trainer may register
 * another buffer then, which the records do not describe; a power loss
 * is such a kill: the records are synced before the frames they promise
 * leave, daemon/slotfile.c, so the disk then holds a version the restart
 * may pick), a daemon stopped by SIGTERM and started again (sigterm: its
 * generations continue), a SIGHUP that changes one end's Weight for
 * the peer or its degree (weight), and a session that ends at one end
 * first (halfclose: its GOODBYE, a reload, a dead timeout, a kill): a
 * random prefix of the frames it had written still reaches the peer,
 * the peer's frames to it are lost, and the peer's session ends later,
 * possibly after other actions there.  No frame is ever delivered to an
 * end whose session is down.  With upbusy, a new session may come up
 * while a step runs off the loop (the daemon does not wait for the step:
 * the old session's frames that came during it are then used quietly,
 * edge_after_busy); without it, sessions come up between steps only.
 * Time passes at random actions too: a STEP's MaxWait, a DRAIN's
 * DrainWait.  With average, a trainer calls AVERAGE with a time limit (and in some
 * schedules a round limit): the core runs its rounds
 * (the AVERAGE section below), and the limit passes at a random action,
 * also while a round runs off the loop; after it the trainer DETACHes
 * (with or without a DRAIN), STEPs or AVERAGEs again.  With avgdetach as
 * well, the trainer may give up first and DETACH during the AVERAGE.
 * A schedule that comes to a point where nothing can happen (every end
 * waits, as for a DETACH's answer that cannot come) counts as one whose
 * rounds did not resume.
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
 *                        [--faults none|all|reset,detach,remove,timeout,restart,crash,
 *                                  newbuffer,weight,halfclose,upbusy,average,avgdetach,
 *                                  modelgoes,leavewait,finite,skip,sigterm,swarm]
 *                        [--method exact|powergossip] [--min-windows W F]
 *                        [--expect-violations] [--sabotage] [--trace]
 * With --min-windows the sweep also fails unless its schedules opened at
 * least W windows and had at least F faults come while one was open:
 * the faults' coverage of the windows, which a change of odds could lose
 * quietly.
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
       FAULT_TIMEOUT = 16, FAULT_RESTART = 32, FAULT_WEIGHT = 64,
       FAULT_HALFCLOSE = 128, FAULT_UPBUSY = 256, FAULT_AVERAGE = 512,
       FAULT_AVGDETACH = 1024, FAULT_MODELGOES = 2048, FAULT_LEAVEWAIT = 4096,
       FAULT_FINITE = 8192, FAULT_SKIP = 16384, FAULT_SWARM = 32768,
       FAULT_NEWBUFFER = 65536, FAULT_SIGTERM = 131072 };

/* --faults swarm (swarm testing: TigerBeetle's VOPR draws its fault
 * probabilities per seed): each schedule draws, for each fault it lists,
 * how often that fault happens when the scheduler picks it: never, one
 * time in 64, one in 8, or always.  At the flat rates a finite
 * schedule's window almost never opens among faults (both AVERAGEs must
 * agree over several actions with none of them); a schedule whose resets
 * are rare but whose restarts are frequent opens windows and has faults
 * land inside them. */
#define SIM_FAULT_KINDS 18      /* bit 15, swarm itself, draws none */
static const unsigned swarm_odds[4] = {0, 64, 8, 1};

/* The degrees a SIGHUP may list (FAULT_WEIGHT): the set's max_degree
 * allows them at both ends. */
#define SIM_MAX_DEGREE 4

/* What a sweep's schedules did of the faults that need a look to be
 * sure they were exercised (printed with the summary). */
typedef struct sim_stats {
	unsigned long long sighups;      /* Weight or degree reloaded */
	unsigned long long other_weight; /* generations started at an end with
					  * an agreed Weight other than its own */
	unsigned long long half_closed;  /* sessions down at one end first */
	unsigned long long late;         /* frames delivered after their
					  * sender's session went down */
	unsigned long long up_busy;      /* sessions up during a step off the loop */
	/* --faults average */
	unsigned long long averages;     /* AVERAGEs called */
	unsigned long long avg_both;     /* of them while the peer's ran */
	unsigned long long avg_rounds;   /* their rounds */
	unsigned long long avg_off;      /* of them off the loop */
	unsigned long long avg_holds;    /* edges held: both ends' ROUNDs said
					  * REACHED (edges_avg_settle) */
	unsigned long long windows;      /* --faults finite: windows opened at
					  * an end, and let go (released) */
	unsigned long long released;
	unsigned long long window_faults; /* faults that came while a window was
					   * open at an end */
	unsigned long long avg_end[6];   /* how they ended (AVEND_*) */
	unsigned long long avg_detach_off; /* DETACHes that waited for a round
					    * off the loop (the AVERAGE went on) */
	unsigned long long avg_takebacks;  /* rounds taken back in a write of
					    * their own while an AVERAGE waited */
	unsigned long long avg_next[5];  /* the trainer's request after (NEXT_*) */
	unsigned long long stalled;      /* schedules where nothing could happen */
	unsigned long long leave_expired; /* LeaveWaits that passed (leavewait) */
	unsigned long long sigterms;     /* daemons stopped by SIGTERM (sigterm) */
	unsigned long long unwritten;    /* DETACHes whose write (begin_detach's)
					  * ended before the model went */
} sim_stats;

/* ---- the trainer, and its daemon's node core ---------------------------
 * Each end's daemon runs the node core (daemon/core.h) over its edge set,
 * the code gossipd runs: the trainer's requests are core calls (STEP, on
 * the loop or off it; DRAIN; AVERAGE; DETACH), and the core's loop is
 * this scheduler.  A timer of 0 ms (a reply, a take-back in a write of
 * its own, the model that goes once its edges ended) fires after the
 * action that armed it, as on the loop's next turn; with modelgoes, the
 * model goes at a later action instead.  Time passes only where a fault
 * says so: MaxWait or DrainWait at a random action, an AVERAGE's time
 * limit (--faults average), a DetachWait (--faults timeout); a timer that
 * fires moves its end's clock to its time.  An engine step off the loop
 * (offloads) runs its engine work as it begins and ends at a later action
 * (core_work_done); frames that come meanwhile wait, as in the daemon. */

/* How an AVERAGE ended (its reply). */
enum { AVEND_SETTLED, AVEND_ROUNDS, AVEND_TIME, AVEND_TIME_OFF, AVEND_NOSESSION,
       AVEND_CANCELLED };

/* The trainer's request after an AVERAGE. */
enum { NEXT_NONE, NEXT_DETACH_DRAIN, NEXT_DETACH, NEXT_STEP, NEXT_AVERAGE };

typedef struct sim_trainer {
	bool waits;              /* a STEP, DRAIN or AVERAGE has no reply yet */
	bool averages;           /* it is an AVERAGE */
	unsigned max_rounds;     /* its round limit (0: none) */
	bool expired;            /* its time limit passed */
	bool expired_off;        /* ... during a round off the loop */
	bool drain_detach;       /* a DRAIN whose reply a DETACH follows */
	bool detach_due;         /* that DETACH, after the action */
	bool detach_sent;        /* a DETACH whose answer has not come */
	bool register_due;       /* the model went: it registers again */
	int next;                /* the request after an AVERAGE (NEXT_*) */
	bool off_next;           /* the core's next engine step runs off the loop */
	bool work;               /* an engine step runs off the loop */
	int work_result;
	bool held;               /* the edge was held (avg_held) last we looked */
} sim_trainer;

typedef struct sim {
	uint64_t rng;
	unsigned faults;
	bool trace;
	gsp_config cfg;
	unsigned steps;
	edgepair p;
	uint64_t win_seen[2];    /* the last window counted at each end */
	unsigned odds[SIM_FAULT_KINDS]; /* --faults swarm: fault bit k happens
					 * one time in odds[k] (0: never) */
	/* A DETACH began at the end (the core's begin_detach), in that
	 * session (note_detach). */
	bool detach_noted[2];
	uint64_t detach_session[2];
	int ended_seen[2];
	unsigned actions;
	unsigned crashes;
	unsigned new_buffers;    /* another buffer registered (newbuffer) */
	unsigned alone[2];       /* generations ended here without the peer:
				  * an expired DetachWait */
	/* The generations (bit g, below 64) that ended at an end after its
	 * LeaveWait passed while the peer was ending them too (both removed
	 * each other) or had ended them: the peer may end at a count this
	 * end never hears (crossing ENDINGs: the smaller offer), so a round
	 * may land at one end only.  With the peer live in it and not
	 * ending, their next session must reconcile the counts exactly.
	 * leave_pending: the generation whose LeaveWait passed, until it
	 * ends there (after a step off the loop or a write, maybe). */
	uint64_t left_alone[2];
	uint32_t leave_pending[2];
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
	/* --faults weight: the last live generation seen at each end. */
	uint32_t gen_seen[2];
	uint32_t gen_max[2];     /* the highest live generation seen at each end */
	/* Each end's trainer. */
	sim_trainer tr[2];
	uint64_t seed;
	unsigned stalled;        /* the action where nothing could happen */
	bool settling;
	bool unwritten[2];       /* this DETACH's write ended early (counted) */
	sim_stats st;
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

/* Whether a schedule's window is open at either end. */
static bool window_open_here(sim *s)
{
	for (int i = 0; i < 2; i++) {
		gsp_edge_info info;
		ep_end *x = end_of(s, i);
		if (x->node && gsp_node_edge_info(x->node, 0, &info) == 0 && info.window_end)
			return true;
	}
	return false;
}

/* Whether `fault`, which the scheduler picked and which could happen
 * now, does.  Without swarm: whenever it is listed (and no random
 * number is drawn, so schedules without swarm are what they were). */
static bool fires(sim *s, unsigned fault)
{
	if (!(s->faults & fault))
		return false;
	if (s->faults & FAULT_SWARM) {
		unsigned odds = s->odds[__builtin_ctz(fault)];
		if (!odds || pick(s, odds) != 0)
			return false;
	}
	s->st.window_faults += s->faults & FAULT_FINITE && window_open_here(s);
	return true;
}

/* --faults swarm: this schedule's odds for each listed fault. */
static void swarm_plan(sim *s)
{
	for (unsigned k = 0; k < SIM_FAULT_KINDS; k++)
		s->odds[k] = s->faults & (1u << k) & ~FAULT_SWARM ? swarm_odds[pick(s, 4)] : 0;
	if (s->trace) {
		printf("swarm odds (bit: one in N, 0 never):");
		for (unsigned k = 0; k < SIM_FAULT_KINDS; k++)
			if (s->faults & (1u << k))
				printf(" %u:%u", 1u << k, s->odds[k]);
		printf("\n");
	}
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
static int engine_step(sim *s, int i)
{
	ep_end *x = end_of(s, i);
	gsp_edge_info info;
	if (!s->sab_armed || s->sab_action || i != s->sab_end || s->actions < s->sab_from ||
	    gsp_node_edge_count(x->node) == 0 ||
	    gsp_node_edge_info(x->node, edge_index(x->e), &info) != 0 ||
	    info.state != GSP_EDGE_COMPLETED)
		return gsp_node_step(x->node);
	size_t bytes = x->n_floats * sizeof(float);
	float *before = malloc(bytes);
	ck_assert_ptr_nonnull(before);
	memcpy(before, x->params, bytes);
	int r = gsp_node_step(x->node);
	double lost = 0;
	for (size_t k = 0; k < x->n_floats; k++)
		lost += (double)x->params[k] - before[k];
	memcpy(x->params, before, bytes);
	free(before);
	s->sab_action = s->actions;
	if (s->trace)
		printf("       (sabotage: action %u, the step at %c, loses the update of round %"
		       PRIu64 ", sum %.3g)\n", s->actions, i ? 'b' : 'a', info.round, lost);
	return r;
}

static void say(sim *s, const char *what, int i)
{
	s->actions++;
	if (s->trace)
		printf("  %4u %s%s\n", s->actions, what, i < 0 ? "" : i ? " b" : " a");
}

/* x's oldest frame to the peer, whose session must be up: a frame never
 * reaches an end whose session is down (the daemon reads frames of a
 * live link only).  x's own session may be down already: the frames it
 * wrote before it closed first (half_close). */
static int deliver_one(sim *s, ep_end *x)
{
	ck_assert_msg(x->other->session, "a frame delivered to an end whose session is down");
	s->st.late += !x->session;
	return ep_deliver_one(x);
}

static void deliver(sim *s, int i)
{
	ep_end *x = end_of(s, i);
	static const char *names[] = {"?", "MODEL", "ROUND", "RESYNC"};
	uint8_t type = x->out[0].len ? x->out[0].data[0] : 0;
	char what[64];
	snprintf(what, sizeof(what), "%s delivered, sent by", type < 4 ? names[type] : "frame");
	say(s, what, i);
	int err = deliver_one(s, x);
	ck_assert_msg(err <= 1 || err >= 0, "frame refused: %d", err);
	if (err < 0 && s->trace)
		printf("       (refused: %d, session closed)\n", err);
}

static void reset(sim *s)
{
	say(s, "session reset (frames in flight lost)", -1);
	ep_end_session(&s->p.a);
}

/* --faults halfclose.  The session ends at i first (its GOODBYE, a
 * reload, its dead timeout, its daemon killed): of the frames i had
 * queued towards the peer the first `keep` still reach it, as TCP
 * delivers what was written before the close, and the rest are lost;
 * the peer's frames towards i are lost, and so is whatever the peer
 * sends until it notices (peer_notices: a later action, after the
 * frames kept, possibly after other actions at the peer). */
static void half_close(sim *s, int i, unsigned keep)
{
	ep_end *x = end_of(s, i);
	if (s->trace)
		printf("       (the session ends at %c first; %u of %u frames it sent still "
		       "reach the peer)\n", i ? 'b' : 'a', keep, x->n_out);
	for (unsigned k = keep; k < x->n_out; k++)
		free(x->out[k].data);
	x->n_out = keep;
	ep_drop_queue(x->other);
	s->st.half_closed++;
	x->session = false;
	edge_session_down(x->e);
}

/* The peer reads the close (its GOODBYE after the frames it kept, or a
 * reset it notices): its session ends too. */
static void peer_notices(sim *s, int i)
{
	say(s, "the close reaches the peer: its session ends at", i);
	ep_end_session(end_of(s, i));
}

/* Whether a session closes at one end first where the daemon closes it
 * with a GOODBYE (--faults halfclose, in half the cases). */
static bool closes_first(sim *s, int i)
{
	return (s->faults & FAULT_HALFCLOSE) && end_of(s, i)->session &&
	       end_of(s, i)->other->session && pick(s, 2);
}

/* A half-closed session ends at the peer too once the frames kept
 * reached it: settle's sessions start from both ends down. */
static void settle_half_close(sim *s)
{
	for (int i = 0; i < 2; i++) {
		ep_end *x = end_of(s, i);
		if (x->session || !x->other->session)
			continue;
		while (x->n_out && x->other->session)
			(void)deliver_one(s, x);
		if (x->other->session)
			ep_end_session(x->other);
	}
}

/* A SIGHUP at i (--faults weight): its Weight for the peer
 * (gsp_peer_config.weight, 0: none) and/or its degree (the peers it
 * lists) change.  The live generation keeps its agreed weight; the next
 * session's first RESYNC offers the new one; ROUNDs carry the new
 * degree from the next projection on. */
static void sighup(sim *s, int i)
{
	static const float weights[] = {0.0f, 0.1f, 0.25f, 0.3f, 0.45f};
	ep_end *x = end_of(s, i);
	unsigned what = pick(s, 3);
	char text[96];
	if (what != 1)
		x->cfg.weight = weights[pick(s, 5)];
	if (what != 0)
		x->degree = (uint16_t)(1 + pick(s, SIM_MAX_DEGREE));
	snprintf(text, sizeof(text), "SIGHUP: Weight %g, degree %u at", (double)x->cfg.weight,
		 (unsigned)x->degree);
	say(s, text, i);
	s->st.sighups++;
}

/* ---- the core's ops: the daemon, as the scheduler runs it -------------- */

static sim *sim_of(void *ctx, int *ret_i)
{
	ep_end *x = ctx;
	sim *s = x->hook_ctx;
	*ret_i = x == &s->p.b;
	return s;
}

static int sim_engine_step(void *ctx)
{
	int i;
	sim *s = sim_of(ctx, &i);
	return engine_step(s, i);
}

/* A STEP runs off the loop as the trainer's request was drawn; an
 * AVERAGE's rounds, each as drawn then. */
static bool sim_offloads(void *ctx)
{
	int i;
	sim *s = sim_of(ctx, &i);
	bool off = s->tr[i].averages ? pick(s, 2) : s->tr[i].off_next;
	if (off && s->tr[i].averages && s->trace)
		printf("       (AVERAGE at %c: a round off the loop)\n", i ? 'b' : 'a');
	return off;
}

/* The engine work runs now (its undo copy first if it is to take it); the
 * step ends at a later action (work_ends), the end busy meanwhile. */
static bool sim_offload(void *ctx, bool copy, uint64_t write_seq)
{
	ep_end *x = ctx;
	int i;
	sim *s = sim_of(ctx, &i);
	if (copy)
		ep_undo_begin(x, write_seq);
	s->tr[i].work = true;
	s->tr[i].work_result = engine_step(s, i);
	s->st.avg_off += x->core.state == STEP_AVERAGE_RUN;
	return true;
}

static const core_ops sim_core_ops = {
	.now_ms = ep_now_ms, .timer_start = ep_timer_start, .timer_stop = ep_timer_stop,
	.timer_active = ep_timer_active, .engine_step = sim_engine_step,
	.offloads = sim_offloads, .offload = sim_offload, .undo_begin = ep_undo_begin,
	.undo_end = ep_nothing, .save_records = ep_save_op,
	.release_model = ep_nothing, .idle = ep_nothing, .bytes = ep_bytes,
};

/* ---- the trainer's requests -------------------------------------------- */

/* The DETACH at i began (the core's begin_detach): from this session on,
 * its RESYNCs say NO_START (check_started). */
static void note_detach(sim *s, int i)
{
	ep_end *x = end_of(s, i);
	if (x->core.detaching && !s->detach_noted[i]) {
		s->detach_noted[i] = true;
		s->detach_session[i] = ep_view(x->e).session_no;
	}
}

/* The trainer heard from the daemon at i: the records it had written
 * then are on the disk (a reply follows their save), so a kill from now
 * on leaves no older version. */
static void trainer_heard(sim *s, int i)
{
	s->began[i] = end_of(s, i)->persists;
}

/* A STEP, DRAIN or AVERAGE replied. */
static void on_reply(void *client, const step_result *r)
{
	int i;
	sim *s = sim_of(client, &i);
	sim_trainer *t = &s->tr[i];
	trainer_heard(s, i);
	static const char *whys[] = {"reached", "its round limit", "its time limit",
				     "its time limit, after a round off the loop", "no session",
				     "-ECANCELED: the trainer detaches"};
	t->waits = false;
	if (t->drain_detach) {
		t->drain_detach = false;
		t->detach_due = true;
	}
	if (!r->average)
		return;
	t->averages = false;
	int why = r->err == -ECANCELED ? AVEND_CANCELLED
		: r->avg.reached ? AVEND_SETTLED
		: t->expired_off ? AVEND_TIME_OFF
		: t->expired ? AVEND_TIME
		: t->max_rounds && r->avg.rounds >= t->max_rounds ? AVEND_ROUNDS
		: AVEND_NOSESSION;
	s->st.avg_end[why]++;
	s->st.avg_rounds += r->avg.rounds;
	if (why != AVEND_CANCELLED)
		t->next = NEXT_DETACH_DRAIN + (int)pick(s, 4);
	if (s->trace)
		printf("       (AVERAGE at %c ends after %u rounds: %s)\n", i ? 'b' : 'a',
		       r->avg.rounds, whys[why]);
}

/* The DETACH is answered: the model went; the trainer registers the same
 * parameters again (register_again, after the action). */
static void on_detached(void *client)
{
	int i;
	sim *s = sim_of(client, &i);
	s->tr[i].detach_sent = false;
	s->tr[i].register_due = true;
	trainer_heard(s, i);
	s->detach_noted[i] = false;
}

/* A STEP at i, on the loop or off it. */
static void request_step(sim *s, int i, bool off)
{
	ep_end *x = end_of(s, i);
	say(s, off ? "step off the loop begins" : "step", i);
	s->tr[i].off_next = off;
	s->tr[i].waits = true;
	ck_assert_int_eq(core_step(&x->core, x, 0, on_reply), 0);
	note_detach(s, i);
}

/* The engine step off the loop at i ends (libuv's work_done). */
static void work_ends(sim *s, int i)
{
	ep_end *x = end_of(s, i);
	say(s, x->core.state == STEP_AVERAGE_RUN ? "AVERAGE round off the loop ends"
						  : "step off the loop ends", i);
	s->tr[i].work = false;
	core_work_done(&x->core, s->tr[i].work_result);
	note_detach(s, i);
}

/* The trainer at i asks to DETACH: its edge ends its generation with the
 * peer (frames the scheduler delivers), then the model goes. */
static void detach_request(sim *s, int i)
{
	ep_end *x = end_of(s, i);
	s->tr[i].detach_sent = true;
	s->unwritten[i] = false;
	core_detach(&x->core, x, on_detached);
	note_detach(s, i);
}

static void detach_begin_how(sim *s, int i, bool drain)
{
	ep_end *x = end_of(s, i);
	/* The documented end is a DRAIN first, and the DETACH at its reply;
	 * a DETACH without it lands, inside its write, what an ended
	 * generation counts (edges_detach). */
	if (!drain) {
		say(s, "trainer asks to detach (no DRAIN) at", i);
		detach_request(s, i);
		return;
	}
	say(s, "trainer drains and asks to detach at", i);
	s->tr[i].drain_detach = true;
	s->tr[i].waits = true;
	s->tr[i].off_next = false;
	ck_assert_int_eq(core_step(&x->core, x, GSP_STEP_DRAIN, on_reply), 0);
}

static void detach_begin(sim *s, int i)
{
	detach_begin_how(s, i, pick(s, 2));
}

/* The DETACH's timer fires at i: the edge ended (on the loop's next turn,
 * or with modelgoes some actions later), or DetachWait passed (timeout:
 * the edge ends at what this end applied). */
static void detach_timer_fires(sim *s, int i)
{
	ep_end *x = end_of(s, i);
	bool timeout = edges_ending(&x->set) > 0;
	say(s, timeout ? "DetachWait passes at" : "the model goes at", i);
	s->alone[i] += timeout;
	ep_fire(x, CORE_TIMER_DETACH);
}

/* The trainer whose model went registers again (GOODBYE MODEL_CHANGED:
 * the session ends, at this end first with halfclose). */
static void register_again(sim *s, int i)
{
	ep_end *x = end_of(s, i);
	say(s, "trainer detached and registers again at", i);
	s->tr[i].register_due = false;
	/* An AVERAGE that went on during the DETACH (its round was off the
	 * loop when it came) ended with the model: a core left averaging
	 * would refuse the next model's requests (-EBUSY). */
	ck_assert_msg(x->core.state == STEP_IDLE || x->core.state == STEP_REPLY,
		      "seed %llu: an AVERAGE outlived its model", (unsigned long long)s->seed);
	if (closes_first(s, i))
		half_close(s, i, pick(s, x->n_out + 1));
	ep_register_again(x, &s->cfg);
}

/* The loop's next turn at i: a timer of 0 ms fires (the core looks at
 * the edges' changes, a take-back in a write of its own, a reply, the
 * model that goes), or the trainer makes
 * the call a reply asked for.  False if nothing did. */
static bool next_turn(sim *s, int i)
{
	ep_end *x = end_of(s, i);
	sim_trainer *t = &s->tr[i];
	if (x->armed[CORE_TIMER_CHANGED]) {
		ep_fire(x, CORE_TIMER_CHANGED);
	} else if (x->armed[CORE_TIMER_TAKEBACK]) {
		if (s->trace)
			printf("       (a round taken back at %c in a write of its own: its "
			       "request waits)\n", i ? 'b' : 'a');
		s->st.avg_takebacks += x->core.state == STEP_AVERAGE;
		ep_fire(x, CORE_TIMER_TAKEBACK);
	} else if (x->armed[CORE_TIMER_REPLY]) {
		ep_fire(x, CORE_TIMER_REPLY);
	} else if (x->armed[CORE_TIMER_DETACH] && !edges_ending(&x->set) &&
		   !(s->faults & FAULT_MODELGOES)) {
		detach_timer_fires(s, i);
	} else if (t->detach_due) {
		t->detach_due = false;
		say(s, "the DRAIN replied; trainer asks to detach at", i);
		detach_request(s, i);
	} else if (t->register_due) {
		register_again(s, i);
	} else {
		return false;
	}
	note_detach(s, i);
	return true;
}

/* The end at i can take a fault: no step off the loop, no DETACH under
 * way, its model attached. */
static bool free_at(const sim *s, int i)
{
	const sim_trainer *t = &s->tr[i];
	return !t->work && !t->detach_sent && !t->detach_due && !t->register_due &&
	       end_of((sim *)s, i)->set.attached;
}

/* The trainer at i can make a request: free, none under way. */
static bool trainer_free(const sim *s, int i)
{
	const ep_end *x = end_of((sim *)s, i);
	return free_at(s, i) && !s->tr[i].waits && x->core.state == STEP_IDLE &&
	       !x->armed[CORE_TIMER_REPLY];
}

/* The daemon at i is killed: the trainer's request fails with it (it
 * registers again). */
static void trainer_killed(sim *s, int i)
{
	if (s->tr[i].averages && s->trace)
		printf("       (its AVERAGE ends with the daemon)\n");
	s->tr[i] = (sim_trainer){0};
	s->detach_noted[i] = false;
}

/* ---- AVERAGE (--faults average) ----------------------------------------
 * The trainer at an end calls AVERAGE (gossip-only rounds) with a time
 * limit, and in a third of them a round limit too; the core runs it.
 * Its time limit passes at a random action: the AVERAGE then ends at
 * once, or, while its round runs off the loop, when that round ends.
 * Or (avgdetach) the trainer gives up first and DETACHes: the AVERAGE
 * ends with -ECANCELED, but a DETACH that comes while its round runs off
 * the loop waits for the round.  After its reply the trainer's next
 * request is a DETACH (with or without a DRAIN first), a STEP or another
 * AVERAGE; the peer may be averaging too, stepping or idle. */

static void avg_start(sim *s, int i)
{
	static const double targets[] = {0.0, 1e-4, 1e9};
	ep_end *x = end_of(s, i);
	sim_trainer *t = &s->tr[i];
	char text[128];
	gsp_api_average req = {.target = targets[pick(s, 3)], .time_limit_ms = 1000};
	req.max_rounds = pick(s, 3) ? 0 : 1 + pick(s, 6);
	snprintf(text, sizeof(text), "trainer asks to AVERAGE (target %g, round limit %u) at",
		 req.target, (unsigned)req.max_rounds);
	say(s, text, i);
	s->st.averages++;
	s->st.avg_both += s->tr[!i].averages;
	t->waits = t->averages = true;
	t->expired = t->expired_off = false;
	t->max_rounds = req.max_rounds;
	ck_assert_int_eq(core_average(&x->core, x, &req, on_reply), 0);
	note_detach(s, i);
}

/* Its time limit passes (the core's timer; a round off the loop sees it
 * as it ends). */
static void avg_time_passes(sim *s, int i)
{
	ep_end *x = end_of(s, i);
	bool off = x->core.state == STEP_AVERAGE_RUN;
	say(s, off ? "AVERAGE's time limit passes during its round off the loop at"
		   : "AVERAGE's time limit passes at", i);
	s->tr[i].expired = true;
	s->tr[i].expired_off = off;
	ep_fire(x, CORE_TIMER_AVERAGE);
}

/* The trainer gives up on its AVERAGE and DETACHes. */
static void avg_detach(sim *s, int i)
{
	ep_end *x = end_of(s, i);
	bool off = core_busy(&x->core);
	say(s, off ? "trainer asks to detach during its AVERAGE's round off the loop at"
		   : "trainer asks to detach during its AVERAGE at", i);
	s->st.avg_detach_off += off;
	detach_request(s, i);
}

/* The trainer's request after its AVERAGE, as its next one. */
static bool avg_next(sim *s, int i)
{
	sim_trainer *t = &s->tr[i];
	if (!t->next || !trainer_free(s, i))
		return false;
	int n = t->next;
	t->next = NEXT_NONE;
	s->st.avg_next[n]++;
	switch (n) {
	case NEXT_DETACH_DRAIN:
	case NEXT_DETACH:
		detach_begin_how(s, i, n == NEXT_DETACH_DRAIN);
		break;
	case NEXT_STEP:
		request_step(s, i, pick(s, 2));
		break;
	default:
		avg_start(s, i);
		break;
	}
	return true;
}

/* A reload removes the peer at i: the edge ends its generation with the
 * peer; then the peer goes (its session closes, after_action). */
static void removal(sim *s, int i)
{
	say(s, "peer removed (reload) at", i);
	if (edge_end_begin(end_of(s, i)->e, END_REMOVED))
		end_of(s, i)->ended++;
}

/* --faults leavewait: the removed peer has not answered within LeaveWait
 * (mesh's on_leave_expired): the edge ends at i alone, at once, or after
 * a step off the loop or a write it waits for.  The peer comes back at
 * the next session, as a peer added back by a later reload does, and
 * the two ends' RESYNCs must reconcile what each applied. */
static void leave_expires(sim *s, int i)
{
	edge *e = end_of(s, i)->e;
	say(s, "LeaveWait passes at", i);
	s->st.leave_expired++;
	s->leave_pending[i] = ep_view(e).generation;
	(void)edge_end_alone(e);
}

static void check_started(sim *s, int i);

/* After each action: the loops' next turns (timers of 0 ms, the
 * trainers' calls), and what the daemon does once an ending it asked for
 * is over: a leaving peer's session closes. */
static void after_action(sim *s)
{
	for (int n = 0; n < 1000; n++) {
		bool a = next_turn(s, 0);
		bool b = next_turn(s, 1);
		if (!a && !b)
			break;
		ck_assert_msg(n < 999, "seed %llu: the loop turns for ever",
			      (unsigned long long)s->seed);
	}
	for (int i = 0; i < 2; i++) {
		ep_end *x = end_of(s, i);
		gsp_edge_info info;
		if (x->node && gsp_node_edge_info(x->node, 0, &info) == 0 &&
		    info.window_end && info.window_end != s->win_seen[i]) {
			s->win_seen[i] = info.window_end;
			s->st.windows++;
			if (s->trace)
				printf("       (a schedule window opens at %c: rounds up to %llu)\n",
				       i ? 'b' : 'a', (unsigned long long)info.window_end);
		}
		bool held = ep_view(x->e).avg_held;
		s->st.avg_holds += held && !s->tr[i].held;
		s->tr[i].held = held;
		/* A DETACH holds its write until the model goes (a take-back
		 * by subtraction needs it): one that lost it waits for its
		 * DetachWait if the peer's answer needs one.  Counted (settle
		 * ends every write). */
		if (x->core.detaching && !x->set.writing && !s->unwritten[i] && !s->settling) {
			s->unwritten[i] = true;
			s->st.unwritten++;
			if (s->trace)
				printf("       (the DETACH at %c no longer holds its write)\n",
				       i ? 'b' : 'a');
		}
		if (x->ended != s->ended_seen[i]) {
			s->ended_seen[i] = x->ended;
			if (x->session && !s->tr[i].detach_sent) {
				say(s, "the leaving peer's session closes at", i);
				if (closes_first(s, i))
					half_close(s, i, pick(s, x->n_out + 1));
				else
					ep_end_session(x);
			}
		}
	}
	for (int i = 0; i < 2; i++) {
		edge *e = end_of(s, i)->e, *peer = end_of(s, 1 - i)->e;
		uint32_t g = s->leave_pending[i];
		if (!g || (ep_view(e).live && ep_view(e).generation == g))
			continue;
		s->leave_pending[i] = 0;
		edge_view pv = ep_view(peer);
		if (g < 64 && !(pv.live && pv.generation == g && !pv.ending_self))
			s->left_alone[i] |= 1ull << g;
	}
	for (int i = 0; i < 2; i++) {
		ep_end *x = end_of(s, i);
		/* What the peer of a half-closed session sends is lost. */
		if (!x->session && x->other->session)
			ep_drop_queue(x->other);
		check_started(s, i);
		/* A generation started: with its agreed Weight, which may
		 * not be this end's own. */
		if (ep_view(x->e).live && ep_view(x->e).generation != s->gen_seen[i]) {
			s->gen_seen[i] = ep_view(x->e).generation;
			s->st.other_weight += ep_view(x->e).weight != x->cfg.weight;
		}
	}
}

/* What a daemon's configuration gives its edge set, at start and at every
 * restart: SIGHUPs may list more peers (FAULT_WEIGHT), so the graph
 * allows that degree in the peer's ROUNDs; with FAULT_FINITE its
 * AVERAGEs offer the pair's finite-time schedule (one step of 1: a round
 * at w = 1/2 leaves both ends at their average); with FAULT_SKIP as well,
 * that round between two the edge sits out (steps of 0: a one-float
 * message, as a ring's matching schedule has). */
static void set_up(sim *s, ep_end *x)
{
	static const float pair_schedule[1] = {1.0f};
	static const float skip_schedule[3] = {0.0f, 1.0f, 0.0f};
	if (s->faults & FAULT_WEIGHT)
		edges_configure(&x->set, SIM_MAX_DEGREE, x->set.max_round_change);
	if (s->faults & FAULT_FINITE && s->faults & FAULT_SKIP)
		ck_assert_int_eq(edges_set_schedule(&x->set, skip_schedule, 3, 0, 0), 0);
	else if (s->faults & FAULT_FINITE)
		ck_assert_int_eq(edges_set_schedule(&x->set, pair_schedule, 1, 0, 0), 0);
}

/* The daemon at i is killed and restarts (its edge records gone; the
 * trainer's parameters stay, with what it had applied). */
static void crash(sim *s, int i)
{
	ep_end *x = end_of(s, i);
	say(s, "daemon killed and restarted at", i);
	trainer_killed(s, i);
	s->crashes++;
	/* The peer notices later; what the dead end wrote may reach it. */
	if ((s->faults & FAULT_HALFCLOSE) && x->session && x->other->session)
		half_close(s, i, pick(s, x->n_out + 1));
	ep_restart(x, &s->cfg, false, true);
	set_up(s, x);
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
	trainer_killed(s, i);
	if ((s->faults & FAULT_HALFCLOSE) && x->session && x->other->session) {
		/* The peer notices later: the k frames wait in the network
		 * meanwhile. */
		half_close(s, i, k);
	} else if (!x->session && x->other->session) {
		/* Closed first already: of the frames it wrote then, those
		 * the kill leaves written. */
		for (unsigned j = k; j < x->n_out; j++)
			free(x->out[j].data);
		x->n_out = k;
	}
	while (k-- && x->session && x->n_out)
		(void)deliver_one(s, x);
	/* Its trainer registers at once, or later (an action of its own). */
	ep_restart_from(x, &s->cfg, &x->files[v % EP_FILES], undo, pick(s, 2));
	set_up(s, x);
	/* The versions after v were never written. */
	x->persists = x->delivered = s->began[i] = v;
}

/* The trainer of a restarted daemon registers again: its sessions start
 * over, as at any REGISTER (GOODBYE "model changed"). */
static void registers(sim *s, int i)
{
	ep_end *x = end_of(s, i);
	/* --faults newbuffer: it brings another buffer (a new trainer, or
	 * the same one with a new memfd): the records' generation must end
	 * at their counts, exactly, and not continue into it. */
	if (fires(s, FAULT_NEWBUFFER)) {
		x->later.owner.ino += 2;
		s->new_buffers++;
		say(s, "another buffer registers at", i);
	} else {
		say(s, "the trainer registers again at", i);
	}
	ep_attach(x);
	/* GOODBYE MODEL_CHANGED. */
	if (closes_first(s, i))
		half_close(s, i, pick(s, end_of(s, i)->n_out + 1));
	else if (end_of(s, i)->session)
		ep_end_session(end_of(s, i));
}

/* --faults sigterm: the daemon at i stops on SIGTERM (systemctl restart,
 * an upgrade) and starts again.  As main.c's park: the request under way
 * ends without a reply (the trainer's client sees the connection close
 * and registers again at the next start), no engine work and no write
 * is under way (it waits for them), the records are saved a last time,
 * and the peer gets GOODBYE, which ends no generation; the new daemon
 * reads those records and continues them. */
static void sigterm(sim *s, int i)
{
	ep_end *x = end_of(s, i);
	say(s, "SIGTERM: the daemon saves its records, stops and starts again at", i);
	edge_view was = ep_view(x->e);
	trainer_killed(s, i);
	core_halt(&x->core);
	edges_records_changed(&x->set);
	core_persist(&x->core);
	s->st.sigterms++;
	if (closes_first(s, i))
		half_close(s, i, pick(s, x->n_out + 1));
	else if (x->session)
		ep_end_session(x);
	/* Its trainer registers at once, or later. */
	ep_restart(x, &s->cfg, true, pick(s, 2));
	set_up(s, x);
	s->began[i] = x->persists;
	/* The warm start survives: a live generation continues. */
	ck_assert_msg(!was.live || was.ending || ep_view(x->e).generation == was.generation,
		      "seed %llu: SIGTERM ended generation %u at %c", (unsigned long long)s->seed,
		      was.generation, i ? 'b' : 'a');
}

static void session_up(sim *s)
{
	say(s, "new session", -1);
	s->st.up_busy += s->tr[0].work || s->tr[1].work;
	ep_session_up(&s->p, (uint8_t)(1 + pick(s, 250)));
}

/* A restarted daemon's trainer may register: nothing of the last model
 * is under way. */
static bool free_at_unattached(const sim *s, int i)
{
	const sim_trainer *t = &s->tr[i];
	return !t->work && !t->detach_sent && !t->detach_due && !t->register_due;
}

static bool quiet(const sim *s)
{
	return !s->tr[0].work && !s->tr[1].work;
}


/* A new generation (not one that continues after a restart) is never
 * agreed with a peer whose first RESYNC of the session came after its
 * DETACH: that RESYNC says NO_START.  Checked when the edges change (a
 * start does), so a generation that started and ended within one action
 * and comes back with a restart's records is not taken for a new one. */
static void check_started(sim *s, int i)
{
	edge *e = end_of(s, i)->e;
	if (!ep_view(e).live || ep_view(e).generation <= s->gen_max[i])
		return;
	int j = 1 - i;
	ck_assert_msg(!s->detach_noted[j] ||
		      ep_view(end_of(s, j)->e).session_no <= s->detach_session[j],
		      "seed %llu: generation %u started at %c with a peer "
		      "whose model goes", (unsigned long long)s->seed,
		      ep_view(e).generation, i ? 'b' : 'a');
	s->gen_max[i] = ep_view(e).generation;
}

/* ep_end.on_changed: after the core heard the change. */
static void sim_edges_changed(ep_end *x)
{
	sim *s = x->hook_ctx;
	int i = x == &s->p.b;
	note_detach(s, i);
	check_started(s, i);
}

/* One random action that is possible now; false if none is (every end
 * waits for something that never comes: a DETACH whose answer cannot
 * come, say, for which only its DetachWait is left). */
static bool act(sim *s)
{
	for (int k = 0; k < 2; k++) {
		s->floor[k] = s->began[k];
		s->began[k] = end_of(s, k)->persists;
	}
	/* Without the faults that came later, the choices (and so every
	 * schedule of the seed) are what they were before them. */
	unsigned kinds = !s->faults ? 8 : s->faults & FAULT_AVERAGE ? 16 :
			 s->faults & (FAULT_WEIGHT | FAULT_HALFCLOSE) ? 15 : 13;
	for (unsigned tries = 0;; tries++) {
		if (tries == 100000)
			return false;
		int i = (int)pick(s, 2);
		ep_end *x = end_of(s, i);
		switch (pick(s, kinds)) {
		case 0: case 1:
			if (avg_next(s, i))
				return true;
			if (trainer_free(s, i)) {
				request_step(s, i, false);
				return true;
			}
			break;
		case 2:
			if (avg_next(s, i))
				return true;
			if (trainer_free(s, i)) {
				request_step(s, i, true);
				return true;
			}
			break;
		case 3:
			/* The engine step off the loop ends; or time passes:
			 * MaxWait for a STEP, DrainWait for a DRAIN or an
			 * AVERAGE's held windows. */
			if (s->tr[i].work && (!x->armed[CORE_TIMER_WAIT] || pick(s, 2))) {
				work_ends(s, i);
				return true;
			}
			if (x->armed[CORE_TIMER_WAIT]) {
				say(s, "MaxWait or DrainWait passes at", i);
				ep_fire(x, CORE_TIMER_WAIT);
				return true;
			}
			break;
		case 4: case 5: case 6: case 7:
			if (x->n_out) {
				deliver(s, i);
				return true;
			}
			/* A new session needs both ends' old one down.  In the
			 * daemon one may come up while a step runs off the
			 * loop (--faults upbusy): the frames of the old one it
			 * kept are then used quietly (edge_after_busy, by
			 * session_no).  Without it, it waits for the step. */
			if (!x->session && !x->other->session &&
			    (quiet(s) || (s->faults & FAULT_UPBUSY))) {
				session_up(s);
				return true;
			}
			break;
		case 8:
			if (x->session && fires(s, FAULT_RESET)) {
				reset(s);
				return true;
			}
			break;
		case 9:
			/* --faults modelgoes: the model goes some actions after
			 * its edge ended. */
			if ((s->faults & FAULT_MODELGOES) && x->armed[CORE_TIMER_DETACH] &&
			    !edges_ending(&x->set)) {
				detach_timer_fires(s, i);
				return true;
			}
			if (avg_next(s, i))
				return true;
			if (trainer_free(s, i) && fires(s, FAULT_DETACH)) {
				detach_begin(s, i);
				return true;
			}
			if (s->tr[i].detach_sent && x->armed[CORE_TIMER_DETACH] &&
			    edges_ending(&x->set) && (s->faults & FAULT_TIMEOUT) &&
			    pick(s, 4) == 0 && fires(s, FAULT_TIMEOUT)) {
				detach_timer_fires(s, i);
				return true;
			}
			break;
		case 10:
			if (free_at(s, i) && ep_view(x->e).live &&
			    !ep_view(x->e).ending_self && fires(s, FAULT_REMOVE)) {
				removal(s, i);
				return true;
			}
			/* The timer fires on the loop, also while a step runs
			 * off it. */
			if (ep_view(x->e).live && ep_view(x->e).ending_self == END_REMOVED &&
			    (s->faults & FAULT_LEAVEWAIT) && pick(s, 2) == 0 &&
			    fires(s, FAULT_LEAVEWAIT)) {
				leave_expires(s, i);
				return true;
			}
			break;
		case 11:
			if (free_at(s, i) && fires(s, FAULT_CRASH)) {
				crash(s, i);
				return true;
			}
			break;
		case 12:
			/* A SIGTERM or a kill: each in half the cases where
			 * both are listed. */
			if ((s->faults & FAULT_SIGTERM) && pick(s, 2) && free_at(s, i) &&
			    !x->set.writing && fires(s, FAULT_SIGTERM)) {
				sigterm(s, i);
				return true;
			}
			if (free_at(s, i) && fires(s, FAULT_RESTART)) {
				restart(s, i);
				return true;
			}
			/* A restarted daemon's trainer registers again. */
			if (!x->set.attached && free_at_unattached(s, i)) {
				registers(s, i);
				return true;
			}
			break;
		case 13:
			/* A reload comes after a step that runs (mesh_reload). */
			if (!s->tr[i].work && fires(s, FAULT_WEIGHT)) {
				sighup(s, i);
				return true;
			}
			break;
		case 14:
			if (!(s->faults & FAULT_HALFCLOSE))
				break;
			if (x->session && x->other->session && fires(s, FAULT_HALFCLOSE)) {
				unsigned keep = pick(s, x->n_out + 1);
				say(s, "session closes first at", i);
				half_close(s, i, keep);
				return true;
			}
			if (x->session && !x->other->session && !x->other->n_out) {
				peer_notices(s, i);
				return true;
			}
			break;
		case 15:
			if (!(s->faults & FAULT_AVERAGE))
				break;
			if (avg_next(s, i))
				return true;
			/* An AVERAGE runs: its time limit passes, or (avgdetach)
			 * its trainer gives up first (a second DETACH does
			 * nothing); else its rounds go on. */
			if (s->tr[i].averages) {
				unsigned what = pick(s, 8);
				if (what < 2 && x->armed[CORE_TIMER_AVERAGE] &&
				    fires(s, FAULT_AVERAGE)) {
					avg_time_passes(s, i);
					return true;
				}
				if (what == 2 && !s->tr[i].detach_sent && !s->tr[i].detach_due &&
				    fires(s, FAULT_AVGDETACH)) {
					avg_detach(s, i);
					return true;
				}
				break;
			}
			if (trainer_free(s, i)) {
				avg_start(s, i);
				return true;
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
	s->settling = true;
	settle_half_close(s);
	for (int k = 0; k < 8; k++) {
		/* Requests end: an AVERAGE's time limit passes, steps off the
		 * loop end, MaxWait and DrainWait pass; the model of a DETACH
		 * whose edge ended goes (modelgoes); a restarted daemon's
		 * trainer registers. */
		for (int i = 0; i < 2; i++) {
			ep_end *x = end_of(s, i);
			if (x->armed[CORE_TIMER_AVERAGE])
				avg_time_passes(s, i);
			if (s->tr[i].work)
				work_ends(s, i);
			if (x->armed[CORE_TIMER_WAIT])
				ep_fire(x, CORE_TIMER_WAIT);
			if (x->armed[CORE_TIMER_DETACH] && !edges_ending(&x->set))
				detach_timer_fires(s, i);
			after_action(s);
			if (!x->set.attached && free_at_unattached(s, i))
				registers(s, i);
		}
		settle_half_close(s);
		if (!s->p.a.session)
			ep_session_up(&s->p, (uint8_t)(77 + k));
		while (s->p.a.n_out || s->p.b.n_out) {
			if (s->p.a.n_out)
				deliver_one(s, &s->p.a);
			if (s->p.b.n_out)
				deliver_one(s, &s->p.b);
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
	settle_half_close(s);
	if (!s->p.a.session)
		ep_session_up(&s->p, 99);
	while (s->p.a.n_out || s->p.b.n_out) {
		if (s->p.a.n_out)
			deliver_one(s, &s->p.a);
		if (s->p.b.n_out)
			deliver_one(s, &s->p.b);
	}
}

/* Runs schedule `seed`; returns 0 if it holds, 1 if the average moved,
 * 2 if rounds did not resume, 3 if the average moved in a schedule where
 * the protocol says it may (PROTOCOL.md 4.6): a daemon lost its edge
 * records (crash), or an end ended a generation without hearing its
 * peer (a DETACH whose DetachWait passed) while the peer ended it too.
 * A restart with records costs nothing: it must hold. */
static int run(uint64_t seed, const gsp_config *cfg, unsigned steps, unsigned faults,
	       bool sabotage, bool trace, double *ret_drift, bool *ret_sabotaged,
	       sim_stats *stats)
{
	sim s = {.rng = seed * 0x9e3779b97f4a7c15ull + 1, .faults = faults,
		 .trace = trace, .steps = steps, .cfg = *cfg};
	if (sabotage)
		sabotage_plan(&s, seed);
	s.seed = seed;
	if (faults & FAULT_SWARM)
		swarm_plan(&s);
	ep_init(&s.p, "24x16,5", cfg);
	/* The checks hear of the edges' changes after the core; the core runs
	 * over the simulation's ops. */
	for (int i = 0; i < 2; i++) {
		end_of(&s, i)->on_changed = sim_edges_changed;
		end_of(&s, i)->hook_ctx = &s;
		ep_use_ops(end_of(&s, i), &sim_core_ops);
	}
	for (int i = 0; i < 2; i++)
		set_up(&s, end_of(&s, i));
	double sum0 = ep_sum(&s.p);
	double scale = 0;
	for (size_t k = 0; k < s.p.a.n_floats; k++)
		scale += fabs(s.p.a.params[k]) + fabs(s.p.b.params[k]);
	session_up(&s);
	for (unsigned k = 0; k < steps; k++) {
		if (!act(&s)) {
			s.stalled = s.actions + 1;
			if (trace)
				printf("  %4u nothing can happen (a: detaching %d, ending %zu, "
				       "AVERAGE %d; b: detaching %d, ending %zu, AVERAGE %d)\n",
				       s.stalled, s.tr[0].detach_sent, edges_ending(&s.p.a.set),
				       s.p.a.core.state, s.tr[1].detach_sent, edges_ending(&s.p.b.set),
				       s.p.b.core.state);
			for (int i = 0; trace && i < 2; i++) {
				edge_view e = ep_view(end_of(&s, i)->e);
				printf("        %c: completed %llu sent %llu target %llu ending %d "
				       "live %d writing %d takeback_waiting %d in_flight %zu\n",
				       i ? 'b' : 'a', (unsigned long long)e.completed,
				       (unsigned long long)e.sent_round,
				       (unsigned long long)e.target, e.ending, e.live,
				       end_of(&s, i)->set.writing,
				       end_of(&s, i)->set.takeback_waiting,
				       edges_in_flight(&end_of(&s, i)->set));
			}
			break;
		}
		after_action(&s);
	}
	settle(&s);
	double drift = fabs(ep_sum(&s.p) - sum0) / scale;
	*ret_drift = drift;
	*ret_sabotaged = s.sab_action != 0;
	/* The protocol's documented cost: an end that lost its records, or
	 * both ends ending a generation without hearing each other. */
	/* Two ends that both stopped waiting must have found it when they
	 * met again (settle's session): rounds_unreconciled. */
	bool counted = s.p.a.counters.rounds_unreconciled + s.p.b.counters.rounds_unreconciled > 0;
	bool left = (s.left_alone[0] | s.left_alone[1]) != 0 && counted;
	/* Another buffer: the one that went took its own rounds, and a round
	 * in flight then (applied by the buffer that went and not by the
	 * peer's, or the other way) stays one-sided.  Here both buffers are
	 * the same memory, so that shows as drift, which the ends must
	 * have counted. */
	bool departed = s.new_buffers && counted;
	int rc = drift > 1e-6 ? (s.crashes || s.alone[0] || s.alone[1] || left || departed ? 3 : 1) : 0;
	/* A schedule where nothing could happen did not go on by itself. */
	if (s.stalled && rc != 1)
		rc = 2;
	stats->stalled += s.stalled != 0;
	stats->unwritten += s.st.unwritten;
	stats->leave_expired += s.st.leave_expired;
	stats->sigterms += s.st.sigterms;
	/* Liveness: with faults over, a clean session carries rounds. */
	if (!rc) {
		ep_pump(&s.p);
		uint64_t a0 = ep_view(s.p.a.e).rounds_completed;
		uint64_t b0 = ep_view(s.p.b.e).rounds_completed;
		s.tr[0].off_next = s.tr[1].off_next = false;   /* ep_step: on the loop */
		for (int r = 0; r < 5; r++) {
			ck_assert_int_ge(ep_step(&s.p.a), 0);
			ck_assert_int_ge(ep_step(&s.p.b), 0);
			ep_pump(&s.p);
		}
		if (ep_view(s.p.a.e).rounds_completed < a0 + 4 ||
		    ep_view(s.p.b.e).rounds_completed < b0 + 4)
			rc = 2;
		for (int i = 0; rc == 2 && trace && i < 2; i++) {
			edge_view e = ep_view(end_of(&s, i)->e);
			printf("  end %c: session %d state %d live %d gen %u next %u pending %d "
			       "ending %d/%d peer_attached %d attached %d\n", i ? 'b' : 'a',
			       end_of(&s, i)->session, e.state, e.live, e.generation,
			       e.next_generation, e.start_pending, e.ending, e.ending_self,
			       e.peer_attached, end_of(&s, i)->set.attached);
		}
	}
	ep_free(&s.p);
	stats->sighups += s.st.sighups;
	stats->other_weight += s.st.other_weight;
	stats->half_closed += s.st.half_closed;
	stats->late += s.st.late;
	stats->up_busy += s.st.up_busy;
	stats->averages += s.st.averages;
	stats->avg_both += s.st.avg_both;
	stats->avg_rounds += s.st.avg_rounds;
	stats->avg_off += s.st.avg_off;
	stats->avg_holds += s.st.avg_holds;
	stats->windows += s.st.windows;
	stats->released += s.st.released;
	stats->window_faults += s.st.window_faults;
	for (int k = 0; k < 6; k++)
		stats->avg_end[k] += s.st.avg_end[k];
	stats->avg_detach_off += s.st.avg_detach_off;
	stats->avg_takebacks += s.st.avg_takebacks;
	for (int k = 0; k < 5; k++)
		stats->avg_next[k] += s.st.avg_next[k];
	return rc;
}

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
		int rc = run(k, &cfg, (unsigned)steps, faults, sabotage, trace, &drift, &sab, &st);
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
	/* GSP_SIM_SEEDS_DIVISOR=N (tools/run-tests' sanitizer stage): a
	 * sweep runs seeds/N schedules, enough to find memory errors, since
	 * the plain build runs them all.  Not for the checker's own tests,
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
		"[--method M] [--min-windows W F] [--expect-violations] [--sabotage] "
		"[--trace]\n"
		"LIST: comma-separated reset, detach, remove, timeout, restart, crash, weight, "
		"halfclose, upbusy, average, avgdetach, modelgoes, leavewait, finite, skip, sigterm, "
		"swarm\n", argv[0]);
	return 2;
}
